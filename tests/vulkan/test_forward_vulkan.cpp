// The llama forward pass on Vulkan (model::DeviceForward) end to end: stories260K's 64 greedy
// tokens equal llama.cpp's and its logits are within 2e-2 of the reference run's; and on mixed
// batches (a chunked prefill next to a sequence with scattered blocks) the logits agree with the
// scalar reference forward for stories260K, llama-2-tiny-random and synthetic llama / qwen2.5
// (QKV bias, NeoX RoPE) / qwen3 (Q/K norm) cuts in float and quantized types.
#include "backend/cpu/paged_kv.h"
#include "backend/vulkan/vk_device.h"
#include "hearth/gguf.h"
#include "model/llama_forward_vulkan.h"
#include "model/llama_model.h"
#include "logit_diff.h"
#include "test_support.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <optional>

using namespace hearth;

namespace {

const std::vector<int32_t> kPrompt{1, 403, 407, 261, 378}; // <s> Once upon a time
const std::vector<int32_t> kExpected{
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
    410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394,
    261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432,
    398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};

struct Comparison : hearth::test::LogitDiff {
    std::string error;
};

// Two steps over two sequences (37 and 21 tokens; the second in blocks 7 and 5), logits for
// every token or only each sequence's last, on the device and with the reference forward. Between
// the steps the first sequence's block 0 is copied to block 4, which replaces it in its table (a
// fork's copy-on-write). gpuLayers < nLayer: the rest run on the CPU with their own K/V store.
Comparison compare(backend::Device& device, const std::string& path, KvType kvType, bool allLogits,
                   int gpuLayers = -1) {
    Comparison c;
    auto file = gguf::File::open(path);
    if (!file) return c.error = file.status().toString(), c;
    auto model = model::LlamaModel::load(*file);
    if (!model) return c.error = model.status().toString(), c;
    const auto& hp = (*model)->hparams();
    auto fwd = model::DeviceForward::create(**model, device, 8, 16, kvType, gpuLayers);
    if (!fwd) return c.error = fwd.status().toString(), c;
    const int cpuLayers = hp.nLayer - (*fwd)->gpuLayers();
    std::optional<cpu::PagedKvStore> cpuStore;
    if (cpuLayers > 0) {
        auto st = cpu::PagedKvStore::create(cpuLayers, 8, 16, hp.nHeadKv, hp.headDim, kvType);
        if (!st) return c.error = "cpu store", c;
        cpuStore.emplace(std::move(*st));
    }
    std::vector<int32_t> t0{1}, t1{1};
    for (int i = 0; i < 36; ++i) t0.push_back((i * 7919 + 13) % (hp.nVocab - 300) + 256);
    for (int i = 0; i < 20; ++i) t1.push_back((i * 104729 + 71) % (hp.nVocab - 300) + 256);
    std::vector<int32_t> table0{0, 1, 2};
    const std::vector<int32_t> table1{7, 5};
    auto refStore = cpu::PagedKvStore::create(hp.nLayer, 8, 16, hp.nHeadKv, hp.headDim, kvType);
    if (!refStore) return c.error = "store", c;
    for (auto [a0, b0, a1, b1] : {std::array<int, 4>{0, 30, 0, 12}, std::array<int, 4>{30, 37, 12, 21}}) {
        if (a0 > 0) {
            refStore->copyBlock(0, 4);
            if (cpuStore) cpuStore->copyBlock(0, 4);
            const Status s = (*fwd)->copyBlock(0, 4);
            if (!s.isOk()) return c.error = s.toString(), c;
            table0[0] = 4;
        }
        model::Batch batch;
        batch.blockTables = {table0, table1};
        for (int p = a0; p < b0; ++p) batch.tokens.push_back({t0[size_t(p)], p, 0, allLogits || p == b0 - 1});
        for (int p = a1; p < b1; ++p) batch.tokens.push_back({t1[size_t(p)], p, 1, allLogits || p == b1 - 1});
        std::vector<float> ref, ours;
        Status s = (*model)->forward(batch, *refStore, ref);
        if (!s.isOk()) return c.error = s.toString(), c;
        s = (*fwd)->forward(batch, ours, cpuStore ? &*cpuStore : nullptr);
        if (!s.isOk()) return c.error = s.toString(), c;
        if (!c.add(ref, ours, size_t(hp.nVocab))) return c.error = "logit count differs", c;
    }
    return c;
}

} // namespace

class TestForwardVulkan : public QObject {
    Q_OBJECT
    std::unique_ptr<backend::Device> m_dev;
    std::string m_why;
    QTemporaryDir m_dir;

private Q_SLOTS:
    void initTestCase() {
        auto dev = vk::createVulkanDevice();
        if (dev) m_dev = std::move(*dev);
        else m_why = dev.status().toString();
    }
    void init() {
        if (!m_dev) QSKIP(qPrintable(QStringLiteral("no Vulkan device: ") + QString::fromStdString(m_why)));
    }

    void storiesGreedy_data() {
        QTest::addColumn<int>("kv");
        QTest::addColumn<QString>("logitsFile");
        QTest::newRow("f32 kv") << int(KvType::F32) << QStringLiteral("stories260K.ref-logits-fa0-kvf32.f32");
        QTest::newRow("f16 kv") << int(KvType::F16) << QStringLiteral("stories260K.ref-logits.f32");
    }
    // F32 KV against the reference's fp32-attention run: within 2e-2. F16 KV against its F16 run
    // (flash attention, which also rounds Q and the softmax weights to F16): within 3e-2.
    static double logitTolerance(KvType kv) { return kv == KvType::F32 ? 2e-2 : 3e-2;
    }
    // Prefill of the prompt, then 63 decode steps; every chosen token equals llama.cpp's and every
    // logit is close to the reference run with the same KV type.
    void storiesGreedy() {
        QFETCH(int, kv);
        QFETCH(QString, logitsFile);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        auto file = gguf::File::open(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        QVERIFY(file.isOk());
        auto model = model::LlamaModel::load(*file);
        QVERIFY(model.isOk());
        const int V = (*model)->hparams().nVocab;
        auto fwd = model::DeviceForward::create(**model, *m_dev, 8, 16, KvType(kv));
        QVERIFY2(fwd.isOk(), fwd.status().toString().c_str());
        const std::vector<int32_t> table{3, 0, 6, 1, 7}; // scattered blocks, 80 positions
        std::vector<int32_t> tokens = kPrompt, generated;
        std::vector<float> allLogits;
        int computed = 0;
        while (generated.size() < 64) {
            model::Batch batch;
            batch.blockTables = {table};
            for (int p = computed; p < int(tokens.size()); ++p)
                batch.tokens.push_back({tokens[size_t(p)], p, 0, p == int(tokens.size()) - 1});
            computed = int(tokens.size());
            std::vector<float> logits;
            const Status s = (*fwd)->forward(batch, logits);
            QVERIFY2(s.isOk(), s.toString().c_str());
            QCOMPARE(int(logits.size()), V);
            const int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
            generated.push_back(next);
            tokens.push_back(next);
            allLogits.insert(allLogits.end(), logits.begin(), logits.end());
        }
        QCOMPARE(generated, kExpected);
        QFile ref(QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/") + logitsFile)));
        QVERIFY(ref.open(QIODevice::ReadOnly));
        const QByteArray bytes = ref.readAll();
        QCOMPARE(size_t(bytes.size()), allLogits.size() * sizeof(float));
        const float* refLogits = reinterpret_cast<const float*>(bytes.constData());
        double maxDiff = 0.0;
        for (size_t i = 0; i < allLogits.size(); ++i)
            maxDiff = std::max(maxDiff, double(std::fabs(allLogits[i] - refLogits[i])));
        qInfo("max |logit - reference| over 64 steps: %.3g", maxDiff);
        QVERIFY2(maxDiff < logitTolerance(KvType(kv)), qPrintable(QString::number(maxDiff)));
    }

    // Float models: |d| < 1e-3 * (1 + max |logit|) against the reference forward, argmax equal.
    void sharedModels_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("kv");
        QTest::newRow("stories260K f32 kv") << QStringLiteral("stories260K.gguf") << int(KvType::F32);
        QTest::newRow("stories260K f16 kv") << QStringLiteral("stories260K.gguf") << int(KvType::F16);
        QTest::newRow("llama-2-tiny-random") << QStringLiteral("llama-2-tiny-random.gguf") << int(KvType::F16);
    }
    void sharedModels() {
        QFETCH(QString, file);
        QFETCH(int, kv);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + file);
        const Comparison c = compare(*m_dev, hearth::test::testDataPath(QStringLiteral("models/") + file), KvType(kv), true);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }

    // A device whose binding limit is forced to 64 KiB: the embedding and output matrices are
    // bound in row ranges and the 42 logit rows of the first step come back in two chunks. Same
    // tolerance as the float models above.
    void smallBindingLimit() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        vk::VulkanOptions o;
        o.maxBindRange = 64 << 10;
        auto dev = vk::createVulkanDevice(o);
        QVERIFY2(dev.isOk(), dev.status().toString().c_str());
        QCOMPARE((*dev)->info().maxBindRange, uint64_t(64 << 10));
        const Comparison c = compare(**dev, hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf")),
                                     KvType::F32, true);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
        // A per-layer K/V cache larger than one binding is refused with the most that fits.
        auto file = gguf::File::open(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        QVERIFY(file.isOk());
        auto model = model::LlamaModel::load(*file);
        QVERIFY(model.isOk());
        const int most = model::DeviceForward::maxBlocks(**dev, (*model)->hparams(), 16, KvType::F32);
        QVERIFY(most >= 8 && most < 64);
        QVERIFY(model::DeviceForward::create(**model, **dev, most, 16, KvType::F32).isOk());
        QCOMPARE(model::DeviceForward::create(**model, **dev, most + 1, 16, KvType::F32).status().code(),
                 ErrorCode::Unsupported);
    }

    // Layer split: the first gpuLayers of stories260K's 5 layers on the device, the rest and the
    // output on the CPU kernels (which quantize activations for quantized weights; stories260K
    // is F32): |d| < 1e-3 * (1 + max |logit|), argmax equal.
    void layerSplit_data() {
        QTest::addColumn<int>("gpuLayers");
        for (int g : {0, 2, 4}) QTest::newRow(qPrintable(QStringLiteral("gpuLayers=%1").arg(g))) << g;
    }
    void layerSplit() {
        QFETCH(int, gpuLayers);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const Comparison c = compare(*m_dev, hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf")),
                                     KvType::F16, true, gpuLayers);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }

    // Synthetic 2-layer cuts of real shapes. Both sides dequantize the same bytes exactly; the
    // device sums in float: |d| < 2e-3 * (1 + max |logit|).
    void syntheticModels_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("vocab");
        const QString spm = QStringLiteral("ggml-vocab-llama-spm.gguf"), qwen = QStringLiteral("ggml-vocab-qwen2.gguf");
        for (const char* t : {"F16", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "Q2_K"})
            QTest::newRow(qPrintable(QStringLiteral("llama-tiny ") + t)) << QStringLiteral("llama-tiny") << QString::fromLatin1(t) << spm;
        QTest::newRow("qwen2.5 Q4_K_M") << QStringLiteral("qwen2.5-0.5b") << QStringLiteral("Q4_K_M") << qwen;
        QTest::newRow("qwen3 Q8_0") << QStringLiteral("qwen3-0.6b") << QStringLiteral("Q8_0") << qwen;
    }
    void syntheticModels() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        const QString cli = hearth::test::binDir() + QStringLiteral("/hearth-cli");
        if (!QFileInfo::exists(cli)) QSKIP("hearth-cli not built (needed to synthesize models)");
        const QString path = m_dir.filePath(preset + QStringLiteral("-") + type + QStringLiteral(".gguf"));
        QProcess synth;
        synth.start(cli, {QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"), type,
                          QStringLiteral("--layers"), QStringLiteral("2"), QStringLiteral("--vocab"),
                          QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/") + vocab)),
                          QStringLiteral("-o"), path});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().constData());
        const Comparison c = compare(*m_dev, path.toStdString(), KvType::F16, false);
        if (c.error.rfind("unsupported", 0) == 0) QSKIP(qPrintable(QString::fromStdString(c.error)));
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 2e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
        if (preset == QStringLiteral("llama-tiny")) return;
        // Split 1 + 1: the second layer (QKV bias / Q-K norm, NeoX RoPE) on the CPU kernels, which
        // quantize activations for quantized weights: the CPU forward's tolerance, 5e-2.
        const Comparison split = compare(*m_dev, path.toStdString(), KvType::F16, false, 1);
        QVERIFY2(split.error.empty(), split.error.c_str());
        qInfo("split 1+1: max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", split.maxDiff, split.maxLogit,
              split.argmaxAgree, split.rows);
        QVERIFY2(split.maxDiff < 5e-2 * (1.0 + split.maxLogit), qPrintable(QString::number(split.maxDiff)));
    }
};

QTEST_GUILESS_MAIN(TestForwardVulkan)
#include "test_forward_vulkan.moc"
