// Step graphs on the Vulkan graph device (backend/vulkan/vk_graph_device.h) through the runner
// (runtime::ModelRunner, "vulkan:0") against the scalar reference device: stories260K's 64 greedy
// tokens equal llama.cpp's and its logits are within 2e-2 (F32 K/V) / 3e-2 (F16 K/V) of the
// reference run's; two mixed steps over two sequences (a chunked prefill beside a sequence in
// scattered blocks, a copy-on-write of a block between them) and decode steps agree with the
// reference for stories260K, llama-2-tiny-random and synthetic llama / qwen2.5 (QKV bias, NeoX
// RoPE) / qwen3 (Q/K norm) / gemma3 (GeGLU, post-norms, sliding window, linear RoPE scaling, final
// soft cap) cuts in float and quantized types (IQ4_NL / IQ4_XS among them), qwen3moe-tiny (the
// router and the experts), qwen35-tiny / qwen35moe-tiny (gated delta-net layers: convolution and
// delta rule over State pools) and gpt-oss-tiny (MXFP4 experts, clamped SwiGLU), with layer splits and
// under a forced small binding limit; the encoders bert-tiny and nomic-bert-tiny (LayerNorm,
// attention within the sequence) give the reference's hidden rows with every node on Vulkan;
// a Q8_0 K/V cache stays on Vulkan too (stories260K and the encoders against the reference with
// the same cache type); each weight is uploaded once; and nodes Vulkan refuses (an operand Vulkan
// does not bind) run on the CPU, named by ModelRunner::fallbacks(). Every test skips (QSKIP) when
// there is no Vulkan device.
#include "backend/vulkan/vk_graph_device.h"
#include "hearth/synth.h"
#include "model/binding.h"
#include "model_harness.h"
#include "test_support.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>

using namespace hearth;

namespace {

const std::vector<int32_t> kPrompt{1, 403, 407, 261, 378}; // <s> Once upon a time
// llama.cpp's greedy continuation of kPrompt on stories260K.
const std::vector<int32_t> kExpected{
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
    410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394,
    261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432,
    398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};

const char* kDevice = "vulkan:0";

std::string storiesPath() { return test::testDataPath(QStringLiteral("models/stories260K.gguf")); }

using test::joined;

bool hasFallback(const std::vector<std::string>& fallbacks, const std::string& prefix) {
    return std::any_of(fallbacks.begin(), fallbacks.end(), [&](const std::string& f) { return f.rfind(prefix, 0) == 0; });
}

Status runBoth(runtime::ModelRunner& ours, runtime::ModelRunner& ref, int nVocab, const graph::Batch& batch,
               test::Comparison& c) {
    std::vector<float> expected, got;
    HEARTH_RETURN_IF_ERROR(ref.forward(batch, expected).withContext("reference"));
    HEARTH_RETURN_IF_ERROR(ours.forward(batch, got));
    return c.add(expected, got, size_t(nVocab)) ? Status::ok() : internalError("logit count differs");
}

// The steps of test::compareWithReference (30 + 12 and 7 + 9 tokens of two sequences, the second
// in blocks 7 and 5, block 0 of the first copied to 4 between them), then three decode steps of
// one or two tokens (the matVec kernels), on two runners of the same model.
test::Comparison compareSteps(runtime::ModelRunner& ours, runtime::ModelRunner& ref, int nVocab, bool allLogits) {
    test::Comparison c;
    std::vector<int32_t> t0{1}, t1{1};
    for (int i = 0; i < 40; ++i) t0.push_back((i * 7919 + 13) % (nVocab - 300) + 256);
    for (int i = 0; i < 24; ++i) t1.push_back((i * 104729 + 71) % (nVocab - 300) + 256);
    std::vector<int32_t> table0{0, 1, 2};
    const std::vector<int32_t> table1{7, 5};
    for (auto [a0, b0, a1, b1] : {std::array<int, 4>{0, 30, 0, 12}, std::array<int, 4>{30, 37, 12, 21},
                                  std::array<int, 4>{37, 38, 21, 22}, std::array<int, 4>{38, 39, 22, 22},
                                  std::array<int, 4>{39, 40, 22, 23}}) {
        if (a0 == 30) {
            for (runtime::ModelRunner* r : {&ours, &ref})
                if (const Status s = r->copyBlock(0, 4); !s.isOk()) return c.error = s.toString(), c;
            table0[0] = 4;
        }
        graph::Batch batch;
        batch.blockTables = {table0, table1};
        for (int p = a0; p < b0; ++p) batch.tokens.push_back({t0[size_t(p)], p, 0, allLogits || p == b0 - 1});
        for (int p = a1; p < b1; ++p) batch.tokens.push_back({t1[size_t(p)], p, 1, allLogits || p == b1 - 1});
        test::addStates(batch, ref); // recurrent models: sequence s in state slot s
        if (const Status s = runBoth(ours, ref, nVocab, batch, c); !s.isOk()) return c.error = s.toString(), c;
    }
    return c;
}

// The model at `path` on options.device and on "ref", compared by compareSteps; the device's
// fallbacks into *fallbacks.
test::Comparison compareOn(const std::string& path, const test::LoadOptions& options, bool allLogits,
                           std::vector<std::string>* fallbacks = nullptr) {
    test::Comparison c;
    auto ours = test::loadModel(path, options);
    if (!ours) return c.error = ours.status().toString(), c;
    test::LoadOptions refOptions = options;
    refOptions.device = "ref";
    refOptions.gpuLayers = -1;
    auto ref = test::loadModel(path, refOptions);
    if (!ref) return c.error = "reference: " + ref.status().toString(), c;
    if (fallbacks) *fallbacks = (*ours)->runner->fallbacks();
    return compareSteps(*(*ours)->runner, *(*ref)->runner, (*ref)->dims().nVocab, allLogits);
}

// The file's model with a runner whose devices come from `open` (a Vulkan device with lowered
// limits, for one).
Result<std::unique_ptr<test::LoadedModel>> loadWith(const std::string& path, const runtime::RunnerConfig& rc) {
    auto m = std::make_unique<test::LoadedModel>();
    HEARTH_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(path));
    m->file.emplace(std::move(f));
    HEARTH_ASSIGN_OR_RETURN(m->arch, model::loadArchitecture(*m->file));
    HEARTH_ASSIGN_OR_RETURN(m->runner, runtime::ModelRunner::create(*m->arch, rc));
    return m;
}

// A llama whose RoPE is YaRN-scaled and whose second layer passes its feed-forward activations
// through two Concat nodes (h joined with itself, on Vulkan; then h joined with the second half
// of that, a view at an offset, which Vulkan does not bind; the first half kept), built over a
// loaded llama's weights: every other node runs on Vulkan, the second Concat falls back to the CPU.
class YarnLlama final : public model::Architecture {
public:
    static Result<std::unique_ptr<YarnLlama>> wrap(const gguf::File& file, const model::Architecture& inner) {
        std::vector<graph::Weight> scratch;
        std::deque<std::vector<float>> copies;
        model::Binder binder(file, "llama", scratch, copies);
        auto a = std::unique_ptr<YarnLlama>(new YarnLlama());
        HEARTH_ASSIGN_OR_RETURN(a->m_hp, model::readDecoderHParams(binder));
        a->m_dims = inner.dims();
        a->m_weights = inner.weights(); // the data stays in `inner` and the file
        a->m_reader = inner.reader();
        a->m_tokenEmbedding = inner.tokenEmbedding();
        a->m_output = inner.outputWeight();
        return a;
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const model::KvSetup& kv) const override {
        const model::DecoderHParams& hp = m_hp;
        model::AttentionSpec spec;
        spec.nHead = hp.nHead;
        spec.nHeadKv = hp.nHeadKv;
        spec.headDim = hp.headDim;
        spec.headDimV = hp.headDimV;
        spec.rope.nRot = hp.nRot;
        spec.rope.freqBase = hp.ropeBase;
        spec.rope.freqScale = 0.5f;
        spec.rope.extFactor = 1.0f;
        spec.rope.nCtxOrig = 32;
        spec.scale = 1.0f / std::sqrt(float(hp.headDim));
        g.setLayer(-1);
        const model::StepTensors in = model::stepTensors(g, shape);
        graph::TensorId x = g.getRows(g.weight(m_tokenEmbedding), in.ids);
        for (int l = 0; l < hp.nLayer; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            g.setLayer(l);
            model::AttentionWeights w;
            w.wq = find(p + "attn_q.weight");
            w.wk = find(p + "attn_k.weight");
            w.wv = find(p + "attn_v.weight");
            w.wo = find(p + "attn_output.weight");
            graph::TensorId cur = g.rmsNorm(x, g.weight(find(p + "attn_norm.weight")), hp.normEps);
            x = g.add(x, model::selfAttention(g, in, kv, l, cur, w, spec));
            cur = g.rmsNorm(x, g.weight(find(p + "ffn_norm.weight")), hp.normEps);
            graph::TensorId h = g.swiGlu(g.matMul(g.weight(find(p + "ffn_gate.weight")), cur),
                                         g.matMul(g.weight(find(p + "ffn_up.weight")), cur));
            if (l == 1) {
                const int64_t n = g.tensor(h).rows();
                const graph::TensorId twice = g.concat(h, h, 1); // [2n][F]
                h = g.rows(g.concat(h, g.rows(twice, n, n), 1), 0, n);
            }
            x = g.add(x, g.matMul(g.weight(find(p + "ffn_down.weight")), h));
        }
        g.setLayer(hp.nLayer);
        model::logitsHead(g, in, x, find("output_norm.weight"), m_output, hp.normEps);
    }

private:
    YarnLlama() = default;
    int32_t find(const std::string& name) const {
        for (size_t i = 0; i < m_weights.size(); ++i)
            if (m_weights[i].name == name) return int32_t(i);
        return -1;
    }
    model::DecoderHParams m_hp;
};

// The vocabularies the rows take: Llama 2's 32000 tokens, stories260K's 512.
constexpr const char* kSpm = "ggml-vocab-llama-spm.gguf";
constexpr const char* kStories = "stories260K.gguf";

// The synthetic rows' columns: preset, weight type, vocabulary file, layers kept (0: all).
void columns() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("vocab");
    QTest::addColumn<int>("layers");
}
void row(const char* preset, const char* type, const char* vocab, int layers) {
    QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(QLatin1String(preset), QLatin1String(type))))
        << QString::fromLatin1(preset) << QString::fromLatin1(type) << QString::fromLatin1(vocab) << layers;
}

bool hasPreset(const QString& name) {
    for (const SynthPreset& p : synthPresets())
        if (p.name == name.toStdString()) return true;
    return false;
}

} // namespace

class TestForwardVulkan : public QObject {
    Q_OBJECT
    std::string m_why;
    QTemporaryDir m_dir;

    // A synthetic model made by `hearth-cli synth` in the test's folder (once per name).
    QString synthesize(const QString& preset, const QString& type, const QString& vocab, int layers) {
        const QString path = m_dir.filePath(preset + QStringLiteral("-") + type + QStringLiteral("-") +
                                            QString::number(layers) + QStringLiteral(".gguf"));
        if (QFile::exists(path)) return path;
        QProcess synth;
        QStringList args{QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"), type,
                         QStringLiteral("--vocab"),
                         QString::fromStdString(test::testDataPath(QStringLiteral("models/") + vocab)),
                         QStringLiteral("-o"), path};
        if (layers > 0) args << QStringLiteral("--layers") << QString::number(layers);
        synth.start(test::binDir() + QStringLiteral("/hearth-cli"), args);
        if (!synth.waitForFinished(300000) || synth.exitCode() != 0) {
            qWarning("synth failed: %s", synth.readAllStandardError().constData());
            return {};
        }
        return path;
    }

    // One synthetic model on Vulkan against the reference device (see llamaTinyTypes).
    void checkSynthetic(const QString& preset, const QString& type, const QString& vocab, int layers) {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        if (!QFileInfo::exists(test::binDir() + QStringLiteral("/hearth-cli")))
            QSKIP("hearth-cli not built (needed to synthesize models)");
        // The gemma3 presets come with the gemma3 architecture; older builds lack them.
        if (!hasPreset(preset)) QSKIP(qPrintable(QStringLiteral("no synth preset %1 in this build").arg(preset)));
        const QString path = synthesize(preset, type, vocab, layers);
        QVERIFY2(!path.isEmpty(), "hearth-cli synth failed");
        test::LoadOptions o;
        o.device = kDevice;
        o.kvType = KvType::F16;
        std::vector<std::string> fallbacks;
        const test::Comparison c = compareOn(path.toStdString(), o, false, &fallbacks);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        QVERIFY2(c.maxDiff < 2e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
        // The split (first layer on Vulkan, the rest on the CPU) on the tiny models; the real shapes'
        // cuts (stories260K's vocabulary) check widths, and a second scalar-reference pass over them
        // would double the slowest rows.
        if (preset == QStringLiteral("llama-tiny") || vocab == QLatin1String(kStories)) return;
        o.gpuLayers = 1;
        const test::Comparison split = compareOn(path.toStdString(), o, false);
        QVERIFY2(split.error.empty(), split.error.c_str());
        qInfo("split 1+rest: max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", split.maxDiff, split.maxLogit,
              split.argmaxAgree, split.rows);
        QVERIFY2(split.maxDiff < 5e-2 * (1.0 + split.maxLogit), qPrintable(QString::number(split.maxDiff)));
    }

    // The current row (preset, type, vocab, layers) through checkSynthetic.
    void checkRow() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        QFETCH(int, layers);
        checkSynthetic(preset, type, vocab, layers);
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        auto dev = backend::openDevice(kDevice);
        if (!dev) {
            m_why = dev.status().toString();
            return;
        }
        const backend::DeviceInfo& i = (*dev)->info();
        QCOMPARE(i.id, std::string(kDevice));
        qInfo("%s: %s (%s), bind limit %llu", i.id.c_str(), i.name.c_str(), i.type.c_str(),
              static_cast<unsigned long long>(i.maxBindRange));
    }
    void init() {
        if (!m_why.empty()) QSKIP(qPrintable(QStringLiteral("no Vulkan device: ") + QString::fromStdString(m_why)));
    }

    void storiesGreedy_data() {
        QTest::addColumn<int>("kv");
        QTest::addColumn<QString>("logitsFile");
        QTest::newRow("f32 kv") << int(KvType::F32) << QStringLiteral("stories260K.ref-logits-fa0-kvf32.f32");
        QTest::newRow("f16 kv") << int(KvType::F16) << QStringLiteral("stories260K.ref-logits.f32");
    }
    // Prefill of the prompt, then 63 decode steps, every node on Vulkan: each chosen token equals
    // llama.cpp's and every logit is close to its run with the same K/V type. F32 K/V against its
    // fp32-attention run: within 2e-2; F16 K/V against its F16 run (flash attention, which also
    // rounds Q and the softmax weights to F16): within 3e-2.
    void storiesGreedy() {
        QFETCH(int, kv);
        QFETCH(QString, logitsFile);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        test::LoadOptions o;
        o.device = kDevice;
        o.kvType = KvType(kv);
        auto m = test::loadModel(storiesPath(), o);
        QVERIFY2(m.isOk(), m.status().toString().c_str());
        QVERIFY2((*m)->runner->fallbacks().empty(), joined((*m)->runner->fallbacks()).c_str());
        QCOMPARE((*m)->runner->deviceId(), std::string(kDevice));
        const test::Greedy g = test::greedy(**m, kPrompt, 64);
        QVERIFY2(g.error.empty(), g.error.c_str());
        QCOMPARE(g.ids, kExpected);
        QFile ref(QString::fromStdString(test::testDataPath(QStringLiteral("models/") + logitsFile)));
        QVERIFY(ref.open(QIODevice::ReadOnly));
        const QByteArray bytes = ref.readAll();
        QCOMPARE(size_t(bytes.size()), g.logits.size() * sizeof(float));
        const float* refLogits = reinterpret_cast<const float*>(bytes.constData());
        double maxDiff = 0.0;
        for (size_t i = 0; i < g.logits.size(); ++i) maxDiff = std::max(maxDiff, double(std::fabs(g.logits[i] - refLogits[i])));
        qInfo("max |logit - llama.cpp| over 64 steps: %.3g", maxDiff);
        QVERIFY2(maxDiff < (KvType(kv) == KvType::F32 ? 2e-2 : 3e-2), qPrintable(QString::number(maxDiff)));
    }

    // Float models, every logit of compareWithReference's steps: |d| < 1e-3 * (1 + max |logit|)
    // against the reference device, argmax equal.
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
        test::LoadOptions o;
        o.device = kDevice;
        o.kvType = KvType(kv);
        const test::Comparison c = test::compareWithReference(test::testDataPath(QStringLiteral("models/") + file), o, true);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }

    // A device whose binding limit is forced to 64 KiB: the embedding and output matrices are
    // bound in row ranges, the 42 logit rows of the first step (84 KiB) are computed in chunks of
    // rows, and the K/V pool holds at most what one binding addresses. Same tolerance as above.
    void smallBindingLimit() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        runtime::RunnerConfig rc;
        rc.device = kDevice;
        rc.kvType = KvType::F32;
        rc.numBlocks = 64;
        rc.open = [](const std::string& id, cpu::ThreadPool* pool) -> Result<std::unique_ptr<backend::Device>> {
            if (id != kDevice) return backend::openDevice(id, pool);
            vk::VulkanOptions o;
            o.deviceIndex = 0;
            o.maxBindRange = 64 << 10;
            return vk::createVulkanGraphDevice(o);
        };
        auto ours = loadWith(storiesPath(), rc);
        QVERIFY2(ours.isOk(), ours.status().toString().c_str());
        runtime::ModelRunner& runner = *(*ours)->runner;
        QCOMPARE(runner.device(0).info().maxBindRange, uint64_t(64 << 10));
        QVERIFY2(runner.fallbacks().empty(), joined(runner.fallbacks()).c_str());
        // F32 rows of 4 heads of 8: 2 KiB a block; 64 KiB less the allocation's rounding holds 31.
        qInfo("K/V blocks: %d of 64 wanted", runner.numBlocks());
        QVERIFY(runner.numBlocks() >= 8 && runner.numBlocks() < 64);
        test::LoadOptions refOptions;
        refOptions.device = "ref";
        refOptions.numBlocks = runner.numBlocks();
        auto ref = test::loadModel(storiesPath(), refOptions);
        QVERIFY2(ref.isOk(), ref.status().toString().c_str());
        const test::Comparison c = compareSteps(runner, *(*ref)->runner, (*ref)->dims().nVocab, true);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }

    // Layer split: the first gpuLayers of stories260K's 5 layers on Vulkan (with their K/V), the
    // rest and the logits on the CPU kernels: |d| < 1e-3 * (1 + max |logit|), argmax equal; and the
    // greedy tokens still llama.cpp's.
    void layerSplit_data() {
        QTest::addColumn<int>("gpuLayers");
        for (int g : {0, 2, 4}) QTest::newRow(qPrintable(QStringLiteral("gpuLayers=%1").arg(g))) << g;
    }
    void layerSplit() {
        QFETCH(int, gpuLayers);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        test::LoadOptions o;
        o.device = kDevice;
        o.kvType = KvType::F16;
        o.gpuLayers = gpuLayers;
        const test::Comparison c = test::compareWithReference(storiesPath(), o, true);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
        auto m = test::loadModel(storiesPath(), o);
        QVERIFY2(m.isOk(), m.status().toString().c_str());
        QCOMPARE((*m)->runner->gpuLayers(), gpuLayers);
        const test::Greedy g = test::greedy(**m, kPrompt, 64);
        QVERIFY2(g.error.empty(), g.error.c_str());
        QCOMPARE(g.ids, kExpected);
    }

    // Synthetic cuts of real shapes, every node on Vulkan (fallbacks() empty: a weight type or op
    // the backend supports must not be refused). Both sides dequantize the same bytes exactly; the
    // device sums in float: |d| < 2e-3 * (1 + max |logit|), argmax equal. gemma3-tiny (6 layers:
    // 5 sliding over 8 positions, which the steps outrun, then a global one with linear RoPE
    // scaling; final soft cap) and gemma3-1b (heads of 256) add the gemma3 ops. The qwen and gemma
    // cuts also run split 1 + rest, the rest on the CPU kernels, which quantize activations for
    // quantized weights: the CPU forward's tolerance, 5e-2.
    // Synthetic models on Vulkan against the reference device, a few per test function (each well
    // under a minute): every weight type the Vulkan matMul takes on llama-tiny, 2-layer cuts of
    // real shapes (their layers; the 512-token vocabulary keeps the output small), the IQ4
    // types, qwen3moe-tiny (the router and the experts on Vulkan), and the qwen3.5 hybrids (the
    // recurrent ops and their State pools on Vulkan).
    void llamaTinyTypes_data() {
        columns();
        for (const char* t : {"F16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"}) row("llama-tiny", t, kSpm, 2);
    }
    void llamaTinyTypes() { checkRow(); }

    void llamaTinyKQuants_data() {
        columns();
        for (const char* t : {"Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "Q2_K"}) row("llama-tiny", t, kSpm, 2);
    }
    void llamaTinyKQuants() { checkRow(); }

    // Real models' shapes, in two functions (each ~30 s on an AVX2 machine's lavapipe).
    void realShapesQwen_data() {
        columns();
        row("qwen2.5-0.5b", "Q4_K_M", kStories, 2);
        row("qwen3-0.6b", "Q8_0", kStories, 2);
    }
    void realShapesQwen() { checkRow(); }
    void realShapesGemma3_data() {
        columns();
        row("gemma3-1b", "Q4_K_M", kStories, 2);
    }
    void realShapesGemma3() { checkRow(); }

    void iq4AndGemma3_data() {
        columns();
        for (const char* t : {"IQ4_NL", "IQ4_XS"}) row("llama-tiny", t, kSpm, 2);
        row("gemma3-tiny", "F32", kSpm, 0);
        row("gemma3-tiny", "Q8_0", kSpm, 0);
    }
    void iq4AndGemma3() { checkRow(); }

    void moeAndHybrids_data() {
        columns();
        row("qwen3moe-tiny", "F32", kSpm, 0);
        row("qwen3moe-tiny", "Q4_K_M", kSpm, 0);
        // The hybrids: gated delta-net layers (ssm_conv, delta_net, rms_norm_gated over State pools)
        // and the gated full-attention layer, all on Vulkan.
        row("qwen35-tiny", "F32", kSpm, 4);
        row("qwen35moe-tiny", "F32", kSpm, 4);
    }
    void moeAndHybrids() { checkRow(); }

    // gemma4: sliding and full layers of different K/V shapes (per-layer pool buffers), V = K, V
    // norms without weight, proportional RoPE, output scales; the experts beside the dense
    // feed-forward; gemma4-e-tiny's per-layer embeddings and shared-KV layers (split 1 + rest:
    // layer 2 on the CPU attends over layer 0's K/V on Vulkan).
    void gemma4Models_data() {
        columns();
        row("gemma4-tiny", "F32", kSpm, 0);
        row("gemma4-tiny", "Q8_0", kSpm, 0);
        row("gemma4-moe-tiny", "Q8_0", kSpm, 0);
        row("gemma4-e-tiny", "F32", kSpm, 0);
    }
    void gemma4Models() { checkRow(); }

    // The encoders with every node on Vulkan (token-type and position rows, LayerNorm, attention
    // within the sequence, GELU or NeoX RoPE and SwiGLU): the hidden rows of two inputs in one step
    // (45 and 21 tokens, neither a multiple of a block or a workgroup, in scattered blocks) equal
    // the reference device's for F32, F16 and Q8_0 K/V: |d| <= 1e-3 · max(1, max |ref|), 1e-2 for
    // Q8_0 (where the devices' projections differ in the last bits, a K/V value may round to the
    // neighbouring quant: 1/127 of its block's largest).
    void encoders_data() {
        columns();
        row("bert-tiny", "F32", kSpm, 0);
        row("bert-tiny", "Q8_0", kSpm, 0);
        row("nomic-bert-tiny", "F32", kSpm, 0);
        row("nomic-bert-tiny", "F16", kSpm, 0);
    }
    void encoders() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        if (!hasPreset(preset)) QSKIP(qPrintable(QStringLiteral("no synth preset %1 in this build").arg(preset)));
        if (!QFileInfo::exists(test::binDir() + QStringLiteral("/hearth-cli")))
            QSKIP("hearth-cli not built (needed to synthesize models)");
        const QString path = synthesize(preset, type, vocab, 0);
        QVERIFY2(!path.isEmpty(), "hearth-cli synth failed");
        for (KvType kv : {KvType::F32, KvType::F16, KvType::Q8_0}) {
            test::LoadOptions o;
            o.device = kDevice;
            o.kvType = kv;
            auto ours = test::loadModel(path.toStdString(), o);
            QVERIFY2(ours.isOk(), ours.status().toString().c_str());
            const runtime::ModelRunner& runner = *(*ours)->runner;
            QCOMPARE(runner.deviceId(), std::string(kDevice));
            QVERIFY2(runner.deviceWarning().empty(), runner.deviceWarning().c_str());
            QVERIFY2(runner.fallbacks().empty(), joined(runner.fallbacks()).c_str());
            QVERIFY((*ours)->dims().embeddingsOnly && !(*ours)->dims().causal);
            test::LoadOptions refOptions = o;
            refOptions.device = "ref";
            auto ref = test::loadModel(path.toStdString(), refOptions);
            QVERIFY2(ref.isOk(), ref.status().toString().c_str());
            const int nVocab = (*ref)->dims().nVocab;
            const std::vector<int32_t> table0{0, 6, 2}, table1{5, 3};
            graph::Batch batch;
            batch.blockTables = {table0, table1};
            for (int p = 0; p < 45; ++p) // every row's hidden state, no logits
                batch.tokens.push_back({(p * 7919 + 13) % (nVocab - 300) + 256, p, 0, false, true});
            for (int p = 0; p < 21; ++p)
                batch.tokens.push_back({(p * 104729 + 71) % (nVocab - 300) + 256, p, 1, false, true});
            std::vector<float> logits, expected, got;
            Status s = (*ref)->runner->forward(batch, logits, &expected);
            QVERIFY2(s.isOk(), s.toString().c_str());
            s = (*ours)->runner->forward(batch, logits, &got);
            QVERIFY2(s.isOk(), s.toString().c_str());
            QCOMPARE(got.size(), size_t(66) * size_t((*ref)->dims().nEmbd));
            QCOMPARE(got.size(), expected.size());
            double maxRef = 0.0, maxDiff = 0.0;
            for (size_t i = 0; i < got.size(); ++i) {
                maxRef = std::max(maxRef, double(std::fabs(expected[i])));
                const double d = std::fabs(double(got[i]) - double(expected[i]));
                maxDiff = std::isfinite(d) ? std::max(maxDiff, d) : INFINITY;
            }
            qInfo("%s K/V: max |d| %.2e (max |ref| %.2f)", kvTypeName(kv), maxDiff, maxRef);
            const double tol = kv == KvType::Q8_0 ? 1e-2 : 1e-3;
            QVERIFY2(maxDiff <= tol * std::max(1.0, maxRef), qPrintable(QString::number(maxDiff)));
        }
    }

    // gpt-oss-tiny with MXFP4 experts (Q8_0 elsewhere): the router, the experts, the clamped
    // SwiGLU and attention with sinks on Vulkan; only its YaRN RoPE falls back. Tolerance as
    // llamaTinyTypes.
    void gptOssOnVulkan() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        if (!hasPreset(QStringLiteral("gpt-oss-tiny"))) QSKIP("no synth preset gpt-oss-tiny in this build");
        if (!QFileInfo::exists(test::binDir() + QStringLiteral("/hearth-cli")))
            QSKIP("hearth-cli not built (needed to synthesize models)");
        const QString path = synthesize(QStringLiteral("gpt-oss-tiny"), QStringLiteral("MXFP4_MOE"),
                                        QStringLiteral("ggml-vocab-llama-spm.gguf"), 0);
        QVERIFY2(!path.isEmpty(), "hearth-cli synth failed");
        test::LoadOptions o;
        o.device = kDevice;
        o.kvType = KvType::F16;
        std::vector<std::string> fallbacks;
        const test::Comparison c = compareOn(path.toStdString(), o, false, &fallbacks);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("fallbacks %s; max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", joined(fallbacks).c_str(),
              c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        for (const std::string& f : fallbacks) QVERIFY2(f.rfind("rope@", 0) == 0, joined(fallbacks).c_str());
        QVERIFY2(c.maxDiff < 2e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }

    // Each weight goes to the device once: gemma3-tiny's tied embedding is read by GetRows and by
    // the logits' MatMul, yet the device holds exactly the bytes of the distinct weights its nodes
    // read (all of them; with 2 of 6 layers those of layers < 2, the embedding among them).
    void tiedEmbeddingUploadedOnce() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        if (!hasPreset(QStringLiteral("gemma3-tiny"))) QSKIP("no synth preset gemma3-tiny in this build");
        if (!QFileInfo::exists(test::binDir() + QStringLiteral("/hearth-cli")))
            QSKIP("hearth-cli not built (needed to synthesize models)");
        const QString path = synthesize(QStringLiteral("gemma3-tiny"), QStringLiteral("Q8_0"),
                                        QStringLiteral("ggml-vocab-llama-spm.gguf"), 0);
        QVERIFY2(!path.isEmpty(), "hearth-cli synth failed");
        for (int gpuLayers : {-1, 2}) {
            test::LoadOptions o;
            o.device = kDevice;
            o.kvType = KvType::F16;
            o.gpuLayers = gpuLayers;
            auto m = test::loadModel(path.toStdString(), o);
            QVERIFY2(m.isOk(), m.status().toString().c_str());
            const model::Architecture& arch = *(*m)->arch;
            QCOMPARE(arch.tokenEmbedding(), arch.outputWeight()); // tied
            const int limit = gpuLayers < 0 ? (*m)->dims().nLayer + 1 : gpuLayers;
            uint64_t expected = 0;
            for (const graph::Weight& w : arch.weights())
                if (w.layer < limit) expected += w.bytes();
            const std::vector<runtime::DeviceMemory> memory = (*m)->runner->memory();
            QCOMPARE(memory.front().id, std::string(kDevice));
            qInfo("gpuLayers %d: %llu weight bytes on %s", gpuLayers,
                  static_cast<unsigned long long>(memory.front().weightBytes), kDevice);
            QCOMPARE(memory.front().weightBytes, expected);
        }
    }

    // Experts in RAM (--n-cpu-moe / --cpu-moe): every layer on Vulkan but the experts of the first
    // N, which run on the CPU with their weights there. The logits match the reference device
    // (tolerance as the split rows), nothing counts as a fallback, and Vulkan holds exactly the
    // weights but those experts' (ffn_*_exps of layers < N); the CPU holds those.
    void expertsInRam_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("type");
        QTest::addColumn<int>("cpuMoe");
        QTest::newRow("qwen3moe-tiny F32, first 1") << QStringLiteral("qwen3moe-tiny") << QStringLiteral("F32") << 1;
        QTest::newRow("qwen3moe-tiny Q8_0, all") << QStringLiteral("qwen3moe-tiny") << QStringLiteral("Q8_0") << -1;
        QTest::newRow("gpt-oss-tiny MXFP4, first 1") << QStringLiteral("gpt-oss-tiny") << QStringLiteral("MXFP4_MOE") << 1;
    }
    void expertsInRam() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(int, cpuMoe);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        if (!hasPreset(preset)) QSKIP(qPrintable(QStringLiteral("no synth preset %1 in this build").arg(preset)));
        if (!QFileInfo::exists(test::binDir() + QStringLiteral("/hearth-cli")))
            QSKIP("hearth-cli not built (needed to synthesize models)");
        const QString path = synthesize(preset, type, QStringLiteral("ggml-vocab-llama-spm.gguf"), 0);
        QVERIFY2(!path.isEmpty(), "hearth-cli synth failed");
        test::LoadOptions o;
        o.device = kDevice;
        o.kvType = KvType::F16;
        o.cpuMoeLayers = cpuMoe;
        int inRam = 0;
        {
            auto m = test::loadModel(path.toStdString(), o);
            QVERIFY2(m.isOk(), m.status().toString().c_str());
            inRam = cpuMoe < 0 ? (*m)->dims().nLayer : cpuMoe;
            QCOMPARE((*m)->runner->cpuMoeLayers(), inRam);
            uint64_t onGpu = 0, experts = 0;
            for (const graph::Weight& w : (*m)->arch->weights()) {
                const bool ram = w.layer >= 0 && w.layer < inRam && w.name.find("_exps.") != std::string::npos;
                (ram ? experts : onGpu) += w.bytes();
            }
            QVERIFY(experts > 0);
            const std::vector<runtime::DeviceMemory> memory = (*m)->runner->memory();
            QCOMPARE(memory.front().weightBytes, onGpu);
            QVERIFY(memory.back().weightBytes + memory.back().mappedBytes >= experts);
        }

        std::vector<std::string> fallbacks;
        const test::Comparison c = compareOn(path.toStdString(), o, false, &fallbacks);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("experts of %d layers in RAM: fallbacks [%s]; max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d",
              inRam, joined(fallbacks).c_str(), c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        // gpt-oss's YaRN RoPE is Vulkan's one gap; nothing of the experts is named.
        for (const std::string& f : fallbacks) QVERIFY2(f.rfind("rope@", 0) == 0, joined(fallbacks).c_str());
        QVERIFY2(c.maxDiff < 5e-2 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
    }

    // A Q8_0 K/V cache on Vulkan (rows of 32 values: one 34-byte block, so every other row starts
    // mid-word): every node runs there, no fallbacks, and every logit of compareSteps' steps (a
    // copy-on-write of a block among them) matches the reference device storing Q8_0 K/V alike:
    // |d| < 1e-2 * (1 + max |logit|) (a K/V value rounded to the other quant where the devices'
    // projections differ in the last bits moves it by up to 1/127 of its block's largest), argmax equal.
    void q8KvCache() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        test::LoadOptions o;
        o.device = kDevice;
        o.kvType = KvType::Q8_0;
        std::vector<std::string> fallbacks;
        const test::Comparison c = compareOn(storiesPath(), o, true, &fallbacks);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        QVERIFY2(c.maxDiff < 1e-2 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }

    // A node Vulkan refuses in a graph it otherwise runs: layer 1's second Concat (an operand at an
    // offset in its storage) runs on the CPU (the runner copies its operands and result across) and
    // fallbacks() names it and nothing else — YaRN RoPE in every layer and the first Concat run on
    // Vulkan —, and the logits match the reference device running the same graph: |d| < 1e-3 *
    // (1 + max |logit|), argmax equal.
    void refusedNodesFallBackToCpu() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        auto file = gguf::File::open(storiesPath());
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto inner = model::loadArchitecture(*file);
        QVERIFY2(inner.isOk(), inner.status().toString().c_str());
        auto arch = YarnLlama::wrap(*file, **inner);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        runtime::RunnerConfig rc;
        rc.device = kDevice;
        rc.kvType = KvType::F32;
        rc.numBlocks = 8;
        auto ours = runtime::ModelRunner::create(**arch, rc);
        QVERIFY2(ours.isOk(), ours.status().toString().c_str());
        rc.device = "ref";
        auto ref = runtime::ModelRunner::create(**arch, rc);
        QVERIFY2(ref.isOk(), ref.status().toString().c_str());
        const std::vector<std::string>& fallbacks = (*ours)->fallbacks();
        qInfo("fallbacks: %s", joined(fallbacks).c_str());
        const int nLayer = (*arch)->dims().nLayer;
        for (int l = 0; l < nLayer; ++l) QVERIFY2(!hasFallback(fallbacks, "rope@" + std::to_string(l)), joined(fallbacks).c_str());
        QVERIFY2(hasFallback(fallbacks, "concat@1"), joined(fallbacks).c_str());
        QCOMPARE(int(fallbacks.size()), 1); // nothing else
        const test::Comparison c = compareSteps(**ours, **ref, (*arch)->dims().nVocab, true);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }
};

QTEST_GUILESS_MAIN(TestForwardVulkan)
#include "test_forward_vulkan.moc"
