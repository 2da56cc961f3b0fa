// Settings page: load settings saved through Settings, the memory estimate (weights, KV cache,
// compute buffers, headroom against available RAM) recomputed as they change, and chat sampling.
#include "settings_view.h"

#include "models_view.h"

#include "hearth/gguf.h"
#include "hearth/model_info.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLocale>
#include <QSlider>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>

namespace hearth::ui {

SettingsView::SettingsView(app::Settings* settings, app::EngineHost* engine, QWidget* parent)
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
    m_gpuLayers = new QSlider(Qt::Horizontal, loadBox);
    m_gpuLayers->setRange(0, 0);
    m_gpuLayers->setEnabled(false);
    m_gpuLabel = new QLabel(tr("No GPU backend in this build: every layer runs on the CPU."), loadBox);
    m_gpuLabel->setWordWrap(true);
    form->addRow(tr("Context length"), m_context);
    form->addRow(tr("KV cache type"), m_kvType);
    form->addRow(tr("Threads"), m_threads);
    form->addRow(tr("Parallel sequences"), m_parallel);
    form->addRow(tr("GPU layers"), m_gpuLayers);
    form->addRow(QString(), m_gpuLabel);
    m_estimate = new QLabel(loadBox);
    m_estimate->setTextFormat(Qt::RichText);
    m_estimate->setWordWrap(true);
    form->addRow(tr("Memory estimate"), m_estimate);

    auto* sampleBox = new QGroupBox(tr("Chat sampling"), this);
    auto* sform = new QFormLayout(sampleBox);
    m_temperature = new QDoubleSpinBox(sampleBox);
    m_temperature->setRange(0.0, 2.0);
    m_temperature->setSingleStep(0.1);
    m_temperature->setValue(0.8);
    m_topP = new QDoubleSpinBox(sampleBox);
    m_topP->setRange(0.0, 1.0);
    m_topP->setSingleStep(0.05);
    m_topP->setValue(0.95);
    m_topK = new QSpinBox(sampleBox);
    m_topK->setRange(0, 1000);
    m_topK->setValue(40);
    m_maxTokens = new QSpinBox(sampleBox);
    m_maxTokens->setRange(1, 1 << 16);
    m_maxTokens->setValue(512);
    sform->addRow(tr("Temperature (0 = greedy)"), m_temperature);
    sform->addRow(tr("Top-p"), m_topP);
    sform->addRow(tr("Top-k"), m_topK);
    sform->addRow(tr("Max reply tokens"), m_maxTokens);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(loadBox);
    layout->addWidget(sampleBox);
    layout->addStretch(1);

    auto changedLoad = [this] {
        save();
        updateEstimate();
    };
    connect(m_context, &QSpinBox::valueChanged, this, changedLoad);
    connect(m_kvType, &QComboBox::currentIndexChanged, this, changedLoad);
    connect(m_threads, &QSpinBox::valueChanged, this, changedLoad);
    connect(m_parallel, &QSpinBox::valueChanged, this, changedLoad);
    auto changedSampling = [this] { Q_EMIT samplingChanged(sampling()); };
    connect(m_temperature, &QDoubleSpinBox::valueChanged, this, changedSampling);
    connect(m_topP, &QDoubleSpinBox::valueChanged, this, changedSampling);
    connect(m_topK, &QSpinBox::valueChanged, this, changedSampling);
    connect(m_maxTokens, &QSpinBox::valueChanged, this, changedSampling);
    connect(m_engine, &app::EngineHost::loaded, this, [this](const app::LoadedModel& m) {
        m_modelPath = m.path;
        updateEstimate();
    });
    updateEstimate();
}

app::Sampling SettingsView::sampling() const {
    app::Sampling s;
    s.temperature = float(m_temperature->value());
    s.topP = float(m_topP->value());
    s.topK = m_topK->value();
    s.maxTokens = m_maxTokens->value();
    return s;
}

void SettingsView::setModelPath(const QString& path) {
    m_modelPath = path;
    updateEstimate();
}

QString SettingsView::estimateText() const { return m_estimate->text(); }

void SettingsView::save() {
    app::LoadSettings ls = m_settings->loadSettings();
    ls.contextLength = m_context->value();
    ls.kvType = m_kvType->currentData().toString();
    ls.threads = m_threads->value();
    ls.maxParallel = m_parallel->value();
    m_settings->setLoadSettings(ls);
}

void SettingsView::updateEstimate() {
    if (m_modelPath.isEmpty()) {
        m_estimate->setText(tr("Choose or load a model to see what it needs."));
        return;
    }
    gguf::ReadOptions options;
    options.requireTensorData = false;
    auto file = gguf::File::open(m_modelPath.toStdString(), options);
    if (!file) {
        m_estimate->setText(QString::fromStdString(file.status().message()).toHtmlEscaped());
        return;
    }
    auto info = readModelInfo(*file);
    if (!info) {
        m_estimate->setText(QString::fromStdString(info.status().message()).toHtmlEscaped());
        return;
    }
    const uint32_t trainCtx = info->contextLength > 0 ? info->contextLength : 4096;
    const uint32_t ctx = m_context->value() > 0 ? uint32_t(m_context->value()) : std::min<uint32_t>(trainCtx, 4096);
    const QString kv = m_kvType->currentData().toString();
    const quant::Type kvType = kv == QStringLiteral("q8_0") ? quant::Type::Q8_0
                               : kv == QStringLiteral("f32") ? quant::Type::F32 : quant::Type::F16;
    const MemoryEstimate est = estimateMemory(*info, ctx, kvType);
    // The KV cache holds `parallel` full contexts at most; compute buffers: activations of a
    // 512-token step plus logits.
    const uint64_t kvTotal = est.kvBytes * uint64_t(m_parallel->value());
    const uint64_t compute = uint64_t(512) * (uint64_t(info->embeddingLength) * 16 + 4 * uint64_t(info->vocabSize));
    const uint64_t need = est.weightBytes + kvTotal + compute;
    const qint64 available = availableRamBytes();
    const bool over = available > 0 && double(need) > 0.9 * double(available);
    QLocale l;
    QString html = tr("weights on CPU (memory-mapped): %1<br>weights on GPU: 0<br>KV cache (%2 × %3 tokens, %4): %5<br>"
                      "compute buffers: %6<br><b>total: %7</b> of %8 available")
                       .arg(l.formattedDataSize(qint64(est.weightBytes)))
                       .arg(m_parallel->value())
                       .arg(ctx)
                       .arg(kv, l.formattedDataSize(qint64(kvTotal)), l.formattedDataSize(qint64(compute)),
                            l.formattedDataSize(qint64(need)), l.formattedDataSize(available));
    if (over) html = QStringLiteral("<span style='color:#c0392b'>") + html + tr("<br>Too much: lower the context, "
                     "parallel sequences or KV type before loading.") + QStringLiteral("</span>");
    if (m_engine->isLoaded() && m_engine->model().path == m_modelPath)
        html += tr("<br>loaded: KV cache measured %1").arg(l.formattedDataSize(qint64(m_engine->model().kvBytes)));
    m_estimate->setText(html);
}

} // namespace hearth::ui
