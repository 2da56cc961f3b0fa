// The encoders' ops on the Vulkan graph device (vk_encoder_ops.h) against the CPU scalar reference
// device on odd sizes beyond the self-test's: LayerNorm with and without weight and bias (|d| <=
// 1e-5 · max(1, max |ref|)), Concat along each of the four dimensions (bit for bit), and attention
// within the sequence (F32 and F16 K/V, several heads, GQA, head sizes 32..256, sequences longer
// than a workgroup's 64 positions and not multiples of it, tokens out of position order, blocks
// scattered over the pool: |d| <= 1e-4 (F32) / 2e-3 (F16) · max(1, max |ref|)), each output
// poisoned with NaN before the run and the causal result checked to differ, so that a kernel that
// skipped work or kept the mask would fail; and the shapes the device refuses (so that the runner
// leaves them to the CPU): Q8_0 K/V rows not of whole 32-value blocks, heads over 256 values,
// values of V shorter than K's, and under a lowered binding limit a LayerNorm or Concat one row
// too large, or a Concat operand at an offset. Skips when there is no Vulkan device.
#include "backend/device.h"
#include "backend/vulkan/vk_graph_device.h"
#include "graph/graph.h"
#include "graph_program.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace hearth;

namespace {

using graph::TensorId;
using test::relativeError;
using test::uniformValues;

// Attention within the sequence over K/V rows written by the same graph: every token of the
// given sequences (a prefill), their blocks scattered over a pool with spare blocks.
struct WithinSpec {
    KvType kv = KvType::F32;
    int64_t D = 64, nHead = 4, nHeadKv = 4;
    std::vector<int64_t> seqs{37};
    int32_t blockSize = 16;
    bool shuffled = false; // tokens in a random order in the step (each keeps its position)
    bool sinks = false;
};

struct WithinGraph {
    graph::Graph g;
    TensorId kRows = graph::kNone, vRows = graph::kNone, slots = graph::kNone, q = graph::kNone;
    TensorId info = graph::kNone, tables = graph::kNone, sinks = graph::kNone, out = graph::kNone;
    std::vector<int32_t> slotValues, infoValues, tableValues;
    backend::KvPoolSpec pool;

    WithinGraph(const WithinSpec& s, bool causal, uint32_t seed) {
        std::mt19937 rng(seed);
        int64_t blocksNeeded = 0;
        for (int64_t l : s.seqs) blocksNeeded += (l + s.blockSize - 1) / s.blockSize;
        const int64_t numBlocks = blocksNeeded + 3;
        std::vector<int32_t> blockIds(static_cast<size_t>(numBlocks));
        std::iota(blockIds.begin(), blockIds.end(), 0);
        std::shuffle(blockIds.begin(), blockIds.end(), rng);
        std::vector<std::array<int32_t, 3>> tokens; // (slot, position, table offset)
        size_t next = 0;
        for (int64_t l : s.seqs) {
            const int32_t offset = int32_t(tableValues.size());
            for (int64_t b = 0; b < (l + s.blockSize - 1) / s.blockSize; ++b) tableValues.push_back(blockIds[next++]);
            for (int32_t p = 0; p < int32_t(l); ++p) {
                const int32_t block = tableValues[size_t(offset + p / s.blockSize)];
                tokens.push_back({block * s.blockSize + p % s.blockSize, p, offset});
            }
        }
        if (s.shuffled) std::shuffle(tokens.begin(), tokens.end(), rng);
        for (const auto& [slot, pos, offset] : tokens) {
            slotValues.push_back(slot);
            infoValues.insert(infoValues.end(), {pos, offset});
        }
        const int64_t n = int64_t(tokens.size()), row = s.nHeadKv * s.D;
        const quant::Type type = s.kv == KvType::F32 ? quant::Type::F32 : s.kv == KvType::F16 ? quant::Type::F16
                                                                                                : quant::Type::Q8_0;
        const TensorId kc = g.kvCache(0, false, type, numBlocks * s.blockSize, row);
        const TensorId vc = g.kvCache(0, true, type, numBlocks * s.blockSize, row);
        kRows = g.newActivation(quant::Type::F32, {row, n, 1, 1}, "k");
        vRows = g.newActivation(quant::Type::F32, {row, n, 1, 1}, "v");
        slots = g.input(graph::StepInput::KvSlots, n);
        g.kvWrite(kc, kRows, slots);
        g.kvWrite(vc, vRows, slots);
        q = g.newActivation(quant::Type::F32, {s.D, s.nHead, n, 1}, "q");
        info = g.input(graph::StepInput::AttnInfo, 2, n);
        tables = g.input(graph::StepInput::BlockTables, int64_t(tableValues.size()));
        if (s.sinks) sinks = g.newActivation(quant::Type::F32, {s.nHead, 1, 1, 1}, "sinks");
        graph::AttentionParams p;
        p.nHeadKv = int32_t(s.nHeadKv);
        p.scale = 1.0f / std::sqrt(float(s.D));
        p.blockSize = s.blockSize;
        p.causal = causal;
        out = g.attention(q, kc, vc, info, tables, sinks, s.D, p);
        pool.layers = {0};
        pool.kRow = pool.vRow = row;
        pool.headDim = int(s.D);
        pool.type = s.kv;
        pool.numBlocks = int(numBlocks);
        pool.blockSize = s.blockSize;
    }
};

std::string describeWithin(const WithinSpec& s) {
    std::string seqs;
    for (int64_t l : s.seqs) seqs += (seqs.empty() ? "" : ",") + std::to_string(l);
    return std::string(s.kv == KvType::F32 ? "F32" : "F16") + " D " + std::to_string(s.D) + " heads " +
           std::to_string(s.nHead) + "/" + std::to_string(s.nHeadKv) + " seqs " + seqs + " bs " +
           std::to_string(s.blockSize) + (s.shuffled ? " shuffled" : "") + (s.sinks ? " sinks" : "");
}

} // namespace

class TestVulkanEncoderOps : public QObject {
    Q_OBJECT

    std::string m_why;
    std::unique_ptr<backend::Device> m_vk, m_ref;

    // Runs g on Vulkan and on the reference with the same inputs; the outputs `out` of both.
    void runBoth(const graph::Graph& g, const backend::KvPoolSpec* kv,
                 const std::vector<std::pair<TensorId, std::vector<float>>>& floats,
                 const std::vector<std::pair<TensorId, std::vector<int32_t>>>& ints, TensorId out,
                 std::vector<float>& ours, std::vector<float>& ref) {
        test::DeviceSide vk, cpu;
        const Status sv = vk.init(*m_vk, g, kv);
        QVERIFY2(sv.isOk(), sv.toString().c_str());
        const Status sr = cpu.init(*m_ref, g, kv);
        QVERIFY2(sr.isOk(), sr.toString().c_str());
        for (test::DeviceSide* s : {&vk, &cpu}) {
            for (const auto& [id, v] : floats) QVERIFY(s->program.set(id, v).isOk());
            for (const auto& [id, v] : ints) QVERIFY(s->program.set(id, v).isOk());
            const Status ran = s->program.run();
            QVERIFY2(ran.isOk(), ran.toString().c_str());
        }
        ours = vk.program.get(out);
        ref = cpu.program.get(out);
    }

    // Attention within the sequence on both devices; the reference's causal result too.
    void checkAttention(const WithinSpec& s, uint32_t seed) {
        WithinGraph a(s, false, seed);
        QVERIFY2(a.g.status().isOk(), a.g.status().toString().c_str());
        std::mt19937 rng(seed + 1);
        const int64_t n = int64_t(a.slotValues.size()), row = s.nHeadKv * s.D;
        std::vector<std::pair<TensorId, std::vector<float>>> floats{
            {a.kRows, uniformValues(size_t(n * row), rng, -1.0f, 1.0f)},
            {a.vRows, uniformValues(size_t(n * row), rng, -1.0f, 1.0f)},
            {a.q, uniformValues(size_t(n * s.nHead * s.D), rng, -3.0f, 3.0f)}}; // peaky enough to tell the mask
        if (s.sinks) floats.push_back({a.sinks, uniformValues(size_t(s.nHead), rng, -1.0f, 2.0f)});
        const std::vector<std::pair<TensorId, std::vector<int32_t>>> ints{
            {a.slots, a.slotValues}, {a.info, a.infoValues}, {a.tables, a.tableValues}};
        std::vector<float> ours, ref;
        runBoth(a.g, &a.pool, floats, ints, a.out, ours, ref);
        if (QTest::currentTestFailed()) return;
        const double err = relativeError(ours, ref), tol = s.kv == KvType::F32 ? 1e-4 : 2e-3;
        // The causal reference of the same inputs: the two must differ by far more than the bound.
        WithinGraph causal(s, true, seed);
        test::DeviceSide c;
        QVERIFY(c.init(*m_ref, causal.g, &causal.pool).isOk());
        for (const auto& [id, v] : floats) QVERIFY(c.program.set(id, v).isOk());
        for (const auto& [id, v] : ints) QVERIFY(c.program.set(id, v).isOk());
        QVERIFY(c.program.run().isOk());
        const double masked = relativeError(c.program.get(causal.out), ref);
        qInfo("%s: %.2e (causal differs by %.2e)", describeWithin(s).c_str(), err, masked);
        QVERIFY2(err <= tol, qPrintable(QString::number(err)));
        QVERIFY(masked > 100 * tol);
    }

private Q_SLOTS:
    void initTestCase() {
        auto vk = backend::openDevice("vulkan:0");
        if (!vk) {
            m_why = vk.status().toString();
            return;
        }
        m_vk = std::move(vk).value();
        auto ref = backend::openDevice("ref");
        QVERIFY2(ref.isOk(), ref.status().toString().c_str());
        m_ref = std::move(ref).value();
    }
    void init() {
        if (!m_why.empty()) QSKIP(qPrintable(QStringLiteral("no Vulkan device: ") + QString::fromStdString(m_why)));
    }

    // Rows of odd widths (one value, under and over the workgroup's 64, BERT's 384 and 768, 4097),
    // means far from zero, with and without weight and bias.
    void layerNorm_data() {
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("rows");
        QTest::addColumn<bool>("weight");
        QTest::addColumn<bool>("bias");
        QTest::addColumn<float>("lo");
        QTest::addColumn<float>("hi");
        QTest::newRow("1x3 w b") << 1 << 3 << true << true << -1.0f << 1.0f;
        QTest::newRow("3x5") << 3 << 5 << false << false << 1.0f << 5.0f;
        QTest::newRow("63x7 w") << 63 << 7 << true << false << -2.0f << 2.0f;
        QTest::newRow("65x9 b") << 65 << 9 << false << true << 1.0f << 5.0f;
        QTest::newRow("384x33 w b") << 384 << 33 << true << true << -4.0f << 6.0f;
        QTest::newRow("768x17 w b") << 768 << 17 << true << true << 1.0f << 5.0f;
        QTest::newRow("1000x3") << 1000 << 3 << false << false << 10.0f << 12.0f;
        QTest::newRow("4097x2 w b") << 4097 << 2 << true << true << -1.0f << 3.0f;
    }
    void layerNorm() {
        QFETCH(int, width);
        QFETCH(int, rows);
        QFETCH(bool, weight);
        QFETCH(bool, bias);
        QFETCH(float, lo);
        QFETCH(float, hi);
        graph::Graph g;
        const TensorId x = g.newActivation(quant::Type::F32, {width, rows, 1, 1}, "x");
        const TensorId w = weight ? g.newActivation(quant::Type::F32, {width, 1, 1, 1}, "w") : graph::kNone;
        const TensorId b = bias ? g.newActivation(quant::Type::F32, {width, 1, 1, 1}, "b") : graph::kNone;
        const TensorId out = g.layerNorm(x, w, b, 1e-12f);
        QVERIFY2(g.status().isOk(), g.status().toString().c_str());
        std::mt19937 rng(uint32_t(width * 131 + rows));
        std::vector<std::pair<TensorId, std::vector<float>>> floats{
            {x, uniformValues(size_t(width) * size_t(rows), rng, lo, hi)}};
        if (weight) floats.push_back({w, uniformValues(size_t(width), rng, 0.5f, 1.5f)});
        if (bias) floats.push_back({b, uniformValues(size_t(width), rng, -0.5f, 0.5f)});
        std::vector<float> ours, ref;
        runBoth(g, nullptr, floats, {}, out, ours, ref);
        if (QTest::currentTestFailed()) return;
        const double err = relativeError(ours, ref);
        qInfo("error %.2e", err);
        QVERIFY2(err <= 1e-5, qPrintable(QString::number(err)));
    }

    // Each dimension, odd extents, up to 77k values (more workgroups than one grid row of 256).
    void concat_data() {
        QTest::addColumn<int>("dim");
        QTest::addColumn<QList<int>>("a");
        QTest::addColumn<int>("bExtent");
        QTest::newRow("dim 0") << 0 << QList<int>{5, 3, 2, 1} << 7;
        QTest::newRow("dim 0 many rows") << 0 << QList<int>{1, 1000, 1, 1} << 2;
        QTest::newRow("dim 1") << 1 << QList<int>{33, 5, 3, 1} << 2;
        QTest::newRow("dim 1 wide") << 1 << QList<int>{300, 257, 1, 1} << 1;
        QTest::newRow("dim 2") << 2 << QList<int>{7, 3, 2, 2} << 5;
        QTest::newRow("dim 3") << 3 << QList<int>{3, 5, 2, 1} << 3;
        QTest::newRow("dim 3 of 3-d") << 3 << QList<int>{65, 3, 2, 2} << 1;
    }
    void concat() {
        QFETCH(int, dim);
        QFETCH(QList<int>, a);
        QFETCH(int, bExtent);
        std::array<int64_t, 4> ane{a[0], a[1], a[2], a[3]}, bne = ane;
        bne[size_t(dim)] = bExtent;
        graph::Graph g;
        const TensorId ta = g.newActivation(quant::Type::F32, ane, "a");
        const TensorId tb = g.newActivation(quant::Type::F32, bne, "b");
        const TensorId out = g.concat(ta, tb, dim);
        QVERIFY2(g.status().isOk(), g.status().toString().c_str());
        std::mt19937 rng(uint32_t(dim * 7 + bExtent));
        const int64_t na = ane[0] * ane[1] * ane[2] * ane[3], nb = bne[0] * bne[1] * bne[2] * bne[3];
        std::vector<float> ours, ref;
        const std::vector<float> av = uniformValues(size_t(na), rng, -1.0f, 1.0f);
        const std::vector<float> bv = uniformValues(size_t(nb), rng, 2.0f, 3.0f);
        runBoth(g, nullptr, {{ta, av}, {tb, bv}}, {}, out, ours, ref);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(ours.size(), size_t(na + nb));
        QVERIFY(ours == ref); // a copy: bit for bit (NaN, the poison, would differ)
    }

    // Several sequences per step, GQA, head sizes other than 64, blocks of 16 and 32.
    void attentionWithinSequence_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < 7; ++i) QTest::newRow(qPrintable(QStringLiteral("case %1").arg(i))) << i;
    }
    void attentionWithinSequence() {
        QFETCH(int, index);
        auto spec = [](KvType kv, int64_t D, int64_t h, int64_t hkv, std::vector<int64_t> seqs, int32_t bs,
                       bool shuffled) {
            WithinSpec s;
            s.kv = kv;
            s.D = D;
            s.nHead = h;
            s.nHeadKv = hkv;
            s.seqs = std::move(seqs);
            s.blockSize = bs;
            s.shuffled = shuffled;
            return s;
        };
        std::vector<WithinSpec> cases{
            spec(KvType::F32, 64, 4, 4, {37, 3}, 16, true),
            spec(KvType::F16, 64, 6, 2, {65, 1, 20}, 16, true),
            spec(KvType::F32, 128, 8, 1, {129}, 32, false),
            spec(KvType::F16, 80, 3, 3, {100, 63}, 16, true),
            spec(KvType::F32, 256, 2, 1, {70}, 16, false),
            spec(KvType::F16, 32, 12, 12, {200}, 16, true),
            spec(KvType::F32, 32, 4, 2, {17, 5}, 16, false),
        };
        cases.back().sinks = true;
        checkAttention(cases[size_t(index)], uint32_t(100 + index));
    }

    // What the device refuses, so that the runner keeps it on the CPU.
    void refusedShapes() {
        // Attention within the sequence of 4 heads of D (values Dv long) over a K/V pool of `kv`.
        const auto attentionSupported = [&](KvType kv, int64_t D, int64_t Dv) {
            const quant::Type type = kv == KvType::F32 ? quant::Type::F32 : kv == KvType::F16 ? quant::Type::F16
                                                                                                : quant::Type::Q8_0;
            graph::Graph g;
            const TensorId kc = g.kvCache(0, false, type, 64, 4 * D);
            const TensorId vc = g.kvCache(0, true, type, 64, 4 * Dv);
            graph::AttentionParams p;
            p.nHeadKv = 4;
            p.causal = false;
            g.attention(g.newActivation(quant::Type::F32, {D, 4, 5, 1}), kc, vc, g.input(graph::StepInput::AttnInfo, 2, 5),
                        g.input(graph::StepInput::BlockTables, 4), graph::kNone, Dv, p);
            return g.status().isOk() && m_vk->supportsOp(g, g.nodes().back());
        };
        QVERIFY(attentionSupported(KvType::F32, 64, 64));
        QVERIFY(attentionSupported(KvType::F16, 256, 256));
        QVERIFY(attentionSupported(KvType::Q8_0, 64, 64)); // test_vulkan_kv_q8 runs it
        QVERIFY(!attentionSupported(KvType::Q8_0, 12, 12)); // rows of 48 values: not whole blocks
        QVERIFY(!attentionSupported(KvType::F32, 320, 320));
        QVERIFY(!attentionSupported(KvType::F32, 64, 32));

        // Under a 64 KiB binding limit: 16384 floats are bound, 16385 are not.
        vk::VulkanOptions o;
        o.deviceIndex = 0;
        o.maxBindRange = 64 << 10;
        auto small = vk::createVulkanGraphDevice(o);
        QVERIFY2(small.isOk(), small.status().toString().c_str());
        const backend::Device& d = **small;
        for (int64_t rows : {64, 65}) {
            graph::Graph g;
            g.layerNorm(g.newActivation(quant::Type::F32, {256, rows, 1, 1}), graph::kNone, graph::kNone, 1e-5f);
            QVERIFY(g.status().isOk());
            QCOMPARE(d.supportsOp(g, g.nodes().back()), rows == 64);
        }
        for (int64_t rows : {32, 33}) { // the output: 2·rows rows of 256
            graph::Graph g;
            const TensorId a = g.newActivation(quant::Type::F32, {256, rows, 1, 1});
            g.concat(a, g.newActivation(quant::Type::F32, {256, 32, 1, 1}), 1);
            QVERIFY(g.status().isOk());
            QCOMPARE(d.supportsOp(g, g.nodes().back()), rows == 32);
        }
        // An operand that starts inside its storage (rows at an offset) is not bound.
        graph::Graph g;
        const TensorId a = g.newActivation(quant::Type::F32, {16, 8, 1, 1});
        g.concat(g.rows(a, 0, 4), g.rows(a, 4, 4), 1);
        QVERIFY(g.status().isOk());
        QVERIFY(!m_vk->supportsOp(g, g.nodes().back()));
    }
};

QTEST_GUILESS_MAIN(TestVulkanEncoderOps)
#include "test_vulkan_encoder_ops.moc"
