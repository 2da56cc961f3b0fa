// QuantizeJob on real files: stories260K and a synthesized llama (rows of 256, so K-quants are
// really K-quants) to Q8_0 and Q4_K_M, the outputs loaded by the engine; IQ2_XS with an
// importance matrix from calibration text (refused without one); cancel stops promptly and
// leaves no file; size estimates and suggested names.
#include "services/quantize_job.h"

#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "hearth/synth.h"
#include "test_support.h"

#include <QDir>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;
using app::QuantizeJob;

namespace {

QString calibrationText() {
    QString t;
    const char* sentences[] = {"Once upon a time there was a little girl who lived in a village near the forest. ",
                               "Every morning she walked to the well to fetch water for her mother. ",
                               "The sun was warm and the birds sang in the tall green trees. ",
                               "One day she found a small dog sitting alone beside the road. "};
    for (int i = 0; i < 24; ++i) t += QString::fromLatin1(sentences[i % 4]);
    return t;
}

quant::Type tensorType(const QString& path, const std::string& name) {
    auto f = gguf::File::open(path.toStdString());
    if (!f) return quant::Type::I64;
    for (const gguf::TensorInfo& t : f->tensors())
        if (t.name == name) return t.type;
    return quant::Type::I64;
}

bool loads(const QString& path, QString* error) {
    EngineConfig c;
    c.modelPath = path.toStdString();
    c.contextLength = 128;
    c.maxNumSeqs = 1;
    c.threads = 2;
    auto e = Engine::create(c);
    if (!e) *error = QString::fromStdString(e.status().toString());
    return e.isOk();
}

QStringList leftovers(const QString& dir) {
    return QDir(dir).entryList({QStringLiteral("*.tmp-*"), QStringLiteral("*.part")}, QDir::Files);
}

} // namespace

class TestQuantizeJob : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_llama; // synthesized F32 llama-tiny, 1 layer

    // Runs a job to its end; the signal that ended it.
    QString runJob(QuantizeJob& job, const QString& in, const QString& out, const QString& mix,
                   const QString& calibration = {}, QString* detail = nullptr) {
        QSignalSpy finished(&job, &QuantizeJob::finished), failed(&job, &QuantizeJob::failed),
            cancelled(&job, &QuantizeJob::cancelled);
        job.start(in, out, mix, calibration, 2);
        QElapsedTimer t;
        t.start();
        while (finished.isEmpty() && failed.isEmpty() && cancelled.isEmpty() && t.elapsed() < 240000)
            QTest::qWait(20);
        if (!failed.isEmpty() && detail) *detail = failed.first().first().toString();
        return !finished.isEmpty() ? QStringLiteral("finished") : !failed.isEmpty() ? QStringLiteral("failed")
               : !cancelled.isEmpty() ? QStringLiteral("cancelled") : QStringLiteral("timeout");
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        const QString vocab = QString::fromStdString(test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf")));
        if (!QFileInfo::exists(vocab)) return;
        SynthOptions o;
        o.preset = "llama-tiny";
        o.typeOrMix = "F32";
        o.vocabPath = vocab.toStdString();
        o.layers = 1;
        o.threads = 2;
        m_llama = m_dir.filePath(QStringLiteral("llama-tiny-F32.gguf"));
        o.outPath = m_llama.toStdString();
        const Status s = synthesizeModel(o);
        QVERIFY2(s.isOk(), s.toString().c_str());
    }

    void stories260kToQ8_0() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString in = QString::fromStdString(test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        const QString out = m_dir.filePath(QStringLiteral("stories260K-Q8_0.gguf"));
        QuantizeJob job;
        QSignalSpy progress(&job, &QuantizeJob::progress);
        QString detail;
        QCOMPARE(runJob(job, in, out, QStringLiteral("Q8_0"), {}, &detail), QStringLiteral("finished"));
        QVERIFY(!job.isRunning());
        QCOMPARE(tensorType(out, "blk.0.attn_q.weight"), quant::Type::Q8_0);
        QVERIFY(progress.size() >= 2);
        QCOMPARE(progress.last().at(0).toDouble(), 1.0);
        double last = 0.0;
        for (const auto& p : progress) { // never backwards
            QVERIFY(p.at(0).toDouble() >= last);
            last = p.at(0).toDouble();
        }
        QString error;
        QVERIFY2(loads(out, &error), qPrintable(error));
        // The estimate is the tensor data; the file adds metadata and padding only.
        const qint64 estimate = QuantizeJob::estimateOutputBytes(in, QStringLiteral("Q8_0"));
        QVERIFY(estimate > 0 && estimate <= QFileInfo(out).size());
        QVERIFY2(QFileInfo(out).size() - estimate < 600 * 1024, qPrintable(QString::number(QFileInfo(out).size() - estimate)));
        // estimate(): the same sizes for every offered type, read on a worker thread, by ticket.
        QSignalSpy estimated(&job, &QuantizeJob::estimated);
        const quint64 ticket = job.estimate(in);
        QVERIFY(estimated.isEmpty()); // nothing comes back before the event loop runs
        QTRY_COMPARE_WITH_TIMEOUT(estimated.size(), 1, 10000);
        QCOMPARE(estimated.first().at(0).toULongLong(), ticket);
        const auto e = estimated.first().at(1).value<app::QuantizeEstimate>();
        QVERIFY(e.readable);
        QVERIFY(e.modelBytes > 0);
        QCOMPARE(e.outputBytes.value(QStringLiteral("Q8_0")), estimate);
        QCOMPARE(e.outputBytes.size(), QuantizeJob::choices().size());
        const quint64 bad = job.estimate(m_dir.filePath(QStringLiteral("missing.gguf")));
        QTRY_COMPARE_WITH_TIMEOUT(estimated.size(), 2, 10000);
        QCOMPARE(estimated.last().at(0).toULongLong(), bad);
        QVERIFY(!estimated.last().at(1).value<app::QuantizeEstimate>().readable);
        QVERIFY(!estimated.last().at(1).value<app::QuantizeEstimate>().error.isEmpty());
    }

    void llamaToKQuant() {
        if (m_llama.isEmpty()) QSKIP("models/ggml-vocab-llama-spm.gguf is missing (set HEARTH_TEST_DATA)");
        const QString out = m_dir.filePath(QStringLiteral("llama-tiny-Q4_K_M.gguf"));
        QuantizeJob job;
        QString detail;
        QCOMPARE(runJob(job, m_llama, out, QStringLiteral("Q4_K_M"), {}, &detail), QStringLiteral("finished"));
        QCOMPARE(tensorType(out, "blk.0.attn_q.weight"), quant::Type::Q4_K);
        QString error;
        QVERIFY2(loads(out, &error), qPrintable(error));
        const qint64 estimate = QuantizeJob::estimateOutputBytes(m_llama, QStringLiteral("Q4_K_M"));
        QVERIFY(estimate > 0 && estimate <= QFileInfo(out).size() && QFileInfo(out).size() - estimate < 2 * 1024 * 1024);
        QVERIFY(QuantizeJob::estimateOutputBytes(m_llama, QStringLiteral("Q8_0")) > estimate);
        QVERIFY(leftovers(m_dir.path()).isEmpty());
    }

    // IQ2_XS needs an importance matrix: refused without text, made from the text with it.
    void importanceFromCalibrationText() {
        if (m_llama.isEmpty()) QSKIP("models/ggml-vocab-llama-spm.gguf is missing (set HEARTH_TEST_DATA)");
        QVERIFY(QuantizeJob::choice(QStringLiteral("IQ2_XS")).requiresImportance);
        QVERIFY(!QuantizeJob::choice(QStringLiteral("Q8_0")).takesImportance);
        QVERIFY(QuantizeJob::choice(QStringLiteral("Q4_K_M")).takesImportance);
        const QString out = m_dir.filePath(QStringLiteral("llama-tiny-IQ2_XS.gguf"));
        QuantizeJob job;
        QString detail;
        QCOMPARE(runJob(job, m_llama, out, QStringLiteral("IQ2_XS"), {}, &detail), QStringLiteral("failed"));
        QVERIFY2(detail.contains(QStringLiteral("calibration text")), qPrintable(detail));
        QVERIFY(!QFileInfo::exists(out));
        QSignalSpy progress(&job, &QuantizeJob::progress);
        QCOMPARE(runJob(job, m_llama, out, QStringLiteral("IQ2_XS"), calibrationText(), &detail), QStringLiteral("finished"));
        QCOMPARE(tensorType(out, "blk.0.attn_q.weight"), quant::Type::IQ2_XS);
        bool sawCalibration = false;
        for (const auto& p : progress) sawCalibration |= p.at(1).toString().contains(QStringLiteral("calibration"));
        QVERIFY(sawCalibration);
        QString error;
        QVERIFY2(loads(out, &error), qPrintable(error));
    }

    void cancelLeavesNoFile() {
        if (m_llama.isEmpty()) QSKIP("models/ggml-vocab-llama-spm.gguf is missing (set HEARTH_TEST_DATA)");
        const QString out = m_dir.filePath(QStringLiteral("llama-tiny-cancelled.gguf"));
        QuantizeJob job;
        QSignalSpy cancelled(&job, &QuantizeJob::cancelled), finished(&job, &QuantizeJob::finished);
        // With calibration text: the importance pass, then the quantization, each long enough to
        // be stopped in the middle.
        QElapsedTimer t;
        // Stopped at its first report (a chunk of the importance pass): the whole quantization
        // is still ahead of it then.
        connect(&job, &QuantizeJob::progress, this, [&job, &t] {
            if (t.isValid()) return;
            t.start();
            job.cancel();
        });
        QVERIFY(job.start(m_llama, out, QStringLiteral("IQ2_XS"), calibrationText(), 1));
        QTRY_VERIFY_WITH_TIMEOUT(t.isValid(), 20000);
        QTRY_VERIFY_WITH_TIMEOUT(!cancelled.isEmpty() || !finished.isEmpty(), 20000);
        QVERIFY2(finished.isEmpty(), "the job finished before the cancel: make it longer");
        QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
        QVERIFY(!job.isRunning());
        QVERIFY(!QFileInfo::exists(out));
        QVERIFY2(leftovers(m_dir.path()).isEmpty(), qPrintable(leftovers(m_dir.path()).join(QLatin1Char(' '))));
        job.disconnect(this);
        // A job cancelled at once, before its first tensor.
        QSignalSpy cancelled2(&job, &QuantizeJob::cancelled);
        QVERIFY(job.start(m_llama, out, QStringLiteral("Q8_0"), {}, 1));
        job.cancel();
        QTRY_VERIFY_WITH_TIMEOUT(!cancelled2.isEmpty(), 20000);
        QVERIFY(!QFileInfo::exists(out));
        QVERIFY(leftovers(m_dir.path()).isEmpty());
    }

    // Cancelled in the middle of the quantization itself (not the importance pass): the engine
    // stops within the tensor it is on, so at most one more tensor reports after the cancel.
    void cancelDuringQuantization() {
        if (m_llama.isEmpty()) QSKIP("models/ggml-vocab-llama-spm.gguf is missing (set HEARTH_TEST_DATA)");
        const QString out = m_dir.filePath(QStringLiteral("llama-tiny-cancelled-late.gguf"));
        QuantizeJob job;
        QSignalSpy cancelled(&job, &QuantizeJob::cancelled), finished(&job, &QuantizeJob::finished);
        int tensorReports = 0, afterCancel = 0;
        bool cancelSent = false;
        connect(&job, &QuantizeJob::progress, this, [&](double, const QString& text) {
            if (!text.startsWith(QStringLiteral("Tensor"))) return;
            ++tensorReports;
            if (cancelSent) {
                ++afterCancel;
                return;
            }
            cancelSent = true;
            job.cancel();
        });
        QVERIFY(job.start(m_llama, out, QStringLiteral("IQ2_XS"), calibrationText(), 1));
        QTRY_VERIFY_WITH_TIMEOUT(!cancelled.isEmpty() || !finished.isEmpty(), 60000);
        QVERIFY2(finished.isEmpty(), "the job finished before the cancel: make it longer");
        const auto tensors = gguf::File::open(m_llama.toStdString())->tensors().size();
        QVERIFY2(afterCancel <= 1, qPrintable(QStringLiteral("%1 tensors reported after the cancel (of %2)")
                                                  .arg(afterCancel)
                                                  .arg(tensors)));
        QVERIFY(tensorReports < int(tensors));
        QVERIFY(!QFileInfo::exists(out));
        QVERIFY(leftovers(m_dir.path()).isEmpty());
    }

    void refusals() {
        QuantizeJob job;
        QString detail;
        QCOMPARE(runJob(job, m_dir.filePath(QStringLiteral("missing.gguf")), m_dir.filePath(QStringLiteral("x.gguf")),
                        QStringLiteral("Q8_0"), {}, &detail),
                 QStringLiteral("failed"));
        QCOMPARE(runJob(job, m_llama.isEmpty() ? QStringLiteral("/dev/null") : m_llama, m_dir.filePath(QStringLiteral("y.gguf")),
                        QStringLiteral("Q9_Z"), {}, &detail),
                 QStringLiteral("failed"));
        QVERIFY2(detail.contains(QStringLiteral("Q9_Z")), qPrintable(detail));
        QCOMPARE(QuantizeJob::suggestedOutputPath(QStringLiteral("/m/Qwen2.5-0.5B-Instruct-F16.gguf"), QStringLiteral("q4_k_m"),
                                                  QStringLiteral("/lib")),
                 QStringLiteral("/lib/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf"));
        QCOMPARE(QuantizeJob::suggestedOutputPath(QStringLiteral("/m/big-Q8_0-00001-of-00003.gguf"), QStringLiteral("Q6_K"),
                                                  QStringLiteral("/lib")),
                 QStringLiteral("/lib/big-Q6_K.gguf"));
        QCOMPARE(QuantizeJob::estimateOutputBytes(m_dir.filePath(QStringLiteral("missing.gguf")), QStringLiteral("Q8_0")), -1);
    }
};

QTEST_GUILESS_MAIN(TestQuantizeJob)
#include "test_quantize_job.moc"
