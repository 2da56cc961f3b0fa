// Settings page, the "Loading models" section: device, GPU layers, experts in RAM, context, KV
// type, threads, parallel sequences, batch size, memory map, speculation and draft model, saved in
// Settings as they change; the devices offered and the KV types each one refuses.
#include "settings_view.h"

#include "services/load_fallback.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QThread>

#include <algorithm>

namespace hearth::ui {

QGroupBox* SettingsView::buildLoadSection(const app::LoadSettings& ls) {
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
    return loadBox;
}

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

} // namespace hearth::ui
