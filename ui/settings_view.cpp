// Settings page: load settings saved through Settings (device, GPU layers, context, KV type,
// threads, parallel sequences, speculation; a draft model per model), the memory estimate split
// between the device and RAM (weights, KV cache, compute buffers, headroom) recomputed as they
// change, the fallback warning (KV types the chosen GPU refuses are greyed with the reason), chat
// sampling, idle unload and theme.
#include "settings_view.h"

#include "services/load_fallback.h"
#include "services/memory_estimate.h"

#include "hearth/gguf.h"
#include "hearth/model_info.h"

#include <QApplication>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QSignalBlocker>
#include <QComboBox>
#include <QPointer>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLocale>
#include <QSlider>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QThread>
#include <QVBoxLayout>


namespace hearth::ui {

SettingsView::SettingsView(app::Settings* settings, app::EngineHost* engine, app::DeviceProbe* devices, QWidget* parent)
    : QWidget(parent), m_settings(settings), m_engine(engine) {
    const app::LoadSettings ls = m_settings->loadSettings();
    auto* loadBox = new QGroupBox(tr("Loading models"), this);
    auto* form = new QFormLayout(loadBox);
    m_context = new QSpinBox(loadBox);
    m_context->setRange(0, 1 << 20);
    m_context->setSingleStep(1024);
    m_context->setSpecialValueText(tr("model default (up to 4096)"));
    m_context->setValue(ls.contextLength);
    m_kvType = new QComboBox(loadBox);
    m_kvType->addItem(tr("F16 (default)"), QStringLiteral("f16"));
    m_kvType->addItem(tr("Q8_0 (half the memory)"), QStringLiteral("q8_0"));
    m_kvType->addItem(tr("F32"), QStringLiteral("f32"));
    m_kvType->setCurrentIndex(std::max(0, m_kvType->findData(ls.kvType)));
    m_threads = new QSpinBox(loadBox);
    m_threads->setRange(0, QThread::idealThreadCount() * 2);
    m_threads->setSpecialValueText(tr("all cores (%1)").arg(QThread::idealThreadCount()));
    m_threads->setValue(ls.threads);
    m_parallel = new QSpinBox(loadBox);
    m_parallel->setRange(1, 64);
    m_parallel->setValue(std::max(1, ls.maxParallel));
    m_batch = new QSpinBox(loadBox);
    m_batch->setRange(16, 8192);
    m_batch->setSingleStep(128);
    m_batch->setValue(ls.batchSize);
    m_batch->setObjectName(QStringLiteral("batchSize"));
    m_batch->setToolTip(tr("Prompt tokens computed per step: larger prompts are split into steps "
                           "of this size so replies in progress keep flowing"));
    m_mmap = new QCheckBox(tr("Map the model file (load fast; pages load as used)"), loadBox);
    m_mmap->setToolTip(tr("Off: read the whole file into memory when loading: slower to load, "
                          "but no pauses later while the system pages weights in"));
    m_mmap->setChecked(ls.useMmap);
    m_mmap->setObjectName(QStringLiteral("useMmap"));
    m_speculation = new QCheckBox(tr("Speculative decoding (drafts from the reply's own text)"), loadBox);
    m_speculation->setObjectName(QStringLiteral("speculation"));
    m_speculation->setToolTip(tr("Proposes the next tokens where the text repeats (code, quotes, lists) and "
                                 "checks several in one step. Replies are the same; Hearth drafts only as far "
                                 "as it measures a gain"));
    m_speculation->setChecked(ls.speculation);
    m_draftModel = new QComboBox(loadBox);
    m_draftModel->setObjectName(QStringLiteral("draftModel"));
    m_draftModel->addItem(tr("None"), QString());
    m_draftModel->setEnabled(false);
    m_draftModel->setToolTip(tr("Choose a model to see which library files can draft for it."));
    m_device = new QComboBox(loadBox);
    m_device->addItem(tr("CPU"), QStringLiteral("cpu"));
    m_device->setToolTip(tr("Where the model's layers run; looking for GPUs…"));
    m_gpuAuto = new QCheckBox(tr("As many layers as fit"), loadBox);
    m_gpuAuto->setChecked(ls.gpuLayers < 0);
    m_gpuLayers = new QSlider(Qt::Horizontal, loadBox);
    m_gpuLayers->setRange(0, 0);
    m_gpuLayers->setValue(std::max(0, ls.gpuLayers));
    m_cpuMoe = new QSpinBox(loadBox);
    m_cpuMoe->setObjectName(QStringLiteral("cpuMoeLayers"));
    m_cpuMoe->setRange(-1, 0);
    m_cpuMoe->setSpecialValueText(tr("Automatic"));
    m_cpuMoe->setValue(std::max(-1, ls.cpuMoeLayers));
    m_cpuMoe->setToolTip(tr("Mixture-of-experts models: the first N layers keep their experts in RAM and run "
                            "them on the CPU, while attention and the KV cache stay on the GPU. Automatic: "
                            "none when the model fits, else as few as make it fit"));
    m_gpuLabel = new QLabel(loadBox);
    m_gpuLabel->setWordWrap(true);
    auto* gpuRow = new QHBoxLayout();
    gpuRow->addWidget(m_gpuAuto);
    gpuRow->addWidget(m_gpuLayers, 1);
    form->addRow(tr("Device"), m_device);
    form->addRow(tr("GPU layers"), gpuRow);
    form->addRow(tr("Experts in RAM (layers)"), m_cpuMoe);
    form->addRow(QString(), m_gpuLabel);
    form->addRow(tr("Context length"), m_context);
    form->addRow(tr("KV cache type"), m_kvType);
    form->addRow(tr("Threads"), m_threads);
    form->addRow(tr("Parallel sequences"), m_parallel);
    form->addRow(tr("Batch size"), m_batch);
    form->addRow(tr("Memory map"), m_mmap);
    form->addRow(tr("Speculation"), m_speculation);
    form->addRow(tr("Draft model"), m_draftModel);
    m_estimate = new QLabel(loadBox);
    m_estimate->setTextFormat(Qt::RichText);
    m_estimate->setWordWrap(true);
    form->addRow(tr("Memory estimate"), m_estimate);

    m_fallback = new QLabel(loadBox);
    m_fallback->setObjectName(QStringLiteral("fallbackWarning"));
    m_fallback->setWordWrap(true);
    m_fallback->setStyleSheet(QStringLiteral("color:#c0392b"));
    m_fallback->hide();
    form->addRow(QString(), m_fallback);

    // Chat sampling: what new chats start with, kept in Settings::chatSampling().
    const app::Sampling saved = m_settings->chatSampling();
    auto* sampleBox = new QGroupBox(tr("Chat sampling"), this);
    auto* sform = new QFormLayout(sampleBox);
    m_temperature = new QDoubleSpinBox(sampleBox);
    m_temperature->setObjectName(QStringLiteral("temperature"));
    m_temperature->setRange(0.0, 2.0);
    m_temperature->setSingleStep(0.1);
    m_temperature->setValue(saved.temperature);
    m_topP = new QDoubleSpinBox(sampleBox);
    m_topP->setObjectName(QStringLiteral("topP"));
    m_topP->setRange(0.0, 1.0);
    m_topP->setSingleStep(0.05);
    m_topP->setValue(saved.topP);
    m_topK = new QSpinBox(sampleBox);
    m_topK->setObjectName(QStringLiteral("topK"));
    m_topK->setRange(0, 1000);
    m_topK->setValue(saved.topK);
    m_minP = new QDoubleSpinBox(sampleBox);
    m_minP->setObjectName(QStringLiteral("minP"));
    m_minP->setRange(0.0, 1.0);
    m_minP->setSingleStep(0.01);
    m_minP->setValue(saved.minP);
    m_repeat = new QDoubleSpinBox(sampleBox);
    m_repeat->setObjectName(QStringLiteral("repetitionPenalty"));
    m_repeat->setRange(0.5, 2.0);
    m_repeat->setSingleStep(0.05);
    m_repeat->setValue(saved.repetitionPenalty);
    m_maxTokens = new QSpinBox(sampleBox);
    m_maxTokens->setObjectName(QStringLiteral("maxTokens"));
    m_maxTokens->setRange(1, 1 << 16);
    m_maxTokens->setValue(saved.maxTokens);
    sform->addRow(tr("Temperature (0 = greedy)"), m_temperature);
    sform->addRow(tr("Top-p"), m_topP);
    sform->addRow(tr("Top-k (0 = off)"), m_topK);
    sform->addRow(tr("Min-p"), m_minP);
    sform->addRow(tr("Repetition penalty (1 = off)"), m_repeat);
    sform->addRow(tr("Max reply tokens"), m_maxTokens);
    m_systemPrompt = new QPlainTextEdit(m_settings->defaultSystemPrompt(), sampleBox);
    m_systemPrompt->setObjectName(QStringLiteral("systemPrompt"));
    m_systemPrompt->setPlaceholderText(tr("none (a chat's own settings can set one)"));
    m_systemPrompt->setMaximumHeight(70);
    sform->addRow(tr("System prompt of new chats"), m_systemPrompt);

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

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(loadBox);
    layout->addWidget(sampleBox);
    layout->addWidget(appBox);
    layout->addStretch(1);

    auto changedLoad = [this] {
        save();
        updateEstimate();
    };
    connect(m_context, &QSpinBox::valueChanged, this, changedLoad);
    connect(m_kvType, &QComboBox::currentIndexChanged, this, changedLoad);
    connect(m_threads, &QSpinBox::valueChanged, this, changedLoad);
    connect(m_parallel, &QSpinBox::valueChanged, this, changedLoad);
    connect(m_mmap, &QCheckBox::toggled, this, changedLoad);
    connect(m_speculation, &QCheckBox::toggled, this, changedLoad);
    connect(m_draftModel, &QComboBox::activated, this, [this] {
        m_settings->setDraftModelFor(m_modelPath, m_draftModel->currentData().toString());
    });
    connect(m_batch, &QSpinBox::valueChanged, this, changedLoad);
    connect(m_device, &QComboBox::currentIndexChanged, this, changedLoad);
    connect(m_gpuAuto, &QCheckBox::toggled, this, changedLoad);
    connect(m_gpuLayers, &QSlider::valueChanged, this, changedLoad);
    connect(m_cpuMoe, &QSpinBox::valueChanged, this, changedLoad);
    connect(m_temperature, &QDoubleSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_topP, &QDoubleSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_topK, &QSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_minP, &QDoubleSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_repeat, &QDoubleSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_maxTokens, &QSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_systemPrompt, &QPlainTextEdit::textChanged, this,
            [this] { m_settings->setDefaultSystemPrompt(m_systemPrompt->toPlainText()); });
    connect(m_idleUnload, &QSpinBox::valueChanged, this, [this](int minutes) {
        m_settings->setIdleUnloadMinutes(minutes);
        Q_EMIT idleUnloadMinutesChanged(minutes);
    });
    connect(m_theme, &QComboBox::currentIndexChanged, this, [this] {
        const QString theme = m_theme->currentData().toString();
        m_settings->setTheme(theme);
        Q_EMIT themeChanged(theme);
    });
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

void SettingsView::setDevices(const DeviceList& devices) {
    const QString wanted = m_pendingDevice.isEmpty() ? m_device->currentData().toString() : m_pendingDevice;
    m_pendingDevice.clear();
    m_devices = devices;
    const QSignalBlocker block(m_device);
    m_device->clear();
    QLocale l;
    for (const DeviceDescription& d : devices.devices) {
        QString label = QString::fromStdString(d.name);
        if (d.kind != DeviceKind::Cpu)
            label = QStringLiteral("%1 %2 — %3").arg(QString::fromLatin1(deviceKindName(d.kind)).toUpper())
                        .arg(d.index).arg(label);
        if (d.totalMemory > 0)
            label += d.freeMemory > 0 ? tr(" (%1 free of %2)").arg(l.formattedDataSize(qint64(d.freeMemory)),
                                                                   l.formattedDataSize(qint64(d.totalMemory)))
                                      : tr(" (%1)").arg(l.formattedDataSize(qint64(d.totalMemory)));
        m_device->addItem(label, QString::fromStdString(d.id));
    }
    QStringList notes;
    for (const std::string& n : devices.notes) notes << QString::fromStdString(n);
    m_device->setToolTip(notes.isEmpty() ? tr("Where the model's layers run") : notes.join(QLatin1Char('\n')));
    const int at = m_device->findData(wanted);
    m_device->setCurrentIndex(at >= 0 ? at : 0);
    updateGpuControls();
    updateKvChoices();
    updateEstimate();
    Q_EMIT devicesChanged(m_devices);
}

void SettingsView::selectDevice(const QString& id) {
    const int at = m_device->findData(id);
    if (at >= 0) m_device->setCurrentIndex(at);
}

void SettingsView::setGpuLayers(int layers) {
    m_gpuAuto->setChecked(layers < 0);
    if (layers >= 0) m_gpuLayers->setValue(layers);
}

void SettingsView::setCpuMoeLayers(int layers) { m_cpuMoe->setValue(std::max(-1, layers)); }

const DeviceDescription* SettingsView::currentDevice() const {
    return findDevice(m_devices, m_device->currentData().toString().toStdString());
}

void SettingsView::updateGpuControls() {
    const DeviceDescription* d = currentDevice();
    const bool gpu = d && d->kind != DeviceKind::Cpu;
    m_gpuAuto->setEnabled(gpu);
    m_gpuLayers->setEnabled(gpu && !m_gpuAuto->isChecked());
    const QSignalBlocker block(m_gpuLayers);
    m_gpuLayers->setRange(0, std::max(0, m_modelLayers));
    // Only a model with experts has any to keep in RAM (the range holds a saved value until a
    // model is chosen).
    m_cpuMoe->setEnabled(gpu && (m_modelPath.isEmpty() || m_modelHasExperts));
    const QSignalBlocker blockMoe(m_cpuMoe);
    if (m_modelLayers > 0) m_cpuMoe->setRange(-1, m_modelLayers);
    else m_cpuMoe->setRange(-1, std::max(m_cpuMoe->value(), 1024));
}

app::Sampling SettingsView::sampling() const {
    app::Sampling s = m_settings->chatSampling(); // keeps what the page does not show (seed, stops)
    s.temperature = float(m_temperature->value());
    s.topP = float(m_topP->value());
    s.topK = m_topK->value();
    s.minP = float(m_minP->value());
    s.repetitionPenalty = float(m_repeat->value());
    s.maxTokens = m_maxTokens->value();
    return s;
}

void SettingsView::saveSampling() {
    const app::Sampling s = sampling();
    m_settings->setChatSampling(s);
    Q_EMIT samplingChanged(s);
}

QString SettingsView::fallbackWarning() const { return m_fallback->text(); }

// KV types the chosen device refuses stay listed but greyed, with the reason as tooltip.
void SettingsView::updateKvChoices() {
    auto* model = qobject_cast<QStandardItemModel*>(m_kvType->model());
    const DeviceDescription* d = currentDevice();
    for (int i = 0; i < m_kvType->count(); ++i) {
        const QString why = d ? app::kvTypeRefusal(*d, m_kvType->itemData(i).toString()) : QString();
        if (model) model->item(i)->setEnabled(why.isEmpty());
        m_kvType->setItemData(i, why.isEmpty() ? QVariant() : QVariant(why), Qt::ToolTipRole);
    }
}

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

void SettingsView::save() {
    app::LoadSettings ls = m_settings->loadSettings();
    ls.contextLength = m_context->value();
    ls.kvType = m_kvType->currentData().toString();
    ls.threads = m_threads->value();
    ls.maxParallel = m_parallel->value();
    ls.useMmap = m_mmap->isChecked();
    ls.speculation = m_speculation->isChecked();
    ls.batchSize = m_batch->value();
    if (m_pendingDevice.isEmpty()) ls.device = m_device->currentData().toString(); // else: not listed yet
    ls.gpuLayers = m_gpuAuto->isChecked() ? -1 : m_gpuLayers->value();
    ls.cpuMoeLayers = m_cpuMoe->value();
    m_settings->setLoadSettings(ls);
    updateGpuControls();
    updateKvChoices();
}

void SettingsView::updateEstimate() {
    m_overLimit = false;
    m_effectiveGpuLayers = 0;
    m_effectiveCpuMoeLayers = 0;
    m_fitText.clear();
    if (app::isRemoteModelPath(m_modelPath)) {
        // A remote provider's model: no file to read; where and how it runs is the provider's.
        const app::RemoteModelRef remote = app::remoteModelOf(m_modelPath);
        m_fallback->clear();
        m_fallback->setVisible(false);
        m_gpuLabel->setText(tr("Does not apply: %1 runs on %2 (remote)").arg(remote.model, remote.provider));
        m_estimate->setText(tr("<b>%1</b> on <b>%2</b> (remote): its layers, quantization, GPU split and memory are "
                               "the provider's. The settings above apply to local models.")
                                .arg(remote.model.toHtmlEscaped(), remote.provider.toHtmlEscaped()));
        return;
    }
    const DeviceDescription* device = currentDevice();
    const bool gpu = device && device->kind != DeviceKind::Cpu;
    const app::LoadSettings ls = m_settings->loadSettings();
    // Said before loading: what would run on the CPU instead of the chosen GPU, and why.
    auto warn = [this](const QString& fallback) {
        m_fallback->setText(fallback.isEmpty() ? QString() : tr("Will run on the CPU because %1.").arg(fallback));
        m_fallback->setVisible(!fallback.isEmpty());
    };
    const bool devicesKnown = m_pendingDevice.isEmpty(); // else the saved device is not listed yet
    if (m_modelPath.isEmpty()) {
        warn(devicesKnown ? app::fallbackReasonFor(ls, m_devices) : QString());
        m_gpuLabel->setText(gpu ? tr("Choose a model to see how many layers fit.")
                                : tr("Every layer runs on the CPU."));
        m_estimate->setText(tr("Choose or load a model to see what it needs."));
        return;
    }
    const qint64 available = app::availableRamBytes();
    app::LoadSettings withProjector = ls;
    withProjector.projectorPath = m_projectorPath;
    const app::MemoryPlan plan = app::planMemory(m_modelPath, withProjector, m_devices, available);
    warn(devicesKnown ? app::fallbackReasonFor(ls, m_devices, plan) : QString());
    if (!plan.error.isEmpty()) {
        m_estimate->setText(plan.error.toHtmlEscaped());
        return;
    }
    const ModelInfo& info = plan.info;
    if (m_modelLayers != int(info.blockCount) || m_modelHasExperts != (info.expertCount > 0)) {
        m_modelLayers = int(info.blockCount);
        m_modelHasExperts = info.expertCount > 0;
        updateGpuControls();
    }
    const SplitEstimate& est = plan.split;
    const int layers = plan.gpuLayers;
    m_effectiveGpuLayers = layers;
    m_effectiveCpuMoeLayers = plan.cpuMoeLayers;
    m_overLimit = plan.overLimit();
    m_fitText = app::fitLabel(plan.fit);
    const bool planGpu = plan.gpu;
    QLocale l;
    auto size = [&](uint64_t b) { return l.formattedDataSize(qint64(b)); };
    const bool hybrid = info.recurrentLayers > 0; // gated delta-net layers keep a state, not K/V
    if (planGpu)
        m_gpuLabel->setText(tr("%1 of %2 layers on %3%4%5")
                                .arg(layers).arg(info.blockCount)
                                .arg(plan.deviceId, layers == int(info.blockCount) ? tr(" (and the output layer)") : QString(),
                                     plan.cpuMoeLayers > 0 ? tr("; the experts of the first %1 in RAM (%2)")
                                                                 .arg(plan.cpuMoeLayers).arg(size(est.expertsCpu))
                                                           : QString()));
    else
        m_gpuLabel->setText(tr("Every layer runs on the CPU."));
    QString html;
    if (planGpu)
        html += tr("<b>on %1</b>: weights %2 · KV cache %3%4 · compute %5 = <b>%6</b> of %7 usable<br>")
                    .arg(plan.deviceId, size(est.weightsGpu), size(est.kvGpu),
                         hybrid ? tr(" · recurrent state %1").arg(size(est.stateGpu)) : QString(),
                         size(est.computeGpu), size(est.gpuTotal()), size(plan.gpuBudget));
    const QString ramWeights = est.expertsCpu > 0 ? tr("%1 (experts of %2 layers: %3)")
                                                        .arg(size(est.weightsCpu)).arg(plan.cpuMoeLayers).arg(size(est.expertsCpu))
                                                  : size(est.weightsCpu);
    html += tr("<b>in RAM</b>: weights (%1) %2 · KV cache %3%4 · compute %5 = <b>%6</b> of %7 available<br>")
                .arg(m_mmap->isChecked() ? tr("memory-mapped") : tr("read into memory"), ramWeights, size(est.kvCpu),
                     hybrid ? tr(" · recurrent state %1").arg(size(est.stateCpu)) : QString(),
                     size(est.computeCpu), size(est.cpuTotal()), size(uint64_t(std::max<qint64>(0, available))));
    if (plan.projectorBytes > 0)
        html += tr("Vision projector %1: %2 (weights and one image's encoding, in the compute above)<br>")
                    .arg(QFileInfo(m_projectorPath).fileName().toHtmlEscaped(), size(plan.projectorBytes));
    html += tr("KV cache: %1 sequences × %2 tokens, %3").arg(plan.sequences).arg(plan.contextLength).arg(plan.kvName);
    if (hybrid)
        html += tr(" in %1 of %2 layers · recurrent state: %3 per sequence (%4 layers)")
                    .arg(info.attentionLayers())
                    .arg(info.blockCount)
                    .arg(size(info.stateBytesPerSequence()))
                    .arg(info.recurrentLayers);
    if (available > 0 && !plan.ramOver)
        html += tr(" · headroom in RAM %1").arg(size(uint64_t(available) - std::min<uint64_t>(uint64_t(available), plan.ramNeed())));
    html += tr("<br>Fit: <b>%1</b>").arg(m_fitText);
    if (m_overLimit)
        html = QStringLiteral("<span style='color:#c0392b'>") + html +
               (plan.gpuOver ? tr("<br>Too much for %1: lower the GPU layers, context or parallel sequences.").arg(plan.deviceId)
                             : tr("<br>Too much: lower the context, parallel sequences or KV type before loading.")) +
               QStringLiteral("</span>");
    if (m_engine->isLoaded() && m_engine->model().path == m_modelPath) {
        const app::LoadedModel& m = m_engine->model();
        QString where = m.gpuLayers > 0 ? tr("%1 layers on %2, %3 on the CPU")
                                              .arg(m.gpuLayers).arg(m.device).arg(std::max(0, m.layers - m.gpuLayers))
                                        : tr("cpu");
        if (m.cpuMoeLayers > 0) where += tr(", the experts of %1 in RAM").arg(m.cpuMoeLayers);
        html += tr("<br>loaded (%1): KV cache measured %2").arg(where, size(m.kvBytes));
        if (!m_engine->model().fallbackReason.isEmpty())
            html += tr("<br>%1").arg(m_engine->model().fallbackReason.toHtmlEscaped());
    }
    m_estimate->setText(html);
}

} // namespace hearth::ui
