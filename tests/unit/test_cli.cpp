// hearth-cli inspect (its GPU placement with experts in RAM too), synth, quantize and split as a
// user runs them, and the memory estimator against hand-computed numbers.
#include "hearth/gguf.h"
#include "hearth/model_info.h"
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

namespace {

struct Run {
    int exitCode = -1;
    QString out, err;
};

Run cli(const QStringList& args) {
    QProcess p;
    p.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"), args);
    Run r;
    if (!p.waitForFinished(120000)) return r;
    r.exitCode = p.exitCode();
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

QString model(const char* name) {
    return QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/") + name));
}

// A small bench-serve run on stories260K (2 streams of 8 + 4 tokens, JSON), then `last`.
QStringList benchServeArgs(const QString& last) {
    return {QStringLiteral("bench-serve"), model("stories260K.gguf"), QStringLiteral("--concurrency"),
            QStringLiteral("2"),           QStringLiteral("--prompt-len"), QStringLiteral("8"),
            QStringLiteral("--gen-len"),   QStringLiteral("4"),            QStringLiteral("--no-sequential"),
            QStringLiteral("--json"),      last};
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private Q_SLOTS:
    void inspectStatesTheReadmeFacts() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        Run r = cli({QStringLiteral("inspect"), model("stories260K.gguf")});
        QCOMPARE(r.exitCode, 0);
        for (const char* fact : {"architecture      llama", "layers            5",
                                 "embedding length  64", "feed forward      172",
                                 "heads             8 (kv 4), head dim 8",
                                 "tokens            512  bos 1  eos 2", "by type           F32: 48"})
            QVERIFY2(r.out.contains(QLatin1String(fact)), fact);

        Run j = cli({QStringLiteral("inspect"), model("llama-2-tiny-random.gguf"), QStringLiteral("--json"),
                     QStringLiteral("--ctx"), QStringLiteral("1024")});
        QCOMPARE(j.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QCOMPARE(o["architecture"].toString(), QStringLiteral("llama"));
        QCOMPARE(o["tensor_count"].toInt(), 12);
        QCOMPARE(o["tensors_by_type"]["F16"].toInt(), 9);
        QCOMPARE(o["tensors_by_type"]["F32"].toInt(), 3);
        QCOMPARE(o["hyperparameters"]["block_count"].toInt(), 1);
        QCOMPARE(o["hyperparameters"]["embedding_length"].toInt(), 8);
        QCOMPARE(o["tokenizer"]["tokens"].toInt(), 32000);
        // KV at 1024 tokens, F16: 2 x 1 layer x 2 kv heads x 4 dims x 1024 x 2 bytes.
        QCOMPARE(o["memory"]["kv_cache_bytes"].toInteger(), qint64(2 * 1 * 2 * 4 * 1024 * 2));
        QCOMPARE(o["tensors"].toArray().size(), 12);
    }

    // A qwen35 file: the hybrid layout (3 delta nets, then attention, then a multi-token-prediction
    // layer), the delta net's sizes, K/V for the one attention layer (not the MTP layer) and the
    // recurrent state per sequence, as text and as JSON.
    void inspectShowsTheHybridLayout() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString out = m_dir.filePath(QStringLiteral("qwen35-tiny.gguf"));
        Run s = cli({QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("qwen35-tiny"),
                     QStringLiteral("--type"), QStringLiteral("F32"), QStringLiteral("--vocab"), model("stories260K.gguf"),
                     QStringLiteral("-o"), out});
        QVERIFY2(s.exitCode == 0, qPrintable(s.err));
        Run r = cli({QStringLiteral("inspect"), out, QStringLiteral("--ctx"), QStringLiteral("1024")});
        QCOMPARE(r.exitCode, 0);
        // K/V at 1024 tokens F16: 2 x 1 layer x 2 kv heads x 64 x 1024 x 2 bytes = 512 KiB; state per
        // delta-net layer (4-1) x 256 + 4 x 32 x 32 F32 values = 19456 bytes, three of them.
        for (const char* fact : {"hybrid layout", "layers            3 gated delta-net, 1 full attention, 1 multi-token",
                                 "layer kinds       RRRAM",
                                 "delta net         conv kernel 4, state size 32, 2 q/k heads, 4 v heads, inner 128",
                                 "KV cache          512.0 KiB (1 layer, 512 B per token)",
                                 "recurrent state   57.0 KiB per sequence (3 layers)"})
            QVERIFY2(r.out.contains(QString::fromUtf8(fact)), qPrintable(QString::fromUtf8(fact) + QStringLiteral("\n") + r.out));
        Run j = cli({QStringLiteral("inspect"), out, QStringLiteral("--json"), QStringLiteral("--ctx"), QStringLiteral("1024")});
        QCOMPARE(j.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QCOMPARE(o["hybrid"]["attention_layers"].toInt(), 1);
        QCOMPARE(o["hybrid"]["recurrent_layers"].toInt(), 3);
        QCOMPARE(o["hybrid"]["layer_kinds"].toString(), QStringLiteral("RRRAM"));
        QCOMPARE(o["hybrid"]["nextn_layers"].toInt(), 1);
        QCOMPARE(o["hybrid"]["ssm"]["time_step_rank"].toInt(), 4);
        QCOMPARE(o["memory"]["kv_cache_bytes"].toInteger(), qint64(2 * 1 * 2 * 64 * 1024 * 2));
        QCOMPARE(o["memory"]["state_bytes_per_sequence"].toInteger(), qint64(3 * 19456));
        QCOMPARE(o["memory"]["total_bytes"].toInteger(),
                 o["memory"]["weights_bytes"].toInteger() + qint64(2 * 2 * 64 * 1024 * 2) + qint64(3 * 19456));
        // A plain model has no hybrid section.
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/llama-2-tiny-random.gguf"));
        Run plain = cli({QStringLiteral("inspect"), model("llama-2-tiny-random.gguf"), QStringLiteral("--json")});
        const QJsonObject p = QJsonDocument::fromJson(plain.out.toUtf8()).object();
        QVERIFY(!p.contains(QStringLiteral("hybrid")));
        QCOMPARE(p["memory"]["state_bytes_per_sequence"].toInteger(), qint64(0));
    }

    // inspect's placement: qwen3moe-tiny in a 20 MiB GPU budget keeps its 4 layers there with the
    // experts of the first 2 in RAM (what the load would do), within the budget; -ngl with
    // --cpu-moe puts those layers' experts in RAM; a dense model has none; bad counts exit 2.
    void inspectPlacesExpertsInRam() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString out = m_dir.filePath(QStringLiteral("qwen3moe-tiny.gguf"));
        Run s = cli({QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("qwen3moe-tiny"),
                     QStringLiteral("--type"), QStringLiteral("Q8_0"), QStringLiteral("--vocab"), model("stories260K.gguf"),
                     QStringLiteral("-o"), out});
        QVERIFY2(s.exitCode == 0, qPrintable(s.err));
        Run j = cli({QStringLiteral("inspect"), out, QStringLiteral("--json"), QStringLiteral("--gpu-memory"),
                     QStringLiteral("20M")});
        QVERIFY2(j.exitCode == 0, qPrintable(j.err));
        auto placement = [](const Run& r) { return QJsonDocument::fromJson(r.out.toUtf8()).object()["placement"].toObject(); };
        const QJsonObject p = placement(j);
        QCOMPARE(p["gpu_layers"].toInt(), 4);
        QCOMPARE(p["cpu_moe_layers"].toInt(), 2);
        QVERIFY(p["fitted"].toBool() && p["fits"].toBool());
        QVERIFY(p["gpu"]["total_bytes"].toInteger() <= qint64(20) << 20);
        QVERIFY(p["cpu"]["experts_bytes"].toInteger() > 0);
        QCOMPARE(p["cpu"]["experts_bytes"].toInteger(), p["cpu"]["weights_bytes"].toInteger());
        Run t = cli({QStringLiteral("inspect"), out, QStringLiteral("--gpu-memory"), QStringLiteral("20M")});
        QVERIFY2(t.out.contains(QStringLiteral("4 of 4 on the GPU, the experts of the first 2 in RAM (as many as fit)")),
                 qPrintable(t.out));

        const QJsonObject byHand = placement(cli({QStringLiteral("inspect"), out, QStringLiteral("--json"),
                                                  QStringLiteral("--gpu-memory"), QStringLiteral("1G"), QStringLiteral("-ngl"),
                                                  QStringLiteral("3"), QStringLiteral("--cpu-moe")}));
        QCOMPARE(byHand["gpu_layers"].toInt(), 3);
        QCOMPARE(byHand["cpu_moe_layers"].toInt(), 3);
        QVERIFY(!byHand["fitted"].toBool());

        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/llama-2-tiny-random.gguf"));
        const QJsonObject dense = placement(cli({QStringLiteral("inspect"), model("llama-2-tiny-random.gguf"),
                                                 QStringLiteral("--json"), QStringLiteral("--gpu-memory"), QStringLiteral("1G"),
                                                 QStringLiteral("--cpu-moe")}));
        QCOMPARE(dense["cpu_moe_layers"].toInt(), 0);
        QCOMPARE(dense["cpu"]["experts_bytes"].toInteger(), qint64(0));

        for (const QStringList& bad : {QStringList{QStringLiteral("--n-cpu-moe"), QStringLiteral("x")},
                                       QStringList{QStringLiteral("--n-cpu-moe"), QStringLiteral("-3")},
                                       QStringList{QStringLiteral("--gpu-memory"), QStringLiteral("lots")},
                                       QStringList{QStringLiteral("--device"), QStringLiteral("nope:9")}}) {
            Run r = cli(QStringList{QStringLiteral("inspect"), out} + bad);
            QCOMPARE(r.exitCode, 2);
            QVERIFY(!r.err.isEmpty());
        }
    }

    void inspectEveryShippedModel() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        for (const char* name : {"stories260K.gguf", "llama-2-tiny-random.gguf", "ggml-vocab-llama-spm.gguf",
                                 "ggml-vocab-llama-bpe.gguf", "ggml-vocab-qwen2.gguf"})
            QCOMPARE(cli({QStringLiteral("inspect"), model(name)}).exitCode, 0);
    }

    void benchServeTakesTheDecodeStall() {
        const QStringList base = benchServeArgs(QStringLiteral("--decode-stall"));
        Run r = cli(base + QStringList{QStringLiteral("0")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY(r.out.contains(QStringLiteral("\"aggregate_tok_s\"")));
        for (const char* bad : {"-1", "fast", "2.5x", ""}) {
            r = cli(base + QStringList{QString::fromLatin1(bad)});
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains(QStringLiteral("--decode-stall")), qPrintable(r.err));
        }
    }

    void benchServeRunsOnTheNamedDevice() {
        const QStringList base = benchServeArgs(QStringLiteral("--device"));
        Run r = cli(base + QStringList{QStringLiteral("cpu")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object()["device"].toString(), QStringLiteral("cpu"));
        r = cli(base + QStringList{QStringLiteral("bogus:3")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("unknown device 'bogus:3'")), qPrintable(r.err));
        QCOMPARE(cli(base).exitCode, 2); // --device without its value
    }

    void badFileIsOneLineAndExitTwo() {
        const QString bad = m_dir.filePath(QStringLiteral("bad.gguf"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("GGUF\x03\0\0\0 truncated", 17);
        f.close();
        Run r = cli({QStringLiteral("inspect"), bad});
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(r.err.startsWith(QStringLiteral("hearth-cli: ") + bad + QStringLiteral(": invalid format")));
        QCOMPARE(cli({QStringLiteral("inspect")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("inspect"), bad, QStringLiteral("--bogus")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("frobnicate")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("--version")}).exitCode, 0);
    }

    void estimatorMatchesHandComputedNumbers() {
        ModelInfo m;
        m.weightBytes = 1000;
        // Llama 3.2 1B: 16 layers, 8 KV heads of 64; 4096 tokens F16 = 2*16*8*64*4096*2 = 128 MiB.
        m.blockCount = 16;
        m.headCountKv = 8;
        m.keyLength = m.valueLength = 64;
        QCOMPARE(estimateMemory(m, 4096, quant::Type::F16).kvBytes, uint64_t(134217728));
        QCOMPARE(estimateMemory(m, 4096, quant::Type::F16).totalBytes(), uint64_t(134218728));
        // Qwen2.5 0.5B: 24 layers, 2 KV heads of 64; 32768 tokens Q8_0 = 2*24*2*64*32768 * 34/32.
        m.blockCount = 24;
        m.headCountKv = 2;
        QCOMPARE(estimateMemory(m, 32768, quant::Type::Q8_0).kvBytes, uint64_t(213909504));
        // Qwen3 0.6B: 28 layers, 8 KV heads of 128; 2048 tokens F32 = 2*28*8*128*2048*4.
        m.blockCount = 28;
        m.headCountKv = 8;
        m.keyLength = m.valueLength = 128;
        QCOMPARE(estimateMemory(m, 2048, quant::Type::F32).kvBytes, uint64_t(469762048));
        QCOMPARE(estimateMemory(m, 2048, quant::Type::F32).stateBytes, uint64_t(0));
        // Qwen3.5-35B-A3B's layout: 40 layers, 30 of them gated delta nets (K 4, S 128, 16 q/k and
        // 32 v heads), 2 KV heads of 256 in the other 10. K/V F16 at 4096 tokens:
        // 2 x 10 x 2 x 256 x 4096 x 2 = 80 MiB; state per sequence 30 x (3 x 8192 + 32 x 128 x 128) x 4.
        m.blockCount = 40;
        m.headCountKv = 2;
        m.keyLength = m.valueLength = 256;
        m.recurrentLayers = 30;
        m.ssmConvValues = 3 * 8192;
        m.ssmMatrixValues = 32 * 128 * 128;
        QCOMPARE(m.attentionLayers(), 10u);
        QCOMPARE(estimateMemory(m, 4096, quant::Type::F16).kvBytes, uint64_t(83886080));
        QCOMPARE(estimateMemory(m, 4096, quant::Type::F16).stateBytes, uint64_t(65863680));
        QCOMPARE(estimateMemory(m, 4096, quant::Type::F16).totalBytes(), uint64_t(1000 + 83886080 + 65863680));
        // MTP layers hold neither.
        m.nextnLayers = 1;
        m.blockCount = 41;
        QCOMPARE(estimateMemory(m, 4096, quant::Type::F16).kvBytes, uint64_t(83886080));
    }

    void synthIsDeterministicAndQuantizeAgrees() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        auto synth = [&](const QString& type, const QString& seed, const QString& name) {
            const QString out = m_dir.filePath(name);
            Run r = cli({QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("llama-tiny"),
                         QStringLiteral("--type"), type, QStringLiteral("--seed"), seed,
                         QStringLiteral("--vocab"), model("ggml-vocab-llama-spm.gguf"),
                         QStringLiteral("-o"), out});
            return r.exitCode == 0 ? out : QString();
        };
        const QString a = synth(QStringLiteral("F32"), QStringLiteral("5"), QStringLiteral("a.gguf"));
        const QString b = synth(QStringLiteral("F32"), QStringLiteral("5"), QStringLiteral("b.gguf"));
        const QString c = synth(QStringLiteral("F32"), QStringLiteral("6"), QStringLiteral("c.gguf"));
        const QString q = synth(QStringLiteral("Q8_0"), QStringLiteral("5"), QStringLiteral("q.gguf"));
        QVERIFY(!a.isEmpty() && !b.isEmpty() && !c.isEmpty() && !q.isEmpty());
        auto bytes = [](const QString& p) {
            QFile f(p);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        QCOMPARE(bytes(a), bytes(b));
        QVERIFY(bytes(a) != bytes(c));

        const QString requant = m_dir.filePath(QStringLiteral("r.gguf"));
        Run r = cli({QStringLiteral("quantize"), a, requant, QStringLiteral("Q8_0")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        auto fq = gguf::File::open(q.toStdString());
        auto fr = gguf::File::open(requant.toStdString());
        QVERIFY(fq.isOk() && fr.isOk());
        QCOMPARE(fq->tensors().size(), fr->tensors().size());
        for (const gguf::TensorInfo& t : fq->tensors()) {
            const gguf::TensorInfo* u = fr->findTensor(t.name);
            QVERIFY(u);
            QCOMPARE(int(u->type), int(t.type));
            QVERIFY(std::memcmp(fq->tensorData(t), fr->tensorData(*u), t.bytes) == 0);
        }
        QCOMPARE(*fr->getU32("general.file_type"), 7u);
        QCOMPARE(cli({QStringLiteral("quantize"), a, a, QStringLiteral("Q8_0")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("quantize"), a, requant, QStringLiteral("Q7")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("nope"),
                      QStringLiteral("--type"), QStringLiteral("F32"), QStringLiteral("--vocab"),
                      model("ggml-vocab-llama-spm.gguf"), QStringLiteral("-o"), requant})
                     .exitCode,
                 2);
    }

    // split writes gguf-split parts that inspect and quantize read as one model, and --merge
    // writes them back as one file equal to the original.
    void splitInspectQuantizeMerge() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString source = model("stories260K.gguf");
        const QString prefix = m_dir.filePath(QStringLiteral("split/stories"));
        QVERIFY(QDir().mkpath(m_dir.filePath(QStringLiteral("split"))));
        Run r = cli({QStringLiteral("split"), source, prefix, QStringLiteral("--max-tensors"), QStringLiteral("20")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QString first = prefix + QStringLiteral("-00001-of-00003.gguf");
        QCOMPARE(r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts),
                 QStringList({first, prefix + QStringLiteral("-00002-of-00003.gguf"),
                              prefix + QStringLiteral("-00003-of-00003.gguf")}));
        qint64 onDisk = 0;
        for (const QString& p : r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) onDisk += QFileInfo(p).size();

        Run j = cli({QStringLiteral("inspect"), first, QStringLiteral("--json")});
        QVERIFY2(j.exitCode == 0, qPrintable(j.err));
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QCOMPARE(o["tensor_count"].toInt(), 48);
        QCOMPARE(o["file_bytes"].toInteger(), onDisk);
        QCOMPARE(o["parts"].toArray().size(), 3);
        QCOMPARE(o["parts"].toArray()[2].toObject()["tensors"].toInt(), 8);
        QVERIFY(cli({QStringLiteral("inspect"), first}).out.contains(QStringLiteral("48 tensors")));
        Run later = cli({QStringLiteral("inspect"), prefix + QStringLiteral("-00002-of-00003.gguf")});
        QCOMPARE(later.exitCode, 2);
        QVERIFY2(later.err.contains(QStringLiteral("open its first part, ") + first), qPrintable(later.err));

        // quantize of a split model writes one file without split keys.
        const QString quantized = m_dir.filePath(QStringLiteral("split/q8.gguf"));
        r = cli({QStringLiteral("quantize"), first, quantized, QStringLiteral("Q8_0")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        auto fq = gguf::File::open(quantized.toStdString());
        QVERIFY2(fq.isOk(), fq.status().toString().c_str());
        QCOMPARE(fq->tensors().size(), size_t(48));
        QVERIFY(!fq->has("split.count"));

        const QString merged = m_dir.filePath(QStringLiteral("split/merged.gguf"));
        r = cli({QStringLiteral("split"), QStringLiteral("--merge"), first, merged});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        auto a = gguf::File::open(source.toStdString()), b = gguf::File::open(merged.toStdString());
        QVERIFY(a.isOk() && b.isOk());
        QCOMPARE(b->metadata().size(), a->metadata().size());
        QCOMPARE(b->tensors().size(), a->tensors().size());
        for (const gguf::TensorInfo& t : a->tensors()) {
            const gguf::TensorInfo* u = b->findTensor(t.name);
            QVERIFY(u && u->bytes == t.bytes);
            QVERIFY(std::memcmp(a->tensorData(t), b->tensorData(*u), t.bytes) == 0);
        }

        // By size, counted as gguf-split counts (1M = 10^6 bytes of padded tensor data): the
        // 1.13 MiB model in 2 parts, the same as with the size in bytes; 300KiB makes 5.
        const QString bySize = m_dir.filePath(QStringLiteral("split/sized"));
        r = cli({QStringLiteral("split"), source, bySize, QStringLiteral("--max-size"), QStringLiteral("1M")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts).size(), 2);
        const QString inBytes = m_dir.filePath(QStringLiteral("split/bytes"));
        Run rb = cli({QStringLiteral("split"), source, inBytes, QStringLiteral("--max-size"), QStringLiteral("1000000")});
        QVERIFY2(rb.exitCode == 0, qPrintable(rb.err));
        auto bytesOf = [](const QString& p) {
            QFile f(p);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        for (const char* tail : {"-00001-of-00002.gguf", "-00002-of-00002.gguf"})
            QCOMPARE(bytesOf(bySize + QLatin1String(tail)), bytesOf(inBytes + QLatin1String(tail)));
        r = cli({QStringLiteral("split"), source, m_dir.filePath(QStringLiteral("split/kib")), QStringLiteral("--max-size"),
                 QStringLiteral("300KiB")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts).size(), 5);

        // Usage errors.
        QCOMPARE(cli({QStringLiteral("split"), source, bySize}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("split"), source, bySize, QStringLiteral("--max-size"), QStringLiteral("lots")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("split"), source, bySize, QStringLiteral("--max-tensors"), QStringLiteral("0")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("split"), first, prefix, QStringLiteral("--max-tensors"), QStringLiteral("5")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("split"), QStringLiteral("--merge"), first, first}).exitCode, 2);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
