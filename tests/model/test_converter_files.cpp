// Files written by llama.cpp's own writer, not ours: every architecture's tiny synthetic model
// rewritten with the reference's gguf-py (tests/tools/gguf_py_rewrite.py) the way its converter
// writes models (counts u32, per-layer lists i32, layer maps bool), then
//  - the canonical file's keys carry the converter's types (so the rows below read them);
//  - Hearth on the CPU and on Vulkan against llama.cpp on the same file: teacher-forced logits in
//    fp32, and greedy tokens equal up to near-ties (decoders); embeddings (encoders);
//  - the same file with every "one value or one per layer" key written in each other type gguf-py
//    can write it in (each integer width and signedness as a scalar and as an array, flags as
//    bool, f32 scalars as f64) loads and gives the canonical file's results exactly.
#include "encoder_test_support.h"
#include "greedy_compare.h"
#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "model_harness.h"
#include "reference_logits.h"
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <numeric>

using namespace hearth;

namespace {

constexpr double kMaxDiff = 2e-3; // fp32 logits against llama.cpp on the same file
constexpr int kSteps = 16;        // greedy tokens compared

// A Python 3 that can import gguf-py's dependencies (numpy, PyYAML): $HEARTH_PYTHON, Debian's
// /usr/bin/python3, or the first python3 on PATH; empty when none can.
QString findPython() {
    QStringList candidates;
    if (!qEnvironmentVariableIsEmpty("HEARTH_PYTHON"))
        candidates << qEnvironmentVariable("HEARTH_PYTHON");
    candidates << QStringLiteral("/usr/bin/python3") << QStringLiteral("python3");
    for (const QString& python : candidates) {
        QProcess p;
        p.start(python, {QStringLiteral("-c"), QStringLiteral("import numpy, yaml")});
        if (p.waitForFinished(60000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0)
            return python;
    }
    return {};
}

struct Variant {
    QString file, name;
    QStringList keys; // the keys written in the variant's type
};

// Token ids valid in the 512-token vocabulary: BOS, then 19 others.
std::vector<int32_t> sequence() {
    std::vector<int32_t> ids{1};
    for (int i = 0; i < 19; ++i) ids.push_back((i * 97 + 13) % 500 + 10);
    return ids;
}

std::vector<int32_t> prompt() {
    std::vector<int32_t> ids{1};
    for (int i = 0; i < 7; ++i) ids.push_back((i * 131 + 29) % 500 + 10);
    return ids;
}

double maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size() || a.empty()) return 1e9;
    double d = 0.0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
    return d;
}

} // namespace

class TestConverterFiles : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    test::ReferenceLogits m_ref;
    QString m_python;
    std::vector<std::string> m_devices{"cpu"};

    // `hearth-cli synth` of preset (cut to `layers` when given) with `vocab`, F32; empty on
    // failure.
    QString synth(const QString& preset, const QString& layers, const QString& vocab) {
        const QString out = m_dir.filePath(preset + QStringLiteral(".hearth.gguf"));
        QStringList args{QStringLiteral("synth"),
                         QStringLiteral("--preset"),
                         preset,
                         QStringLiteral("--type"),
                         QStringLiteral("F32"),
                         QStringLiteral("--vocab"),
                         vocab,
                         QStringLiteral("-o"),
                         out};
        if (!layers.isEmpty()) args << QStringLiteral("--layers") << layers;
        QProcess p;
        p.start(test::binDir() + QStringLiteral("/hearth-cli"), args);
        if (!p.waitForFinished(300000) || p.exitCode() != 0) {
            qWarning("synth: %s", p.readAllStandardError().constData());
            return {};
        }
        return out;
    }

    // `from` rewritten by gguf-py as the converter writes it into `to`, its variants beside it;
    // the variants, or an error in `err`.
    std::vector<Variant> rewrite(const QString& from, const QString& to, QString& err) {
        QProcess p;
        p.start(m_python, {test::sourceDir() + QStringLiteral("/tests/tools/gguf_py_rewrite.py"),
                           m_ref.refDir + QStringLiteral("/llama.cpp-src/gguf-py"), from, to,
                           QStringLiteral("--variants"), to + QStringLiteral(".variants")});
        std::vector<Variant> out;
        if (!p.waitForFinished(300000) || p.exitCode() != 0) {
            err = QString::fromUtf8(p.readAllStandardError());
            return out;
        }
        for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
            if (line.trimmed().isEmpty()) continue;
            const QJsonObject o = QJsonDocument::fromJson(line).object();
            Variant v{o.value(QStringLiteral("file")).toString(),
                      o.value(QStringLiteral("variant")).toString(),
                      {}};
            for (const auto& k : o.value(QStringLiteral("keys")).toArray()) v.keys << k.toString();
            out.push_back(v);
        }
        if (out.empty()) err = QStringLiteral("gguf_py_rewrite.py wrote no variant");
        return out;
    }

    // The keys of `path` as `expected` says ("key=type", e.g.
    // "qwen35.attention.recurrent_layers=bool[5]").
    static void checkTypes(const QString& path, const QStringList& expected) {
        auto f = gguf::File::open(path.toStdString());
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        for (const QString& e : expected) {
            const QStringList kv = e.split('=');
            QCOMPARE(kv.size(), 2);
            const gguf::Value* v = f->find(kv[0].toStdString());
            QVERIFY2(v, qPrintable(kv[0] + QStringLiteral(" is missing")));
            QCOMPARE(QString::fromStdString(v->typeDescription()), kv[1]);
        }
    }

    // The preset synthesized, then rewritten by gguf-py as the converter writes it (its keys
    // checked against `types`): the path, or empty on failure; the variants in `variants`.
    QString canonical(const QString& preset, const QString& layers, const QString& vocab,
                      const QStringList& types, std::vector<Variant>& variants) {
        const QString base = synth(preset, layers, vocab);
        if (base.isEmpty()) return {};
        const QString file = m_dir.filePath(preset + QStringLiteral(".gguf"));
        QString err;
        variants = rewrite(base, file, err);
        if (!err.isEmpty()) {
            qWarning("gguf_py_rewrite.py: %s", qPrintable(err));
            return {};
        }
        checkTypes(file, types);
        return QTest::currentTestFailed() ? QString() : file;
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        bool skip = false;
        const QString err = m_ref.build(m_dir.path(), skip);
        if (skip) QSKIP(qPrintable(err));
        QVERIFY2(err.isEmpty(), qPrintable(err));
        m_python = findPython();
        if (m_python.isEmpty())
            QSKIP("no python3 with numpy and PyYAML here (Debian: python3-numpy python3-yaml), "
                  "which llama.cpp's "
                  "gguf-py needs");
        if (findDevice(listDevices(), "vulkan:0")) m_devices.push_back("vulkan:0");
        qputenv("HEARTH_REF", m_ref.refDir.toUtf8()); // for tests/tools/ref_embed.mjs
    }

    // The decoders in four groups, so that no test function runs long on a slow host.
    void llamaFamilyAgreesWithReference_data() {
        decoderColumns();
        row("llama-tiny", {"llama.block_count=u32", "llama.attention.head_count=u32",
                           "llama.rope.freq_base=f32"});
        row("mixtral-tiny", {"llama.expert_count=u32", "llama.expert_used_count=u32"});
        row("qwen2-tiny", {"qwen2.feed_forward_length=u32"});
        row("qwen3-tiny", {"qwen3.attention.key_length=u32"});
        row("qwen3moe-tiny", {"qwen3moe.expert_feed_forward_length=u32"});
    }
    void llamaFamilyAgreesWithReference() { decoderAgrees(); }

    void gemmaFamilyAgreesWithReference_data() {
        decoderColumns();
        row("gemma3-tiny", {"gemma3.attention.sliding_window_pattern=u32"});
        row("gemma4-tiny", {"gemma4.attention.head_count_kv=i32[6]",
                            "gemma4.attention.sliding_window_pattern=bool[6]"});
        row("gemma4-moe-tiny",
            {"gemma4.attention.head_count_kv=i32[4]", "gemma4.expert_feed_forward_length=u32"});
        row("gemma4-e-tiny",
            {"gemma4.attention.head_count_kv=i32[4]", "gemma4.feed_forward_length=i32[4]"});
    }
    void gemmaFamilyAgreesWithReference() { decoderAgrees(); }

    void otherDecodersAgreeWithReference_data() {
        decoderColumns();
        row("gpt-oss-tiny", {"gpt-oss.attention.sliding_window=u32"});
        row("phi3-tiny", {"phi3.rope.dimension_count=u32"});
        row("mistral3-tiny", {"mistral3.attention.temperature_scale=f32"});
    }
    void otherDecodersAgreeWithReference() { decoderAgrees(); }

    void qwen35FamilyAgreesWithReference_data() {
        decoderColumns();
        row("qwen35-tiny",
            {"qwen35.attention.recurrent_layers=bool[5]", "qwen35.rope.dimension_sections=i32[4]",
             "qwen35.full_attention_interval=u32"});
        row("qwen35moe-tiny", {"qwen35moe.attention.recurrent_layers=bool[5]",
                               "qwen35moe.rope.dimension_sections=i32[4]"});
    }
    void qwen35FamilyAgreesWithReference() { decoderAgrees(); }

private:
    static void decoderColumns() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QStringList>("types");
    }
    static void row(const char* preset, QStringList types) {
        QTest::newRow(preset) << QString::fromLatin1(preset) << types;
    }
    // A decoder preset, rewritten by gguf-py with `types`, against llama.cpp on every device.
    void decoderAgrees() {
        QFETCH(QString, preset);
        QFETCH(QStringList, types);
        const QString layers; // the whole preset
        const QString stories =
            QString::fromStdString(test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        std::vector<Variant> variants;
        const QString file = canonical(preset, layers, stories, types, variants);
        QVERIFY(!file.isEmpty());

        // Teacher-forced logits: llama.cpp's on the file, ours on each device.
        const std::vector<int32_t> ids = sequence();
        const std::vector<float> theirs = m_ref.run(file, ids);
        QVERIFY(!theirs.empty() && theirs.size() % ids.size() == 0);
        const size_t vocab = theirs.size() / ids.size();
        std::vector<float> cpu;
        for (const std::string& device : m_devices) {
            const std::vector<float> ours = test::teacherForced(file.toStdString(), ids, device);
            const double d = maxAbsDiff(ours, theirs);
            qInfo("%s on %s: max |dlogit| %.2e against llama.cpp on gguf-py's file",
                  qPrintable(preset), device.c_str(), d);
            QVERIFY2(d <= kMaxDiff, qPrintable(QString::number(d)));
            if (device == "cpu") cpu = ours;
        }
        // Our own writer's file, which the gguf-py file was made from, gives the same logits.
        const std::vector<float> fromOurs = test::teacherForced(
            m_dir.filePath(preset + QStringLiteral(".hearth.gguf")).toStdString(), ids, "cpu");
        QCOMPARE(maxAbsDiff(fromOurs, cpu), 0.0);

        // Greedy tokens against llama.cpp's, near-ties accepted.
        const std::vector<float> rows =
            m_ref.greedy(file, prompt(), kSteps, file + QStringLiteral(".greedy"));
        QCOMPARE(rows.size(), size_t(kSteps) * vocab);
        for (const std::string& device : m_devices) {
            test::Collector ours;
            const Status s = test::generate(file, prompt(), kSteps, device, ours);
            QVERIFY2(s.isOk(), s.toString().c_str());
            const test::Verdict v = test::judge(rows, vocab, ours);
            qInfo("%s greedy on %s: %s", qPrintable(preset), device.c_str(),
                  qPrintable(test::describe(v)));
            QVERIFY(v.firstDivergence < 0 || v.tie);
        }

        // Every per-layer key in every type: the canonical file's logits, exactly.
        for (const Variant& v : variants) {
            const std::vector<float> ours = test::teacherForced(v.file.toStdString(), ids, "cpu");
            const double d = maxAbsDiff(ours, cpu);
            QVERIFY2(d == 0.0,
                     qPrintable(QStringLiteral("%1 (%2): max |dlogit| %3 from the canonical file")
                                    .arg(v.name, v.keys.join(QStringLiteral(", ")))
                                    .arg(d)));
        }
        qInfo("%s: %zu variants (%s) give the canonical logits", qPrintable(preset),
              variants.size(),
              qPrintable(std::accumulate(variants.begin(), variants.end(), QString(),
                                         [](QString a, const Variant& v) {
                                             return a.isEmpty() ? v.name : a + ' ' + v.name;
                                         })));
    }

private Q_SLOTS:
    void encodersAgreeWithReference_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QStringList>("types");
        QTest::newRow("bert-tiny")
            << QStringLiteral("bert-tiny")
            << QStringList{"bert.attention.causal=bool", "bert.pooling_type=u32",
                           "bert.attention.layer_norm_epsilon=f32"};
        QTest::newRow("nomic-bert-tiny")
            << QStringLiteral("nomic-bert-tiny")
            << QStringList{"nomic-bert.rope.freq_base=f32", "nomic-bert.pooling_type=u32"};
    }
    void encodersAgreeWithReference() {
        QFETCH(QString, preset);
        QFETCH(QStringList, types);
        const QString bge =
            m_ref.refDir + QStringLiteral("/llama.cpp-src/models/ggml-vocab-bert-bge.gguf");
        QVERIFY2(QFile::exists(bge), qPrintable(bge));
        std::vector<Variant> variants;
        const QString file = canonical(preset, {}, bge, types, variants);
        QVERIFY(!file.isEmpty());

        const QString text = QStringLiteral("What is the capital of France? Paris, of course.");
        QString err;
        const test::ReferenceEmbedding ref = test::referenceEmbedding(file, text, {}, err);
        QVERIFY2(!ref.tokens.empty(), qPrintable(QStringLiteral("ref_embed.mjs failed: ") + err));
        auto embed = [&](const QString& path, const std::string& device) {
            auto engine = test::openEngine(path.toStdString(), 512, device);
            if (!engine) qWarning("%s", engine.status().toString().c_str());
            return engine ? test::embedOne(**engine, ref.tokens) : std::vector<float>{};
        };
        const std::vector<float> theirs = test::normalized(ref.vector);
        std::vector<float> cpu;
        for (const std::string& device : m_devices) {
            const std::vector<float> ours = embed(file, device);
            QCOMPARE(ours.size(), theirs.size());
            const double cos = test::cosine(ours, theirs), d = test::maxAbsDiff(ours, theirs);
            qInfo("%s on %s: cosine %.8f, max |diff| %.2e against llama.cpp on gguf-py's file",
                  qPrintable(preset), device.c_str(), cos, d);
            QVERIFY(cos >= 0.9999 && d <= kMaxDiff);
            if (device == "cpu") cpu = ours;
        }
        for (const Variant& v : variants) {
            const double d = maxAbsDiff(embed(v.file, "cpu"), cpu);
            QVERIFY2(d == 0.0,
                     qPrintable(QStringLiteral("%1 (%2): max |diff| %3 from the canonical file")
                                    .arg(v.name, v.keys.join(QStringLiteral(", ")))
                                    .arg(d)));
        }
        qInfo("%s: %zu variants give the canonical embedding", qPrintable(preset), variants.size());
    }
};

QTEST_GUILESS_MAIN(TestConverterFiles)
#include "test_converter_files.moc"
