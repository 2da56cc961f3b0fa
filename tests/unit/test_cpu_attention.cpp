// Paged CPU attention against a plain two-pass softmax in double precision over the same stored
// K/V (so K/V quantization is not part of the error): F32, F16 and Q8_0 caches, several block
// sizes, head sizes (including a Q8_0 head off the 32-value grid), GQA groups, decode and
// prefill chunks; and batch invariance (a token's result is bit-identical whoever shares its call).
#include "backend/cpu/attention.h"
#include "backend/cpu/paged_kv.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

using namespace hearth;
using namespace hearth::cpu;

namespace {

struct Case {
    KvType type;
    int blockSize;
    int headDim;
    int nKvHeads;
    int group;
    int historyLen; // positions stored
    int nTokens;    // query tokens: the last nTokens positions (1 = decode)
    int window = 0; // sliding window (0: none)
    float cap = 0.0f; // score soft-capping (0: none)
};

// out[t][h][d] for every query head, from the stored rows, softmax in double.
std::vector<float> reference(const PagedKvStore& kv, int layer, const std::vector<int32_t>& table,
                             const Case& c, const std::vector<float>& q, const std::vector<int32_t>& pos) {
    const int64_t D = c.headDim, H = int64_t(c.nKvHeads) * c.group, row = kv.rowSize();
    std::vector<float> out(size_t(c.nTokens * H * D));
    std::vector<float> k(static_cast<size_t>(row)), v(static_cast<size_t>(row));
    const float scale = 1.0f / std::sqrt(float(D));
    for (int t = 0; t < c.nTokens; ++t)
        for (int64_t h = 0; h < H; ++h) {
            const int64_t g = h / c.group;
            const int len = pos[size_t(t)] + 1;
            const int first = c.window > 0 ? std::max(0, len - c.window) : 0;
            std::vector<double> s(static_cast<size_t>(len), -INFINITY);
            for (int p = first; p < len; ++p) {
                kv.readKey(layer, kv.slotOf(table, p), k.data());
                double dot = 0.0;
                for (int64_t d = 0; d < D; ++d) dot += double(q[size_t((t * H + h) * D + d)]) * k[size_t(g * D + d)];
                s[size_t(p)] = dot * scale;
                if (c.cap > 0.0f) s[size_t(p)] = c.cap * std::tanh(s[size_t(p)] / c.cap);
            }
            const double mx = *std::max_element(s.begin(), s.end());
            double sum = 0.0;
            for (double& x : s) sum += (x = std::exp(x - mx));
            std::vector<double> acc(size_t(D), 0.0);
            for (int p = first; p < len; ++p) {
                kv.readValue(layer, kv.slotOf(table, p), v.data());
                for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += s[size_t(p)] / sum * v[size_t(g * D + d)];
            }
            for (int64_t d = 0; d < D; ++d) out[size_t((t * H + h) * D + d)] = float(acc[size_t(d)]);
        }
    return out;
}

// Runs pagedAttention for the tokens listed in `which` (all KV heads), into out.
Status run(const PagedKvStore& kv, int layer, const std::vector<int32_t>& table, const Case& c,
           const std::vector<float>& q, const std::vector<int32_t>& pos, const std::vector<int64_t>& which,
           std::vector<float>& out) {
    const int64_t D = c.headDim, H = int64_t(c.nKvHeads) * c.group;
    std::vector<int32_t> positions;
    for (int64_t r : which) positions.push_back(pos[size_t(r)]);
    for (int g = 0; g < c.nKvHeads; ++g) {
        PagedAttentionCall call;
        call.kv = &kv;
        call.layer = layer;
        call.blockTable = table;
        call.kvHead = g;
        call.group = c.group;
        call.headDim = D;
        call.scale = 1.0f / std::sqrt(float(D));
        call.q = q.data();
        call.out = out.data();
        call.rowStride = H * D;
        call.rows = which.data();
        call.positions = positions.data();
        call.nTokens = int64_t(which.size());
        call.window = c.window;
        call.softcap = c.cap;
        Status s = pagedAttention(call);
        if (!s.isOk()) return s;
    }
    return Status::ok();
}

} // namespace

class TestCpuAttention : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesTwoPassSoftmax_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("blockSize");
        QTest::addColumn<int>("headDim");
        QTest::addColumn<int>("nKvHeads");
        QTest::addColumn<int>("group");
        QTest::addColumn<int>("historyLen");
        QTest::addColumn<int>("nTokens");
        QTest::addColumn<int>("window");
        QTest::addColumn<int>("cap");
        const struct { const char* name; KvType t; } types[] = {
            {"f32", KvType::F32}, {"f16", KvType::F16}, {"q8_0", KvType::Q8_0}};
        for (const auto& ty : types) {
            auto row = [&](const char* what, int bs, int D, int kvh, int g, int len, int n, int window = 0, int cap = 0) {
                QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(QLatin1String(ty.name), QLatin1String(what))))
                    << int(ty.t) << bs << D << kvh << g << len << n << window << cap;
            };
            row("decode bs16 D64 gqa4", 16, 64, 2, 4, 77, 1);
            row("decode bs16 D64 one position", 16, 64, 2, 4, 1, 1);
            row("prefill bs16 D64 mha", 16, 64, 2, 1, 50, 50);
            row("chunk bs5 D32 gqa2", 5, 32, 3, 2, 41, 9);
            row("chunk bs16 D128 gqa8 block edge", 16, 128, 1, 8, 64, 16);
            row("decode bs7 D48 gqa3", 7, 48, 2, 3, 30, 1); // Q8_0: head 1 starts off the 32 grid
            // The multi-state fold's shapes: states in fours, twos and ones; D in passes of 32
            // and a last 16.
            row("decode bs16 D32 gqa2", 16, 32, 4, 2, 150, 1);
            row("decode bs16 D48 gqa3", 16, 48, 2, 3, 33, 1);
            row("chunk bs16 D80 gqa2", 16, 80, 2, 2, 70, 3);
            row("prefill bs16 D96 gqa1", 16, 96, 1, 1, 40, 23);
            // Head sizes that are whole 8-lane vectors but not 16-lane ones (stories260K's D = 8).
            row("chunk bs16 D8 mha", 16, 8, 8, 1, 120, 9);
            row("decode bs16 D24 gqa2", 16, 24, 4, 2, 45, 1);
            // Sliding windows (inside a block, across blocks, wider than the history) and soft-capped
            // scores, on the multi-state fold and on the plain one (block size 5).
            row("decode bs16 D64 gqa4 window 20", 16, 64, 2, 4, 77, 1, 20);
            row("prefill bs16 D64 gqa2 window 7", 16, 64, 2, 2, 50, 50, 7);
            row("chunk bs5 D32 gqa2 window 9", 5, 32, 3, 2, 41, 9, 9);
            row("chunk bs16 D32 gqa1 window 500", 16, 32, 1, 1, 60, 5, 500);
            row("decode bs16 D64 gqa4 cap 2", 16, 64, 2, 4, 77, 1, 0, 2);
            row("prefill bs5 D32 gqa2 window 6 cap 3", 5, 32, 2, 2, 30, 30, 6, 3);
        }
    }

    void matchesTwoPassSoftmax() {
        QFETCH(int, type);
        QFETCH(int, blockSize);
        QFETCH(int, headDim);
        QFETCH(int, nKvHeads);
        QFETCH(int, group);
        QFETCH(int, historyLen);
        QFETCH(int, nTokens);
        QFETCH(int, window);
        QFETCH(int, cap);
        const Case c{KvType(type), blockSize, headDim, nKvHeads, group, historyLen, nTokens, window, float(cap)};
        std::mt19937 rng(uint32_t(type * 1000 + blockSize * 31 + headDim + historyLen));
        std::normal_distribution<float> normal(0.0f, 1.0f);

        // Blocks scattered over a pool twice the size needed, in shuffled order.
        const int needed = (historyLen + blockSize - 1) / blockSize;
        std::vector<int32_t> ids(size_t(2 * needed + 1));
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), rng);
        const std::vector<int32_t> table(ids.begin(), ids.begin() + needed);
        auto kv = PagedKvStore::create(2, int(ids.size()), blockSize, nKvHeads, headDim, c.type);
        QVERIFY2(kv.isOk(), kv.status().toString().c_str());
        const int layer = 1;
        std::vector<float> rowK(size_t(kv->rowSize())), rowV(size_t(kv->rowSize()));
        for (int p = 0; p < historyLen; ++p) {
            for (float& x : rowK) x = 2.0f * normal(rng);
            for (float& x : rowV) x = normal(rng);
            kv->writeKey(layer, kv->slotOf(table, p), rowK.data());
            kv->writeValue(layer, kv->slotOf(table, p), rowV.data());
        }
        const int64_t H = int64_t(nKvHeads) * group;
        std::vector<float> q(size_t(nTokens * H * headDim));
        for (float& x : q) x = normal(rng);
        std::vector<int32_t> pos(static_cast<size_t>(nTokens));
        for (int t = 0; t < nTokens; ++t) pos[size_t(t)] = historyLen - nTokens + t;

        const std::vector<float> want = reference(*kv, layer, table, c, q, pos);
        std::vector<int64_t> all(static_cast<size_t>(nTokens));
        std::iota(all.begin(), all.end(), 0);
        std::vector<float> got(want.size(), NAN);
        QVERIFY(run(*kv, layer, table, c, q, pos, all, got).isOk());
        double maxDiff = 0.0;
        for (size_t i = 0; i < want.size(); ++i) maxDiff = std::max(maxDiff, double(std::fabs(got[i] - want[i])));
        QVERIFY2(maxDiff < 2e-5, qPrintable(QString::number(maxDiff)));

        // Batch invariance: each token alone, and the tokens in reverse order, give the same bits.
        std::vector<float> alone(want.size(), NAN), reversed(want.size(), NAN);
        for (int64_t t = 0; t < nTokens; ++t) QVERIFY(run(*kv, layer, table, c, q, pos, {t}, alone).isOk());
        std::vector<int64_t> back(all.rbegin(), all.rend());
        QVERIFY(run(*kv, layer, table, c, q, pos, back, reversed).isOk());
        QVERIFY(std::memcmp(alone.data(), got.data(), got.size() * 4) == 0);
        QVERIFY(std::memcmp(reversed.data(), got.data(), got.size() * 4) == 0);
    }

    void refusesUnmappedBlocks() {
        auto kv = PagedKvStore::create(1, 4, 16, 1, 32, KvType::F16);
        QVERIFY(kv.isOk());
        std::vector<float> q(32, 1.0f), out(32, 0.0f);
        const int64_t row = 0;
        int32_t pos = 20; // needs two blocks
        PagedAttentionCall call;
        call.kv = &*kv;
        call.headDim = 32;
        call.q = q.data();
        call.out = out.data();
        call.rowStride = 32;
        call.rows = &row;
        call.positions = &pos;
        call.nTokens = 1;
        const std::vector<int32_t> shortTable{2};
        call.blockTable = shortTable;
        QVERIFY(!pagedAttention(call).isOk());
        const std::vector<int32_t> badTable{2, 9};
        call.blockTable = badTable;
        QVERIFY(!pagedAttention(call).isOk());
        const std::vector<int32_t> good{2, 3};
        call.blockTable = good;
        QVERIFY(pagedAttention(call).isOk());
        call.kvHead = 1; // only one KV head
        QVERIFY(!pagedAttention(call).isOk());
    }
};

QTEST_APPLESS_MAIN(TestCpuAttention)
#include "test_cpu_attention.moc"
