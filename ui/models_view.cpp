// Models page: the library list with details and Load/Import/Delete, and the hub browser with
// quantization choice, fit badges, "won't run here" marks (the architecture or weight type this
// build cannot run: Download stays off for those) and a download list with progress, speed and ETA.
#include "models_view.h"

#include "services/model_support.h"

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

namespace hearth::ui {

qint64 availableRamBytes() {
    QFile f(QStringLiteral("/proc/meminfo"));
    if (!f.open(QIODevice::ReadOnly)) return 0;
    const QList<QByteArray> lines = f.readAll().split('\n');
    for (const QByteArray& line : lines)
        if (line.startsWith("MemAvailable:")) return line.mid(13).trimmed().split(' ').value(0).toLongLong() * 1024;
    return 0;
}

QString fitBadge(qint64 bytes, qint64 availableBytes) {
    if (availableBytes <= 0) return QObject::tr("unknown fit");
    // Weights plus a KV cache and compute buffers of roughly a tenth more.
    const double need = double(bytes) * 1.1 + 256.0 * 1024 * 1024;
    if (need <= 0.8 * double(availableBytes)) return QObject::tr("fits in RAM (CPU)");
    if (need <= double(availableBytes)) return QObject::tr("tight: close other apps");
    return QObject::tr("won't fit");
}

ModelsView::ModelsView(app::ModelLibrary* library, app::EngineHost* engine, app::HubClient* hub,
                       app::DownloadManager* downloads, app::Settings* settings, QWidget* parent)
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
    auto* localButtons = new QHBoxLayout();
    localButtons->addWidget(load);
    localButtons->addWidget(import);
    localButtons->addWidget(remove);
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
    m_options = new QTreeWidget(hubPage);
    m_options->setObjectName(QStringLiteral("hubOptions"));
    m_options->setHeaderLabels({tr("Quantization"), tr("Size"), tr("Fit"), tr("File")});
    m_options->setRootIsDecorated(false);
    auto* get = new QPushButton(tr("Download"), hubPage);
    m_download = get;
    get->setEnabled(false);
    m_transfers = new QTreeWidget(hubPage);
    m_transfers->setHeaderLabels({tr("Download"), tr("State"), tr("Progress"), tr("Speed"), tr("ETA")});
    m_transfers->setRootIsDecorated(false);
    m_transfers->setMaximumHeight(140);
    auto* pause = new QPushButton(tr("Pause"), hubPage);
    auto* resume = new QPushButton(tr("Resume"), hubPage);
    auto* cancel = new QPushButton(tr("Cancel"), hubPage);
    auto* hubSplit = new QSplitter(hubPage);
    hubSplit->addWidget(m_repos);
    hubSplit->addWidget(m_options);
    hubSplit->setSizes({300, 460});
    auto* transferButtons = new QHBoxLayout();
    transferButtons->addWidget(get);
    transferButtons->addStretch(1);
    transferButtons->addWidget(pause);
    transferButtons->addWidget(resume);
    transferButtons->addWidget(cancel);
    auto* hubLayout = new QVBoxLayout(hubPage);
    hubLayout->addWidget(m_query);
    hubLayout->addWidget(hubSplit, 1);
    hubLayout->addLayout(transferButtons);
    hubLayout->addWidget(m_transfers);
    tabs->addTab(hubPage, tr("Discover"));

    // Starter list until the first search.
    for (const app::StarterModel& s : app::ModelLibrary::starterModels()) {
        auto* item = new QListWidgetItem(QStringLiteral("%1  (%2, %3)").arg(s.title, s.parameters, s.quantization), m_repos);
        item->setData(Qt::UserRole, s.repo);
    }

    connect(m_localList->selectionModel(), &QItemSelectionModel::currentChanged, this, &ModelsView::showDetails);
    connect(m_localList, &QListView::doubleClicked, this, &ModelsView::loadSelected);
    connect(load, &QPushButton::clicked, this, &ModelsView::loadSelected);
    connect(refresh, &QPushButton::clicked, m_library, &app::ModelLibrary::refresh);
    connect(import, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Import model"), QString(),
                                                          tr("GGUF models (*.gguf)"));
        if (!path.isEmpty()) m_library->importModel(path, app::ModelLibrary::ImportMode::Reference);
    });
    connect(remove, &QPushButton::clicked, this, [this] {
        const QModelIndex i = m_localList->currentIndex();
        if (!i.isValid()) return;
        const QString path = i.data(app::ModelListModel::PathRole).toString();
        if (QMessageBox::question(this, tr("Delete model"), tr("Delete %1?").arg(path)) != QMessageBox::Yes) return;
        QString error;
        if (!m_library->removeModel(path, &error)) Q_EMIT statusMessage(error);
    });
    connect(m_library, &app::ModelLibrary::importFailed, this,
            [this](quint64, const QString& message) { Q_EMIT statusMessage(message); });

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

    connect(m_hub, &app::HubClient::searchFinished, this, [this](quint64 ticket, const QList<app::HubModel>& models) {
        if (ticket != m_searchTicket) return;
        m_repos->clear();
        for (const app::HubModel& m : models) {
            auto* item = new QListWidgetItem(tr("%1  (%2 downloads)").arg(m.id).arg(m.downloads), m_repos);
            item->setData(Qt::UserRole, m.id);
        }
        Q_EMIT statusMessage(tr("%1 repositories").arg(models.size()));
    });
    connect(m_hub, &app::HubClient::filesListed, this,
            [this](quint64 ticket, const QString& repo, const QList<app::HubFile>& files) {
                if (ticket != m_filesTicket) return;
                m_shownRepo = repo;
                m_shownOptions = app::HubClient::groupByQuantization(files);
                fillOptions();
            });
    connect(m_hub, &app::HubClient::detailsFetched, this,
            [this](quint64 ticket, const QString&, const app::HubModelDetails& details) {
                if (ticket != m_detailsTicket) return;
                m_shownArchitecture = details.architecture;
                fillOptions();
            });
    connect(m_hub, &app::HubClient::failed, this, [this](quint64 ticket, const QString& message) {
        // Without the hub's metadata the architecture is checked when the file loads.
        if (ticket == m_detailsTicket) return;
        Q_EMIT statusMessage(tr("Hub: %1").arg(message));
    });

    connect(m_downloads, &app::DownloadManager::stateChanged, this, [this](quint64 id, app::DownloadState state) {
        if (!m_transferRows.contains(id)) return;
        if (QTreeWidgetItem* item = m_transfers->topLevelItem(m_transferRows.value(id)))
            item->setText(1, app::downloadStateName(state));
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
        Q_EMIT statusMessage(tr("Downloaded and verified %1").arg(path));
        m_library->refresh();
    });
    connect(m_downloads, &app::DownloadManager::failed, this,
            [this](quint64, const QString& message) { Q_EMIT statusMessage(tr("Download failed: %1").arg(message)); });
}

void ModelsView::loadSelected() {
    const QModelIndex i = m_localList->currentIndex();
    if (!i.isValid()) {
        Q_EMIT statusMessage(tr("Choose a model in the list first"));
        return;
    }
    const QString error = i.data(app::ModelListModel::ErrorRole).toString();
    if (!error.isEmpty()) {
        Q_EMIT statusMessage(error);
        return;
    }
    m_engine->loadModel(i.data(app::ModelListModel::PathRole).toString(), m_settings->loadSettings());
}

void ModelsView::showLibraryTab() { m_tabs->setCurrentIndex(0); }

void ModelsView::showDiscoverTab() { m_tabs->setCurrentIndex(1); }

void ModelsView::search(const QString& query) {
    m_query->setText(query);
    m_searchTicket = m_hub->searchModels(query.trimmed());
}

void ModelsView::showDetails() {
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
    m_details->setText(tr("<b>%1</b><br>%2<br>architecture: %3<br>parameters: %4<br>quantization: %5<br>"
                          "training context: %6<br>layers: %7<br>file size: %8<br>memory at 4k context: %9<br>"
                          "chat template: %10<br>fit: %11")
                           .arg(e->displayName().toHtmlEscaped(), e->path.toHtmlEscaped(), e->architecture,
                                app::ModelLibrary::formatParameters(e->parameterCount), e->quantization)
                           .arg(e->contextLength)
                           .arg(e->layers)
                           .arg(QLocale().formattedDataSize(e->sizeBytes), QLocale().formattedDataSize(qint64(e->memoryBytes)),
                                e->hasChatTemplate ? tr("yes") : tr("none (ChatML is used)"),
                                fitBadge(qint64(e->memoryBytes), availableRamBytes())));
}

QString ModelsView::optionWontRunReason(int optionRow) const {
    if (optionRow < 0 || optionRow >= m_shownOptions.size()) return {};
    return app::wontRunReason(m_shownOptions[optionRow].quantization, m_shownArchitecture);
}

void ModelsView::selectOption(int optionRow) {
    m_options->setCurrentItem(m_options->topLevelItem(optionRow));
}

bool ModelsView::canDownloadSelected() const { return m_download->isEnabled(); }

void ModelsView::fillOptions() {
    const int current = m_options->indexOfTopLevelItem(m_options->currentItem());
    m_options->clear();
    const qint64 ram = availableRamBytes();
    for (int row = 0; row < m_shownOptions.size(); ++row) {
        const app::QuantOption& o = m_shownOptions[row];
        auto* item = new QTreeWidgetItem(m_options);
        item->setText(0, o.quantization);
        item->setText(1, QLocale().formattedDataSize(o.totalSize));
        item->setText(3, o.isSplit() ? tr("%1 (%2 parts)").arg(o.name).arg(o.partCount) : o.name);
        const QString reason = optionWontRunReason(row);
        if (reason.isEmpty()) {
            item->setText(2, fitBadge(o.totalSize, ram));
            continue;
        }
        // Kept in the list, greyed, with the reason; Download stays off for it.
        item->setText(2, tr("won't run here: %1").arg(reason));
        item->setToolTip(2, tr("This build of Hearth cannot run this file (%1).").arg(reason));
        for (int c = 0; c < item->columnCount(); ++c)
            item->setForeground(c, palette().brush(QPalette::Disabled, QPalette::Text));
    }
    m_options->header()->resizeSections(QHeaderView::ResizeToContents);
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
    m_shownArchitecture.clear();
    updateDownloadButton();
    m_filesTicket = m_hub->listFiles(repo);
    m_detailsTicket = m_hub->fetchDetails(repo);
    Q_EMIT statusMessage(tr("Listing %1...").arg(repo));
}

void ModelsView::download(int optionRow) {
    if (optionRow < 0 || optionRow >= m_shownOptions.size()) return;
    if (const QString reason = optionWontRunReason(optionRow); !reason.isEmpty()) {
        Q_EMIT statusMessage(tr("Won't run here: %1").arg(reason));
        return;
    }
    const app::QuantOption& o = m_shownOptions[optionRow];
    for (const app::HubFile& f : o.files) {
        app::DownloadRequest r;
        r.url = m_hub->downloadUrl(m_shownRepo, f.path);
        r.destination = QDir(m_library->modelsFolder()).filePath(f.path.section(QLatin1Char('/'), -1));
        r.expectedSha256 = f.sha256;
        r.expectedSize = f.size;
        r.displayName = f.path.section(QLatin1Char('/'), -1);
        const quint64 id = m_downloads->enqueue(r);
        auto* item = new QTreeWidgetItem(m_transfers);
        item->setText(0, r.displayName);
        item->setText(1, tr("queued"));
        item->setData(0, Qt::UserRole, id);
        m_transferRows.insert(id, m_transfers->indexOfTopLevelItem(item));
    }
}

} // namespace hearth::ui
