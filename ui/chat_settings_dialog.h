// The per-chat settings dialog: the conversation's system prompt and sampling (temperature,
// top-k/p, min-p, repetition penalty, seed, reply length, stop strings), or "use the defaults".
#pragma once

#include "services/service_types.h"

#include <QDialog>

class QCheckBox;
class QDoubleSpinBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace hearth::ui {

class ChatSettingsDialog : public QDialog {
    Q_OBJECT
public:
    // `custom`: whether the chat has its own sampling (else the defaults are shown, greyed).
    ChatSettingsDialog(const QString& systemPrompt, const app::Sampling& sampling, bool custom,
                       const app::Sampling& defaults, QWidget* parent = nullptr);

    QString systemPrompt() const;
    bool customSampling() const;
    app::Sampling sampling() const;

private:
    void showSampling(const app::Sampling& s);

    app::Sampling m_defaults;
    QPlainTextEdit* m_system = nullptr;
    QCheckBox* m_custom = nullptr;
    QDoubleSpinBox* m_temperature = nullptr;
    QSpinBox* m_topK = nullptr;
    QDoubleSpinBox* m_topP = nullptr;
    QDoubleSpinBox* m_minP = nullptr;
    QDoubleSpinBox* m_repetition = nullptr;
    QLineEdit* m_seed = nullptr;
    QSpinBox* m_maxTokens = nullptr;
    QLineEdit* m_stops = nullptr;
};

} // namespace hearth::ui
