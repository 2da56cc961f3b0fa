// QuantizeDialog: re-quantize a library model in the app: pick a type (each with the size the
// output will have and a note on its quality), calibration text when the type takes an
// importance matrix, a progress bar and Cancel; the output joins the library.
#pragma once

#include <QDialog>
#include <QString>

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace hearth::app {
class ModelLibrary;
class QuantizeJob;
struct QuantizeEstimate;
}

namespace hearth::ui {

class QuantizeDialog : public QDialog {
    Q_OBJECT
public:
    QuantizeDialog(app::ModelLibrary* library, const QString& modelPath, QWidget* parent = nullptr);
    ~QuantizeDialog() override;

    // Selects a type by name ("Q4_K_M"); false when it is not offered.
    bool selectType(const QString& mix);
    QString selectedType() const;
    QString outputPath() const;
    bool isRunning() const;

    // For tests and the main window.
    QComboBox* typeBox() const { return m_type; }
    QPlainTextEdit* calibrationEdit() const { return m_calibration; }
    QProgressBar* progressBar() const { return m_progress; }
    QPushButton* startButton() const { return m_start; }
    QPushButton* cancelButton() const { return m_cancel; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* estimateLabel() const { return m_estimate; }
    QLabel* headerLabel() const { return m_header; }

Q_SIGNALS:
    // The output was written and handed to the library.
    void quantized(const QString& path);

protected:
    void reject() override;

private:
    void showEstimate(const app::QuantizeEstimate& estimate);
    void typeChanged();
    void startJob();
    void setRunning(bool running);

    app::ModelLibrary* m_library;
    QString m_model;
    qint64 m_modelBytes = 0;
    quint64 m_estimateTicket = 0;
    bool m_estimated = false; // the job has read the model's tensor list
    QLabel* m_header;
    app::QuantizeJob* m_job;
    QComboBox* m_type;
    QLabel* m_estimate;
    QLabel* m_note;
    QLabel* m_calibrationLabel;
    QPlainTextEdit* m_calibration;
    QLineEdit* m_output;
    bool m_outputEdited = false;
    QProgressBar* m_progress;
    QLabel* m_status;
    QPushButton* m_start;
    QPushButton* m_cancel;
    bool m_closeWhenStopped = false;
};

} // namespace hearth::ui
