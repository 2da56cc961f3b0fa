// Step graphs on every GPU device under test (tests/common/devices_under_test.h: the first Vulkan
// and the first CUDA device found) through the runner against the scalar reference device, each
// check written once and run per device: the device self-test; stories260K's 64 greedy tokens
// equal llama.cpp's with its logits close to llama.cpp's, all layers on the device or split with
// the CPU; mixed steps (a chunked prefill beside a sequence in scattered blocks, a copy-on-write,
// decode steps) for stories260K, llama-2-tiny-random and synthetic models of every architecture
// and weight type (tiny presets and cuts of real shapes); the encoders' hidden rows; each weight
// uploaded once; experts in RAM; Q8_0 K/V; and an op the device declines running on the CPU.
// Every node must run on the device (fallbacks() empty) unless a check says otherwise. Rows skip
// with the backends' reasons when there is no device.
#include "backend/selftest.h"
#include "devices_under_test.h"
#include "engine_device_checks.h"
#include "hearth/synth.h"
#include "model_harness.h"
#include "test_support.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <map>

using namespace hearth;
using test::joined;

namespace {

// How close a device's logits come to the reference device's: |d| < rel · (1 + max |logit|) and
// the argmax equal on argmaxPercent of the rows. Vulkan dequantizes the same bytes as the
// reference and sums in fp32. CUDA's prefill rounds activations, to int8 for quantized weights
// (dp4a tiles, as the CPU kernels do) and to fp16 for F16 weights (tensor-core tiles): its bounds
// are the CPU forward's.
struct Bound {
    double rel = 0.0;
    int argmaxPercent = 100;
};
bool roundsActivations(const std::string& device) { return test::isCudaId(device); }
Bound floatBound(const std::string& device) { return roundsActivations(device) ? Bound{3e-2, 90} : Bound{1e-3, 100}; }
Bound synthBound(const std::string& device) { return roundsActivations(device) ? Bound{5e-2, 90} : Bound{2e-3, 100}; }
// Whether a preset routes tokens to experts: with rounded activations its router swaps near-tied
// experts now and then, which moves that row by O(1) (qwen35moe-tiny Q8_0 parted by 0.44 on an
// H200's int8 prefill), so such rows compare each sequence's last logits only.
bool routesExperts(const QString& preset) {
    return preset.contains(QStringLiteral("moe")) || preset.startsWith(QStringLiteral("mixtral")) ||
           preset.startsWith(QStringLiteral("gpt-oss"));
}
// A layer split's CPU part quantizes the activations of quantized weights: the CPU forward's bound.
constexpr Bound kSplitBound{5e-2, 0};

// Empty when c is within b, else why not.
std::string outside(const test::Comparison& c, Bound b) {
    if (!c.error.empty()) return c.error;
    std::string why;
    if (!(c.maxDiff < b.rel * (1.0 + c.maxLogit)))
        why = "max |d| " + std::to_string(c.maxDiff) + " >= " + std::to_string(b.rel) + " * (1 + " +
              std::to_string(c.maxLogit) + ")";
    if (c.argmaxAgree * 100 < c.rows * b.argmaxPercent)
        why += " argmax agrees on " + std::to_string(c.argmaxAgree) + " of " + std::to_string(c.rows) + " rows";
    return why;
}

void report(const char* what, const test::Comparison& c) {
    qInfo("%s: max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", what, c.maxDiff, c.maxLogit, c.argmaxAgree,
          c.rows);
}

bool hasPreset(const QString& name) {
    for (const SynthPreset& p : synthPresets())
        if (p.name == name.toStdString()) return true;
    return false;
}

std::string storiesPath() { return test::testDataPath(QStringLiteral("models/stories260K.gguf")); }

// The vocabularies the synthetic rows take: Llama 2's 32000 tokens, stories260K's 512 (which keeps
// the output of the real shapes' cuts small).
constexpr const char* kSpm = "ggml-vocab-llama-spm.gguf";
constexpr const char* kStories = "stories260K.gguf";

// The synthetic rows' columns after the device: preset, weight type, vocabulary, layers (0: all).
void synthColumns() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("vocab");
    QTest::addColumn<int>("layers");
}
void synthRow(const char* preset, const char* type, const char* vocab, int layers) {
    test::deviceRows(QStringLiteral("%1 %2").arg(QLatin1String(preset), QLatin1String(type)), [&](QTestData& row) {
        row << QString::fromLatin1(preset) << QString::fromLatin1(type) << QString::fromLatin1(vocab) << layers;
    });
}

// A device with one op declined, as a backend that lacks it would be: the runner must put those
// nodes on the CPU and copy their operands and results across.
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

} // namespace

class TestForwardDevices : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::map<QString, QString> m_made; // synthetic models made so far, by name

    // A synthetic model in the test's folder, made once per name; empty (and `why`) on failure.
    QString synthesize(const QString& preset, const QString& type, const QString& vocab, int layers, std::string& why) {
        const QString name = preset + QLatin1Char('-') + type + QLatin1Char('-') + QString::number(layers);
        if (auto it = m_made.find(name); it != m_made.end()) return it->second;
        SynthOptions o;
        o.preset = preset.toStdString();
        o.typeOrMix = type.toStdString();
        o.vocabPath = test::testDataPath(QStringLiteral("models/") + vocab);
        o.outPath = m_dir.filePath(name + QStringLiteral(".gguf")).toStdString();
        o.layers = layers;
        o.threads = 2;
        if (const Status made = synthesizeModel(o); !made.isOk()) return why = made.toString(), QString();
        return m_made[name] = QString::fromStdString(o.outPath);
    }

    // The current synthetic row on its device against the reference device (see llamaTinyTypes).
    void checkSyntheticRow() {
        HEARTH_FETCH_DEVICE(id);
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        QFETCH(int, layers);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        if (!hasPreset(preset)) QSKIP(qPrintable(QStringLiteral("no synth preset %1 in this build").arg(preset)));
        std::string why;
        const QString path = synthesize(preset, type, vocab, layers, why);
        QVERIFY2(!path.isEmpty(), why.c_str());
        test::LoadOptions o;
        o.device = id;
        o.kvType = KvType::F16;
        std::vector<std::string> fallbacks;
        const bool allLogits = !(roundsActivations(id) && type != QStringLiteral("F32") && routesExperts(preset));
        const test::Comparison c = test::compareOn(path.toStdString(), o, allLogits, &fallbacks);
        report("all layers", c);
        QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        const std::string off = outside(c, synthBound(id));
        QVERIFY2(off.empty(), off.c_str());
        // The split (first layer on the device, the rest on the CPU) on the cuts of more than the
        // tiny llama whose vocabulary is not stories260K's (a second reference pass over the real
        // shapes would double the slowest rows). Each sequence's last logits only: the CPU part
        // rounds activations to int8 (see routesExperts; gemma4-moe-tiny Q8_0: one row of 63
        // moved by 0.18).
        if (preset == QStringLiteral("llama-tiny") || vocab == QLatin1String(kStories)) return;
        o.gpuLayers = 1;
        const test::Comparison split = test::compareOn(path.toStdString(), o, false);
        report("split 1 + rest", split);
        const std::string splitOff = outside(split, kSplitBound);
        QVERIFY2(splitOff.empty(), splitOff.c_str());
    }

    static constexpr int kSelftestParts = 3;
    static void selftestRows() {
        QTest::addColumn<QString>("device");
        test::deviceRows(QStringLiteral("selftest"), [](QTestData&) {});
    }
    void selftestPart(int part) {
        HEARTH_FETCH_DEVICE(id);
        auto dev = backend::openDevice(id);
        QVERIFY2(dev.isOk(), dev.status().toString().c_str());
        backend::SelftestOptions options;
        options.part = part;
        options.parts = kSelftestParts;
        auto report = backend::runSelftest(**dev, options);
        QVERIFY2(report.isOk(), report.status().toString().c_str());
        QVERIFY(!report->cases.empty());
        std::string failed;
        for (const backend::SelftestCase& c : report->cases)
            if (c.supported && !c.ok)
                failed += "\n  " + c.op + " " + c.type + " " + c.shape + ": err " + std::to_string(c.maxErr) + " > " +
                          std::to_string(c.tol) + " " + c.error;
        qInfo("part %d of %d: %zu cases, %d declined, %d failed (%.2f s)", part + 1, kSelftestParts, report->cases.size(),
              report->unsupportedCount(), report->failures(), report->seconds);
        QVERIFY2(report->passed(), failed.c_str());
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        const test::DevicesUnderTest& d = test::devicesUnderTest();
        qInfo("devices under test: %s", d.ids.empty() ? d.whyNone.c_str() : joined(d.ids).c_str());
    }

    // The device self-test (every op, weight type, K/V type, RoPE and attention variant against
    // the reference): no case the device accepts may fail; the ones it declines run on the CPU.
    // In three parts (SelftestOptions::part: weight types dealt out), as building lavapipe's
    // pipelines for all of them took 90 s on a 2-core machine with an empty shader cache (its
    // parts 33, 31 and 27 s).
    void selftestPassesPart1_data() { selftestRows(); }
    void selftestPassesPart1() { selftestPart(0); }
    void selftestPassesPart2_data() { selftestRows(); }
    void selftestPassesPart2() { selftestPart(1); }
    void selftestPassesPart3_data() { selftestRows(); }
    void selftestPassesPart3() { selftestPart(2); }

    // Prefill of "Once upon a time", then 63 decode steps: each chosen token equals llama.cpp's;
    // with every layer on the device every logit is close to llama.cpp's run with the same K/V
    // type. F32 K/V against its fp32-attention run: within 2e-2; F16 K/V against its F16 run (flash
    // attention, which also rounds Q and the softmax weights to F16): within 3e-2.
    void storiesGreedy_data() {
        QTest::addColumn<QString>("device");
        QTest::addColumn<int>("kv");
        QTest::addColumn<int>("gpuLayers");
        QTest::addColumn<QString>("logitsFile");
        const QString f32 = QStringLiteral("stories260K.ref-logits-fa0-kvf32.f32");
        const QString f16 = QStringLiteral("stories260K.ref-logits.f32");
        test::deviceRows("f32 kv", [&](QTestData& r) { r << int(KvType::F32) << -1 << f32; });
        test::deviceRows("f16 kv", [&](QTestData& r) { r << int(KvType::F16) << -1 << f16; });
        test::deviceRows("f16 kv, 2 of 5 layers", [&](QTestData& r) { r << int(KvType::F16) << 2 << QString(); });
    }
    void storiesGreedy() {
        HEARTH_FETCH_DEVICE(id);
        QFETCH(int, kv);
        QFETCH(int, gpuLayers);
        QFETCH(QString, logitsFile);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        test::LoadOptions o;
        o.device = id;
        o.kvType = KvType(kv);
        o.gpuLayers = gpuLayers;
        auto m = test::loadModel(storiesPath(), o);
        QVERIFY2(m.isOk(), m.status().toString().c_str());
        const runtime::ModelRunner& runner = *(*m)->runner;
        QCOMPARE(runner.deviceId(), id);
        QCOMPARE(runner.gpuLayers(), gpuLayers < 0 ? (*m)->dims().nLayer : gpuLayers);
        QVERIFY2(runner.fallbacks().empty(), joined(runner.fallbacks()).c_str());
        const test::Greedy g = test::greedy(**m, test::kStoriesPrompt, 64);
        QVERIFY2(g.error.empty(), g.error.c_str());
        QCOMPARE(g.ids, test::kStoriesGreedy);
        if (logitsFile.isEmpty()) return;
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

    // The float models of the test data, every logit of the mixed steps against the reference
    // device (floatBound), every layer on the device or the first gpuLayers of stories260K's 5
    // (with their K/V; the rest and the logits on the CPU kernels).
    void floatModels_data() {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("kv");
        QTest::addColumn<int>("gpuLayers");
        const QString stories = QStringLiteral("stories260K.gguf");
        test::deviceRows("stories260K f32 kv", [&](QTestData& r) { r << stories << int(KvType::F32) << -1; });
        test::deviceRows("stories260K f16 kv", [&](QTestData& r) { r << stories << int(KvType::F16) << -1; });
        for (int g : {0, 2, 4})
            test::deviceRows(QStringLiteral("stories260K f16 kv, %1 of 5 layers").arg(g),
                             [&](QTestData& r) { r << stories << int(KvType::F16) << g; });
        test::deviceRows("llama-2-tiny-random", [&](QTestData& r) {
            r << QStringLiteral("llama-2-tiny-random.gguf") << int(KvType::F16) << -1;
        });
    }
    void floatModels() {
        HEARTH_FETCH_DEVICE(id);
        QFETCH(QString, file);
        QFETCH(int, kv);
        QFETCH(int, gpuLayers);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + file);
        test::LoadOptions o;
        o.device = id;
        o.kvType = KvType(kv);
        o.gpuLayers = gpuLayers;
        std::vector<std::string> fallbacks;
        const test::Comparison c =
            test::compareOn(test::testDataPath(QStringLiteral("models/") + file), o, true, &fallbacks);
        report(qPrintable(file), c);
        QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        const std::string off = outside(c, floatBound(id));
        QVERIFY2(off.empty(), off.c_str());
    }

    // Synthetic models against the reference device, a few per test function (each well under a
    // minute on lavapipe): every weight type on llama-tiny; 2-layer cuts of real shapes (QKV bias,
    // NeoX RoPE, Q/K norm, heads of 256) with stories260K's vocabulary; gemma3 (GeGLU, post-norms,
    // sliding windows that the steps outrun, a linearly scaled global layer, final soft cap); the
    // tiny presets of the other architectures (routed experts, attention sinks, YaRN and the
    // attention temperature, K/V pools of per-layer shapes, the recurrent ops over State pools).
    // The tiny models other than llama-tiny also run split 1 + rest with the CPU (kSplitBound).
    void llamaTinyTypes_data() {
        synthColumns();
        for (const char* t : {"F16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"}) synthRow("llama-tiny", t, kSpm, 2);
    }
    void llamaTinyTypes() { checkSyntheticRow(); }

    void llamaTinyKQuants_data() {
        synthColumns();
        for (const char* t : {"Q4_K_M", "Q5_K_M", "Q6_K", "Q3_K_M", "Q2_K"}) synthRow("llama-tiny", t, kSpm, 2);
    }
    void llamaTinyKQuants() { checkSyntheticRow(); }

    void realShapesQwen_data() {
        synthColumns();
        synthRow("qwen2.5-0.5b", "Q4_K_M", kStories, 2);
        synthRow("qwen3-0.6b", "Q8_0", kStories, 2);
    }
    void realShapesQwen() { checkSyntheticRow(); }

    void realShapesGemma3_data() {
        synthColumns();
        synthRow("gemma3-1b", "Q4_K_M", kStories, 2);
    }
    void realShapesGemma3() { checkSyntheticRow(); }

    void iq4AndGemma3_data() {
        synthColumns();
        for (const char* t : {"IQ4_NL", "IQ4_XS"}) synthRow("llama-tiny", t, kSpm, 2);
        synthRow("gemma3-tiny", "F32", kSpm, 0);
        synthRow("gemma3-tiny", "Q8_0", kSpm, 0);
    }
    void iq4AndGemma3() { checkSyntheticRow(); }

    void moeAndHybrids_data() {
        synthColumns();
        synthRow("qwen3moe-tiny", "F32", kSpm, 0);
        synthRow("qwen3moe-tiny", "Q4_K_M", kSpm, 0);
        synthRow("qwen35-tiny", "F32", kSpm, 4);
        synthRow("qwen35moe-tiny", "F32", kSpm, 4);
    }
    void moeAndHybrids() { checkSyntheticRow(); }

    void moreArchitectures_data() {
        synthColumns();
        for (const char* p : {"mixtral-tiny", "mistral3-tiny", "phi3-tiny", "gpt-oss-tiny"}) synthRow(p, "F32", kSpm, 0);
        synthRow("gpt-oss-tiny", "MXFP4_MOE", kSpm, 0);
    }
    void moreArchitectures() { checkSyntheticRow(); }

    // gemma4: sliding and full layers of different K/V shapes (per-layer pool buffers), V = K, V
    // norms without weight, proportional RoPE, output scales; the experts beside the dense
    // feed-forward; gemma4-e-tiny's per-layer embeddings and shared-KV layers (split 1 + rest:
    // layer 2 on the CPU attends over layer 0's K/V on the device).
    void gemma4Models_data() {
        synthColumns();
        synthRow("gemma4-tiny", "F32", kSpm, 0);
        synthRow("gemma4-tiny", "Q8_0", kSpm, 0);
        synthRow("gemma4-moe-tiny", "F32", kSpm, 0);
        synthRow("gemma4-moe-tiny", "Q8_0", kSpm, 0);
        synthRow("gemma4-e-tiny", "F32", kSpm, 0);
    }
    void gemma4Models() { checkSyntheticRow(); }

    // The encoders with every node on the device (token-type and position rows, LayerNorm,
    // attention within the sequence, GELU or NeoX RoPE and SwiGLU): the hidden rows of two inputs
    // in one step (45 and 21 tokens, neither a multiple of a block or a workgroup, in scattered
    // blocks) equal the reference device's for F32, F16 and Q8_0 K/V: |d| <= tol · max(1, max
    // |ref|) with tol the float bound, at least 1e-2 for Q8_0 K/V (where the devices' projections
    // differ in the last bits, a K/V value may round to the neighbouring quant: 1/127 of its
    // block's largest).
    void encoders_data() {
        synthColumns();
        synthRow("bert-tiny", "F32", kSpm, 0);
        synthRow("bert-tiny", "Q8_0", kSpm, 0);
        synthRow("nomic-bert-tiny", "F32", kSpm, 0);
        synthRow("nomic-bert-tiny", "F16", kSpm, 0);
    }
    void encoders() {
        HEARTH_FETCH_DEVICE(id);
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(QString, vocab);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + vocab);
        if (!hasPreset(preset)) QSKIP(qPrintable(QStringLiteral("no synth preset %1 in this build").arg(preset)));
        std::string why;
        const QString path = synthesize(preset, type, vocab, 0, why);
        QVERIFY2(!path.isEmpty(), why.c_str());
        for (KvType kv : {KvType::F32, KvType::F16, KvType::Q8_0}) {
            test::LoadOptions o;
            o.device = id;
            o.kvType = kv;
            auto ours = test::loadModel(path.toStdString(), o);
            QVERIFY2(ours.isOk(), ours.status().toString().c_str());
            const runtime::ModelRunner& runner = *(*ours)->runner;
            QCOMPARE(runner.deviceId(), id);
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
            const double floatTol = (type == QStringLiteral("F32") ? floatBound(id) : synthBound(id)).rel;
            const double tol = kv == KvType::Q8_0 ? std::max(1e-2, floatTol) : floatTol;
            QVERIFY2(maxDiff <= tol * std::max(1.0, maxRef), qPrintable(QString::number(maxDiff)));
        }
    }

    // Each weight goes to the device once: gemma3-tiny's tied embedding is read by GetRows and by
    // the logits' MatMul, yet the device holds exactly the bytes of the distinct weights its nodes
    // read (all of them; with 2 of 6 layers those of layers < 2, the embedding among them).
    void tiedEmbeddingUploadedOnce_data() {
        QTest::addColumn<QString>("device");
        test::deviceRows(QStringLiteral("gemma3-tiny Q8_0"), [](QTestData&) {});
    }
    void tiedEmbeddingUploadedOnce() {
        HEARTH_FETCH_DEVICE(id);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + QLatin1String(kSpm));
        if (!hasPreset(QStringLiteral("gemma3-tiny"))) QSKIP("no synth preset gemma3-tiny in this build");
        std::string why;
        const QString path = synthesize(QStringLiteral("gemma3-tiny"), QStringLiteral("Q8_0"), QLatin1String(kSpm), 0, why);
        QVERIFY2(!path.isEmpty(), why.c_str());
        for (int gpuLayers : {-1, 2}) {
            test::LoadOptions o;
            o.device = id;
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
            QCOMPARE(memory.front().id, id);
            qInfo("gpuLayers %d: %llu weight bytes on %s", gpuLayers,
                  static_cast<unsigned long long>(memory.front().weightBytes), id.c_str());
            QCOMPARE(memory.front().weightBytes, expected);
        }
    }

    // Experts in RAM (--n-cpu-moe / --cpu-moe): every layer on the device but the experts of the
    // first N, which run on the CPU with their weights there. The logits match the reference
    // device (kSplitBound), nothing counts as a fallback, and the device holds exactly the
    // weights but those experts' (ffn_*_exps of layers < N); the CPU holds those.
    void expertsInRam_data() {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("type");
        QTest::addColumn<int>("cpuMoe");
        test::deviceRows("qwen3moe-tiny F32, first 1", [](QTestData& r) { r << QStringLiteral("qwen3moe-tiny") << QStringLiteral("F32") << 1; });
        test::deviceRows("qwen3moe-tiny Q8_0, all", [](QTestData& r) { r << QStringLiteral("qwen3moe-tiny") << QStringLiteral("Q8_0") << -1; });
        test::deviceRows("gpt-oss-tiny MXFP4, first 1",
                         [](QTestData& r) { r << QStringLiteral("gpt-oss-tiny") << QStringLiteral("MXFP4_MOE") << 1; });
    }
    void expertsInRam() {
        HEARTH_FETCH_DEVICE(id);
        QFETCH(QString, preset);
        QFETCH(QString, type);
        QFETCH(int, cpuMoe);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + QLatin1String(kSpm));
        if (!hasPreset(preset)) QSKIP(qPrintable(QStringLiteral("no synth preset %1 in this build").arg(preset)));
        std::string why;
        const QString path = synthesize(preset, type, QLatin1String(kSpm), 0, why);
        QVERIFY2(!path.isEmpty(), why.c_str());
        test::LoadOptions o;
        o.device = id;
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
        const test::Comparison c = test::compareOn(path.toStdString(), o, true, &fallbacks);
        report(qPrintable(QStringLiteral("experts of %1 layers in RAM").arg(inRam)), c);
        QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        const std::string off = outside(c, kSplitBound);
        QVERIFY2(off.empty(), off.c_str());
    }

    // A Q8_0 K/V cache: llama-tiny's heads are whole 32-value blocks and stay on every device;
    // stories260K's are 8 values, which a device may keep (Vulkan does: rows start mid-word) or
    // leave to the CPU, and then only each layer's attention is a fallback (its K/V write follows
    // it unnamed). The reference device stores Q8_0 K/V alike; a K/V value rounded to the other
    // quant where the devices' projections differ in the last bits moves by up to 1/127 of its
    // block's largest: |d| < max(1e-2, the device's bound) · (1 + max |logit|).
    void q8KvCache_data() {
        QTest::addColumn<QString>("device");
        QTest::addColumn<QString>("preset");
        test::deviceRows("stories260K", [](QTestData& r) { r << QString(); });
        test::deviceRows("llama-tiny Q8_0", [](QTestData& r) { r << QStringLiteral("llama-tiny"); });
    }
    void q8KvCache() {
        HEARTH_FETCH_DEVICE(id);
        QFETCH(QString, preset);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + QLatin1String(kSpm));
        std::string path = storiesPath(), why;
        Bound bound = floatBound(id);
        if (!preset.isEmpty()) {
            path = synthesize(preset, QStringLiteral("Q8_0"), QLatin1String(kSpm), 2, why).toStdString();
            QVERIFY2(!path.empty(), why.c_str());
            bound = synthBound(id);
        }
        bound.rel = std::max(bound.rel, 1e-2);
        test::LoadOptions o;
        o.device = id;
        o.kvType = KvType::Q8_0;
        std::vector<std::string> fallbacks;
        const test::Comparison c = test::compareOn(path, o, true, &fallbacks);
        report("q8_0 K/V", c);
        qInfo("fallbacks: %s", joined(fallbacks).c_str());
        if (!preset.isEmpty() || fallbacks.empty()) {
            QVERIFY2(fallbacks.empty(), joined(fallbacks).c_str());
        } else {
            auto m = test::loadModel(path, o);
            QVERIFY2(m.isOk(), m.status().toString().c_str());
            const int nLayer = (*m)->dims().nLayer;
            QCOMPARE(int(fallbacks.size()), nLayer);
            for (int l = 0; l < nLayer; ++l) {
                const std::string prefix = std::string(graph::opName(graph::Op::Attention)) + "@" + std::to_string(l);
                QVERIFY2(std::any_of(fallbacks.begin(), fallbacks.end(),
                                     [&](const std::string& f) { return f.rfind(prefix, 0) == 0; }),
                         (prefix + " not among the fallbacks").c_str());
            }
        }
        const std::string off = outside(c, bound);
        QVERIFY2(off.empty(), off.c_str());
    }

    // An op the device declines (SwiGLU here, through a wrapping device) runs on the CPU in every
    // layer: fallbacks() names each, and the logits match the reference (floatBound).
    void declinedOpFallsBackToCpu_data() {
        QTest::addColumn<QString>("device");
        test::deviceRows(QStringLiteral("stories260K, swiglu declined"), [](QTestData&) {});
    }
    void declinedOpFallsBackToCpu() {
        HEARTH_FETCH_DEVICE(id);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        auto file = gguf::File::open(storiesPath());
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        runtime::RunnerConfig rc;
        rc.device = id;
        rc.kvType = KvType::F32;
        rc.numBlocks = 8;
        rc.open = [id](const std::string& which, cpu::ThreadPool* pool) -> Result<std::unique_ptr<backend::Device>> {
            auto dev = backend::openDevice(which, pool);
            if (!dev || which != id) return dev;
            return std::unique_ptr<backend::Device>(new DecliningDevice(std::move(dev).value(), graph::Op::SwiGlu));
        };
        auto ours = runtime::ModelRunner::create(**arch, rc);
        QVERIFY2(ours.isOk(), ours.status().toString().c_str());
        QCOMPARE((*ours)->deviceId(), id);
        const std::vector<std::string>& fallbacks = (*ours)->fallbacks();
        const int nLayer = (*arch)->dims().nLayer;
        QCOMPARE(int(fallbacks.size()), nLayer);
        for (int l = 0; l < nLayer; ++l)
            QVERIFY2(std::find(fallbacks.begin(), fallbacks.end(),
                               std::string(graph::opName(graph::Op::SwiGlu)) + "@" + std::to_string(l)) != fallbacks.end(),
                     joined(fallbacks).c_str());
        rc.device = "ref";
        rc.open = nullptr;
        auto ref = runtime::ModelRunner::create(**arch, rc);
        QVERIFY2(ref.isOk(), ref.status().toString().c_str());
        const test::Comparison c = test::compareSteps(**ours, **ref, (*arch)->dims().nVocab, true);
        report("swiglu on the CPU", c);
        const std::string off = outside(c, floatBound(id));
        QVERIFY2(off.empty(), off.c_str());
    }
};

QTEST_GUILESS_MAIN(TestForwardDevices)
#include "test_forward_devices.moc"
