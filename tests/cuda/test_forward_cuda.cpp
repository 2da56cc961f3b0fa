// Step graphs on the CUDA device through the runner (runtime::ModelRunner, "cuda:0") against the
// scalar reference device: stories260K's greedy tokens equal llama.cpp's and the CPU's (all layers
// on the GPU and split with the CPU); two mixed steps over two sequences (a chunked prefill beside
// a sequence in scattered blocks, a copy-on-write of a block between them) and then decode steps,
// every logit compared, for stories260K (F32, GQA, n_ff 172), llama-2-tiny-random (F16) and
// synthetic llama / qwen2.5 / qwen3 / gemma3 cuts in quantized types (the int8 prefill path), with
// F32 and F16 K/V and layer splits; decode steps replayed from CUDA graphs equal to the same steps
// launched directly; each weight uploaded once (a tied embedding too); nodes the GPU refuses
// (a Q8_0 K/V cache, an op a wrapped device declines) running on the CPU, named by fallbacks();
// and the device self-test (backend/selftest.h) passing every case the device accepts.
// Without a usable CUDA driver/device every test skips (QSKIP) with the runtime's reason.
#include "backend/cuda/cuda_device.h"
#include "backend/selftest.h"
#include "engine_device_checks.h"
#include "hearth/synth.h"
#include "model_harness.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

using namespace hearth;

namespace {

struct Comparison : test::LogitDiff {
    std::string error;
};

Status runBoth(test::LoadedModel& ours, test::LoadedModel& ref, graph::Batch batch, Comparison& c) {
    test::addStates(batch, *ref.runner); // recurrent models: sequence s in state slot s
    std::vector<float> expected, got;
    HEARTH_RETURN_IF_ERROR(ref.runner->forward(batch, expected).withContext("reference"));
    HEARTH_RETURN_IF_ERROR(ours.runner->forward(batch, got));
    return c.add(expected, got, size_t(ref.dims().nVocab)) ? Status::ok() : internalError("logit count differs");
}

// Steps of 30 + 12 and 7 + 9 tokens of two sequences (the second in blocks 7 and 5; block 0 of
// the first copied to 4 between them, which replaces it in its table), every logit, then four
// decode steps of one or two tokens (the matVec path, captured and replayed as CUDA graphs).
Comparison compareSteps(test::LoadedModel& ours, test::LoadedModel& ref) {
    Comparison c;
    const int nVocab = ref.dims().nVocab;
    auto token = [&](int i, int salt) { return int32_t((i * 7919 + salt * 104729 + 13) % (nVocab - 300) + 256); };
    std::vector<int32_t> table0{0, 1, 2};
    const std::vector<int32_t> table1{7, 5};
    for (auto [a0, b0, a1, b1] : {std::array<int, 4>{0, 30, 0, 12}, std::array<int, 4>{30, 37, 12, 21}}) {
        if (a0 > 0) {
            for (test::LoadedModel* m : {&ours, &ref})
                if (const Status s = m->runner->copyBlock(0, 4); !s.isOk()) return c.error = s.toString(), c;
            table0[0] = 4;
        }
        graph::Batch batch;
        batch.blockTables = {table0, table1};
        for (int p = a0; p < b0; ++p) batch.tokens.push_back({p == 0 ? 1 : token(p, 0), p, 0, true});
        for (int p = a1; p < b1; ++p) batch.tokens.push_back({p == 0 ? 1 : token(p, 1), p, 1, true});
        if (const Status s = runBoth(ours, ref, batch, c); !s.isOk()) return c.error = s.toString(), c;
    }
    // Decode: (seq 1 at 21, seq 0 at 37), (seq 0 at 38), (seq 1 at 22, seq 0 at 39), (seq 1 at 23, seq 0 at 40).
    int len0 = 37, len1 = 21;
    for (int step = 0; step < 4; ++step) {
        graph::Batch batch;
        batch.blockTables = {table0, table1};
        if (step != 1) {
            batch.tokens.push_back({token(len1, 2), len1, 1, true});
            ++len1;
        }
        batch.tokens.push_back({token(len0, 3), len0, 0, true});
        ++len0;
        if (const Status s = runBoth(ours, ref, batch, c); !s.isOk()) return c.error = s.toString(), c;
    }
    return c;
}

// A load meant for the GPU that the runner put on the CPU alone (it runs a quick self-test of the
// device before trusting it) would pass every comparison: each test checks where it ran.
bool onGpu(const test::LoadedModel& m) { return m.runner->deviceId() == "cuda:0" && m.runner->deviceCount() == 2; }

Comparison compareOn(const std::string& path, const test::LoadOptions& options, std::vector<std::string>* fallbacks = nullptr) {
    Comparison c;
    auto ours = test::loadModel(path, options);
    if (!ours) return c.error = ours.status().toString(), c;
    if (!onGpu(**ours)) return c.error = "the runner did not put the model on cuda:0", c;
    test::LoadOptions refOptions = options;
    refOptions.device = "ref";
    refOptions.gpuLayers = -1;
    auto ref = test::loadModel(path, refOptions);
    if (!ref) return c.error = "reference: " + ref.status().toString(), c;
    if (fallbacks) *fallbacks = (*ours)->runner->fallbacks();
    return compareSteps(**ours, **ref);
}

using test::joined;

// The CUDA device with one op declined, as a backend that lacks it would: the runner must put
// those nodes on the CPU and copy their operands and results across.
class DecliningDevice final : public backend::Device {
public:
    DecliningDevice(std::unique_ptr<backend::Device> inner, graph::Op declined)
        : m_inner(std::move(inner)), m_declined(declined) {}
    const backend::DeviceInfo& info() const override { return m_inner->info(); }
    bool supportsOp(const graph::Graph& g, const graph::Node& n) const override {
        return n.op != m_declined && m_inner->supportsOp(g, n);
    }
    Result<std::unique_ptr<backend::Buffer>> allocate(uint64_t bytes) override { return m_inner->allocate(bytes); }
    Result<uint64_t> loadWeights(const std::vector<graph::Weight>& all, std::span<const backend::WeightUse> used) override {
        return m_inner->loadWeights(all, used);
    }
    Result<std::unique_ptr<backend::KvPool>> createKvPool(const backend::KvPoolSpec& spec) override {
        return m_inner->createKvPool(spec);
    }
    int maxKvBlocks(const backend::KvPoolSpec& spec) const override { return m_inner->maxKvBlocks(spec); }
    Result<std::unique_ptr<backend::Program>> compile(const backend::ProgramSpec& spec) override {
        return m_inner->compile(spec);
    }

private:
    std::unique_ptr<backend::Device> m_inner;
    graph::Op m_declined;
};

// A synthetic model in dir; an empty path and the reason when it cannot be made.
std::string synthesize(const QTemporaryDir& dir, const QString& preset, const QString& type, const QString& vocab,
                       int layers, std::string& why) {
    SynthOptions o;
    o.preset = preset.toStdString();
    o.typeOrMix = type.toStdString();
    o.vocabPath = test::testDataPath(QStringLiteral("models/") + vocab);
    o.outPath = dir.filePath(preset + QStringLiteral("-") + type + QStringLiteral(".gguf")).toStdString();
    o.layers = layers;
    o.threads = 2;
    const Status made = synthesizeModel(o);
    if (!made.isOk()) return why = made.toString(), std::string();
    return o.outPath;
}

bool hasPreset(const std::string& name) {
    for (const SynthPreset& p : synthPresets())
        if (p.name == name) return true;
    return false;
}

} // namespace

class TestForwardCuda : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private Q_SLOTS:
    void initTestCase() {
        const auto count = cuda::deviceCount();
        if (!count.isOk()) QSKIP(("no usable CUDA device/driver: " + count.status().toString()).c_str());
        QVERIFY(m_dir.isValid());
    }

    // The device self-test (every op, weight type, K/V type, RoPE and attention variant against
    // the reference): no case the CUDA device accepts may fail; the ones it declines run on the CPU.
    void selftestPasses() {
        auto device = backend::openDevice("cuda:0");
        QVERIFY2(device.isOk(), device.status().toString().c_str());
        backend::SelftestOptions options;
        auto report = backend::runSelftest(**device, options);
        QVERIFY2(report.isOk(), report.status().toString().c_str());
        std::string failed;
        for (const backend::SelftestCase& c : report->cases)
            if (c.supported && !c.ok)
                failed += "\n  " + c.op + " " + c.type + " " + c.shape + ": err " + std::to_string(c.maxErr) + " > " +
                          std::to_string(c.tol) + " " + c.error;
        std::printf("selftest on cuda:0: %zu cases, %d declined, %d failed (%.2f s)\n", report->cases.size(),
                    report->unsupportedCount(), report->failures(), report->seconds);
        QVERIFY2(report->passed(), failed.c_str());
    }

    // 64 greedy tokens after "Once upon a time" (prefilled in one step, then one token per step):
    // llama.cpp's, and the CPU device's, on every layer split.
    void greedyStories_data() {
        QTest::addColumn<int>("gpuLayers");
        QTest::newRow("all layers") << -1;
        QTest::newRow("2 of 5 layers") << 2;
    }
    void greedyStories() {
        QFETCH(int, gpuLayers);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string path = test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        test::LoadOptions o;
        o.device = "cpu";
        auto cpuModel = test::loadModel(path, o);
        QVERIFY2(cpuModel.isOk(), cpuModel.status().toString().c_str());
        o.device = "cuda:0";
        o.gpuLayers = gpuLayers;
        auto gpuModel = test::loadModel(path, o);
        QVERIFY2(gpuModel.isOk(), gpuModel.status().toString().c_str());
        QVERIFY(onGpu(**gpuModel));
        QVERIFY2((*gpuModel)->runner->fallbacks().empty(), joined((*gpuModel)->runner->fallbacks()).c_str());
        const test::Greedy cpu = test::greedy(**cpuModel, test::kStoriesPrompt, 64);
        const test::Greedy gpu = test::greedy(**gpuModel, test::kStoriesPrompt, 64);
        QVERIFY2(cpu.error.empty(), cpu.error.c_str());
        QVERIFY2(gpu.error.empty(), gpu.error.c_str());
        QCOMPARE(cpu.ids, test::kStoriesGreedy);
        QCOMPARE(gpu.ids, test::kStoriesGreedy);
    }

    void compare_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("kv");
        QTest::addColumn<int>("gpuLayers"); // -1: all; otherwise the rest run on the CPU
        const QString stories = QStringLiteral("models/stories260K.gguf");
        QTest::newRow("stories260K f32 kv") << stories << int(KvType::F32) << -1;
        QTest::newRow("stories260K f16 kv") << stories << int(KvType::F16) << -1;
        QTest::newRow("stories260K f16 kv, 2 of 5 layers") << stories << int(KvType::F16) << 2;
        QTest::newRow("stories260K f32 kv, 0 layers") << stories << int(KvType::F32) << 0;
        QTest::newRow("tiny-random f16 kv") << QStringLiteral("models/llama-2-tiny-random.gguf") << int(KvType::F16) << -1;
    }

    // Tolerance: |Δlogit| <= 3e-2 * max(1, max|logit|) (F16 weights' prefill runs fp16 tensor-core
    // tiles; F16 K/V rounds keys and values the same way on both sides) and the argmax agrees on
    // 90% of rows.
    void compare() {
        QFETCH(QString, model);
        QFETCH(int, kv);
        QFETCH(int, gpuLayers);
        HEARTH_REQUIRE_TEST_FILE(model);
        test::LoadOptions o;
        o.device = "cuda:0";
        o.kvType = KvType(kv);
        o.gpuLayers = gpuLayers;
        std::vector<std::string> fallbacks;
        const Comparison c = compareOn(test::testDataPath(model), o, &fallbacks);
        QVERIFY2(c.error.empty(), c.error.c_str());
        std::printf("%s: %d rows, max |diff| %.3g (max |logit| %.3g), argmax agrees on %d\n", qPrintable(model),
                    c.rows, c.maxDiff, c.maxLogit, c.argmaxAgree);
        QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        QVERIFY(c.maxDiff <= 3e-2 * std::max(1.0, c.maxLogit));
        QVERIFY(c.argmaxAgree * 10 >= c.rows * 9);
    }

    // Synthetic cuts of real shapes in quantized types: prefill multiplies them with int8
    // activations (each rounded by up to half a step of its 32-value chunk, about 0.4% of the
    // chunk's largest): |Δlogit| <= 5e-2 * (1 + max|logit|), argmax agrees on 90% of rows. The
    // qwen cuts add QKV bias, NeoX RoPE and Q/K norm (one runs split 1 + 1 with the CPU); gemma3
    // adds embedding scaling, GeGLU, post-norms, sliding windows (gemma3-tiny's 8 positions are
    // outrun), a linearly scaled global layer and final soft-capping; the tiny presets of the other
    // architectures add routed experts, attention sinks, YaRN and the attention temperature, K/V
    // pools of per-layer shapes and the recurrent ops. Every node runs on the GPU.
    void syntheticModels_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("vocab");
        QTest::addColumn<int>("layers"); // 0: the preset's
        QTest::addColumn<int>("gpuLayers");
        const QString spm = QStringLiteral("ggml-vocab-llama-spm.gguf"), qwen = QStringLiteral("ggml-vocab-qwen2.gguf");
        for (const char* t : {"Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "Q2_K"})
            QTest::newRow(qPrintable(QStringLiteral("llama-tiny ") + t))
                << QStringLiteral("llama-tiny") << QString::fromLatin1(t) << spm << 2 << -1;
        QTest::newRow("qwen2.5 Q4_K_M") << QStringLiteral("qwen2.5-0.5b") << QStringLiteral("Q4_K_M") << qwen << 2 << -1;
        QTest::newRow("qwen3 Q8_0, 1 of 2 layers") << QStringLiteral("qwen3-0.6b") << QStringLiteral("Q8_0") << qwen << 2 << 1;
        QTest::newRow("gemma3-tiny F32") << QStringLiteral("gemma3-tiny") << QStringLiteral("F32") << spm << 0 << -1;
        QTest::newRow("gemma3-tiny Q8_0") << QStringLiteral("gemma3-tiny") << QStringLiteral("Q8_0") << spm << 0 << -1;
        QTest::newRow("gemma3-1b Q4_K_M") << QStringLiteral("gemma3-1b") << QStringLiteral("Q4_K_M") << spm << 2 << -1;
        // Experts routed on the device, sinks, YaRN and the attention temperature, K/V pools of
        // per-layer shapes, the recurrent ops; in F32, multiplied in fp32 as the reference does (with
        // int8 activations a router's near-tied experts swap now and then, which moves a row by
        // O(1): qwen35moe-tiny Q8_0 parted by 0.44 on an H200).
        for (const char* p : {"mixtral-tiny", "qwen3moe-tiny", "gpt-oss-tiny", "mistral3-tiny", "gemma4-tiny",
                              "gemma4-moe-tiny", "phi3-tiny", "qwen35-tiny", "qwen35moe-tiny"})
            QTest::newRow(qPrintable(QString::fromLatin1(p) + QStringLiteral(" F32")))
                << QString::fromLatin1(p) << QStringLiteral("F32") << spm << 0 << -1;
    }
    void syntheticModels() {
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        QFETCH(int, layers);
        QFETCH(int, gpuLayers);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        if (!hasPreset(preset.toStdString()))
            QSKIP(qPrintable(QStringLiteral("no synth preset %1 in this build").arg(preset)));
        std::string why;
        const std::string path = synthesize(m_dir, preset, type, vocab, layers, why);
        QVERIFY2(!path.empty(), why.c_str());
        test::LoadOptions o;
        o.device = "cuda:0";
        o.kvType = KvType::F16;
        o.gpuLayers = gpuLayers;
        std::vector<std::string> fallbacks;
        const Comparison c = compareOn(path, o, &fallbacks);
        QVERIFY2(c.error.empty(), c.error.c_str());
        std::printf("%s %s: %d rows, max |diff| %.3g (max |logit| %.3g), argmax agrees on %d\n", qPrintable(preset),
                    qPrintable(type), c.rows, c.maxDiff, c.maxLogit, c.argmaxAgree);
        QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        QVERIFY(c.maxDiff <= 5e-2 * (1.0 + c.maxLogit));
        QVERIFY(c.argmaxAgree * 10 >= c.rows * 9);
    }

    // The CUDA Q8_0 cache holds whole 32-value blocks per head, and stories260K's heads are 8 values:
    // every layer's K/V lives on the CPU, whose KvWrite and Attention run between the GPU's
    // projections (fallbacks() names each layer's attention, the node the GPU refused). stories260K's
    // weights are F32, multiplied in fp32 at every batch size, so the K/V rows the CPU quantizes
    // are the reference's up to summation order: greedy decoding follows the CPU device's and the
    // mixed steps' logits stay within 1e-3 * (1 + max|logit|) of the reference (an fp16 prefill
    // would move some values across a Q8_0 rounding step, ~1/127 of a block's largest).
    void q8KvCacheFallsBackToCpu() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string path = test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        test::LoadOptions o;
        o.device = "cuda:0";
        o.kvType = KvType::Q8_0;
        auto gpuModel = test::loadModel(path, o);
        QVERIFY2(gpuModel.isOk(), gpuModel.status().toString().c_str());
        QVERIFY(onGpu(**gpuModel));
        const std::vector<std::string> fallbacks = (*gpuModel)->runner->fallbacks();
        std::printf("stories260K q8_0 kv: fallbacks %s\n", joined(fallbacks).c_str());
        // Each layer's attention, once each (its K/V write follows it to the CPU unnamed).
        QCOMPARE(int(fallbacks.size()), (*gpuModel)->dims().nLayer);
        for (int l = 0; l < (*gpuModel)->dims().nLayer; ++l)
            for (graph::Op op : {graph::Op::Attention}) {
                const std::string prefix = std::string(graph::opName(op)) + "@" + std::to_string(l) + " ";
                QVERIFY2(std::any_of(fallbacks.begin(), fallbacks.end(),
                                     [&](const std::string& f) { return f.rfind(prefix, 0) == 0; }),
                         (prefix + "not among the fallbacks: " + joined(fallbacks)).c_str());
            }
        o.device = "cpu";
        auto cpuModel = test::loadModel(path, o);
        QVERIFY2(cpuModel.isOk(), cpuModel.status().toString().c_str());
        const test::Greedy cpu = test::greedy(**cpuModel, test::kStoriesPrompt, 32);
        const test::Greedy gpu = test::greedy(**gpuModel, test::kStoriesPrompt, 32);
        QVERIFY2(cpu.error.empty(), cpu.error.c_str());
        QVERIFY2(gpu.error.empty(), gpu.error.c_str());
        QCOMPARE(gpu.ids, cpu.ids);
        Comparison greedyDiff;
        QVERIFY(greedyDiff.add(cpu.logits, gpu.logits, size_t((*cpuModel)->dims().nVocab)));
        std::printf("  greedy: max |diff| %.3g (max |logit| %.3g)\n", greedyDiff.maxDiff, greedyDiff.maxLogit);
        QVERIFY(greedyDiff.maxDiff <= 1e-2 * (1.0 + greedyDiff.maxLogit));

        o.device = "cuda:0";
        const Comparison c = compareOn(path, o);
        QVERIFY2(c.error.empty(), c.error.c_str());
        std::printf("  mixed steps: %d rows, max |diff| %.3g (max |logit| %.3g), argmax agrees on %d\n", c.rows, c.maxDiff,
                    c.maxLogit, c.argmaxAgree);
        QVERIFY(c.maxDiff <= 1e-3 * (1.0 + c.maxLogit));
        QCOMPARE(c.argmaxAgree, c.rows);
    }

    // A Q8_0 K/V cache on the device (llama-tiny's heads are whole blocks): no fallbacks, and the
    // logits of mixed steps within the quantized-weight tolerance of the reference's, which keeps
    // its K/V as Q8_0 too (the same quantizer: math::quantizeQ8Block is the reference's bytes).
    void q8KvCacheOnTheDevice() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        std::string why;
        const std::string path = synthesize(m_dir, QStringLiteral("llama-tiny"), QStringLiteral("Q8_0"),
                                            QStringLiteral("ggml-vocab-llama-spm.gguf"), 2, why);
        QVERIFY2(!path.empty(), why.c_str());
        test::LoadOptions o;
        o.device = "cuda:0";
        o.kvType = KvType::Q8_0;
        std::vector<std::string> fallbacks;
        const Comparison c = compareOn(path, o, &fallbacks);
        QVERIFY2(c.error.empty(), c.error.c_str());
        std::printf("llama-tiny q8_0 kv: %d rows, max |diff| %.3g (max |logit| %.3g), argmax agrees on %d\n", c.rows,
                    c.maxDiff, c.maxLogit, c.argmaxAgree);
        QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        QVERIFY(c.maxDiff <= 5e-2 * (1.0 + c.maxLogit));
        QVERIFY(c.argmaxAgree * 10 >= c.rows * 9);
    }

    // An op the GPU declines (SwiGLU here, through a wrapping device) runs on the CPU in every
    // layer: fallbacks() names each, and the logits match the reference.
    void declinedOpFallsBackToCpu() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string path = test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        auto ours = std::make_unique<test::LoadedModel>();
        auto file = gguf::File::open(path);
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        ours->file.emplace(std::move(file).value());
        auto arch = model::loadArchitecture(*ours->file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        ours->arch = std::move(arch).value();
        runtime::RunnerConfig rc;
        rc.device = "cuda:0";
        rc.kvType = KvType::F32;
        rc.numBlocks = 8;
        rc.open = [](const std::string& id, cpu::ThreadPool* pool) -> Result<std::unique_ptr<backend::Device>> {
            auto dev = backend::openDevice(id, pool);
            if (!dev || id != "cuda:0") return dev;
            return std::unique_ptr<backend::Device>(new DecliningDevice(std::move(dev).value(), graph::Op::SwiGlu));
        };
        auto runner = runtime::ModelRunner::create(*ours->arch, rc);
        QVERIFY2(runner.isOk(), runner.status().toString().c_str());
        ours->runner = std::move(runner).value();
        QVERIFY(onGpu(*ours));
        const std::vector<std::string>& fallbacks = ours->runner->fallbacks();
        QCOMPARE(int(fallbacks.size()), ours->dims().nLayer);
        for (int l = 0; l < ours->dims().nLayer; ++l)
            QVERIFY2(std::find(fallbacks.begin(), fallbacks.end(),
                               std::string(graph::opName(graph::Op::SwiGlu)) + "@" + std::to_string(l)) != fallbacks.end(),
                     joined(fallbacks).c_str());
        test::LoadOptions refOptions;
        refOptions.device = "ref";
        auto ref = test::loadModel(path, refOptions);
        QVERIFY2(ref.isOk(), ref.status().toString().c_str());
        const Comparison c = compareSteps(*ours, **ref);
        QVERIFY2(c.error.empty(), c.error.c_str());
        std::printf("stories260K, swiglu on the CPU: max |diff| %.3g (max |logit| %.3g)\n", c.maxDiff, c.maxLogit);
        QVERIFY(c.maxDiff <= 3e-2 * std::max(1.0, c.maxLogit));
        QVERIFY(c.argmaxAgree * 10 >= c.rows * 9);
    }

    // Each weight goes to the GPU once: with the tied embedding read by GetRows (layer -1) and the
    // logits' MatMul, the GPU holds exactly the bytes of the distinct weights its nodes read (all of
    // them; with 2 of 6 layers those of layers < 2, the embedding among them).
    void tiedEmbeddingUploadedOnce() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        if (!hasPreset("gemma3-tiny")) QSKIP("no synth preset gemma3-tiny in this build");
        std::string why;
        const std::string path = synthesize(m_dir, QStringLiteral("gemma3-tiny"), QStringLiteral("Q8_0"),
                                            QStringLiteral("ggml-vocab-llama-spm.gguf"), 0, why);
        QVERIFY2(!path.empty(), why.c_str());
        for (int gpuLayers : {-1, 2}) {
            test::LoadOptions o;
            o.device = "cuda:0";
            o.kvType = KvType::F16;
            o.gpuLayers = gpuLayers;
            auto m = test::loadModel(path, o);
            QVERIFY2(m.isOk(), m.status().toString().c_str());
            QVERIFY(onGpu(**m));
            const model::Architecture& arch = *(*m)->arch;
            QCOMPARE(arch.tokenEmbedding(), arch.outputWeight()); // tied
            const int limit = gpuLayers < 0 ? (*m)->dims().nLayer + 1 : gpuLayers;
            uint64_t expected = 0;
            for (const graph::Weight& w : arch.weights())
                if (w.layer < limit) expected += w.bytes();
            const std::vector<runtime::DeviceMemory> memory = (*m)->runner->memory();
            QCOMPARE(memory.front().id, std::string("cuda:0"));
            std::printf("gpuLayers %d: %llu weight bytes on cuda:0 (expected %llu)\n", gpuLayers,
                        (unsigned long long)memory.front().weightBytes, (unsigned long long)expected);
            QCOMPARE(memory.front().weightBytes, expected);
        }
    }

    // Decode-sized steps are captured once per program and replayed; the replays must give
    // exactly the logits of direct launches (same kernels, same arguments) while the batch
    // contents change under them: positions, tokens, block tables and which rows want logits.
    void graphReplayEqualsDirect() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string path = test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        test::LoadOptions o;
        o.device = "cuda:0";
        o.kvType = KvType::F16;
        o.numBlocks = 16;
        qputenv("HEARTH_CUDA_GRAPHS", "0"); // read when the device opens
        auto direct = test::loadModel(path, o);
        qunsetenv("HEARTH_CUDA_GRAPHS");
        auto graphed = test::loadModel(path, o);
        QVERIFY2(direct.isOk(), direct.status().toString().c_str());
        QVERIFY2(graphed.isOk(), graphed.status().toString().c_str());
        QVERIFY(onGpu(**direct) && onGpu(**graphed));

        const int nVocab = (*direct)->dims().nVocab;
        const std::vector<std::vector<int32_t>> tables = {{3, 9, 1}, {12, 0}, {6, 7, 14}};
        std::vector<int> length = {9, 13, 17};
        // Prefill three prompts (matMul path, no graph), then decode steps of 1..3 tokens.
        graph::Batch prefill;
        prefill.blockTables.assign(tables.begin(), tables.end());
        for (int s = 0; s < 3; ++s)
            for (int p = 0; p < length[size_t(s)]; ++p)
                prefill.tokens.push_back({(p * 31 + s * 7) % (nVocab - 1) + 1, p, s, false});
        std::vector<float> a, b;
        QVERIFY((*direct)->runner->forward(prefill, a).isOk());
        QVERIFY((*graphed)->runner->forward(prefill, b).isOk());
        for (int step = 0; step < 12; ++step) {
            graph::Batch batch;
            batch.blockTables.assign(tables.begin(), tables.end());
            const int nSeqs = 1 + step % 3;
            for (int s = 0; s < nSeqs; ++s) {
                const bool want = s != 1 || step % 2 == 0;
                batch.tokens.push_back({(step * 13 + s * 5) % (nVocab - 1) + 1, length[size_t(s)]++, s, want});
            }
            const Status sa = (*direct)->runner->forward(batch, a), sb = (*graphed)->runner->forward(batch, b);
            QVERIFY2(sa.isOk(), sa.toString().c_str());
            QVERIFY2(sb.isOk(), sb.toString().c_str());
            QCOMPARE(b.size(), a.size());
            QVERIFY2(a == b, qPrintable(QStringLiteral("step %1: graph replay differs from direct launches").arg(step)));
        }
    }
};

QTEST_GUILESS_MAIN(TestForwardCuda)
#include "test_forward_cuda.moc"
