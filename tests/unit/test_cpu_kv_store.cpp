// The CPU K/V store: F16 rows written and read back bit-exactly against the scalar conversions
// (whichever instruction set the store picks), unused cache memory costing nothing until a block
// is written, and block copies.
#include "backend/cpu/paged_kv.h"
#include "quant/half.h"

#include <QtTest>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

using namespace hearth;
using namespace hearth::cpu;

namespace {

// Resident memory of this process in bytes (/proc/self/statm), or -1 where unreadable.
int64_t residentBytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long long size = 0, resident = 0;
    const int n = std::fscanf(f, "%lld %lld", &size, &resident);
    std::fclose(f);
    return n == 2 ? resident * 4096 : -1;
}

float fromBits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

} // namespace

class TestCpuKvStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void f16RowsReadBackExactly() {
        const int D = 45; // one KV head of 45 values: 5 full runs of 8 and a tail
        auto kv = PagedKvStore::create(1, 2, 4, 1, D, KvType::F16);
        QVERIFY(kv.isOk());
        std::mt19937 rng(3);
        std::normal_distribution<float> dist(0.0f, 50.0f);
        std::vector<float> row(D);
        for (float& x : row) x = dist(rng);
        row[0] = 0.0f, row[1] = -0.0f, row[2] = 1e-7f, row[3] = 70000.0f, row[4] = -65504.0f;
        kv->writeKey(0, 5, row.data());
        std::vector<float> want(D);
        for (int i = 0; i < D; ++i) want[size_t(i)] = quant::halfToFloat(quant::floatToHalf(row[size_t(i)]));
        for (int first = 0; first < D; ++first)
            for (int count : {1, 7, 8, 9, 16, D - first}) {
                if (first + count > D) continue;
                std::vector<float> got(size_t(count), 12345.0f);
                kv->readKeyPart(0, 5, first, count, got.data());
                for (int i = 0; i < count; ++i)
                    QVERIFY2(std::memcmp(&got[size_t(i)], &want[size_t(first + i)], 4) == 0,
                             qPrintable(QString("first %1 count %2 i %3").arg(first).arg(count).arg(i)));
            }
    }

    // Rounding on write: every kind of float (ties, subnormal results, overflow to infinity,
    // NaN payloads, float subnormals) gives the binary16 the scalar conversion gives.
    void f16WritesRoundExactly() {
        const int D = 61;
        auto kv = PagedKvStore::create(2, 3, 4, 1, D, KvType::F16);
        QVERIFY(kv.isOk());
        std::mt19937 rng(11);
        std::uniform_int_distribution<uint32_t> bits;
        const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                    0xffc01234u, 0x7f800001u, 0x7fbfffffu, 0x00000001u, 0x807fffffu,
                                    0x33000000u, 0x33000001u, 0x387fe000u, 0x387ff000u, 0x38801000u,
                                    0x477fefffu, 0x477ff000u, 0x477fe000u, 0x3f801000u, 0x3f803000u};
        for (int trial = 0; trial < 400; ++trial) {
            std::vector<float> row(D);
            for (int i = 0; i < D; ++i) {
                uint32_t b = bits(rng);
                if (trial % 3 == 1) b = (b & 0x8fffffffu) | 0x30000000u;    // exponents near the half range
                if (trial % 3 == 2) b = special[size_t(i) % std::size(special)] ^ (b & 0x80000000u);
                row[size_t(i)] = fromBits(b);
            }
            const int layer = trial % 2;
            const int64_t slot = trial % 12;
            kv->writeValue(layer, slot, row.data());
            std::vector<float> got(D);
            kv->readValue(layer, slot, got.data());
            for (int i = 0; i < D; ++i) {
                const float want = quant::halfToFloat(quant::floatToHalf(row[size_t(i)]));
                QVERIFY2(std::memcmp(&got[size_t(i)], &want, 4) == 0,
                         qPrintable(QString("trial %1 value %2 (bits %3)").arg(trial).arg(i)
                                        .arg(QString::number(quint32(std::bit_cast<uint32_t>(row[size_t(i)])), 16))));
            }
        }
    }

    // Head-major stores (F32, F16): one head's block read whole (K transposed) agrees with the
    // rows read one by one, and row parts at every offset agree with whole rows; the same parts
    // for Q8_0 on its 32-value grid.
    void blockHeadsAndPartsAgreeWithRows_data() {
        QTest::addColumn<int>("type");
        QTest::newRow("f32") << int(KvType::F32);
        QTest::newRow("f16") << int(KvType::F16);
        QTest::newRow("q8_0") << int(KvType::Q8_0);
    }

    void blockHeadsAndPartsAgreeWithRows() {
        QFETCH(int, type);
        const KvType t = KvType(type);
        const int layers = 2, blocks = 3, B = 5, heads = t == KvType::Q8_0 ? 2 : 3, D = t == KvType::Q8_0 ? 32 : 7;
        const int R = heads * D;
        auto kv = PagedKvStore::create(layers, blocks, B, heads, D, t);
        QVERIFY(kv.isOk());
        QCOMPARE(kv->headMajor(), t != KvType::Q8_0);
        std::mt19937 rng(17);
        std::normal_distribution<float> dist(0.0f, 3.0f);
        std::vector<float> row(static_cast<size_t>(R));
        for (int l = 0; l < layers; ++l)
            for (int64_t slot = 0; slot < blocks * B; ++slot) {
                for (float& x : row) x = dist(rng);
                kv->writeKey(l, slot, row.data());
                for (float& x : row) x = dist(rng);
                kv->writeValue(l, slot, row.data());
            }
        const size_t nR = static_cast<size_t>(R), nBD = static_cast<size_t>(B * D);
        std::vector<float> k(nR), v(nR), part(nR);
        std::vector<float> kT(nBD), vb(nBD);
        // kT/vb (one head's block, offsets [0, count)) against the rows read one by one.
        auto sameAsRows = [&](int l, int b, int h, int count) {
            for (int o = 0; o < count; ++o) {
                kv->readKey(l, b * B + o, k.data());
                kv->readValue(l, b * B + o, v.data());
                for (int d = 0; d < D; ++d) {
                    QCOMPARE(kT[size_t(d * B + o)], k[size_t(h * D + d)]);
                    QCOMPARE(vb[size_t(o * D + d)], v[size_t(h * D + d)]);
                }
            }
        };
        for (int l = 0; l < layers; ++l)
            for (int b = 0; b < blocks; ++b) {
                for (int h = 0; h < heads && kv->headMajor(); ++h) {
                    kv->readBlockHead(l, b, h, kT.data(), vb.data());
                    sameAsRows(l, b, h, B);
                    if (QTest::currentTestFailed()) return;
                }
                for (int h = 0; h < heads && !kv->headMajor(); ++h) // Q8_0: whole rows, then parts
                    for (int count : {1, 3, B}) {
                        std::fill(kT.begin(), kT.end(), -7.0f);
                        std::fill(vb.begin(), vb.end(), -7.0f);
                        kv->readBlockHeadRows(l, b, h, count, kT.data(), vb.data());
                        sameAsRows(l, b, h, count);
                        if (QTest::currentTestFailed()) return;
                        QCOMPARE(vb[size_t(count * D) % vb.size()], count == B ? vb[0] : -7.0f); // nothing past count
                    }
                for (int o = 0; o < B; ++o) {
                    const int64_t slot = b * B + o;
                    kv->readKey(l, slot, k.data());
                    kv->readValue(l, slot, v.data());
                    const int step = t == KvType::Q8_0 ? 32 : 1;
                    for (int first = 0; first < R; first += step)
                        for (int count = step; first + count <= R; count += step) {
                            kv->readKeyPart(l, slot, first, count, part.data());
                            QVERIFY(std::equal(part.begin(), part.begin() + count, k.begin() + first));
                            kv->readValuePart(l, slot, first, count, part.data());
                            QVERIFY(std::equal(part.begin(), part.begin() + count, v.begin() + first));
                        }
                }
            }
        // A copied block reads back the same through every path.
        kv->copyBlock(1, 0);
        std::vector<float> a(nR), c(nR);
        for (int o = 0; o < B; ++o) {
            kv->readKey(1, B + o, a.data());
            kv->readKey(1, o, c.data());
            QCOMPARE(a, c);
        }
    }

    // A cache sized for many full contexts takes memory only for the blocks written.
    void unusedBlocksTakeNoMemory() {
        const int64_t before = residentBytes();
        if (before < 0) QSKIP("no /proc/self/statm here");
        // 8 layers x 4096 blocks x 16 slots x 256 values x 2 bytes = 256 MiB each for K and V.
        auto kv = PagedKvStore::create(8, 4096, 16, 4, 64, KvType::F16);
        QVERIFY(kv.isOk());
        QCOMPARE(kv->bytes(), uint64_t(512) << 20);
        std::vector<float> row(256, 1.5f), got(256, -1.0f);
        for (int layer = 0; layer < 8; ++layer) kv->writeKey(layer, 4095 * 16 + 3, row.data());
        const int64_t after = residentBytes();
        QVERIFY2(after - before < (64 << 20),
                 qPrintable(QString("resident memory grew by %1 MiB").arg((after - before) >> 20)));
        kv->readKey(7, 4095 * 16 + 3, got.data());
        QCOMPARE(got[255], 1.5f);
        kv->readValue(3, 1234, got.data()); // never written: zeros
        QCOMPARE(got[0], 0.0f);
        QCOMPARE(got[255], 0.0f);
    }

    void copiesBlocksInEveryLayer() {
        auto kv = PagedKvStore::create(3, 4, 2, 1, 32, KvType::Q8_0);
        QVERIFY(kv.isOk());
        std::vector<float> row(32), got(32);
        for (int layer = 0; layer < 3; ++layer)
            for (int o = 0; o < 2; ++o) {
                for (int i = 0; i < 32; ++i) row[size_t(i)] = float(layer * 100 + o * 10 + i % 7);
                kv->writeKey(layer, 1 * 2 + o, row.data());
                for (float& x : row) x = -x;
                kv->writeValue(layer, 1 * 2 + o, row.data());
            }
        kv->copyBlock(1, 3);
        for (int layer = 0; layer < 3; ++layer)
            for (int o = 0; o < 2; ++o) {
                std::vector<float> a(32), b(32);
                kv->readKey(layer, 2 + o, a.data());
                kv->readKey(layer, 6 + o, b.data());
                QCOMPARE(a, b);
                kv->readValue(layer, 2 + o, a.data());
                kv->readValue(layer, 6 + o, b.data());
                QCOMPARE(a, b);
                QVERIFY(a[1] < 0.0f);
            }
        kv->readKey(0, 0, got.data()); // block 0 untouched
        QCOMPARE(got[5], 0.0f);
    }
};

QTEST_GUILESS_MAIN(TestCpuKvStore)
#include "test_cpu_kv_store.moc"
