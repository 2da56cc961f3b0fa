// The settings page: how models load (context, KV cache type, threads, parallel sequences, GPU
// layers) with a live, itemised memory estimate for the chosen model, and the sampling of chats.
#pragma once

#include "services/engine_host.h"
#include "services/settings.h"

#include <QWidget>

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

    // The model whose memory the estimate describes.
    void setModelPath(const QString& path);
    app::Sampling sampling() const;
    QString estimateText() const;

Q_SIGNALS:
    void samplingChanged(const app::Sampling& sampling);

private:
    void save();
    void updateEstimate();

    app::Settings* m_settings;
    app::EngineHost* m_engine;
    QString m_modelPath;
    QSpinBox* m_context = nullptr;
    QComboBox* m_kvType = nullptr;
    QSpinBox* m_threads = nullptr;
    QSpinBox* m_parallel = nullptr;
    QSlider* m_gpuLayers = nullptr;
    QLabel* m_gpuLabel = nullptr;
    QLabel* m_estimate = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QDoubleSpinBox* m_topP = nullptr;
    QSpinBox* m_topK = nullptr;
    QSpinBox* m_maxTokens = nullptr;
};

} // namespace hearth::ui
