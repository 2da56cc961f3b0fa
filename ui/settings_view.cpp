// Settings page: puts the sections together (how models load, chat sampling, the application),
// follows the model the estimate is for (and the draft models offered for it); the load section is
// in settings_view_load.cpp, its memory estimate in settings_view_estimate.cpp and the chat sampling
// section in settings_view_sampling.cpp.
#include "settings_view.h"

#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace hearth::ui {

SettingsView::SettingsView(app::Settings* settings, app::EngineHost* engine, app::DeviceProbe* devices, QWidget* parent)
    : QWidget(parent), m_settings(settings), m_engine(engine) {
    const app::LoadSettings ls = m_settings->loadSettings();
    QGroupBox* loadBox = buildLoadSection(ls);
    QGroupBox* sampleBox = buildSamplingSection();
    QGroupBox* appBox = buildApplicationSection();

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(loadBox);
    layout->addWidget(sampleBox);
    layout->addWidget(appBox);
    layout->addStretch(1);

    connect(m_engine, &app::EngineHost::loaded, this, [this](const app::LoadedModel& m) {
        if (m.path != m_modelPath) m_projectorPath.clear(); // loaded elsewhere: not known here
        modelChanged(m.path);
    });
    // GPU drivers can take a while to answer: look for devices off the GUI thread.
    m_pendingDevice = ls.device;
    if (!devices) devices = new app::DeviceProbe(this);
    devices->whenReady(this, [this, devices] {
        if (m_devices.devices.empty()) setDevices(devices->devices());
    });
    updateEstimate();
}

SettingsView::~SettingsView() = default;

// The application's section: the idle unload timer and the theme.
QGroupBox* SettingsView::buildApplicationSection() {
    auto* appBox = new QGroupBox(tr("Application"), this);
    auto* aform = new QFormLayout(appBox);
    m_idleUnload = new QSpinBox(appBox);
    m_idleUnload->setObjectName(QStringLiteral("idleUnloadMinutes"));
    m_idleUnload->setRange(0, 24 * 60);
    m_idleUnload->setSuffix(tr(" min"));
    m_idleUnload->setSpecialValueText(tr("never"));
    m_idleUnload->setToolTip(tr("Unload the model after this long without a request, to free its memory"));
    m_idleUnload->setValue(m_settings->idleUnloadMinutes());
    m_theme = new QComboBox(appBox);
    m_theme->setObjectName(QStringLiteral("theme"));
    m_theme->addItem(tr("Follow the system"), QStringLiteral("system"));
    m_theme->addItem(tr("Light"), QStringLiteral("light"));
    m_theme->addItem(tr("Dark"), QStringLiteral("dark"));
    m_theme->setCurrentIndex(std::max(0, m_theme->findData(m_settings->theme())));
    aform->addRow(tr("Unload an idle model after"), m_idleUnload);
    aform->addRow(tr("Theme"), m_theme);
    connect(m_idleUnload, &QSpinBox::valueChanged, this, [this](int minutes) {
        m_settings->setIdleUnloadMinutes(minutes);
        Q_EMIT idleUnloadMinutesChanged(minutes);
    });
    connect(m_theme, &QComboBox::currentIndexChanged, this, [this] {
        const QString theme = m_theme->currentData().toString();
        m_settings->setTheme(theme);
        Q_EMIT themeChanged(theme);
    });
    return appBox;
}

QString SettingsView::fallbackWarning() const { return m_fallback->text(); }

void SettingsView::setModelPath(const QString& path, const QString& projectorPath) {
    m_projectorPath = projectorPath;
    modelChanged(path);
}

void SettingsView::modelChanged(const QString& path) {
    const bool other = path != m_modelPath;
    m_modelPath = path;
    updateEstimate();
    if (!other) return;
    const QSignalBlocker block(m_draftModel);
    m_draftModel->clear();
    m_draftModel->addItem(tr("None"), QString());
    m_draftModel->setEnabled(false);
    if (path.isEmpty()) return;
    if (app::isRemoteModelPath(path)) {
        m_draftModel->setToolTip(tr("A remote model drafts as its provider decides"));
        return;
    }
    m_draftModel->setToolTip(tr("Looking for library files that can draft for this model…"));
    Q_EMIT draftCandidatesWanted(path);
}

// Drafts are checked off the GUI thread (DraftModelFinder); a late answer for another model is
// ignored. The model's saved choice is selected when it is among them; otherwise "None" shows,
// and the saved choice is kept until the user picks another.
void SettingsView::setDraftModels(const QString& model, const QStringList& drafts) {
    if (model != m_modelPath) return;
    const QSignalBlocker block(m_draftModel);
    m_draftModel->clear();
    m_draftModel->addItem(tr("None"), QString());
    for (const QString& d : drafts)
        m_draftModel->addItem(d == model ? tr("Multi-token prediction (built into this model)") : QFileInfo(d).fileName(), d);
    const int saved = m_draftModel->findData(m_settings->draftModelFor(model));
    m_draftModel->setCurrentIndex(std::max(0, saved));
    m_draftModel->setEnabled(!drafts.isEmpty());
    m_draftModel->setToolTip(drafts.isEmpty()
                                 ? tr("No file in the library can draft for this model: a draft model needs the same "
                                      "vocabulary and a smaller file")
                                 : tr("A smaller model of the same vocabulary (or the model's own multi-token-prediction "
                                      "layer) proposes tokens that this model checks several at a time; replies are the "
                                      "same. Applies from the next load."));
}

QString SettingsView::estimateText() const { return m_estimate->text(); }

QString SettingsView::placementText() const { return m_gpuLabel->text(); }

} // namespace hearth::ui
