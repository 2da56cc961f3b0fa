// The models page: the local library (load, import, delete, details, a fit badge per model) and
// the Hugging Face hub browser (the starter list with size, license and notes; search; every GGUF
// quantization of a repo with a fit badge or a "won't run here" mark and a "Vision" mark where
// the repo has a projector, downloaded with the model; downloads kept across restarts; hub errors
// shown inline with Retry; "Download vision projector" for a hub model that lacks it). Badges come from the shared estimate
// (services/memory_estimate.h) for the current load settings and devices.
#pragma once

#include "status_level.h"
#include "services/device_probe.h"
#include "services/download_manager.h"
#include "services/engine_host.h"
#include "services/hub_client.h"
#include "services/hub_downloads.h"
#include "services/model_library.h"
#include "services/model_list_model.h"
#include "services/settings.h"

#include "hearth/devices.h"

#include <QHash>
#include <QThreadPool>
#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;
class QListView;
class QTabWidget;
class QListWidget;
class QPushButton;
class QTimer;
class QTreeWidget;

namespace hearth::ui {

class TransferList;

class ModelsView : public QWidget {
    Q_OBJECT
public:
    // Keeps the download queue in <models folder>/.hearth-downloads.json unless `downloads`
    // has a queue file already, and restarts what it holds.
    // `devices`: the app's probe (null: one of the view's own, for a page shown alone).
    ModelsView(app::ModelLibrary* library, app::EngineHost* engine, app::HubClient* hub,
               app::DownloadManager* downloads, app::Settings* settings, app::DeviceProbe* devices = nullptr,
               QWidget* parent = nullptr);
    ~ModelsView() override; // waits for the badge work still running

    void loadSelected();
    // The library entry chosen in the list ("" when none).
    QString selectedPath() const;
    void search(const QString& query);
    // Lists a hub repository's GGUF files grouped by quantization, with fit badges.
    void showRepo(const QString& repo);
    void showLibraryTab();
    void showDiscoverTab();

    // The devices the badges are computed for (found in the background at start; tests and the
    // settings page's SettingsView::devicesChanged set them).
    void setDevices(const DeviceList& devices);
    // RAM the badges count on; 0 (the default): what the system has available at the time.
    void setAvailableRam(qint64 bytes);

    // Library: select a model, its list badge (empty until computed), and Delete, which asks
    // ("Delete model X (N GB) from disk?" for a file in the models folder, "Remove X from the
    // library? The file stays at PATH" for one referenced elsewhere) and does exactly that,
    // unloading the model first when it is the loaded one.
    bool selectModel(const QString& path);
    QString libraryFitBadge(const QString& path) const;
    void deleteSelected();

    // Quantization options shown for the current repository (for tests).
    int shownOptionCount() const { return int(m_shownOptions.size()); }
    // Why the shown option will not run here (empty: it should), and whether Download is on for
    // the current option (for tests).
    QString optionWontRunReason(int optionRow) const;
    QString optionFitBadge(int optionRow) const;
    void selectOption(int optionRow);
    bool canDownloadSelected() const;
    // Whether the shown option comes with a vision projector (its "Vision" mark).
    bool optionHasVision(int optionRow) const;
    // Library: whether the selected model is offered its vision projector from the hub (a model
    // downloaded from a repository with one, without one beside it), and fetching it.
    bool canFetchProjector() const;
    void fetchProjectorForSelected();
    // The hub error shown on the Discover page (empty when none) and its Retry.
    QString hubError() const;
    void retryHub();
    // Rows in the download list, and a row's download id.
    int transferCount() const;
    quint64 transferId(int row) const;

Q_SIGNALS:
    void statusMessage(const QString& text, hearth::ui::StatusLevel level);
    // A line said with statusMessage no longer holds (the listing it announced ended).
    void statusWithdrawn(const QString& text);

private:
    // The tabs, built with their widgets and their connections (models_view_library.cpp,
    // models_view_hub.cpp).
    QWidget* buildLibraryTab(QWidget* parent);
    QWidget* buildDiscoverTab(QWidget* parent);
    void showDetails();
    void download(int optionRow);
    void fillOptions();
    void fillStarters();
    void updateDownloadButton();
    void updateProjectorOffer();
    void scheduleBadges();
    void computeLibraryBadges();
    void showHubError(const QString& message);
    app::LoadSettings currentLoadSettings() const { return m_settings->loadSettings(); }
    qint64 ram() const;

    app::ModelLibrary* m_library;
    app::EngineHost* m_engine;
    app::HubClient* m_hub;
    app::DownloadManager* m_downloads;
    app::Settings* m_settings;
    app::ModelListModel* m_model = nullptr;
    app::HubDownloads* m_hubDownloads = nullptr;

    QTabWidget* m_tabs = nullptr;
    QListView* m_localList = nullptr;
    QLabel* m_details = nullptr;
    QLineEdit* m_query = nullptr;
    QListWidget* m_repos = nullptr;
    QTreeWidget* m_options = nullptr;
    TransferList* m_transfers = nullptr; // the download list with Pause, Resume and Cancel
    QPushButton* m_download = nullptr;
    QPushButton* m_fetchProjector = nullptr; // library: "Download vision projector"
    QLabel* m_projectorNote = nullptr;       // hub: the repository's projector
    QCheckBox* m_withProjector = nullptr;    // hub: also download it
    QWidget* m_errorRow = nullptr;
    QLabel* m_hubError = nullptr;
    QList<app::QuantOption> m_shownOptions;
    QString m_shownRepo;
    app::HubModelDetails m_shownDetails; // from the hub's GGUF metadata; empty until (or unless) known
    QString m_listingStatus;             // "Listing <repo>…" while the hub is asked
    QString m_lastQuery;                 // what Retry repeats: a search, or m_shownRepo when empty
    quint64 m_searchTicket = 0;
    quint64 m_filesTicket = 0;
    quint64 m_detailsTicket = 0;

    DeviceList m_devices;
    bool m_devicesSet = false;
    qint64 m_ram = 0;
    QThreadPool m_badgeWork; // one thread: library badges read each file's header
    QTimer* m_badgeTimer = nullptr;
    quint64 m_badgeGeneration = 0;
};

} // namespace hearth::ui
