// Models page, the Discover tab: the hub's starter list and search results as cards, a
// repository's GGUF quantizations with fit badges, "won't run here" marks and "Vision" marks,
// downloaded with the projector (HubDownloads does the downloading), inline hub errors with Retry,
// and the download list (TransferList) below.
#include "models_view.h"

#include "count_text.h"
#include "model_card_delegate.h"
#include "transfer_list.h"

#include "services/memory_estimate.h"
#include "services/model_support.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QPushButton>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
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

QWidget* ModelsView::buildDiscoverTab(QWidget* parent) {
    auto* hubPage = new QWidget(parent);
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
    m_transfers = new TransferList(m_downloads, hubPage);
    auto* hubSplit = new QSplitter(hubPage);
    hubSplit->addWidget(m_repos);
    hubSplit->addWidget(m_options);
    hubSplit->setSizes({300, 460});
    auto* transferButtons = new QHBoxLayout();
    transferButtons->addWidget(get);
    transferButtons->addWidget(m_withProjector);
    transferButtons->addStretch(1);
    transferButtons->addWidget(m_transfers->pauseButton());
    transferButtons->addWidget(m_transfers->resumeButton());
    transferButtons->addWidget(m_transfers->cancelButton());
    auto* hubLayout = new QVBoxLayout(hubPage);
    hubLayout->addWidget(m_query);
    hubLayout->addWidget(m_errorRow);
    hubLayout->addWidget(hubSplit, 1);
    hubLayout->addWidget(m_projectorNote);
    hubLayout->addLayout(transferButtons);
    hubLayout->addWidget(m_transfers);

    connect(m_query, &QLineEdit::returnPressed, this, [this] { search(m_query->text()); });
    connect(m_repos, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { showRepo(item->data(Qt::UserRole).toString()); });
    connect(get, &QPushButton::clicked, this, [this] {
        const QModelIndex i = m_options->currentIndex();
        if (i.isValid()) download(i.row());
    });
    connect(m_options, &QTreeWidget::currentItemChanged, this, &ModelsView::updateDownloadButton);

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
    return hubPage;
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
