// Settings page, the "Chat sampling" section: what new chats start with (temperature, top-p,
// top-k, min-p, repetition penalty, reply length, system prompt), kept in Settings::chatSampling().
#include "settings_view.h"

#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QPlainTextEdit>
#include <QSpinBox>

namespace hearth::ui {

QGroupBox* SettingsView::buildSamplingSection() {
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

    connect(m_temperature, &QDoubleSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_topP, &QDoubleSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_topK, &QSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_minP, &QDoubleSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_repeat, &QDoubleSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_maxTokens, &QSpinBox::valueChanged, this, &SettingsView::saveSampling);
    connect(m_systemPrompt, &QPlainTextEdit::textChanged, this,
            [this] { m_settings->setDefaultSystemPrompt(m_systemPrompt->toPlainText()); });
    return sampleBox;
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

} // namespace hearth::ui
