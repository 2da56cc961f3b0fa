// Insert MCP prompt…: the prompt templates the running MCP servers offer, listed per server; the
// chosen one's arguments are asked for, the server fills it in, and its text goes to the chat's
// input for the user to read and send.
#pragma once

#include "services/mcp_client.h"

#include <QDialog>
#include <QList>
#include <QString>
#include <QStringList>

class QDialogButtonBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QListWidget;

namespace hearth::app {
class McpHost;
} // namespace hearth::app

namespace hearth::ui {

class McpPromptDialog : public QDialog {
    Q_OBJECT
public:
    // Asks every ready server that offers prompts for its list at once.
    explicit McpPromptDialog(app::McpHost* host, QWidget* parent = nullptr);

    QListWidget* list() const { return m_list; }
    bool isListing() const { return m_listing > 0; }
    // The chosen prompt's argument fields, by argument name (empty until one is chosen).
    QLineEdit* argumentField(const QString& name) const;
    QString statusText() const;
    // The filled-in prompt's text (after accept): its messages' text, in order, blank-line apart.
    QString text() const { return m_text; }

    // Asks the chosen prompt's server to fill it in, then accepts (the Insert button does this);
    // a refusal (a missing argument, the server's error) is shown and the dialog stays open.
    void insertChosen();

private:
    void listed(app::McpClient* client, const QList<app::McpPrompt>& prompts);
    void showChosen();
    void updateButtons();

    app::McpHost* m_host;
    QListWidget* m_list = nullptr;
    QLabel* m_description = nullptr;
    QFormLayout* m_form = nullptr;
    QList<QLineEdit*> m_fields;
    QLabel* m_status = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
    QList<QPair<QString, app::McpPrompt>> m_prompts; // (server, prompt) by the list's rows
    QStringList m_problems;
    int m_listing = 0;
    quint64 m_getting = 0; // the ticket of the prompt being filled in
    QString m_text;
};

} // namespace hearth::ui
