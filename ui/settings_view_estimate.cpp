// Settings page, the memory estimate: the chosen model's plan (services/memory_estimate.h) split
// between the device and RAM, where its layers go, the fit and the fallback warning, recomputed
// as the load settings, the devices or the model change.
#include "settings_view.h"

#include "services/load_fallback.h"
#include "services/memory_estimate.h"

#include "hearth/model_info.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QLocale>

#include <algorithm>

namespace hearth::ui {

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
