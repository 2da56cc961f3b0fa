// Proof that our quantized bytes are the standard's: hearth-cli synth writes llama-tiny in F32 and,
// with the same seed, in every type and mix; the reference llama.cpp loads each file and evaluates
// one fixed token sequence; its logits on each quantized file must stay close (cosine per
// position) to its logits on the F32 file. Mis-packed copies must fail the same check.
#include "hearth/gguf.h"
#include "hearth/quant.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <iterator>

using namespace hearth;

namespace {

std::vector<float> readFloats(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

// Smallest cosine similarity over positions between two [n, vocab] logit matrices.
double minCosine(const std::vector<float>& a, const std::vector<float>& b, size_t vocab) {
    double worst = 1.0;
    for (size_t row = 0; row * vocab < a.size(); ++row) {
        double dot = 0, na = 0, nb = 0;
        for (size_t i = row * vocab; i < (row + 1) * vocab; ++i) {
            dot += double(a[i]) * b[i];
            na += double(a[i]) * a[i];
            nb += double(b[i]) * b[i];
        }
        worst = std::min(worst, dot / std::sqrt(na * nb + 1e-30));
    }
    return worst;
}

// Per type or mix, the smallest acceptable cosine. Measured here (llama-tiny: 4 layers, 256 wide,
// N(0, 0.02) weights; 48 positions; seed 7): F16 0.999999, BF16 0.99998, Q8_0 0.99979,
// Q6_K 0.9979, Q5_K_M 0.9941, Q5_K_S 0.9934, Q5_1 0.9927, Q5_0 0.9902, Q4_K_S 0.9824,
// Q4_K_M 0.9769, Q4_0 0.9712, Q3_K_L 0.9700, Q4_1 0.9674, Q3_K_M 0.9617, Q3_K_S 0.9167,
// Q2_K 0.869. Each threshold sits
// between the measured value and 1 - 2 x (1 - measured), so a small regression in a quantizer
// fails while other seeds pass; a mis-packed file scores below 0.1 and fails every threshold.
const std::pair<const char*, double> kThresholds[] = {
    {"F16", 0.9999},   {"BF16", 0.9995},  {"Q8_0", 0.999},   {"Q6_K", 0.995},  {"Q5_K_M", 0.985},
    {"Q5_K_S", 0.985}, {"Q5_1", 0.98},    {"Q5_0", 0.98},    {"Q4_K_M", 0.95}, {"Q4_K_S", 0.96},
    {"Q4_0", 0.94},    {"Q4_1", 0.93},    {"Q3_K_L", 0.92},  {"Q3_K_M", 0.92}, {"Q3_K_S", 0.85},
    {"Q2_K", 0.74},
};

} // namespace

class TestQuantReference : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_ref, m_backendDir, m_harness, m_ids;
    std::vector<float> m_f32;
    static constexpr size_t kVocab = 32000;

    QString synth(const QString& type) {
        const QString out = m_dir.filePath(QStringLiteral("tiny-%1.gguf").arg(type));
        QProcess p;
        p.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                {QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("llama-tiny"),
                 QStringLiteral("--type"), type, QStringLiteral("--seed"), QStringLiteral("7"),
                 QStringLiteral("--vocab"),
                 QString::fromStdString(hearth::test::testDataPath("models/ggml-vocab-llama-spm.gguf")),
                 QStringLiteral("-o"), out});
        if (!p.waitForFinished(120000) || p.exitCode() != 0) {
            qWarning() << p.readAllStandardError();
            return {};
        }
        return out;
    }

    std::vector<float> referenceLogits(const QString& model) {
        const QString out = model + QStringLiteral(".logits");
        QProcess p;
        p.start(m_harness, {model, m_backendDir, out, m_ids});
        if (!p.waitForFinished(120000) || p.exitCode() != 0) {
            qWarning() << "reference failed on" << model << p.readAllStandardError();
            return {};
        }
        return readFloats(out);
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        const QString setup = QDir(hearth::test::testDataDir()).filePath(QStringLiteral("tools/reference/setup.sh"));
        if (!QFileInfo::exists(setup)) QSKIP("reference setup script not found");
        QProcess p;
        p.start(QStringLiteral("bash"), {setup});
        if (!p.waitForFinished(600000) || p.exitCode() != 0)
            QSKIP(qPrintable(QStringLiteral("the reference engine could not be set up here "
                                            "(needs node/npm and the npm registry): %1")
                                 .arg(QString::fromUtf8(p.readAllStandardError().right(300)))));
        const QStringList lines = QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n');
        m_ref = lines.last().trimmed();
        m_backendDir = m_ref + QStringLiteral("/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64");
        QVERIFY(m_dir.isValid());
        m_harness = m_dir.filePath(QStringLiteral("ref_logits"));
        const QString source = hearth::test::sourceDir() + QStringLiteral("/tests/model/ref_logits.cpp");
        QProcess cc;
        cc.start(QStringLiteral("g++"),
                 {QStringLiteral("-O1"), QStringLiteral("-std=c++17"),
                  QStringLiteral("-I") + m_ref + QStringLiteral("/llama.cpp-src/include"),
                  QStringLiteral("-I") + m_ref + QStringLiteral("/llama.cpp-src/ggml/include"), source,
                  QStringLiteral("-o"), m_harness, m_backendDir + QStringLiteral("/libllama.v0.5.0.so"),
                  m_backendDir + QStringLiteral("/libggml.v0.5.0.so"),
                  m_backendDir + QStringLiteral("/libggml-base.so"),
                  QStringLiteral("-Wl,-rpath,") + m_backendDir});
        QVERIFY(cc.waitForFinished(300000));
        QVERIFY2(cc.exitCode() == 0, cc.readAllStandardError().constData());
        QStringList ids{QStringLiteral("1")};
        for (int i = 0; i < 47; ++i) ids << QString::number((i * 7919 + 13) % 31000 + 500);
        m_ids = ids.join(',');
        const QString f32 = synth(QStringLiteral("F32"));
        QVERIFY(!f32.isEmpty());
        m_f32 = referenceLogits(f32);
        QCOMPARE(m_f32.size(), size_t(48) * kVocab);
    }

    void quantizedLogitsStayClose_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<double>("threshold");
        for (const auto& [type, threshold] : kThresholds) QTest::newRow(type) << QString::fromLatin1(type) << threshold;
    }
    void quantizedLogitsStayClose() {
        QFETCH(QString, type);
        QFETCH(double, threshold);
        const QString file = synth(type);
        QVERIFY(!file.isEmpty());
        const std::vector<float> logits = referenceLogits(file);
        QCOMPARE(logits.size(), m_f32.size());
        const double cos = minCosine(logits, m_f32, kVocab);
        qInfo("%-7s min cosine vs F32 %.6f (threshold %.4f)", qPrintable(type), cos, threshold);
        QVERIFY2(cos >= threshold, qPrintable(QString::number(cos)));
    }

    // Negative controls: the same files with their blocks deliberately mis-packed must fail.
    void misPackedFilesFail_data() {
        QTest::addColumn<QString>("type");
        QTest::newRow("Q4_0 nibbles swapped") << QStringLiteral("Q4_0");
        QTest::newRow("Q4_K_M scales permuted") << QStringLiteral("Q4_K_M");
    }
    void misPackedFilesFail() {
        QFETCH(QString, type);
        const QString good = synth(type);
        QVERIFY(!good.isEmpty());
        std::ifstream in(good.toStdString(), std::ios::binary);
        std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
        auto file = gguf::File::fromMemory(bytes.data(), bytes.size());
        QVERIFY(file.isOk());
        int damaged = 0;
        for (const gguf::TensorInfo& t : file->tensors()) {
            uint8_t* p = bytes.data() + file->dataOffset() + t.offset;
            if (t.type == quant::Type::Q4_0) { // swap the two nibbles of every quant byte
                for (uint64_t b = 0; b < t.bytes; b += 18)
                    for (int j = 2; j < 18; ++j) p[b + j] = uint8_t(p[b + j] << 4 | p[b + j] >> 4);
                ++damaged;
            } else if (t.type == quant::Type::Q4_K) { // rotate the 12 packed scale bytes
                for (uint64_t b = 0; b < t.bytes; b += 144) std::rotate(p + b + 4, p + b + 5, p + b + 16);
                ++damaged;
            }
        }
        QVERIFY(damaged > 0);
        const QString bad = m_dir.filePath(QStringLiteral("bad-%1.gguf").arg(type));
        std::ofstream(bad.toStdString(), std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        const std::vector<float> logits = referenceLogits(bad);
        QCOMPARE(logits.size(), m_f32.size());
        double threshold = 0;
        for (const auto& [t, th] : kThresholds)
            if (type == QLatin1String(t)) threshold = th;
        const double cos = minCosine(logits, m_f32, kVocab);
        qInfo("mis-packed %s min cosine %.6f (must be below %.4f)", qPrintable(type), cos, threshold);
        QVERIFY2(cos < threshold, qPrintable(QString::number(cos)));
    }
};

QTEST_GUILESS_MAIN(TestQuantReference)
#include "test_quant_reference.moc"
