// ModelPicker: a combo box over the library and remote models, the engine's state beside it.
#include "model_picker.h"

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QStandardItemModel>

namespace hearth::ui {

namespace {

const QString kBrowse = QStringLiteral("browse:");

QString entryText(const app::ModelEntry& e) {
    QStringList facts;
    if (!e.quantization.isEmpty()) facts << e.quantization;
    if (e.parameterCount > 0) facts << app::ModelLibrary::formatParameters(e.parameterCount);
    facts << QLocale().formattedDataSize(e.sizeBytes, 1);
    if (e.isVision()) facts << QObject::tr("Vision"); // takes images: a projector lies beside it
    return QStringLiteral("%1  —  %2").arg(e.displayName(), facts.join(QStringLiteral(" · ")));
}

} // namespace

ModelPicker::ModelPicker(app::ModelLibrary* library, app::EngineHost* engine, QWidget* parent)
    : QWidget(parent), m_library(library), m_engine(engine) {
    m_models = new QComboBox(this);
    m_models->setMinimumContentsLength(28);
    m_models->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_models->setToolTip(tr("The model to chat with (Ctrl+K)"));
    m_load = new QPushButton(tr("Load"), this);
    m_where = new QLabel(this);
    m_where->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(320);
    m_progress->setVisible(false);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_models, 1);
    layout->addWidget(m_load);
    layout->addWidget(m_where);
    layout->addWidget(m_progress);

    connect(m_models, &QComboBox::activated, this, [this](int index) {
        const QString choice = m_models->itemData(index).toString();
        if (choice == kBrowse) {
            updateState(); // back to what is loaded
            Q_EMIT browseRequested();
            return;
        }
        if (app::isRemoteModelPath(choice)) {
            const app::RemoteModelRef remote = app::remoteModelOf(choice);
            if (choice != m_engine->model().path) Q_EMIT remoteRequested(remote.provider, remote.model);
            return;
        }
        if (!choice.isEmpty() && (choice != m_engine->model().path || !m_engine->isLoaded()))
            Q_EMIT loadRequested(choice);
    });
    connect(m_load, &QPushButton::clicked, this, [this] {
        if (m_engine->state() != app::EngineHost::State::Empty) {
            Q_EMIT unloadRequested();
            return;
        }
        const QString choice = currentChoice();
        if (app::isRemoteModelPath(choice)) {
            const app::RemoteModelRef remote = app::remoteModelOf(choice);
            Q_EMIT remoteRequested(remote.provider, remote.model);
        } else if (!choice.isEmpty() && choice != kBrowse) {
            Q_EMIT loadRequested(choice);
        } else {
            Q_EMIT browseRequested();
        }
    });
    connect(m_library, &app::ModelLibrary::modelsChanged, this, &ModelPicker::rebuild);
    connect(m_engine, &app::EngineHost::stateChanged, this, &ModelPicker::updateState);
    connect(m_engine, &app::EngineHost::loaded, this, &ModelPicker::rebuild);
    connect(m_engine, &app::EngineHost::loadProgress, this, [this](const QString& stage, double fraction) {
        m_progress->setVisible(true);
        m_progress->setValue(int(fraction * 1000.0));
        m_progress->setFormat(QStringLiteral("%1… %p%").arg(stage));
    });
    rebuild();
}

void ModelPicker::setRemoteModels(const QString& provider, const QStringList& models) {
    for (auto& entry : m_remote)
        if (entry.first == provider) {
            entry.second = models;
            rebuild();
            return;
        }
    m_remote.append({provider, models});
    rebuild();
}

void ModelPicker::clearRemoteModels() {
    m_remote.clear();
    rebuild();
}

void ModelPicker::rebuild() {
    m_rebuilding = true;
    m_models->clear();
    auto* model = qobject_cast<QStandardItemModel*>(m_models->model());
    auto addHeader = [&](const QString& text) {
        m_models->addItem(text);
        if (model) model->item(m_models->count() - 1)->setEnabled(false);
    };
    const QList<app::ModelEntry>& entries = m_library->models();
    int usable = 0;
    for (const app::ModelEntry& e : entries) {
        if (!e.isUsable()) continue;
        if (usable++ == 0 && !m_remote.isEmpty()) addHeader(tr("On this computer"));
        m_models->addItem(entryText(e), e.path);
        m_models->setItemData(m_models->count() - 1, e.path, Qt::ToolTipRole);
    }
    // A loaded file outside the library is listed too.
    const QString loaded = m_engine->model().path;
    if (!loaded.isEmpty() && !m_engine->isRemote() && m_models->findData(loaded) < 0) m_models->addItem(QFileInfo(loaded).fileName(), loaded);
    for (const auto& [provider, models] : m_remote) {
        if (models.isEmpty()) continue;
        addHeader(tr("Remote: %1").arg(provider));
        for (const QString& m : models) m_models->addItem(m, app::remoteModelPath(provider, m));
    }
    if (m_models->count() == 0) m_models->addItem(tr("No models yet"), QString());
    m_models->addItem(tr("Get more models…"), kBrowse);
    m_rebuilding = false;
    updateState();
}

void ModelPicker::updateState() {
    using State = app::EngineHost::State;
    const State state = m_engine->state();
    // Show what is loaded (or loading) in the list.
    const QString active = m_engine->model().path; // a remote model's is "remote:provider/model"
    if (!active.isEmpty()) {
        const int i = m_models->findData(active);
        if (i >= 0) m_models->setCurrentIndex(i);
    } else if (m_models->currentData().toString() == kBrowse || m_models->currentData().toString().isEmpty()) {
        for (int i = 0; i < m_models->count(); ++i)
            if (!m_models->itemData(i).toString().isEmpty() && m_models->itemData(i).toString() != kBrowse) {
                m_models->setCurrentIndex(i);
                break;
            }
    }
    if (m_engine->isRemote()) {
        m_load->setText(tr("Disconnect"));
        m_where->setText(tr("remote: %1").arg(app::remoteModelOf(m_engine->model().path).provider));
        m_where->setToolTip(QString());
        m_progress->setVisible(false);
        return;
    }
    switch (state) {
    case State::Loading:
        m_load->setText(tr("Cancel"));
        m_where->setText(tr("loading…"));
        m_progress->setVisible(true);
        if (m_progress->value() <= 0) {
            m_progress->setValue(0);
            m_progress->setFormat(tr("Starting…"));
        }
        break;
    case State::Ready: {
        const app::LoadedModel& m = m_engine->model();
        m_load->setText(tr("Eject"));
        m_where->setText((m.gpuLayers > 0 ? tr("%1/%2 layers on %3").arg(m.gpuLayers).arg(m.layers).arg(m.device)
                                          : tr("CPU")) +
                         (m.vision ? tr(" · vision") : QString()));
        QString tip = m.fallbackReason;
        if (!m.visionNote.isEmpty())
            tip += (tip.isEmpty() ? QString() : QStringLiteral("\n")) + tr("Takes no images: %1").arg(m.visionNote);
        m_where->setToolTip(tip);
        m_progress->setVisible(false);
        m_progress->setValue(0);
        break;
    }
    case State::Empty:
        m_load->setText(tr("Load"));
        m_where->setText(tr("not loaded"));
        m_where->setToolTip(QString());
        m_progress->setVisible(false);
        m_progress->setValue(0);
        break;
    }
}

QString ModelPicker::currentChoice() const { return m_models->currentData().toString(); }

int ModelPicker::choiceCount() const {
    int n = 0;
    for (int i = 0; i < m_models->count(); ++i) {
        const QString d = m_models->itemData(i).toString();
        if (!d.isEmpty() && d != kBrowse) ++n;
    }
    return n;
}

void ModelPicker::choose(const QString& pathOrRemote) {
    const int i = m_models->findData(pathOrRemote);
    if (i < 0) return;
    m_models->setCurrentIndex(i);
    Q_EMIT m_models->activated(i);
}

QString ModelPicker::whereText() const { return m_where->text(); }
bool ModelPicker::isProgressVisible() const { return !m_progress->isHidden(); }
QString ModelPicker::progressText() const { return m_progress->format(); }

} // namespace hearth::ui
