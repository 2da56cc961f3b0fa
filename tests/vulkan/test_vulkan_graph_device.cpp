// Step graphs on the Vulkan graph device in what only Vulkan has (every device's checks are in
// tests/device/test_forward_devices.cpp): a binding limit forced down to 64 KiB (weights bound in
// row ranges, logits computed in chunks of rows, a K/V pool no larger than one binding), and a node
// Vulkan genuinely refuses (a Concat operand at an offset in its storage) running on the CPU while
// YaRN RoPE and the other Concat stay on Vulkan. Both against the scalar reference device. Skips
// (QSKIP) when there is no Vulkan device.
#include "backend/vulkan/vk_graph_device.h"
#include "model/binding.h"
#include "model_harness.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <deque>

using namespace hearth;

namespace {

const char* kDevice = "vulkan:0";

std::string storiesPath() { return test::testDataPath(QStringLiteral("models/stories260K.gguf")); }

using test::joined;

bool hasFallback(const std::vector<std::string>& fallbacks, const std::string& prefix) {
    return std::any_of(fallbacks.begin(), fallbacks.end(), [&](const std::string& f) { return f.rfind(prefix, 0) == 0; });
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

} // namespace

class TestVulkanGraphDevice : public QObject {
    Q_OBJECT
    std::string m_why;

private Q_SLOTS:
    void initTestCase() {
        auto dev = backend::openDevice(kDevice);
        if (!dev) m_why = dev.status().toString();
    }
    void init() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        if (!m_why.empty()) QSKIP(qPrintable(QStringLiteral("no Vulkan device: ") + QString::fromStdString(m_why)));
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
        const test::Comparison c = test::compareSteps(runner, *(*ref)->runner, (*ref)->dims().nVocab, true);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
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
        const test::Comparison c = test::compareSteps(**ours, **ref, (*arch)->dims().nVocab, true);
        QVERIFY2(c.error.empty(), c.error.c_str());
        qInfo("max |d| %.2e (max |logit| %.2f), argmax agrees %d/%d", c.maxDiff, c.maxLogit, c.argmaxAgree, c.rows);
        QVERIFY2(c.maxDiff < 1e-3 * (1.0 + c.maxLogit), qPrintable(QString::number(c.maxDiff)));
        QCOMPARE(c.argmaxAgree, c.rows);
    }
};

QTEST_GUILESS_MAIN(TestVulkanGraphDevice)
#include "test_vulkan_graph_device.moc"
