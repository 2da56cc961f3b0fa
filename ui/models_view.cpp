// Models page: the library list with details, fit badges and Load/Import/Delete, and the hub
// browser with the starter list, quantization choice, fit badges, "won't run here" marks (the
// architecture or weight type this build cannot run: Download stays off for those), "Vision"
// marks and the projector downloaded with the model (HubDownloads does the downloading), inline
// hub errors with Retry and a download list (kept across restarts) with progress, speed and ETA.
#include "models_view.h"

#include "count_text.h"
#include "model_card_delegate.h"
#include "services/memory_estimate.h"
#include "services/model_list_model.h"
#include "services/model_support.h"

#include <QApplication>
#include <QCheckBox>
#include <QFileInfo>
#include <QPointer>
#include <QTimer>

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QListWidget>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <utility>

namespace hearth::ui {

namespace {

// A hub repository's card badges, from what the hub says of it: takes images (its pipeline or
// tags say image-text-to-text), gated (its files need an accepted license).
QStringList hubBadges(const app::HubModel& m) {
    QStringList badges;
    if (m.pipelineTag == QStringLiteral("image-text-to-text") || m.tags.contains(QStringLiteral("image-text-to-text")))
        badges << ModelsView::tr("Vision");
    if (m.gated) badges << ModelsView::tr("Gated");
    return badges;
}

} // namespace

ModelsView::ModelsView(app::ModelLibrary* library, app::EngineHost* engine, app::HubClient* hub,
                       app::DownloadManager* downloads, app::Settings* settings, app::DeviceProbe* devices,
                       QWidget* parent)
    : QWidget(parent), m_library(library), m_engine(engine), m_hub(hub), m_downloads(downloads),
      m_settings(settings) {
    auto* tabs = new QTabWidget(this);
    m_tabs = tabs;
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(tabs);

    // Library tab.
    auto* local = new QWidget(tabs);
    m_model = new app::ModelListModel(m_library, this);
    m_localList = new QListView(local);
    m_localList->setModel(m_model);
    m_localList->setItemDelegate(new ModelCardDelegate(m_localList)); // a card per model
    m_localList->setMouseTracking(true);
    // Something is always selected when the library has models, so its details show.
    auto selectFirst = [this] {
        if (!m_localList->currentIndex().isValid() && m_model->rowCount() > 0)
            m_localList->setCurrentIndex(m_model->index(0, 0));
    };
    connect(m_model, &QAbstractItemModel::modelReset, this, selectFirst);
    connect(m_model, &QAbstractItemModel::rowsInserted, this, selectFirst);
    m_details = new QLabel(local);
    m_details->setWordWrap(true);
    m_details->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* load = new QPushButton(tr("Load"), local);
    auto* import = new QPushButton(tr("Import..."), local);
    auto* remove = new QPushButton(tr("Delete"), local);
    auto* refresh = new QPushButton(tr("Refresh"), local);
    m_fetchProjector = new QPushButton(tr("Download vision projector"), local);
    m_fetchProjector->setObjectName(QStringLiteral("downloadProjector"));
    m_fetchProjector->setToolTip(tr("Fetch the image projector (mmproj file) from the model's hub repository, "
                                    "beside the model: the model then takes images in chats"));
    m_fetchProjector->hide();
    auto* localButtons = new QHBoxLayout();
    localButtons->addWidget(load);
    localButtons->addWidget(import);
    localButtons->addWidget(remove);
    localButtons->addWidget(m_fetchProjector);
    localButtons->addStretch(1);
    localButtons->addWidget(refresh);
    auto* localSplit = new QSplitter(local);
    localSplit->addWidget(m_localList);
    localSplit->addWidget(m_details);
    localSplit->setSizes({360, 400});
    auto* localLayout = new QVBoxLayout(local);
    localLayout->addWidget(new QLabel(tr("Models in %1").arg(QDir::toNativeSeparators(m_library->modelsFolder())), local));
    localLayout->addWidget(localSplit, 1);
    localLayout->addLayout(localButtons);
    tabs->addTab(local, tr("Library"));

    // Hub tab.
    auto* hubPage = new QWidget(tabs);
    m_query = new QLineEdit(hubPage);
    m_query->setPlaceholderText(tr("Search Hugging Face for GGUF models, e.g. qwen2.5 instruct"));
    m_repos = new QListWidget(hubPage);
    m_repos->setObjectName(QStringLiteral("hubRepos"));
    m_repos->setWordWrap(true);
    m_repos->setItemDelegate(new ModelCardDelegate(m_repos)); // repositories and starters as cards
    m_repos->setMouseTracking(true);
    // Hub errors (offline, 401, no such repository) stay here until the next success or Retry.
    m_errorRow = new QWidget(hubPage);
    m_errorRow->setObjectName(QStringLiteral("hubErrorRow"));
    m_hubError = new QLabel(m_errorRow);
    m_hubError->setObjectName(QStringLiteral("hubError"));
    m_hubError->setWordWrap(true);
    m_hubError->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_hubError->setStyleSheet(QStringLiteral("color:#c0392b"));
    auto* retry = new QPushButton(tr("Retry"), m_errorRow);
    retry->setObjectName(QStringLiteral("hubRetry"));
    auto* errorLayout = new QHBoxLayout(m_errorRow);
    errorLayout->setContentsMargins(0, 0, 0, 0);
    errorLayout->addWidget(m_hubError, 1);
    errorLayout->addWidget(retry);
    m_errorRow->hide();
    connect(retry, &QPushButton::clicked, this, &ModelsView::retryHub);
    m_options = new QTreeWidget(hubPage);
    m_options->setObjectName(QStringLiteral("hubOptions"));
    m_options->setHeaderLabels({tr("Quantization"), tr("Size"), tr("Fit"), tr("File"), tr("Images")});
    m_options->headerItem()->setToolTip(2, tr("Estimated for the load settings (device, GPU layers, context, KV type) "
                                              "from the file size: the settings page shows the exact estimate once "
                                              "the file is here"));
    m_options->setRootIsDecorated(false);
    m_projectorNote = new QLabel(hubPage);
    m_projectorNote->setObjectName(QStringLiteral("hubProjector"));
    m_projectorNote->setWordWrap(true);
    m_withProjector = new QCheckBox(tr("Also download the vision projector"), hubPage);
    m_withProjector->setObjectName(QStringLiteral("withProjector"));
    m_withProjector->setChecked(true);
    m_projectorNote->hide();
    m_withProjector->hide();
    auto* get = new QPushButton(tr("Download"), hubPage);
    m_download = get;
    get->setEnabled(false);
    m_transfers = new QTreeWidget(hubPage);
    m_transfers->setObjectName(QStringLiteral("transfers"));
    m_transfers->setHeaderLabels({tr("Download"), tr("State"), tr("Progress"), tr("Speed"), tr("ETA")});
    m_transfers->setRootIsDecorated(false);
    m_transfers->setMaximumHeight(140);
    auto* pause = m_pause = new QPushButton(tr("Pause"), hubPage);
    auto* resume = m_resume = new QPushButton(tr("Resume"), hubPage);
    auto* cancel = m_cancel = new QPushButton(tr("Cancel"), hubPage);
    updateTransferButtons();
    auto* hubSplit = new QSplitter(hubPage);
    hubSplit->addWidget(m_repos);
    hubSplit->addWidget(m_options);
    hubSplit->setSizes({300, 460});
    auto* transferButtons = new QHBoxLayout();
    transferButtons->addWidget(get);
    transferButtons->addWidget(m_withProjector);
    transferButtons->addStretch(1);
    transferButtons->addWidget(pause);
    transferButtons->addWidget(resume);
    transferButtons->addWidget(cancel);
    auto* hubLayout = new QVBoxLayout(hubPage);
    hubLayout->addWidget(m_query);
    hubLayout->addWidget(m_errorRow);
    hubLayout->addWidget(hubSplit, 1);
    hubLayout->addWidget(m_projectorNote);
    hubLayout->addLayout(transferButtons);
    hubLayout->addWidget(m_transfers);
    tabs->addTab(hubPage, tr("Discover"));

    // Starter list until the first search.
    fillStarters();

    m_hubDownloads = new app::HubDownloads(m_hub, m_downloads, m_library, this);
    connect(m_hubDownloads, &app::HubDownloads::enqueued, this, [this](quint64 id, const QString& name) {
        if (!m_transferRows.contains(id)) addTransferRow(id, name, app::DownloadState::Queued);
    });
    connect(m_fetchProjector, &QPushButton::clicked, this, &ModelsView::fetchProjectorForSelected);
    connect(m_localList->selectionModel(), &QItemSelectionModel::currentChanged, this, &ModelsView::showDetails);
    connect(m_localList, &QListView::doubleClicked, this, &ModelsView::loadSelected);
    connect(load, &QPushButton::clicked, this, &ModelsView::loadSelected);
    connect(refresh, &QPushButton::clicked, m_library, &app::ModelLibrary::refresh);
    connect(import, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Import model"), QString(),
                                                          tr("GGUF models (*.gguf)"));
        if (!path.isEmpty()) m_library->importModel(path, app::ModelLibrary::ImportMode::Reference);
    });
    remove->setObjectName(QStringLiteral("deleteModel"));
    connect(remove, &QPushButton::clicked, this, &ModelsView::deleteSelected);
    connect(m_library, &app::ModelLibrary::importFailed, this,
            [this](quint64, const QString& message) { Q_EMIT statusMessage(message, StatusLevel::Error); });

    connect(m_query, &QLineEdit::returnPressed, this, [this] { search(m_query->text()); });
    connect(m_repos, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { showRepo(item->data(Qt::UserRole).toString()); });
    connect(get, &QPushButton::clicked, this, [this] {
        const QModelIndex i = m_options->currentIndex();
        if (i.isValid()) download(i.row());
    });
    connect(m_options, &QTreeWidget::currentItemChanged, this, &ModelsView::updateDownloadButton);
    auto selectedTransfer = [this]() -> quint64 {
        QTreeWidgetItem* item = m_transfers->currentItem();
        return item ? item->data(0, Qt::UserRole).toULongLong() : 0;
    };
    connect(pause, &QPushButton::clicked, this, [=, this] { if (auto id = selectedTransfer()) m_downloads->pause(id); });
    connect(resume, &QPushButton::clicked, this, [=, this] { if (auto id = selectedTransfer()) m_downloads->resume(id); });
    connect(cancel, &QPushButton::clicked, this, [=, this] { if (auto id = selectedTransfer()) m_downloads->cancel(id); });
    connect(m_transfers, &QTreeWidget::currentItemChanged, this, &ModelsView::updateTransferButtons);

    connect(m_hub, &app::HubClient::searchFinished, this, [this](quint64 ticket, const QList<app::HubModel>& models) {
        if (ticket != m_searchTicket) return;
        m_errorRow->hide();
        m_repos->clear();
        for (const app::HubModel& m : models) {
            auto* item = new QListWidgetItem(tr("%1  (%2)").arg(m.id, countText(m.downloads, tr("download"), tr("downloads"))), m_repos);
            item->setData(Qt::UserRole, m.id);
            QStringList detail{countText(m.downloads, tr("download"), tr("downloads")), countText(m.likes, tr("like"), tr("likes"))};
            if (m.lastModified.isValid()) detail << tr("updated %1").arg(QLocale().toString(m.lastModified.date(), QLocale::ShortFormat));
            item->setData(ModelCardDelegate::TitleRole, m.id);
            item->setData(ModelCardDelegate::DetailRole, detail.join(QStringLiteral(" · ")));
            item->setData(app::ModelListModel::BadgesRole, hubBadges(m));
        }
        Q_EMIT statusMessage(countText(models.size(), tr("repository"), tr("repositories")), StatusLevel::Info);
    });
    connect(m_hub, &app::HubClient::filesListed, this,
            [this](quint64 ticket, const QString& repo, const QList<app::HubFile>& files) {
                if (ticket != m_filesTicket) return;
                if (!m_listingStatus.isEmpty()) Q_EMIT statusWithdrawn(std::exchange(m_listingStatus, QString()));
                m_errorRow->hide();
                m_shownRepo = repo;
                m_shownOptions = app::HubClient::groupByQuantization(files);
                fillOptions();
            });
    connect(m_hub, &app::HubClient::detailsFetched, this,
            [this](quint64 ticket, const QString&, const app::HubModelDetails& details) {
                if (ticket != m_detailsTicket) return;
                m_shownDetails = details;
                fillOptions();
            });
    connect(m_hub, &app::HubClient::failed, this, [this](quint64 ticket, const QString& message) {
        // Without the hub's metadata the architecture is checked when the file loads.
        if (ticket == m_detailsTicket) return;
        if (ticket != m_searchTicket && ticket != m_filesTicket) return; // an answer nobody waits for
        if (ticket == m_filesTicket && !m_listingStatus.isEmpty())
            Q_EMIT statusWithdrawn(std::exchange(m_listingStatus, QString()));
        showHubError(message);
        Q_EMIT statusMessage(tr("Hub: %1").arg(message), StatusLevel::Error);
    });

    connect(m_downloads, &app::DownloadManager::stateChanged, this, [this](quint64 id, app::DownloadState state) {
        if (!m_transferRows.contains(id)) {
            // Enqueued elsewhere (the welcome page, a restored queue): listed here too.
            const app::DownloadRequest r = m_downloads->request(id);
            if (r.destination.isEmpty()) return;
            addTransferRow(id, r.displayName.isEmpty() ? QFileInfo(r.destination).fileName() : r.displayName, state);
        }
        if (QTreeWidgetItem* item = m_transfers->topLevelItem(m_transferRows.value(id)))
            item->setText(1, app::downloadStateName(state));
        updateTransferButtons();
    });
    connect(m_downloads, &app::DownloadManager::progress, this,
            [this](quint64 id, qint64 received, qint64 total, double speed, int eta) {
                if (!m_transferRows.contains(id)) return;
                QTreeWidgetItem* item = m_transfers->topLevelItem(m_transferRows.value(id));
                if (!item) return;
                item->setText(2, total > 0 ? QStringLiteral("%1 %").arg(100.0 * double(received) / double(total), 0, 'f', 1)
                                           : QLocale().formattedDataSize(received));
                item->setText(3, QLocale().formattedDataSize(qint64(speed)) + tr("/s"));
                item->setText(4, eta >= 0 ? QStringLiteral("%1:%2").arg(eta / 60).arg(eta % 60, 2, 10, QLatin1Char('0')) : QString());
            });
    connect(m_downloads, &app::DownloadManager::completed, this, [this](quint64, const QString& path) {
        Q_EMIT statusMessage(tr("Downloaded and verified %1").arg(path), StatusLevel::Info);
        m_library->refresh();
        updateProjectorOffer(); // a projector that arrived but pairs with nothing is not offered again
    });
    connect(m_downloads, &app::DownloadManager::failed, this,
            [this](quint64 id, const QString& message) {
                if (QTreeWidgetItem* item = m_transfers->topLevelItem(m_transferRows.value(id, -1))) item->setToolTip(1, message);
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
        if (!m_transferRows.contains(id))
            addTransferRow(id, r.displayName.isEmpty() ? QFileInfo(r.destination).fileName() : r.displayName,
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

// Each usable library model's header is read off the GUI thread; the newest results win.
void ModelsView::computeLibraryBadges() {
    const quint64 generation = m_badgeGeneration;
    QList<app::ModelEntry> entries = m_library->models();
    const app::LoadSettings ls = currentLoadSettings();
    const DeviceList devices = m_devices;
    const qint64 ramBytes = ram();
    m_badgeWork.start([this, generation, entries, ls, devices, ramBytes] {
        QHash<QString, QString> badges;
        for (const app::ModelEntry& e : entries) {
            if (!e.isUsable()) continue;
            app::LoadSettings withProjector = ls;
            withProjector.projectorPath = e.projectorPath; // loaded with it, so counted
            const app::MemoryPlan plan = app::planMemory(e.path, withProjector, devices, ramBytes);
            badges.insert(e.path, app::fitBadge(plan, plan.error.isEmpty() ? app::wontRunReason(plan.info) : QString()));
        }
        QMetaObject::invokeMethod(this, [this, generation, badges] {
            if (generation != m_badgeGeneration) return;
            m_model->setFitBadges(badges);
            showDetails();
        }, Qt::QueuedConnection);
    });
}

QString ModelsView::libraryFitBadge(const QString& path) const { return m_model->fitBadge(path); }

bool ModelsView::selectModel(const QString& path) {
    const int row = m_model->rowOf(path);
    if (row < 0) return false;
    m_localList->setCurrentIndex(m_model->index(row, 0));
    return true;
}

void ModelsView::deleteSelected() {
    const QModelIndex i = m_localList->currentIndex();
    const app::ModelEntry* e = i.isValid() ? m_model->entry(i.row()) : nullptr;
    if (!e) return;
    const app::ModelEntry entry = *e;
    const app::ModelLibrary::Removal removal = m_library->removalFor(entry.path);
    const bool loaded = m_engine->isLoaded() &&
                        QFileInfo(m_engine->model().path).absoluteFilePath() == QFileInfo(entry.path).absoluteFilePath();
    QString question = removal.deletesFiles
                           ? tr("Delete model %1 (%2) from disk?")
                                 .arg(entry.displayName(), QLocale().formattedDataSize(removal.bytes))
                           : tr("Remove %1 from the library? The file stays at %2.")
                                 .arg(entry.displayName(), QDir::toNativeSeparators(entry.path));
    const qsizetype parts = removal.files.size() - (removal.projector.isEmpty() ? 0 : 1);
    if (removal.deletesFiles && parts > 1) question += tr(" All %1 parts of the split model are deleted.").arg(parts);
    if (!removal.projector.isEmpty())
        question += tr(" Its vision projector %1 goes too: no other model uses it.")
                        .arg(QFileInfo(removal.projector).fileName());
    if (loaded) question += tr("\n\nIt is loaded now: it will be unloaded first.");
    QMessageBox box(QMessageBox::Question, removal.deletesFiles ? tr("Delete model") : tr("Remove from library"),
                    question, QMessageBox::Yes | QMessageBox::No, this);
    box.setObjectName(QStringLiteral("deleteConfirmation"));
    box.setDefaultButton(QMessageBox::No);
    if (box.exec() != QMessageBox::Yes) return;
    // The engine maps the file: let go of it first (on Linux the mapping would survive the
    // deletion, elsewhere the deletion would fail).
    if (loaded) m_engine->unloadModel();
    QString error;
    if (!m_library->removeModel(entry.path, &error)) {
        Q_EMIT statusMessage(error, StatusLevel::Error);
        return;
    }
    Q_EMIT statusMessage(removal.deletesFiles ? tr("Deleted %1").arg(QDir::toNativeSeparators(entry.path))
                                              : tr("Removed %1 from the library").arg(entry.displayName()),
                         StatusLevel::Info);
}

void ModelsView::showHubError(const QString& message) {
    m_hubError->setText(tr("The hub did not answer: %1").arg(message));
    m_errorRow->show();
}

QString ModelsView::hubError() const { return m_errorRow->isHidden() ? QString() : m_hubError->text(); }

void ModelsView::retryHub() {
    m_errorRow->hide();
    if (!m_lastQuery.isEmpty()) search(m_lastQuery);
    else if (!m_shownRepo.isEmpty()) showRepo(m_shownRepo);
}

int ModelsView::transferCount() const { return m_transfers->topLevelItemCount(); }

quint64 ModelsView::transferId(int row) const {
    QTreeWidgetItem* item = m_transfers->topLevelItem(row);
    return item ? item->data(0, Qt::UserRole).toULongLong() : 0;
}

void ModelsView::updateTransferButtons() {
    const QTreeWidgetItem* item = m_transfers->currentItem();
    const app::DownloadActions can = item ? app::downloadActions(m_downloads->state(item->data(0, Qt::UserRole).toULongLong()))
                                          : app::DownloadActions{};
    m_pause->setEnabled(can.pause);
    m_resume->setEnabled(can.resume);
    m_cancel->setEnabled(can.cancel);
}

void ModelsView::addTransferRow(quint64 id, const QString& name, app::DownloadState state) {
    auto* item = new QTreeWidgetItem(m_transfers);
    item->setText(0, name);
    item->setText(1, app::downloadStateName(state));
    item->setData(0, Qt::UserRole, id);
    m_transferRows.insert(id, m_transfers->indexOfTopLevelItem(item));
}

// The curated starters with what their file says: size, license and notes, and a fit badge.
void ModelsView::fillStarters() {
    if (m_searchTicket != 0) return; // a search replaced the list
    const int current = m_repos->currentRow();
    m_repos->clear();
    const app::LoadSettings ls = currentLoadSettings();
    const qint64 ramBytes = ram();
    QLocale l;
    for (const app::StarterModel& s : app::ModelLibrary::starterModels()) {
        const QString reason = app::wontRunReason(s.quantization, s.architecture);
        const app::MemoryPlan plan = app::planMemoryFromSize(s.approxSizeBytes, app::parseParameterCount(s.parameters),
                                                             0, ls, m_devices, ramBytes);
        const QString size = s.approxSizeBytes > 0 ? tr("~%1").arg(l.formattedDataSize(s.approxSizeBytes)) : tr("size unknown");
        auto* item = new QListWidgetItem(
            tr("%1  (%2, %3)\n%4 · %5 · %6\n%7")
                .arg(s.title, s.parameters, s.quantization, size,
                     s.license.isEmpty() ? tr("license: see the repository") : s.license,
                     app::fitBadge(plan, reason), s.notes),
            m_repos);
        item->setData(Qt::UserRole, s.repo);
        item->setToolTip(tr("%1\nLicense: %2\n%3").arg(s.repo, s.license, s.notes));
        item->setData(ModelCardDelegate::TitleRole, s.title);
        item->setData(ModelCardDelegate::DetailRole,
                      QStringList{s.parameters, s.quantization, size,
                                  s.license.isEmpty() ? tr("license: see the repository") : s.license}
                          .join(QStringLiteral(" · ")));
        item->setData(app::ModelListModel::FitRole, app::fitBadge(plan, reason));
        item->setData(ModelCardDelegate::NoteRole, s.notes);
    }
    if (current >= 0 && current < m_repos->count()) m_repos->setCurrentRow(current);
}

QString ModelsView::selectedPath() const {
    const QModelIndex i = m_localList->currentIndex();
    return i.isValid() ? i.data(app::ModelListModel::PathRole).toString() : QString();
}

void ModelsView::loadSelected() {
    const QModelIndex i = m_localList->currentIndex();
    if (!i.isValid()) {
        Q_EMIT statusMessage(tr("Choose a model in the list first"), StatusLevel::Warning);
        return;
    }
    const QString error = i.data(app::ModelListModel::ErrorRole).toString();
    if (!error.isEmpty()) {
        Q_EMIT statusMessage(error, StatusLevel::Error);
        return;
    }
    app::LoadSettings settings = m_settings->loadSettings();
    settings.projectorPath = i.data(app::ModelListModel::ProjectorRole).toString();
    m_engine->loadModel(i.data(app::ModelListModel::PathRole).toString(), settings);
}

void ModelsView::showLibraryTab() { m_tabs->setCurrentIndex(0); }

void ModelsView::showDiscoverTab() { m_tabs->setCurrentIndex(1); }

void ModelsView::search(const QString& query) {
    m_query->setText(query);
    m_lastQuery = query.trimmed();
    if (m_lastQuery.isEmpty()) { // an empty search brings the starter list back
        m_searchTicket = 0;
        m_errorRow->hide();
        fillStarters();
        return;
    }
    m_searchTicket = m_hub->searchModels(m_lastQuery);
}

void ModelsView::showDetails() {
    updateProjectorOffer();
    const QModelIndex i = m_localList->currentIndex();
    const app::ModelEntry* e = i.isValid() ? m_model->entry(i.row()) : nullptr;
    if (!e) {
        m_details->clear();
        return;
    }
    if (!e->isUsable()) {
        m_details->setText(tr("<b>%1</b><br>Cannot be used: %2").arg(e->fileName.toHtmlEscaped(), e->error.toHtmlEscaped()));
        return;
    }
    const QString fit = m_model->fitBadge(e->path);
    m_details->setText(tr("<b>%1</b><br>%2<br>architecture: %3<br>parameters: %4<br>quantization: %5<br>"
                          "training context: %6<br>layers: %7<br>file size: %8<br>memory at 4k context: %9<br>"
                          "chat template: %10<br>fit: %11")
                           .arg(e->displayName().toHtmlEscaped(), e->path.toHtmlEscaped(), e->architecture,
                                app::ModelLibrary::formatParameters(e->parameterCount), e->quantization)
                           .arg(e->contextLength)
                           .arg(e->layers)
                           .arg(QLocale().formattedDataSize(e->sizeBytes), QLocale().formattedDataSize(qint64(e->memoryBytes)),
                                e->hasChatTemplate ? tr("yes") : tr("none (ChatML is used)"),
                                fit.isEmpty() ? tr("estimating...") : fit.toHtmlEscaped()));
}

QString ModelsView::optionWontRunReason(int optionRow) const {
    if (optionRow < 0 || optionRow >= m_shownOptions.size()) return {};
    return app::wontRunReason(m_shownOptions[optionRow].quantization, m_shownDetails.architecture);
}

QString ModelsView::optionFitBadge(int optionRow) const {
    if (optionRow < 0 || optionRow >= m_shownOptions.size()) return {};
    const app::QuantOption& o = m_shownOptions[optionRow];
    // A projector loads with its model (the library pairs them): its weights count too.
    const app::MemoryPlan plan =
        app::planMemoryFromSize(o.totalSize + (o.hasProjector() ? o.projector.size : 0), quint64(std::max<qint64>(0, m_shownDetails.totalParameters)),
                                m_shownDetails.contextLength, currentLoadSettings(), m_devices, ram());
    return app::fitBadge(plan, optionWontRunReason(optionRow));
}

void ModelsView::selectOption(int optionRow) {
    m_options->setCurrentItem(m_options->topLevelItem(optionRow));
}

bool ModelsView::canDownloadSelected() const { return m_download->isEnabled(); }

bool ModelsView::optionHasVision(int optionRow) const {
    return optionRow >= 0 && optionRow < m_shownOptions.size() && m_shownOptions[optionRow].hasProjector();
}

void ModelsView::updateProjectorOffer() {
    const QModelIndex i = m_localList->currentIndex();
    const app::ModelEntry* e = i.isValid() ? m_model->entry(i.row()) : nullptr;
    const app::HubFile offer = e ? m_hubDownloads->projectorOffer(*e) : app::HubFile{};
    m_fetchProjector->setVisible(!offer.path.isEmpty());
    if (!offer.path.isEmpty())
        m_fetchProjector->setText(tr("Download vision projector (%1)").arg(QLocale().formattedDataSize(offer.size)));
}

bool ModelsView::canFetchProjector() const { return !m_fetchProjector->isHidden(); }

void ModelsView::fetchProjectorForSelected() {
    const QModelIndex i = m_localList->currentIndex();
    const app::ModelEntry* e = i.isValid() ? m_model->entry(i.row()) : nullptr;
    if (!e) return;
    const app::ModelOrigin origin = m_hubDownloads->originOf(e->path);
    if (m_hubDownloads->downloadProjectorFor(*e) == 0) {
        Q_EMIT statusMessage(tr("No vision projector to fetch for %1").arg(e->displayName()), StatusLevel::Warning);
        return;
    }
    Q_EMIT statusMessage(tr("Downloading the vision projector of %1 from %2").arg(e->displayName(), origin.repo),
                         StatusLevel::Info);
}

void ModelsView::fillOptions() {
    const int current = m_options->indexOfTopLevelItem(m_options->currentItem());
    m_options->clear();
    for (int row = 0; row < m_shownOptions.size(); ++row) {
        const app::QuantOption& o = m_shownOptions[row];
        auto* item = new QTreeWidgetItem(m_options);
        item->setText(0, o.quantization);
        item->setText(1, QLocale().formattedDataSize(o.totalSize));
        item->setText(3, o.isSplit() ? tr("%1 (%2 parts)").arg(o.name).arg(o.partCount) : o.name);
        if (o.hasProjector()) {
            // The projector's size counted beside the model's.
            item->setText(1, tr("%1 + %2").arg(QLocale().formattedDataSize(o.totalSize),
                                               QLocale().formattedDataSize(o.projector.size)));
            item->setToolTip(1, tr("Model %1, vision projector %2 (%3 together)")
                                    .arg(QLocale().formattedDataSize(o.totalSize),
                                         QLocale().formattedDataSize(o.projector.size),
                                         QLocale().formattedDataSize(o.totalSize + o.projector.size)));
            item->setText(4, tr("Vision"));
            item->setToolTip(4, tr("Takes images with the projector %1").arg(o.projector.path));
        }
        const QString reason = optionWontRunReason(row);
        item->setText(2, optionFitBadge(row));
        if (reason.isEmpty()) continue;
        // Kept in the list, greyed, with the reason; Download stays off for it.
        item->setToolTip(2, tr("This build of Hearth cannot run this file (%1).").arg(reason));
        for (int c = 0; c < item->columnCount(); ++c)
            item->setForeground(c, palette().brush(QPalette::Disabled, QPalette::Text));
    }
    m_options->header()->resizeSections(QHeaderView::ResizeToContents);
    // The repository's projector (each option names the same one unless folders differ).
    const auto withVision = std::find_if(m_shownOptions.begin(), m_shownOptions.end(),
                                         [](const app::QuantOption& o) { return o.hasProjector(); });
    if (withVision != m_shownOptions.end()) {
        m_projectorNote->setText(tr("Vision: this repository has an image projector, %1 (%2), downloaded beside the "
                                    "model so that it takes images in chats.")
                                     .arg(withVision->projector.path.section(QLatin1Char('/'), -1),
                                          QLocale().formattedDataSize(withVision->projector.size)));
    }
    m_projectorNote->setVisible(withVision != m_shownOptions.end());
    m_withProjector->setVisible(withVision != m_shownOptions.end());
    if (current >= 0 && current < m_options->topLevelItemCount()) selectOption(current);
    updateDownloadButton();
}

void ModelsView::updateDownloadButton() {
    const int row = m_options->indexOfTopLevelItem(m_options->currentItem());
    const QString reason = optionWontRunReason(row);
    m_download->setEnabled(row >= 0 && row < m_shownOptions.size() && reason.isEmpty());
    m_download->setToolTip(reason.isEmpty() ? QString() : tr("Won't run here: %1").arg(reason));
}

void ModelsView::showRepo(const QString& repo) {
    m_options->clear();
    m_shownOptions.clear();
    m_shownDetails = {};
    m_shownRepo = repo;
    m_lastQuery.clear();
    updateDownloadButton();
    m_filesTicket = m_hub->listFiles(repo);
    m_detailsTicket = m_hub->fetchDetails(repo);
    m_listingStatus = tr("Listing %1…").arg(repo);
    Q_EMIT statusMessage(m_listingStatus, StatusLevel::Info);
}

void ModelsView::download(int optionRow) {
    if (optionRow < 0 || optionRow >= m_shownOptions.size()) return;
    if (const QString reason = optionWontRunReason(optionRow); !reason.isEmpty()) {
        Q_EMIT statusMessage(tr("Won't run here: %1").arg(reason), StatusLevel::Error);
        return;
    }
    // Rows for what is queued come from HubDownloads::enqueued.
    const app::QuantOption& o = m_shownOptions[optionRow];
    if (m_hubDownloads->downloadOption(m_shownRepo, o, m_withProjector->isChecked()).isEmpty())
        Q_EMIT statusMessage(tr("%1 is in the models folder or being downloaded already").arg(o.name), StatusLevel::Info);
}

} // namespace hearth::ui
