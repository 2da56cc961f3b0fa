// The settings page: how models load (device, GPU layers, context, KV cache type, threads,
// parallel sequences, speculation and a draft model per model) with a live, itemised memory estimate for the chosen model (the shared
// planMemory of services/memory_estimate.h), a warning before a load that would fall back to the
// CPU, the sampling of chats, the idle unload timer and the theme, all saved in Settings.
#pragma once

#include "services/device_probe.h"
#include "services/engine_host.h"
#include "services/settings.h"

#include "hearth/devices.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QSlider;
class QPlainTextEdit;
class QSpinBox;

namespace hearth::ui {

class SettingsView : public QWidget {
    Q_OBJECT
public:
    // `devices`: the app's probe (null: one of the view's own, for a page shown alone).
    SettingsView(app::Settings* settings, app::EngineHost* engine, app::DeviceProbe* devices = nullptr,
                 QWidget* parent = nullptr);
    ~SettingsView() override;

    // The model whose memory the estimate describes.
    // The model the estimate is for, and the vision projector it loads with ("" when none).
    void setModelPath(const QString& path, const QString& projectorPath = {});
    QString modelPath() const { return m_modelPath; }
    app::Sampling sampling() const;
    QString estimateText() const;
    // Where the model's layers go ("24 of 24 layers on vulkan:0 ...", "Every layer runs on the
    // CPU.", or that this does not apply to a remote model).
    QString placementText() const;
    // The devices offered in the picker (found in the background at start; tests set them).
    void setDevices(const DeviceList& devices);
    void selectDevice(const QString& id);
    void setGpuLayers(int layers); // -1: as many as fit
    void setCpuMoeLayers(int layers); // -1: as the fit chooses
    // What the estimate currently resolves "GPU layers" (and the layers whose experts stay in
    // RAM) to, and whether it is over a limit.
    int effectiveGpuLayers() const { return m_effectiveGpuLayers; }
    int effectiveCpuMoeLayers() const { return m_effectiveCpuMoeLayers; }
    bool estimateOverLimit() const { return m_overLimit; }
    // The estimate's verdict ("fits on GPU", ...), the one the models page's badges show.
    QString fitText() const { return m_fitText; }
    // "Will run on the CPU because ..." when the chosen combination falls back; empty otherwise.
    QString fallbackWarning() const;
    const DeviceList& devices() const { return m_devices; }
    // The files that can draft for `model` (a DraftModelFinder's answer to draftCandidatesWanted),
    // offered in the draft-model picker while `model` is the page's model.
    void setDraftModels(const QString& model, const QStringList& drafts);

Q_SIGNALS:
    void samplingChanged(const app::Sampling& sampling);
    void themeChanged(const QString& theme);       // "system", "light", "dark"
    void idleUnloadMinutesChanged(int minutes);    // 0: never
    // The devices found by the background probe (or set by setDevices), e.g. for ModelsView::setDevices.
    void devicesChanged(const hearth::DeviceList& devices);
    // The page's model changed: which library files can draft for it (answer: setDraftModels).
    void draftCandidatesWanted(const QString& model);

private:
    // The page's sections, built with their widgets and their connections (settings_view_load.cpp,
    // settings_view_sampling.cpp, settings_view.cpp).
    QGroupBox* buildLoadSection(const app::LoadSettings& ls);
    QGroupBox* buildSamplingSection();
    QGroupBox* buildApplicationSection();
    void save();
    void saveSampling();
    void updateKvChoices();
    void updateEstimate();
    void updateGpuControls();
    void modelChanged(const QString& path);
    const DeviceDescription* currentDevice() const;

    app::Settings* m_settings;
    app::EngineHost* m_engine;
    QString m_modelPath;
    QString m_projectorPath; // of m_modelPath, counted in the estimate
    QSpinBox* m_context = nullptr;
    QComboBox* m_kvType = nullptr;
    QSpinBox* m_threads = nullptr;
    QSpinBox* m_parallel = nullptr;
    QComboBox* m_device = nullptr;
    DeviceList m_devices;
    QString m_pendingDevice; // the saved device, until the list arrives
    QCheckBox* m_gpuAuto = nullptr;
    QSlider* m_gpuLayers = nullptr;
    QSpinBox* m_cpuMoe = nullptr;
    bool m_modelHasExperts = false;
    QCheckBox* m_mmap = nullptr;
    QCheckBox* m_speculation = nullptr;
    QComboBox* m_draftModel = nullptr; // "none", then the files that can draft for m_modelPath
    QSpinBox* m_batch = nullptr;
    int m_modelLayers = 0;
    int m_effectiveGpuLayers = 0;
    int m_effectiveCpuMoeLayers = 0;
    bool m_overLimit = false;
    QString m_fitText;
    QLabel* m_fallback = nullptr;
    QLabel* m_gpuLabel = nullptr;
    QLabel* m_estimate = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QDoubleSpinBox* m_topP = nullptr;
    QSpinBox* m_topK = nullptr;
    QSpinBox* m_maxTokens = nullptr;
    QDoubleSpinBox* m_minP = nullptr;
    QDoubleSpinBox* m_repeat = nullptr;
    QSpinBox* m_idleUnload = nullptr;
    QComboBox* m_theme = nullptr;
    QPlainTextEdit* m_systemPrompt = nullptr;
};

} // namespace hearth::ui
