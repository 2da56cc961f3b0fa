// The settings page: how models load (device, GPU layers, context, KV cache type, threads,
// parallel sequences) with a live, itemised memory estimate for the chosen model, split between
// the device and RAM the way the engine places tensors, and the sampling of chats.
#pragma once

#include "services/engine_host.h"
#include "services/settings.h"

#include "hearth/devices.h"

#include <QWidget>

#include <thread>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSlider;
class QSpinBox;

namespace hearth::ui {

class SettingsView : public QWidget {
    Q_OBJECT
public:
    SettingsView(app::Settings* settings, app::EngineHost* engine, QWidget* parent = nullptr);
    ~SettingsView() override; // waits for the device probe if it is still running

    // The model whose memory the estimate describes.
    void setModelPath(const QString& path);
    app::Sampling sampling() const;
    QString estimateText() const;
    // The devices offered in the picker (found in the background at start; tests set them).
    void setDevices(const DeviceList& devices);
    void selectDevice(const QString& id);
    void setGpuLayers(int layers); // -1: as many as fit
    // What the estimate currently resolves "GPU layers" to, and whether it is over a limit.
    int effectiveGpuLayers() const { return m_effectiveGpuLayers; }
    bool estimateOverLimit() const { return m_overLimit; }

Q_SIGNALS:
    void samplingChanged(const app::Sampling& sampling);

private:
    void save();
    void updateEstimate();
    void updateGpuControls();
    const DeviceDescription* currentDevice() const;

    app::Settings* m_settings;
    app::EngineHost* m_engine;
    QString m_modelPath;
    QSpinBox* m_context = nullptr;
    QComboBox* m_kvType = nullptr;
    QSpinBox* m_threads = nullptr;
    QSpinBox* m_parallel = nullptr;
    QComboBox* m_device = nullptr;
    DeviceList m_devices;
    QString m_pendingDevice; // the saved device, until the list arrives
    std::thread m_deviceProbe; // lists devices off the GUI thread; joined, never left to exit
    QCheckBox* m_gpuAuto = nullptr;
    QSlider* m_gpuLayers = nullptr;
    QCheckBox* m_mmap = nullptr;
    QSpinBox* m_batch = nullptr;
    int m_modelLayers = 0;
    int m_effectiveGpuLayers = 0;
    bool m_overLimit = false;
    QLabel* m_gpuLabel = nullptr;
    QLabel* m_estimate = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QDoubleSpinBox* m_topP = nullptr;
    QSpinBox* m_topK = nullptr;
    QSpinBox* m_maxTokens = nullptr;
};

} // namespace hearth::ui
