// Per-chat settings dialog: system prompt and sampling of one conversation.
#include "chat_settings_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <QVBoxLayout>

namespace hearth::ui {

namespace {

QDoubleSpinBox* doubleBox(QWidget* parent, double lo, double hi, double step, int decimals) {
    auto* box = new QDoubleSpinBox(parent);
    box->setRange(lo, hi);
    box->setSingleStep(step);
    box->setDecimals(decimals);
    return box;
}

} // namespace

ChatSettingsDialog::ChatSettingsDialog(const QString& systemPrompt, const app::Sampling& sampling,
                                       bool custom, const app::Sampling& defaults, QWidget* parent)
    : QDialog(parent), m_defaults(defaults) {
    setWindowTitle(tr("Chat settings"));
    m_system = new QPlainTextEdit(this);
    m_system->setPlainText(systemPrompt);
    m_system->setPlaceholderText(tr("System prompt for this chat (empty: none)"));
    m_custom = new QCheckBox(tr("Own sampling for this chat (otherwise the Settings page's)"), this);
    m_temperature = doubleBox(this, 0.0, 5.0, 0.05, 2);
    m_temperature->setToolTip(tr("0 is greedy: always the most likely token"));
    m_topK = new QSpinBox(this);
    m_topK->setRange(0, 1000);
    m_topK->setToolTip(tr("0: off"));
    m_topP = doubleBox(this, 0.0, 1.0, 0.01, 2);
    m_minP = doubleBox(this, 0.0, 1.0, 0.01, 2);
    m_repetition = doubleBox(this, 0.5, 3.0, 0.05, 2);
    m_seed = new QLineEdit(this);
    m_seed->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{1,19}")), m_seed));
    m_seed->setToolTip(tr("0: a new random seed for every reply"));
    m_maxTokens = new QSpinBox(this);
    m_maxTokens->setRange(1, 1 << 20);
    m_stops = new QLineEdit(this);
    m_stops->setPlaceholderText(tr("Stop strings, separated by |"));

    auto* form = new QFormLayout();
    form->addRow(tr("Temperature"), m_temperature);
    form->addRow(tr("Top-k"), m_topK);
    form->addRow(tr("Top-p"), m_topP);
    form->addRow(tr("Min-p"), m_minP);
    form->addRow(tr("Repetition penalty"), m_repetition);
    form->addRow(tr("Seed"), m_seed);
    form->addRow(tr("Max reply tokens"), m_maxTokens);
    form->addRow(tr("Stop"), m_stops);
    auto* samplingBox = new QWidget(this);
    samplingBox->setLayout(form);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_system, 1);
    layout->addWidget(m_custom);
    layout->addWidget(samplingBox);
    layout->addWidget(buttons);

    connect(m_custom, &QCheckBox::toggled, this, [this, samplingBox](bool on) {
        samplingBox->setEnabled(on);
        if (!on) showSampling(m_defaults);
    });
    showSampling(custom ? sampling : defaults);
    m_custom->setChecked(custom);
    samplingBox->setEnabled(custom);
    resize(480, 520);
}

void ChatSettingsDialog::showSampling(const app::Sampling& s) {
    m_temperature->setValue(s.temperature);
    m_topK->setValue(s.topK);
    m_topP->setValue(s.topP);
    m_minP->setValue(s.minP);
    m_repetition->setValue(s.repetitionPenalty);
    m_seed->setText(QString::number(s.seed));
    m_maxTokens->setValue(s.maxTokens);
    m_stops->setText(s.stopStrings.join(QLatin1Char('|')));
}

QString ChatSettingsDialog::systemPrompt() const { return m_system->toPlainText().trimmed(); }

bool ChatSettingsDialog::customSampling() const { return m_custom->isChecked(); }

app::Sampling ChatSettingsDialog::sampling() const {
    if (!customSampling()) return m_defaults;
    app::Sampling s = m_defaults;
    s.temperature = float(m_temperature->value());
    s.topK = m_topK->value();
    s.topP = float(m_topP->value());
    s.minP = float(m_minP->value());
    s.repetitionPenalty = float(m_repetition->value());
    s.seed = m_seed->text().toULongLong();
    s.maxTokens = m_maxTokens->value();
    s.stopStrings.clear();
    for (const QString& part : m_stops->text().split(QLatin1Char('|')))
        if (!part.isEmpty()) s.stopStrings << part;
    return s;
}

} // namespace hearth::ui
