// The remote providers dialog (Models › Remote providers…): OpenAI-compatible servers (vLLM,
// TGI, llama-server, another hearth-server) whose models the model picker offers beside the
// local ones; each with its base URL, API key (kept in the keyring or an owner-only file) and a
// connection test that lists its models.
#pragma once

#include "services/remote_provider.h"

#include <QDialog>

class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace hearth::ui {

class ProvidersDialog : public QDialog {
    Q_OBJECT
public:
    ProvidersDialog(app::ProviderStore* store, app::RemoteClient* client, QWidget* parent = nullptr);

    // Fills the form (as typing would) and saves it; false with the reason in statusText().
    bool saveProvider(const QString& name, const QString& url, const QString& key, bool extendedSampling = true);
    bool removeProvider(const QString& name);
    void testConnection(); // of the provider in the form
    QString statusText() const;
    QStringList providerNames() const;

Q_SIGNALS:
    void providersChanged();

private:
    void reload();
    void showProvider(const QString& name);
    bool saveForm();

    app::ProviderStore* m_store;
    app::RemoteClient* m_client;
    QListWidget* m_list = nullptr;
    QLineEdit* m_name = nullptr;
    QLineEdit* m_url = nullptr;
    QLineEdit* m_key = nullptr;
    QCheckBox* m_extended = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_keyWhere = nullptr;
    quint64 m_testTicket = 0;
};

} // namespace hearth::ui
