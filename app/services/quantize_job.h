// QuantizeJob re-quantizes a GGUF model on a worker thread (hearth::quant::quantizeModel),
// first collecting an importance matrix from calibration text when the type wants one; it
// reports progress, stops promptly on cancel() and never leaves a partial output behind.
#pragma once

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

class QThread;

namespace hearth::app {

// One type the app offers, with what a user should know about it.
struct QuantizeChoice {
    QString mix;      // "Q4_K_M"
    QString quality;  // a short note on size and quality
    bool takesImportance = false;    // an importance matrix improves it
    bool requiresImportance = false; // it cannot be made without one
};

// What re-quantizing a model would give, from its tensor list (estimate()).
struct QuantizeEstimate {
    bool readable = false;              // the file opened as a GGUF model
    QString error;                      // why not
    qint64 modelBytes = 0;              // tensor data now
    QHash<QString, qint64> outputBytes; // per offered mix ("Q4_K_M"); absent when unknown
};

class QuantizeJob : public QObject {
    Q_OBJECT
public:
    explicit QuantizeJob(QObject* parent = nullptr);
    // Cancels a running job and waits for the worker.
    ~QuantizeJob() override;

    // The types offered, best quality first.
    static QList<QuantizeChoice> choices();
    static QuantizeChoice choice(const QString& mix); // mix empty when not offered
    // Reads the model's tensor list on a worker thread and sizes every offered type; estimated()
    // follows with the ticket returned. Nothing is read on the calling thread.
    quint64 estimate(const QString& modelPath);
    // Bytes of tensor data the output will have; -1 (reason in *error) when the model cannot be read.
    static qint64 estimateOutputBytes(const QString& modelPath, const QString& mix, QString* error = nullptr);
    // "<folder>/<stem>-<MIX>.gguf", the input's own quantization suffix replaced.
    static QString suggestedOutputPath(const QString& modelPath, const QString& mix, const QString& folder);

    // Starts the job; false (and failed() emitted later) when it cannot start. `calibrationText`
    // is used when the type takes an importance matrix (required for the IQ1/IQ2/IQ3_XXS types;
    // without it the others are quantized unweighted). threads 0: all cores but one.
    bool start(const QString& modelPath, const QString& outputPath, const QString& mix,
               const QString& calibrationText = {}, int threads = 0);
    // Stops the worker at the next row or chunk; cancelled() follows and no output file stays.
    void cancel();
    bool isRunning() const { return m_thread != nullptr; }

Q_SIGNALS:
    void estimated(quint64 ticket, const hearth::app::QuantizeEstimate& estimate);
    // fraction 0..1 of the whole job; text says which stage and tensor.
    void progress(double fraction, const QString& text);
    void finished(const QString& path);
    void failed(const QString& message);
    void cancelled();

private:
    void workerDone(int outcome, const QString& detail);

    QThread* m_thread = nullptr;
    QList<QThread*> m_estimating; // estimate() workers, waited for on destruction
    quint64 m_lastTicket = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    QString m_output;
};

} // namespace hearth::app
