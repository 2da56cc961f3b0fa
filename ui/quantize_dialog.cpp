// QuantizeDialog: the estimates come from the model's tensor list, read once by app::QuantizeJob
// on a worker thread (the dialog reads no file itself); the work runs there too.
#include "quantize_dialog.h"

#include "services/model_library.h"
#include "services/quantize_job.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace hearth::ui {

namespace {

QString formatBytes(qint64 bytes) {
    const double b = double(bytes);
    if (b >= 1e9) return QStringLiteral("%1 GB").arg(b / 1e9, 0, 'f', 2);
    if (b >= 1e6) return QStringLiteral("%1 MB").arg(b / 1e6, 0, 'f', 1);
    return QStringLiteral("%1 kB").arg(b / 1e3, 0, 'f', 1);
}

enum Role { MixRole = Qt::UserRole, BytesRole, NoteRole, TakesRole, RequiresRole };

} // namespace

QuantizeDialog::QuantizeDialog(app::ModelLibrary* library, const QString& modelPath, QWidget* parent)
    : QDialog(parent), m_library(library), m_model(modelPath), m_job(new app::QuantizeJob(this)) {
    setWindowTitle(tr("Quantize %1").arg(QFileInfo(modelPath).fileName()));
    auto* layout = new QVBoxLayout(this);

    // What the model is now: filled in when the job has read its tensor list.
    m_header = new QLabel(tr("<b>%1</b><br>reading its tensor list\u2026").arg(QFileInfo(modelPath).fileName().toHtmlEscaped()), this);
    m_header->setObjectName(QStringLiteral("quantizeHeader"));
    m_header->setWordWrap(true);
    layout->addWidget(m_header);

    auto* form = new QFormLayout;
    m_type = new QComboBox(this);
    m_type->setObjectName(QStringLiteral("quantizeType"));
    for (const app::QuantizeChoice& c : app::QuantizeJob::choices()) {
        m_type->addItem(c.mix);
        const int i = m_type->count() - 1;
        m_type->setItemData(i, c.mix, MixRole);
        m_type->setItemData(i, qint64(-1), BytesRole);
        m_type->setItemData(i, c.quality, NoteRole);
        m_type->setItemData(i, c.takesImportance, TakesRole);
        m_type->setItemData(i, c.requiresImportance, RequiresRole);
        m_type->setItemData(i, c.quality, Qt::ToolTipRole);
    }
    form->addRow(tr("Type:"), m_type);
    m_estimate = new QLabel(this);
    m_estimate->setObjectName(QStringLiteral("quantizeEstimate"));
    form->addRow(tr("Output:"), m_estimate);
    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    form->addRow(tr("Quality:"), m_note);
    m_output = new QLineEdit(this);
    m_output->setObjectName(QStringLiteral("quantizeOutput"));
    connect(m_output, &QLineEdit::textEdited, this, [this] { m_outputEdited = true; });
    form->addRow(tr("Save as:"), m_output);
    layout->addLayout(form);

    m_calibrationLabel = new QLabel(this);
    m_calibrationLabel->setWordWrap(true);
    layout->addWidget(m_calibrationLabel);
    m_calibration = new QPlainTextEdit(this);
    m_calibration->setObjectName(QStringLiteral("quantizeCalibration"));
    m_calibration->setPlaceholderText(
        tr("Paste a few paragraphs of text like what the model will read (chats, code, documents in "
           "your language). The model reads it once to learn which weights matter most."));
    layout->addWidget(m_calibration, 1);

    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setTextVisible(true);
    m_progress->setFormat(QStringLiteral("%p%"));
    layout->addWidget(m_progress);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("quantizeStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);

    auto* buttons = new QDialogButtonBox(this);
    m_start = buttons->addButton(tr("Quantize"), QDialogButtonBox::AcceptRole);
    m_start->setDefault(true);
    m_cancel = buttons->addButton(QDialogButtonBox::Cancel);
    layout->addWidget(buttons);
    connect(m_start, &QPushButton::clicked, this, [this] { startJob(); });
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (!m_job->isRunning()) return QDialog::reject();
        m_status->setText(tr("Cancelling\u2026")); // the dialog stays to say how it ended
        m_job->cancel();
    });

    connect(m_type, &QComboBox::currentIndexChanged, this, [this] { typeChanged(); });
    connect(m_job, &app::QuantizeJob::progress, this, [this](double fraction, const QString& text) {
        m_progress->setValue(int(fraction * 1000.0));
        m_status->setText(text);
    });
    connect(m_job, &app::QuantizeJob::finished, this, [this](const QString& path) {
        setRunning(false);
        m_progress->setValue(1000);
        if (m_library) {
            const QString folder = QFileInfo(m_library->modelsFolder()).absoluteFilePath();
            if (QFileInfo(path).absolutePath() == folder) m_library->refresh();
            else m_library->importModel(path, app::ModelLibrary::ImportMode::Reference);
        }
        m_status->setText(tr("Wrote %1 (%2) and added it to the library.")
                              .arg(QFileInfo(path).fileName(), formatBytes(QFileInfo(path).size())));
        m_start->setEnabled(false);
        m_cancel->setText(tr("Close"));
        Q_EMIT quantized(path);
    });
    connect(m_job, &app::QuantizeJob::failed, this, [this](const QString& message) {
        setRunning(false);
        m_progress->setValue(0);
        m_status->setText(tr("Quantization failed: %1").arg(message));
    });
    connect(m_job, &app::QuantizeJob::cancelled, this, [this] {
        setRunning(false);
        m_progress->setValue(0);
        m_status->setText(tr("Cancelled; nothing was written."));
        if (m_closeWhenStopped) QDialog::reject();
    });

    m_start->setEnabled(false); // until the model has been read
    connect(m_job, &app::QuantizeJob::estimated, this, [this](quint64 ticket, const app::QuantizeEstimate& e) {
        if (ticket == m_estimateTicket) showEstimate(e);
    });
    m_estimateTicket = m_job->estimate(modelPath);
    if (!selectType(QStringLiteral("Q4_K_M"))) typeChanged();
    resize(560, 520);
}

QuantizeDialog::~QuantizeDialog() = default; // the job's destructor stops and waits for its workers

void QuantizeDialog::showEstimate(const app::QuantizeEstimate& e) {
    const QString name = QFileInfo(m_model).fileName().toHtmlEscaped();
    m_estimated = true;
    if (!e.readable) {
        m_header->setText(tr("<b>%1</b> cannot be read as a GGUF model: %2").arg(name, e.error.toHtmlEscaped()));
        m_start->setEnabled(false);
        m_type->setEnabled(false);
        typeChanged();
        return;
    }
    m_modelBytes = e.modelBytes;
    QString currentType;
    if (const app::ModelEntry* entry = m_library ? m_library->find(m_model) : nullptr) currentType = entry->quantization;
    m_header->setText(tr("<b>%1</b><br>now %2%3 of weights")
                          .arg(name, currentType.isEmpty() ? QString() : currentType + QStringLiteral(", "),
                               formatBytes(m_modelBytes)));
    for (int i = 0; i < m_type->count(); ++i) {
        const QString mix = m_type->itemData(i, MixRole).toString();
        const qint64 bytes = e.outputBytes.value(mix, -1);
        m_type->setItemData(i, bytes, BytesRole);
        m_type->setItemText(i, bytes >= 0 ? tr("%1 \u2014 about %2").arg(mix, formatBytes(bytes)) : mix);
    }
    if (!isRunning()) m_start->setEnabled(true);
    typeChanged();
}

bool QuantizeDialog::selectType(const QString& mix) {
    for (int i = 0; i < m_type->count(); ++i) {
        if (m_type->itemData(i, MixRole).toString().compare(mix, Qt::CaseInsensitive) == 0) {
            if (m_type->currentIndex() == i) typeChanged();
            else m_type->setCurrentIndex(i);
            return true;
        }
    }
    return false;
}

QString QuantizeDialog::selectedType() const { return m_type->currentData(MixRole).toString(); }

QString QuantizeDialog::outputPath() const { return m_output->text().trimmed(); }

bool QuantizeDialog::isRunning() const { return m_job->isRunning(); }

void QuantizeDialog::typeChanged() {
    const int i = m_type->currentIndex();
    if (i < 0) return;
    const QString mix = m_type->itemData(i, MixRole).toString();
    const qint64 bytes = m_type->itemData(i, BytesRole).toLongLong();
    const bool takes = m_type->itemData(i, TakesRole).toBool();
    const bool required = m_type->itemData(i, RequiresRole).toBool();
    if (bytes >= 0 && m_modelBytes > 0)
        m_estimate->setText(tr("about %1 (%2% of the current %3)")
                                .arg(formatBytes(bytes))
                                .arg(qRound(100.0 * double(bytes) / double(m_modelBytes)))
                                .arg(formatBytes(m_modelBytes)));
    else
        m_estimate->setText(m_estimated ? tr("unknown") : tr("working it out\u2026"));
    m_note->setText(m_type->itemData(i, NoteRole).toString());
    m_calibration->setEnabled(takes && !isRunning());
    m_calibrationLabel->setText(required ? tr("Calibration text (required: %1 needs an importance matrix):").arg(mix)
                                : takes  ? tr("Calibration text (optional: improves %1's quality):").arg(mix)
                                         : tr("Calibration text (not used by %1):").arg(mix));
    if (!m_outputEdited) {
        const QString folder = m_library ? m_library->modelsFolder() : QFileInfo(m_model).absolutePath();
        m_output->setText(app::QuantizeJob::suggestedOutputPath(m_model, mix, folder));
    }
}

void QuantizeDialog::setRunning(bool running) {
    m_type->setEnabled(!running);
    m_output->setEnabled(!running);
    m_start->setEnabled(!running && m_estimated && m_modelBytes > 0);
    m_calibration->setEnabled(!running && m_type->currentData(TakesRole).toBool());
    m_cancel->setText(running ? tr("Cancel") : tr("Close"));
}

void QuantizeDialog::startJob() {
    const QString out = outputPath();
    if (out.isEmpty()) {
        m_status->setText(tr("Choose where to save the output."));
        return;
    }
    const bool takes = m_type->currentData(TakesRole).toBool();
    m_progress->setValue(0);
    m_status->setText(tr("Starting\u2026"));
    if (m_job->start(m_model, out, selectedType(), takes ? m_calibration->toPlainText() : QString()))
        setRunning(true);
}

void QuantizeDialog::reject() {
    // Esc or the window's close button: a running job is cancelled and the dialog closes once
    // the worker has stopped (and removed its partial output).
    if (m_job->isRunning()) {
        m_status->setText(tr("Cancelling\u2026"));
        m_closeWhenStopped = true;
        m_job->cancel();
        return;
    }
    QDialog::reject();
}

} // namespace hearth::ui
