// Models page: puts the Library tab (models_view_library.cpp) and the Discover tab with its
// download list (models_view_hub.cpp, TransferList) together, keeps the fit badges following the
// load settings, the devices and the library, and restores the downloads an earlier run left.
#include "models_view.h"

#include "transfer_list.h"

#include "services/memory_estimate.h"

#include <QDir>
#include <QFileInfo>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace hearth::ui {

ModelsView::ModelsView(app::ModelLibrary* library, app::EngineHost* engine, app::HubClient* hub,
                       app::DownloadManager* downloads, app::Settings* settings, app::DeviceProbe* devices,
                       QWidget* parent)
    : QWidget(parent), m_library(library), m_engine(engine), m_hub(hub), m_downloads(downloads),
      m_settings(settings) {
    auto* tabs = new QTabWidget(this);
    m_tabs = tabs;
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(tabs);
    tabs->addTab(buildLibraryTab(tabs), tr("Library"));
    tabs->addTab(buildDiscoverTab(tabs), tr("Discover"));

    // Starter list until the first search.
    fillStarters();

    m_hubDownloads = new app::HubDownloads(m_hub, m_downloads, m_library, this);
    // Rows for what is queued here, and what downloads say to the page (the list follows them).
    connect(m_hubDownloads, &app::HubDownloads::enqueued, this, [this](quint64 id, const QString& name) {
        m_transfers->addTransfer(id, name, app::DownloadState::Queued);
    });
    connect(m_downloads, &app::DownloadManager::completed, this, [this](quint64, const QString& path) {
        Q_EMIT statusMessage(tr("Downloaded and verified %1").arg(path), StatusLevel::Info);
        m_library->refresh();
        updateProjectorOffer(); // a projector that arrived but pairs with nothing is not offered again
    });
    connect(m_downloads, &app::DownloadManager::failed, this, [this](quint64, const QString& message) {
        Q_EMIT statusMessage(tr("Download failed: %1").arg(message), StatusLevel::Error);
    });

    // Fit badges follow the load settings, the devices and the library.
    m_badgeWork.setMaxThreadCount(1);
    m_badgeTimer = new QTimer(this);
    m_badgeTimer->setSingleShot(true);
    m_badgeTimer->setInterval(50);
    connect(m_badgeTimer, &QTimer::timeout, this, [this] {
        computeLibraryBadges();
        fillOptions();
        fillStarters();
        showDetails();
    });
    connect(m_library, &app::ModelLibrary::modelsChanged, this, &ModelsView::scheduleBadges);
    connect(m_settings, &app::Settings::changed, this, [this](const QString& key) {
        if (key.startsWith(QStringLiteral("load/"))) scheduleBadges();
    });
    // The devices come from the probe service (a GPU driver can take a while to answer).
    if (!devices) devices = new app::DeviceProbe(this);
    devices->whenReady(this, [this, devices] {
        if (!m_devicesSet) setDevices(devices->devices());
    });
    scheduleBadges();

    // Downloads left unfinished by an earlier run continue (paused ones wait for Resume).
    if (m_downloads->queueFile().isEmpty())
        m_downloads->setQueueFile(QDir(m_library->modelsFolder()).filePath(QStringLiteral(".hearth-downloads.json")));
    QString queueError;
    for (quint64 id : m_downloads->restoreQueue(&queueError)) {
        const app::DownloadRequest r = m_downloads->request(id);
        m_transfers->addTransfer(id, r.displayName.isEmpty() ? QFileInfo(r.destination).fileName() : r.displayName,
                                 m_downloads->state(id));
    }
    if (!queueError.isEmpty()) Q_EMIT statusMessage(queueError, StatusLevel::Error);
}

ModelsView::~ModelsView() {
    m_badgeWork.waitForDone();
}

void ModelsView::setDevices(const DeviceList& devices) {
    m_devices = devices;
    m_devicesSet = true;
    scheduleBadges();
}

void ModelsView::setAvailableRam(qint64 bytes) {
    m_ram = std::max<qint64>(0, bytes);
    scheduleBadges();
}

qint64 ModelsView::ram() const { return m_ram > 0 ? m_ram : app::availableRamBytes(); }

void ModelsView::scheduleBadges() {
    ++m_badgeGeneration; // results of work started before are stale
    m_badgeTimer->start();
}

void ModelsView::showLibraryTab() { m_tabs->setCurrentIndex(0); }

void ModelsView::showDiscoverTab() { m_tabs->setCurrentIndex(1); }

int ModelsView::transferCount() const { return m_transfers->transferCount(); }

quint64 ModelsView::transferId(int row) const { return m_transfers->transferId(row); }

} // namespace hearth::ui
