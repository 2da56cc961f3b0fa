// Models page, the Library tab: the models folder's models as cards with their details and fit
// badges (computed off the GUI thread), Load, Import, Delete (asked first) and the vision
// projector offered for a model downloaded without it.
#include "models_view.h"

#include "model_card_delegate.h"

#include "services/memory_estimate.h"
#include "services/model_support.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListView>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>

namespace hearth::ui {

QWidget* ModelsView::buildLibraryTab(QWidget* parent) {
    auto* local = new QWidget(parent);
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
    return local;
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

} // namespace hearth::ui
