// QuantizeJob: the importance matrix pass (calibration text through the model, activations
// collected) and the quantization itself run on a QThread; results come back queued.
#include "services/quantize_job.h"

#include "hearth/evaluate.h"
#include "hearth/gguf.h"
#include "hearth/imatrix.h"
#include "hearth/quant.h"
#include "hearth/quantize_model.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QRegularExpression>
#include <QThread>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace hearth::app {

namespace {

enum Outcome { Done = 0, Failed = 1, Cancelled = 2 };

struct ChoiceRow {
    const char* mix;
    const char* quality;
};

// Notes after llama.cpp's quantize table (size per weight and quality loss on 7B-class models).
const ChoiceRow kChoices[] = {
    {"F16", "16 bits per weight: lossless for most models, twice Q8_0's size"},
    {"BF16", "16 bits per weight: lossless, keeps F32's range"},
    {"Q8_0", "8.5 bits per weight: practically lossless"},
    {"Q6_K", "6.6 bits per weight: very close to Q8_0"},
    {"Q5_K_M", "5.7 bits per weight: very small quality loss"},
    {"Q5_K_S", "5.5 bits per weight: small quality loss"},
    {"Q4_K_M", "4.8 bits per weight: the usual balance of size and quality"},
    {"Q4_K_S", "4.6 bits per weight: a little more loss than Q4_K_M"},
    {"IQ4_XS", "4.3 bits per weight: close to Q4_K_S, smaller; best with calibration text"},
    {"IQ4_NL", "4.5 bits per weight: non-linear 4-bit, like Q4_0 with less loss"},
    {"Q4_0", "4.5 bits per weight: legacy 4-bit, noticeable loss"},
    {"Q3_K_L", "4.3 bits per weight: clear quality loss"},
    {"Q3_K_M", "3.9 bits per weight: clear quality loss"},
    {"Q3_K_S", "3.5 bits per weight: large quality loss"},
    {"IQ3_M", "3.7 bits per weight: better than Q3_K_M at its size; best with calibration text"},
    {"IQ3_XXS", "3.1 bits per weight: large loss; needs calibration text"},
    {"Q2_K", "3.4 bits per weight: very large loss, for the biggest models only"},
    {"IQ2_M", "2.7 bits per weight: very large loss; needs calibration text"},
    {"IQ2_XS", "2.3 bits per weight: extreme loss; needs calibration text"},
    {"IQ2_XXS", "2.1 bits per weight: extreme loss; needs calibration text"},
    {"IQ1_M", "1.8 bits per weight: barely usable; needs calibration text"},
    {"IQ1_S", "1.6 bits per weight: barely usable; needs calibration text"},
};

QuantizeChoice makeChoice(const ChoiceRow& row) {
    QuantizeChoice c;
    c.mix = QString::fromLatin1(row.mix);
    c.quality = QString::fromUtf8(row.quality);
    if (const auto mix = quant::mixFromName(row.mix)) {
        c.takesImportance = quant::takesImportance(mix->baseType);
        c.requiresImportance = quant::requiresImportance(mix->baseType);
        if (c.requiresImportance) c.takesImportance = true;
    }
    return c;
}

// Calibration text through the model; the collected importance matrix, or an error.
// Cancelled between chunks.
Result<imatrix::Data> collectImportance(const std::string& model, const std::string& text, int threads,
                                        const std::atomic<bool>& cancel,
                                        const std::function<void(double, const QString&)>& report) {
    EvaluatorConfig cfg;
    cfg.modelPath = model;
    cfg.threads = threads;
    cfg.contextLength = 512;
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<Evaluator> eval, Evaluator::open(cfg));
    HEARTH_ASSIGN_OR_RETURN(std::vector<int32_t> tokens,
                            eval->tokenizer().encode(text, /*addSpecial=*/true, /*parseSpecial=*/false));
    if (tokens.size() < 16)
        return invalidArgument("the calibration text is too short (" + std::to_string(tokens.size()) +
                               " tokens): give a few paragraphs of text like what the model will read");
    imatrix::Collector collector;
    HEARTH_RETURN_IF_ERROR(eval->setObserver(&collector));
    // Chunks of up to 512 tokens, each from position 0 with BOS first, as llama.cpp's imatrix.
    const int32_t ctx = int32_t(std::min<size_t>(tokens.size(), 512));
    const size_t chunks = std::min<size_t>(tokens.size() / size_t(ctx), 64);
    const int32_t bos = eval->bosToken();
    std::vector<float> logits;
    for (size_t c = 0; c < chunks; ++c) {
        if (cancel) return Status(ErrorCode::Cancelled, "cancelled");
        std::vector<int32_t> chunk(tokens.begin() + std::ptrdiff_t(c * size_t(ctx)),
                                   tokens.begin() + std::ptrdiff_t((c + 1) * size_t(ctx)));
        if (bos >= 0 && eval->addsBos()) chunk[0] = bos;
        HEARTH_RETURN_IF_ERROR(eval->logits(chunk, 0, logits));
        HEARTH_RETURN_IF_ERROR(collector.status());
        report(double(c + 1) / double(chunks),
               QStringLiteral("Reading the calibration text: chunk %1 of %2").arg(c + 1).arg(chunks));
    }
    if (collector.entries().empty()) return invalidArgument("no weight multiplication was observed");
    imatrix::Data data;
    data.entries = collector.entries();
    data.datasets = {"calibration text"};
    data.chunkCount = uint32_t(chunks);
    data.chunkSize = uint32_t(ctx);
    return data;
}

} // namespace

QList<QuantizeChoice> QuantizeJob::choices() {
    QList<QuantizeChoice> out;
    for (const ChoiceRow& row : kChoices) out << makeChoice(row);
    return out;
}

QuantizeChoice QuantizeJob::choice(const QString& mix) {
    for (const ChoiceRow& row : kChoices)
        if (mix.compare(QLatin1String(row.mix), Qt::CaseInsensitive) == 0) return makeChoice(row);
    return {};
}

qint64 QuantizeJob::estimateOutputBytes(const QString& modelPath, const QString& mix, QString* error) {
    const auto m = quant::mixFromName(mix.toStdString());
    if (!m) {
        if (error) *error = QStringLiteral("unknown type %1").arg(mix);
        return -1;
    }
    auto file = gguf::File::open(modelPath.toStdString());
    if (!file) {
        if (error) *error = QString::fromStdString(file.status().toString());
        return -1;
    }
    auto bytes = quant::estimateQuantizedBytes(*file, *m, quant::requiresImportance(m->baseType));
    if (!bytes) {
        if (error) *error = QString::fromStdString(bytes.status().toString());
        return -1;
    }
    return qint64(*bytes);
}

QString QuantizeJob::suggestedOutputPath(const QString& modelPath, const QString& mix, const QString& folder) {
    QString stem = QFileInfo(modelPath).completeBaseName();
    static const QRegularExpression split(QStringLiteral("-\\d{5}-of-\\d{5}$"));
    stem.remove(split);
    static const QRegularExpression quantSuffix(
        QStringLiteral("[-._](F32|F16|BF16|Q\\d_K(_[SML])?|Q\\d_[01]|IQ\\d_[A-Z]+|TQ\\d_0)$"),
        QRegularExpression::CaseInsensitiveOption);
    stem.remove(quantSuffix);
    return QDir(folder).filePath(QStringLiteral("%1-%2.gguf").arg(stem, mix.toUpper()));
}

QuantizeJob::QuantizeJob(QObject* parent) : QObject(parent) {}

QuantizeJob::~QuantizeJob() {
    for (QThread* t : m_estimating) {
        t->wait();
        delete t;
    }
    if (m_thread) {
        *m_cancel = true;
        m_thread->wait();
        delete m_thread;
        m_thread = nullptr;
    }
}

quint64 QuantizeJob::estimate(const QString& modelPath) {
    const quint64 ticket = ++m_lastTicket;
    const std::string path = modelPath.toStdString();
    QPointer<QuantizeJob> self(this);
    QThread* worker = QThread::create([self, ticket, path] {
        QuantizeEstimate e;
        if (auto file = gguf::File::open(path)) {
            e.readable = true;
            for (const gguf::TensorInfo& t : file->tensors()) e.modelBytes += qint64(t.bytes);
            for (const QuantizeChoice& c : choices())
                if (const auto mix = quant::mixFromName(c.mix.toStdString()))
                    if (auto b = quant::estimateQuantizedBytes(*file, *mix, c.requiresImportance)) e.outputBytes[c.mix] = qint64(*b);
        } else {
            e.error = QString::fromStdString(file.status().message());
        }
        QMetaObject::invokeMethod(
            self.data(),
            [self, ticket, e] {
                if (self) Q_EMIT self->estimated(ticket, e);
            },
            Qt::QueuedConnection);
    });
    worker->setObjectName(QStringLiteral("hearth-quantize-estimate"));
    connect(worker, &QThread::finished, this, [this, worker] {
        m_estimating.removeOne(worker);
        worker->deleteLater();
    });
    m_estimating.append(worker);
    worker->start(QThread::LowPriority);
    return ticket;
}

bool QuantizeJob::start(const QString& modelPath, const QString& outputPath, const QString& mixName,
                        const QString& calibrationText, int threads) {
    auto refuse = [this](const QString& message) {
        QMetaObject::invokeMethod(this, [this, message] { Q_EMIT failed(message); }, Qt::QueuedConnection);
        return false;
    };
    if (m_thread) return refuse(QStringLiteral("a quantization is running already"));
    const auto mix = quant::mixFromName(mixName.toStdString());
    if (!mix) return refuse(QStringLiteral("%1 is not a quantization type").arg(mixName));
    if (!QFileInfo(modelPath).isFile()) return refuse(QStringLiteral("%1 is not a file").arg(modelPath));
    if (QFileInfo(outputPath).absoluteFilePath() == QFileInfo(modelPath).absoluteFilePath())
        return refuse(QStringLiteral("the output would overwrite the model"));
    if (QFileInfo::exists(outputPath)) return refuse(QStringLiteral("%1 exists already").arg(outputPath));
    const bool wantsImportance = quant::takesImportance(mix->baseType) && !calibrationText.trimmed().isEmpty();
    if (quant::requiresImportance(mix->baseType) && calibrationText.trimmed().isEmpty())
        return refuse(QStringLiteral("%1 needs an importance matrix: paste some calibration text (a few "
                                     "paragraphs like what the model will read)")
                          .arg(mixName));
    if (threads <= 0) threads = std::max(1, QThread::idealThreadCount() - 1);

    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_output = outputPath;
    const std::string in = modelPath.toStdString(), out = outputPath.toStdString();
    const std::string text = calibrationText.toStdString();
    const quant::Mix chosen = *mix;
    auto cancel = m_cancel;
    QPointer<QuantizeJob> self(this);
    auto post = [self](auto fn) {
        QMetaObject::invokeMethod(self.data(), [self, fn] { if (self) fn(self.data()); }, Qt::QueuedConnection);
    };
    m_thread = QThread::create([=] {
        // The importance pass takes the first 30% of the bar when there is one.
        const double quantStart = wantsImportance ? 0.3 : 0.0;
        std::optional<imatrix::Data> importance;
        if (wantsImportance) {
            auto data = collectImportance(in, text, threads, *cancel, [&](double f, const QString& what) {
                post([f, what, quantStart](QuantizeJob* j) { Q_EMIT j->progress(f * quantStart, what); });
            });
            if (!data) {
                const bool stopped = data.status().code() == ErrorCode::Cancelled;
                const QString why = QString::fromStdString(data.status().toString());
                post([stopped, why](QuantizeJob* j) { j->workerDone(stopped ? Cancelled : Failed, why); });
                return;
            }
            importance.emplace(std::move(*data));
        }
        // The output's folder is made here, off the caller's thread.
        if (!QDir().mkpath(QFileInfo(QString::fromStdString(out)).absolutePath())) {
            const QString why = QStringLiteral("cannot create %1").arg(QFileInfo(QString::fromStdString(out)).absolutePath());
            post([why](QuantizeJob* j) { j->workerDone(Failed, why); });
            return;
        }
        quant::QuantizeModelOptions options;
        options.threads = threads;
        options.importance = importance ? &*importance : nullptr;
        options.cancelled = [cancel] { return cancel->load(); };
        options.progress = [&](const quant::QuantizeProgress& p) {
            const double f = quantStart + (1.0 - quantStart) * p.fraction;
            const QString what = QStringLiteral("Tensor %1 of %2: %3 (%4 \u2192 %5)")
                                     .arg(p.tensorIndex + 1)
                                     .arg(p.tensorCount)
                                     .arg(QString::fromUtf8(p.tensor.data(), qsizetype(p.tensor.size())),
                                          QString::fromLatin1(quant::typeName(p.from).data()),
                                          QString::fromLatin1(quant::typeName(p.to).data()));
            post([f, what](QuantizeJob* j) { Q_EMIT j->progress(f, what); });
        };
        const Status s = quant::quantizeModel(in, out, chosen, options);
        if (s.isOk() && cancel->load()) {
            // Finished just as the cancel came: the user asked for no file.
            std::remove(out.c_str());
            post([](QuantizeJob* j) { j->workerDone(Cancelled, {}); });
            return;
        }
        const int outcome = s.isOk() ? Done : s.code() == ErrorCode::Cancelled ? Cancelled : Failed;
        const QString detail = s.isOk() ? QString() : QString::fromStdString(s.toString());
        post([outcome, detail](QuantizeJob* j) { j->workerDone(outcome, detail); });
    });
    m_thread->setObjectName(QStringLiteral("hearth-quantize"));
    m_thread->start(QThread::LowPriority);
    return true;
}

void QuantizeJob::cancel() {
    if (m_cancel) *m_cancel = true;
}

void QuantizeJob::workerDone(int outcome, const QString& detail) {
    if (m_thread) {
        m_thread->wait();
        delete m_thread;
        m_thread = nullptr;
    }
    switch (outcome) {
    case Done:
        Q_EMIT progress(1.0, QStringLiteral("Done"));
        Q_EMIT finished(m_output);
        break;
    case Cancelled:
        Q_EMIT cancelled();
        break;
    default:
        Q_EMIT failed(detail);
        break;
    }
}

} // namespace hearth::app
