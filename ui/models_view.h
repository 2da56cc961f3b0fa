// The models page: the local library (load, import, delete, details) and the Hugging Face hub
// browser (search, every GGUF quantization of a repo with a memory-fit badge or a "won't run
// here" mark, downloads).
#pragma once

#include "services/download_manager.h"
#include "services/engine_host.h"
#include "services/hub_client.h"
#include "services/model_library.h"
#include "services/model_list_model.h"
#include "services/settings.h"

#include <QHash>
#include <QWidget>

class QLabel;
class QLineEdit;
class QListView;
class QTabWidget;
class QListWidget;
class QPushButton;
class QTreeWidget;

namespace hearth::ui {

// Whether a model of `bytes` fits: "fits in RAM", "tight", "won't fit" against `availableBytes`
// (what the CPU path can use; GPU badges come with the GPU backends).
QString fitBadge(qint64 bytes, qint64 availableBytes);
qint64 availableRamBytes();

class ModelsView : public QWidget {
    Q_OBJECT
public:
    ModelsView(app::ModelLibrary* library, app::EngineHost* engine, app::HubClient* hub,
               app::DownloadManager* downloads, app::Settings* settings, QWidget* parent = nullptr);

    void loadSelected();
    void search(const QString& query);
    // Lists a hub repository's GGUF files grouped by quantization, with fit badges.
    void showRepo(const QString& repo);
    void showLibraryTab();
    void showDiscoverTab();
    // Quantization options shown for the current repository (for tests).
    int shownOptionCount() const { return int(m_shownOptions.size()); }
    // Why the shown option will not run here (empty: it should), and whether Download is on for
    // the current option (for tests).
    QString optionWontRunReason(int optionRow) const;
    void selectOption(int optionRow);
    bool canDownloadSelected() const;

Q_SIGNALS:
    void statusMessage(const QString& text);

private:
    void showDetails();
    void download(int optionRow);
    void fillOptions();
    void updateDownloadButton();

    app::ModelLibrary* m_library;
    app::EngineHost* m_engine;
    app::HubClient* m_hub;
    app::DownloadManager* m_downloads;
    app::Settings* m_settings;
    app::ModelListModel* m_model = nullptr;

    QTabWidget* m_tabs = nullptr;
    QListView* m_localList = nullptr;
    QLabel* m_details = nullptr;
    QLineEdit* m_query = nullptr;
    QListWidget* m_repos = nullptr;
    QTreeWidget* m_options = nullptr;
    QTreeWidget* m_transfers = nullptr;
    QPushButton* m_download = nullptr;
    QList<app::QuantOption> m_shownOptions;
    QString m_shownRepo;
    QString m_shownArchitecture; // from the hub's GGUF metadata; empty until (or unless) known
    quint64 m_searchTicket = 0;
    quint64 m_filesTicket = 0;
    quint64 m_detailsTicket = 0;
    QHash<quint64, int> m_transferRows;
};

} // namespace hearth::ui
