// A Q8_0 K/V cache on Vulkan (vk_kv_ops.h, shaders kv_write.comp / kv.glsl KV_Q8_0): the op
// device's kvWrite gives byte for byte the rows the CPU device's PagedKvStore stores (rows of 1, 3,
// 5 and 8 blocks, so rows that start mid-word; neighbouring slots in one write and the bytes of
// slots not written kept; scales from 1e-30 to 3e38, fp16-subnormal and infinite ones, ties
// rounded half away from zero, values not finite, zero blocks), and paged attention over Q8_0 K/V
// on the Vulkan graph device equals the reference device's (causal decode and chunks, sliding
// window, soft cap, sinks, GQA with odd head counts, heads that start mid-block, blocks of 16 and
// 32 scattered over the pool, and attention within the sequence): the two devices store the same
// bytes and dequantize them alike (d * q, exact in fp32), so |d| <= 1e-4 · max(1, max |ref|) as
// for F32 K/V, every output poisoned with NaN first. Skips when there is no Vulkan device.
#include "backend/cpu/paged_kv.h"
#include "backend/device.h"
#include "backend/vulkan/vk_device.h"
#include "backend/vulkan/vk_graph_device.h"
#include "backend/vulkan/vk_kv_ops.h"
#include "graph/graph.h"
#include "graph_program.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

using namespace hearth;

namespace {

using graph::TensorId;
using test::relativeError;
using test::uniformValues;

// Rows whose 32-value blocks test the quantizer: each block random values or one of the cases below.
std::vector<float> kvQ8Rows(int64_t rows, int64_t rowSize, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(size_t(rows * rowSize));
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t b = 0; b < rows * rowSize / 32; ++b) {
        float* x = v.data() + b * 32;
        const int kind = int(rng() % 12);
        // Random values of a random magnitude: 1e-30 .. 1e4, fp16-subnormal scales among them.
        const float scale = std::pow(10.0f, std::uniform_real_distribution<float>(-30.0f, 4.0f)(rng));
        for (int j = 0; j < 32; ++j) x[j] = std::uniform_real_distribution<float>(-scale, scale)(rng);
        switch (kind) {
        case 0: // amax 127: d = 1 and the quants are the values rounded, ties away from zero
            for (int j = 0; j < 32; ++j) x[j] = float(int(rng() % 253) - 126) + (j % 3 == 0 ? 0.5f : 0.0f);
            x[0] = 127.0f;
            x[1] = 0.49999997f; // + 0.5 rounds to 1 in float: quant 1, as the CPU's roundToInt gives
            x[2] = -0.49999997f;
            x[3] = -126.5f;
            break;
        case 1: std::fill(x, x + 32, 0.0f); break;
        case 2: x[int(rng() % 32)] = -2.0f * scale; break; // the largest magnitude negative
        case 3: // skipped by amax, quants 0
            x[5] = nan;
            x[17] = inf;
            x[30] = -inf;
            break;
        case 4: std::fill(x, x + 32, 1e-3f * float(rng() % 7 + 1)); break;  // equal values
        case 5: x[9] = 1e7f; break;   // d beyond fp16: an infinite scale
        case 6: x[0] = 3e38f; break;  // the largest scales
        case 7: for (int j = 0; j < 32; ++j) x[j] = float(j) * 1e-4f - 0.0016f; break; // d fp16-subnormal
        default: break;
        }
    }
    return v;
}

// Paged attention over a Q8_0 pool written in the same step: every position of the sequences
// written (their blocks scattered over a pool with spare blocks), queries at the last `queries`
// positions of each (0: all).
struct KvQ8AttnSpec {
    int64_t D = 64, nHead = 4, nHeadKv = 2;
    std::vector<int64_t> seqs{37};
    int64_t queries = 0;
    int32_t blockSize = 16;
    int32_t window = 0;
    float softcap = 0.0f;
    bool sinks = false;
    bool causal = true;
};

std::string describeKvQ8(const KvQ8AttnSpec& s) {
    std::string seqs;
    for (int64_t l : s.seqs) seqs += (seqs.empty() ? "" : ",") + std::to_string(l);
    return "D " + std::to_string(s.D) + " heads " + std::to_string(s.nHead) + "/" + std::to_string(s.nHeadKv) +
           " seqs " + seqs + (s.queries ? " q " + std::to_string(s.queries) + "/seq" : " prefill") + " bs " +
           std::to_string(s.blockSize) + (s.window ? " window " + std::to_string(s.window) : "") +
           (s.softcap > 0.0f ? " softcap" : "") + (s.sinks ? " sinks" : "") + (s.causal ? "" : " within");
}

struct KvQ8AttnGraph {
    graph::Graph g;
    TensorId kRows = graph::kNone, vRows = graph::kNone, slots = graph::kNone, q = graph::kNone;
    TensorId info = graph::kNone, tables = graph::kNone, sinks = graph::kNone, out = graph::kNone;
    std::vector<int32_t> slotValues, infoValues, tableValues;
    backend::KvPoolSpec pool;

    KvQ8AttnGraph(const KvQ8AttnSpec& s, uint32_t seed) {
        std::mt19937 rng(seed);
        int64_t blocksNeeded = 0;
        for (int64_t l : s.seqs) blocksNeeded += (l + s.blockSize - 1) / s.blockSize;
        const int64_t numBlocks = blocksNeeded + 3;
        std::vector<int32_t> blockIds(static_cast<size_t>(numBlocks));
        std::iota(blockIds.begin(), blockIds.end(), 0);
        std::shuffle(blockIds.begin(), blockIds.end(), rng);
        size_t next = 0;
        for (int64_t l : s.seqs) {
            const int32_t offset = int32_t(tableValues.size());
            for (int64_t b = 0; b < (l + s.blockSize - 1) / s.blockSize; ++b) tableValues.push_back(blockIds[next++]);
            for (int32_t p = 0; p < int32_t(l); ++p) {
                slotValues.push_back(tableValues[size_t(offset + p / s.blockSize)] * s.blockSize + p % s.blockSize);
                if (s.queries == 0 || p >= l - s.queries) infoValues.insert(infoValues.end(), {p, offset});
            }
        }
        const int64_t n = int64_t(slotValues.size()), nq = int64_t(infoValues.size() / 2), row = s.nHeadKv * s.D;
        const TensorId kc = g.kvCache(0, false, quant::Type::Q8_0, numBlocks * s.blockSize, row);
        const TensorId vc = g.kvCache(0, true, quant::Type::Q8_0, numBlocks * s.blockSize, row);
        kRows = g.newActivation(quant::Type::F32, {row, n, 1, 1}, "k");
        vRows = g.newActivation(quant::Type::F32, {row, n, 1, 1}, "v");
        slots = g.input(graph::StepInput::KvSlots, n);
        g.kvWrite(kc, kRows, slots);
        g.kvWrite(vc, vRows, slots);
        q = g.newActivation(quant::Type::F32, {s.D, s.nHead, nq, 1}, "q");
        info = g.input(graph::StepInput::AttnInfo, 2, nq);
        tables = g.input(graph::StepInput::BlockTables, int64_t(tableValues.size()));
        if (s.sinks) sinks = g.newActivation(quant::Type::F32, {s.nHead, 1, 1, 1}, "sinks");
        graph::AttentionParams p;
        p.nHeadKv = int32_t(s.nHeadKv);
        p.scale = 1.0f / std::sqrt(float(s.D));
        p.blockSize = s.blockSize;
        p.window = s.window;
        p.softcap = s.softcap;
        p.causal = s.causal;
        out = g.attention(q, kc, vc, info, tables, sinks, s.D, p);
        pool.layers = {0};
        pool.kRow = pool.vRow = row;
        pool.headDim = int(s.D);
        pool.type = KvType::Q8_0;
        pool.numBlocks = int(numBlocks);
        pool.blockSize = s.blockSize;
    }
};

} // namespace

class TestVulkanKvQ8 : public QObject {
    Q_OBJECT

    std::string m_why;
    std::unique_ptr<vk::VulkanOpDevice> m_ops;
    std::unique_ptr<backend::Device> m_vk, m_ref;

private Q_SLOTS:
    void initTestCase() {
        vk::VulkanOptions o;
        o.deviceIndex = 0;
        auto ops = vk::createVulkanDevice(o);
        if (!ops) {
            m_why = ops.status().toString();
            return;
        }
        m_ops = std::move(ops).value();
        auto dev = backend::openDevice("vulkan:0");
        QVERIFY2(dev.isOk(), dev.status().toString().c_str());
        m_vk = std::move(dev).value();
        auto ref = backend::openDevice("ref");
        QVERIFY2(ref.isOk(), ref.status().toString().c_str());
        m_ref = std::move(ref).value();
    }
    void init() {
        if (!m_why.empty()) QSKIP(qPrintable(QStringLiteral("no Vulkan device: ") + QString::fromStdString(m_why)));
    }

    // Rows of 1, 3, 5 and 8 blocks (34-byte blocks: odd counts start every other row mid-word) at
    // scattered and neighbouring slots of a pool filled with random bytes first.
    void kvWriteBytes_data() {
        QTest::addColumn<int>("headDim");
        QTest::addColumn<int>("heads");
        QTest::newRow("32 x 1") << 32 << 1;
        QTest::newRow("32 x 3") << 32 << 3;
        QTest::newRow("80 x 2") << 80 << 2;
        QTest::newRow("64 x 4") << 64 << 4;
    }
    void kvWriteBytes() {
        QFETCH(int, headDim);
        QFETCH(int, heads);
        const int64_t rowSize = int64_t(headDim) * heads, blockSize = 16, numBlocks = 48;
        const int64_t nSlots = blockSize * numBlocks;
        const uint64_t rowBytes = vk::kvRowBytes(rowSize, KvType::Q8_0);
        QCOMPARE(rowBytes, cpu::PagedKvStore::rowBytes(rowSize, KvType::Q8_0));
        // Most slots once, in a random order: neighbours in the same write; some left as they were.
        std::mt19937 rng{uint32_t(rowSize)};
        std::vector<int32_t> slots(static_cast<size_t>(nSlots));
        std::iota(slots.begin(), slots.end(), 0);
        std::shuffle(slots.begin(), slots.end(), rng);
        slots.resize(size_t(nSlots) * 7 / 8);
        const std::vector<float> rows = kvQ8Rows(int64_t(slots.size()), rowSize, uint32_t(rowSize) + 1);

        auto store = cpu::PagedKvStore::create(1, int(numBlocks), int(blockSize), heads, headDim, KvType::Q8_0);
        QVERIFY2(store.isOk(), store.status().toString().c_str());
        for (size_t t = 0; t < slots.size(); ++t) store->writeValue(0, slots[t], rows.data() + t * size_t(rowSize));

        std::vector<uint8_t> before(size_t(nSlots) * rowBytes);
        for (uint8_t& b : before) b = uint8_t(rng());
        auto src = m_ops->allocate(rows.size() * 4, true), at = m_ops->allocate(slots.size() * 4, true);
        auto cache = m_ops->allocate(before.size(), true);
        QVERIFY(src.isOk() && at.isOk() && cache.isOk());
        QVERIFY((*src)->write(0, rows.data(), rows.size() * 4).isOk());
        QVERIFY((*at)->write(0, slots.data(), slots.size() * 4).isOk());
        QVERIFY((*cache)->write(0, before.data(), before.size()).isOk());
        Status s = m_ops->kvWrite(**src, **at, int64_t(slots.size()), rowSize, KvType::Q8_0, **cache);
        QVERIFY2(s.isOk(), s.toString().c_str());
        s = m_ops->run();
        QVERIFY2(s.isOk(), s.toString().c_str());
        std::vector<uint8_t> after(before.size());
        QVERIFY((*cache)->read(0, after.data(), after.size()).isOk());

        std::vector<bool> written(static_cast<size_t>(nSlots), false);
        for (int32_t slot : slots) written[size_t(slot)] = true;
        int badRows = 0, keptRows = 0;
        for (int64_t slot = 0; slot < nSlots; ++slot) {
            const uint8_t* ours = after.data() + uint64_t(slot) * rowBytes;
            const uint8_t* want =
                written[size_t(slot)] ? store->q8Row(0, slot, true) : before.data() + uint64_t(slot) * rowBytes;
            if (std::memcmp(ours, want, rowBytes) == 0) {
                keptRows += written[size_t(slot)] ? 0 : 1;
                continue;
            }
            if (++badRows <= 3) {
                for (uint64_t i = 0; i < rowBytes; ++i)
                    if (ours[i] != want[i]) {
                        qWarning("slot %lld (%s): byte %llu (block %llu) is %02x, not %02x", (long long)slot,
                                 written[size_t(slot)] ? "written" : "kept", (unsigned long long)i,
                                 (unsigned long long)(i / 34), ours[i], want[i]);
                        break;
                    }
            }
        }
        qInfo("%lld rows of %llu bytes written, %d kept; %d differ", (long long)slots.size(),
              (unsigned long long)rowBytes, keptRows, badRows);
        QCOMPARE(badRows, 0);
    }

    void attention_data() {
        QTest::addColumn<int>("index");
        for (int i = 0; i < 10; ++i) QTest::newRow(qPrintable(QStringLiteral("case %1").arg(i))) << i;
    }
    void attention() {
        QFETCH(int, index);
        auto spec = [](int64_t D, int64_t h, int64_t hkv, std::vector<int64_t> seqs, int64_t queries, int32_t bs) {
            KvQ8AttnSpec s;
            s.D = D;
            s.nHead = h;
            s.nHeadKv = hkv;
            s.seqs = std::move(seqs);
            s.queries = queries;
            s.blockSize = bs;
            return s;
        };
        std::vector<KvQ8AttnSpec> cases{
            spec(32, 9, 3, {70, 21}, 1, 16),      // decode, odd head counts, 3-block rows
            spec(80, 6, 2, {45}, 0, 16),          // prefill; head 1 starts mid-block
            spec(128, 8, 2, {100, 3, 33}, 5, 32), // chunks of 5 (3 for the short one)
            spec(256, 2, 1, {67}, 1, 16),
            spec(64, 4, 4, {90}, 7, 16),
            spec(96, 3, 1, {40, 41}, 0, 32),
            spec(64, 6, 3, {77}, 9, 16),
            spec(32, 5, 5, {130}, 2, 16),
            spec(80, 4, 2, {37, 3}, 0, 16),
            spec(64, 4, 1, {65, 1, 20}, 0, 16),
        };
        cases[4].window = 13;
        cases[5].softcap = 5.0f;
        cases[6].sinks = true;
        cases[6].window = 8;
        cases[7].softcap = 10.0f;
        cases[7].window = 40;
        cases[8].causal = false;
        cases[9].causal = false;
        cases[9].sinks = true;
        const KvQ8AttnSpec& s = cases[size_t(index)];
        KvQ8AttnGraph a(s, uint32_t(200 + index));
        QVERIFY2(a.g.status().isOk(), a.g.status().toString().c_str());
        std::mt19937 rng(uint32_t(300 + index));
        const int64_t n = int64_t(a.slotValues.size()), nq = int64_t(a.infoValues.size() / 2), row = s.nHeadKv * s.D;
        std::vector<std::pair<TensorId, std::vector<float>>> floats{
            {a.kRows, uniformValues(size_t(n * row), rng, -1.0f, 1.0f)},
            {a.vRows, uniformValues(size_t(n * row), rng, -2.0f, 2.0f)},
            {a.q, uniformValues(size_t(nq * s.nHead * s.D), rng, -3.0f, 3.0f)}};
        if (s.sinks) floats.push_back({a.sinks, uniformValues(size_t(s.nHead), rng, -1.0f, 2.0f)});
        const std::vector<std::pair<TensorId, std::vector<int32_t>>> ints{
            {a.slots, a.slotValues}, {a.info, a.infoValues}, {a.tables, a.tableValues}};
        test::DeviceSide vk, ref;
        Status st = vk.init(*m_vk, a.g, &a.pool);
        QVERIFY2(st.isOk(), st.toString().c_str());
        st = ref.init(*m_ref, a.g, &a.pool);
        QVERIFY2(st.isOk(), st.toString().c_str());
        for (test::DeviceSide* side : {&vk, &ref}) {
            for (const auto& [id, v] : floats) QVERIFY(side->program.set(id, v).isOk());
            for (const auto& [id, v] : ints) QVERIFY(side->program.set(id, v).isOk());
            st = side->program.run();
            QVERIFY2(st.isOk(), st.toString().c_str());
        }
        const double err = relativeError(vk.program.get(a.out), ref.program.get(a.out));
        qInfo("%s: %.2e", describeKvQ8(s).c_str(), err);
        QVERIFY2(err <= 1e-4, qPrintable(QString::number(err)));
    }

    // What the device takes and refuses: Q8_0 rows of whole blocks only.
    void rowsOfWholeBlocks() {
        for (int64_t row : {32, 64, 96, 48, 16}) {
            graph::Graph g;
            g.kvWrite(g.kvCache(0, false, quant::Type::Q8_0, 64, row),
                      g.newActivation(quant::Type::F32, {row, 3, 1, 1}), g.input(graph::StepInput::KvSlots, 3));
            QVERIFY(g.status().isOk());
            QCOMPARE(m_vk->supportsOp(g, g.nodes().back()), row % 32 == 0);
            backend::KvPoolSpec spec;
            spec.layers = {0};
            spec.kRow = spec.vRow = int(row);
            spec.headDim = int(row);
            spec.type = KvType::Q8_0;
            spec.numBlocks = 4;
            spec.blockSize = 16;
            QCOMPARE(m_vk->maxKvBlocks(spec) > 0, row % 32 == 0);
            QCOMPARE(m_vk->createKvPool(spec).isOk(), row % 32 == 0);
        }
    }
};

QTEST_GUILESS_MAIN(TestVulkanKvQ8)
#include "test_vulkan_kv_q8.moc"
