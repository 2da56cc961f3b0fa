// Tests of the repacked-weight matMul (repack.h; Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4, Q4_K, Q5_K, Q6_K, IQ4_XS): results against the
// scalar reference (on the same 8-bit activations) and against the plain kernels, for odd row
// counts and n = 1..70, bitwise independence from the thread count and from the tile width, the fallback where no
// repacked kernel applies, and the per-model set of copies.
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/thread_pool.h"
#include "hearth/quant.h"

#include <QTemporaryFile>
#include <QtTest>

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace hearth;
using namespace hearth::cpu;
using quant::Type;

namespace {

std::vector<float> gaussian(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& f : v) f = dist(rng);
    return v;
}

struct Weights {
    std::vector<uint8_t> bytes;
    ref::Matrix m;
};

Weights makeWeights(Type t, int64_t rows, int64_t cols, uint32_t seed) {
    Weights w;
    const uint64_t rb = *quant::rowBytes(t, uint64_t(cols));
    w.bytes.resize(rb * uint64_t(rows));
    std::vector<float> f = gaussian(size_t(rows * cols), seed);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) f[size_t(r * cols + c)] *= 0.25f + float(r % 5) * 0.3f;
    for (int64_t r = 0; r < rows; ++r) {
        const Status s = quant::quantizeRow(t, f.data() + r * cols, w.bytes.data() + rb * r, cols);
        if (!s.isOk()) qFatal("quantizeRow: %s", s.toString().c_str());
    }
    w.m = {w.bytes.data(), t, cols, rows, rb};
    return w;
}

// Q4_K, Q5_K, Q6_K and IQ4_XS come in super-blocks of 256 columns and take activations per 256.
bool superBlocks(Type t) { return t == Type::Q4_K || t == Type::Q5_K || t == Type::Q6_K || t == Type::IQ4_XS; }

// The activations the kernels see: blocks of 32 (Q4_K, Q6_K: 256) quantized to 8 bits (scale amax/127,
// round to nearest even), expanded back to floats.
std::vector<float> quantizedActs(Type t, const std::vector<float>& x) {
    const size_t block = superBlocks(t) ? 256 : 32;
    std::vector<float> out(x.size());
    for (size_t b = 0; b < x.size(); b += block) {
        float amax = 0;
        for (size_t i = b; i < b + block; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
        for (size_t i = b; i < b + block; ++i) out[i] = d * std::nearbyint(x[i] * id);
    }
    return out;
}

const Type kTypes[] = {Type::Q4_0, Type::Q5_0, Type::Q8_0, Type::IQ4_NL, Type::MXFP4,
                       Type::Q4_K, Type::Q5_K, Type::Q6_K, Type::IQ4_XS};

std::vector<int64_t> colsFor(Type t) {
    if (superBlocks(t)) return {256, 768};
    return {32, 96, 512};
}

std::vector<float> reference(const ref::Matrix& w, const std::vector<float>& x, int64_t n) {
    std::vector<float> y(size_t(n * w.rows));
    for (int64_t j = 0; j < n; ++j) {
        const Status s = ref::matVec(w, x.data() + j * w.cols, y.data() + j * w.rows);
        if (!s.isOk()) qFatal("matVec: %s", s.toString().c_str());
    }
    return y;
}

double maxAbs(const std::vector<float>& v) {
    double m = 0;
    for (float f : v) m = std::max(m, double(std::fabs(f)));
    return m;
}

double maxDiff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = std::fabs(double(a[i]) - double(b[i]));
        if (!(d <= m)) m = d; // NaN propagates as a failure
    }
    return m;
}

// The levels with repacked kernels that this CPU runs: AVX2 (and AVX-VNNI) with 8 rows per
// register, AVX-512 with 16.
std::vector<Isa> packedLevels() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::Avx2, Isa::AvxVnni, Isa::Avx512})
        if (canRepack(Type::Q4_0, isa)) out.push_back(isa);
    return out;
}

bool haveKernel() { return !packedLevels().empty(); }

// Sets the default level for a scope (matMulShared and matMulExperts take it), then restores
// the detected one.
struct ForcedIsa {
    explicit ForcedIsa(Isa isa) { ok = forceIsa(isa); }
    ~ForcedIsa() { forceIsa(detectIsa()); }
    bool ok = false;
};

PackedMatrix packOrDie(const ref::Matrix& w) {
    auto p = PackedMatrix::pack(w);
    if (!p.isOk()) qFatal("pack: %s", p.status().toString().c_str());
    return std::move(*p);
}

} // namespace

class TestCpuRepack : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void layoutKeepsTheSize() {
        for (Type t : kTypes) {
            const Weights w = makeWeights(t, 48, 256, 1);
            const PackedMatrix p = packOrDie(w.m);
            QCOMPARE(p.groups(), int64_t(3));
            if (t == Type::Q4_K) // scales and mins as whole bytes: 2368 instead of 16 × 144
                QCOMPARE(uint64_t(p.bytes()), uint64_t(3 * 2368));
            else if (t == Type::Q5_K) // Q4_K's 2368, then the fifth bits: 2880 instead of 16 × 176
                QCOMPARE(uint64_t(p.bytes()), uint64_t(3 * 2880));
            else if (t == Type::IQ4_XS) // scales as whole bytes, whole cache lines: 2240 instead of 16 × 136
                QCOMPARE(uint64_t(p.bytes()), uint64_t(3 * 2240));
            else if (t == Type::MXFP4) // each block's 16 exponents padded to 32 bytes: 18 per row instead of 17
                QCOMPARE(uint64_t(p.bytes()), uint64_t(48 * 8 * 18));
            else
                QCOMPARE(uint64_t(p.bytes()), w.m.rowBytes * 48); // same bytes, rearranged
            QCOMPARE(p.rows(), int64_t(48));
            QCOMPARE(p.cols(), int64_t(256));
            QCOMPARE(p.type(), t);
            // Handing the source's pages back (here: heap pages) changes no byte of either.
            const std::vector<uint8_t> before = w.bytes;
            auto q = PackedMatrix::pack(w.m, /*releaseSource=*/true);
            QVERIFY(q.isOk());
            QVERIFY(w.bytes == before);
            QVERIFY(std::memcmp(p.group(0), q->group(0), p.bytes()) == 0);
        }
    }

    // A matrix read from a file mapping (as a model's weights are): after packing with
    // releaseSource its pages leave the process (its resident size for the mapping drops), read
    // back unchanged, and are still in the page cache (so reloading the model is no disk read;
    // on tmpfs this holds whichever way the pages were released).
    void releasingAFileMappingKeepsWhatItReads() {
        const Weights w = makeWeights(Type::Q4_0, 256, 4096, 5); // 576 KiB, 144 pages
        QTemporaryFile file;
        QVERIFY(file.open());
        QCOMPARE(file.write(reinterpret_cast<const char*>(w.bytes.data()), qint64(w.bytes.size())),
                 qint64(w.bytes.size()));
        QVERIFY(file.flush());
        const size_t size = w.bytes.size();
        void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, int(file.handle()), 0);
        QVERIFY(map != MAP_FAILED);
        ref::Matrix mapped = w.m;
        mapped.data = static_cast<const uint8_t*>(map);
        // KiB of the mapping resident in this process (/proc/self/smaps), and pages in the cache.
        auto processKib = [&] {
            QFile smaps(QStringLiteral("/proc/self/smaps"));
            if (!smaps.open(QIODevice::ReadOnly)) return -1L;
            const QByteArray start = QByteArray::number(qulonglong(uintptr_t(map)), 16) + '-';
            bool inside = false;
            for (const QByteArray& line : smaps.readAll().split('\n')) {
                const QByteArray first = line.left(line.indexOf(' '));
                if (first.contains('-') && !first.endsWith(':')) inside = line.startsWith(start); // a mapping
                else if (inside && first == "Rss:") return line.mid(4).trimmed().split(' ').first().toLong();
            }
            return -1L;
        };
        auto cachedPages = [&] {
            std::vector<unsigned char> v((size + 4095) / 4096);
            if (mincore(map, size, v.data()) != 0) return -1;
            int n = 0;
            for (unsigned char c : v) n += c & 1;
            return n;
        };
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < size; i += 4096) sink = uint8_t(sink + mapped.data[i]); // map every page
        const long before = processKib();
        QVERIFY2(before >= 500, qPrintable(QString::number(before)));
        const PackedMatrix plain = packOrDie(w.m);
        auto packed = PackedMatrix::pack(mapped, /*releaseSource=*/true);
        QVERIFY(packed.isOk());
        QVERIFY(std::memcmp(plain.group(0), packed->group(0), plain.bytes()) == 0);
        const long after = processKib();
        const int cached = cachedPages();
        qInfo("mapping resident: %ld KiB before, %ld KiB after; %d of %zu pages still cached", before,
              after, cached, (size + 4095) / 4096);
        QVERIFY(after <= 16);
        QVERIFY(cached >= int(size / 4096) - 2);
        QVERIFY(std::memcmp(mapped.data, w.bytes.data(), size) == 0); // reads back
        munmap(map, size);
    }

    // Against the reference on the kernels' own 8-bit activations only float summation order
    // differs (measured ~1e-7 of max|y|), so a wrong nibble, scale or offset cannot hide.
    void matchesReferenceForOddShapesAndEveryN() {
        if (!haveKernel()) QSKIP("this CPU has no AVX2: no repacked kernel to test");
        ThreadPool pool(2);
        std::string failures;
        for (Type t : kTypes) {
            double worst = 0;
            for (int64_t rows : {1, 15, 16, 37, 100}) {
                for (int64_t cols : colsFor(t)) {
                    const Weights w = makeWeights(t, rows, cols, uint32_t(rows * 1000 + cols));
                    const PackedMatrix p = packOrDie(w.m);
                    const bool every = rows == 37 && cols == colsFor(t)[1];
                    for (int64_t n = 1; n <= 70; n += every ? 1 : 23) {
                        const std::vector<float> x =
                            gaussian(size_t(n * cols), uint32_t(n + cols));
                        const std::vector<float> want = reference(w.m, quantizedActs(t, x), n);
                        for (Isa isa : packedLevels()) {
                            std::vector<float> got(want.size(), NAN), alone(want.size(), NAN);
                            const Status s = matMul(w.m, &p, x.data(), n, got.data(), &pool, isa);
                            QVERIFY2(s.isOk(), s.toString().c_str());
                            // One thread takes other tiles (a token's groups in pairs): same bits.
                            QVERIFY(matMul(w.m, &p, x.data(), n, alone.data(), nullptr, isa).isOk());
                            QVERIFY(std::memcmp(got.data(), alone.data(), sizeof(float) * got.size()) == 0);
                            const double scale = maxAbs(want), err = maxDiff(got, want);
                            worst = std::max(worst, err / scale);
                            if (!(err <= 1e-4 * scale + 1e-6))
                                failures += std::string(quant::typeName(t)) + " " + isaName(isa) + " rows " +
                                            std::to_string(rows) + " cols " + std::to_string(cols) +
                                            " n " + std::to_string(n) + ": " +
                                            std::to_string(err / scale) + "\n";
                        }
                    }
                }
            }
            qInfo("%s repacked, worst max|d|/max|y| on 8-bit activations: %g",
                  std::string(quant::typeName(t)).c_str(), worst);
        }
        QVERIFY2(failures.empty(), failures.c_str());
    }

    // A token's outputs do not depend on the tile that computed it (1 to 8 tokens side by side,
    // Q6_K's wide tile for 5 to 8, Q4_K's and IQ4_XS's two groups at once): the integer sums are exact and
    // the float steps the same, so a batch of n = 1..40 gives, bit for bit, what each token gives
    // alone. One thread takes all groups in one range (Q4_K, IQ4_XS: in pairs, an odd last alone).
    void tilesOfEveryWidthGiveEachTokensBits() {
        if (!haveKernel()) QSKIP("this CPU has no AVX2: no repacked kernel to test");
        ThreadPool pool(2);
        for (Isa isa : packedLevels())
        for (Type t : kTypes) {
            for (int64_t rows : {37, 64, 100}) {
                const int64_t cols = 512, maxN = 40;
                const Weights w = makeWeights(t, rows, cols, uint32_t(rows + 3));
                const PackedMatrix p = packOrDie(w.m);
                const std::vector<float> x = gaussian(size_t(maxN * cols), uint32_t(rows + 4));
                std::vector<float> alone(size_t(maxN * rows));
                for (int64_t j = 0; j < maxN; ++j)
                    QVERIFY(matMul(w.m, &p, x.data() + j * cols, 1, alone.data() + j * rows, &pool,
                                   isa).isOk());
                for (int64_t n = 1; n <= maxN; ++n)
                    for (ThreadPool* pl : {&pool, static_cast<ThreadPool*>(nullptr)}) {
                        std::vector<float> got(size_t(n * rows), NAN);
                        QVERIFY(matMul(w.m, &p, x.data(), n, got.data(), pl, isa).isOk());
                        QVERIFY2(std::memcmp(got.data(), alone.data(), got.size() * sizeof(float)) == 0,
                                 (std::string(quant::typeName(t)) + " " + isaName(isa) + " rows " + std::to_string(rows) +
                                  " n " + std::to_string(n) + (pl ? " pool" : " one thread")).c_str());
                    }
                // Negative control: another token's input changes that token's outputs.
                std::vector<float> other = x;
                other[size_t(5 * cols + 7)] += 3.0f;
                std::vector<float> got(size_t(8 * rows));
                QVERIFY(matMul(w.m, &p, other.data(), 8, got.data(), &pool, isa).isOk());
                QVERIFY(std::memcmp(got.data() + 5 * rows, alone.data() + 5 * rows, size_t(rows) * sizeof(float)) != 0);
            }
        }
    }

    // MXFP4's E8M0 exponents become float scales in the kernel: the two smallest give subnormal
    // scales, the others normal ones; every row (exponents 0 .. 3 and 100 .. 219) matches the
    // reference to its own magnitude (wholly tiny or huge rows would overflow the sums).
    void mxfp4ExponentsOfEveryRange() {
        if (!haveKernel()) QSKIP("this CPU has no AVX2: no repacked kernel to test");
        const int64_t rows = 20, cols = 64, nb = cols / 32;
        std::vector<uint8_t> bytes(size_t(rows * nb * 17));
        std::mt19937 rng(7);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t b = 0; b < nb; ++b) {
                uint8_t* blk = bytes.data() + (r * nb + b) * 17;
                blk[0] = uint8_t(r < 4 ? r : r < 18 ? 100 + 7 * r : 160);
                for (int i = 1; i < 17; ++i) blk[i] = uint8_t(rng());
            }
        const ref::Matrix w{bytes.data(), Type::MXFP4, cols, rows, uint64_t(nb * 17)};
        const PackedMatrix p = packOrDie(w);
        const int64_t n = 3;
        const std::vector<float> x = gaussian(size_t(n * cols), 5);
        const std::vector<float> want = reference(w, quantizedActs(Type::MXFP4, x), n);
        for (Isa isa : packedLevels()) {
        std::vector<float> got(want.size(), NAN);
        QVERIFY(matMul(w, &p, x.data(), n, got.data(), nullptr, isa).isOk());
        for (int64_t j = 0; j < n; ++j)
            for (int64_t r = 0; r < rows; ++r) {
                const float a = got[size_t(j * rows + r)], b = want[size_t(j * rows + r)];
                QVERIFY2(b != 0.0f && std::isfinite(a) && std::fabs(a - b) <= 1e-5f * std::fabs(b),
                         qPrintable(QStringLiteral("%5: row %1 token %2: %3 vs %4").arg(r).arg(j).arg(a).arg(b).arg(isaName(isa))));
            }
        }
    }

    // The plain AVX-512 kernel quantizes the activations the same way: the two agree to float
    // rounding, for every n from 1 to 70.
    void matchesThePlainKernel() {
        if (!haveKernel()) QSKIP("this CPU has no AVX2: no repacked kernel to test");
        ThreadPool pool(2);
        for (Isa isa : packedLevels())
        for (Type t : kTypes) {
            const int64_t rows = 53, cols = 256;
            const Weights w = makeWeights(t, rows, cols, 11);
            const PackedMatrix p = packOrDie(w.m);
            double worst = 0;
            for (int64_t n = 1; n <= 70; ++n) {
                const std::vector<float> x = gaussian(size_t(n * cols), uint32_t(100 + n));
                std::vector<float> plain(size_t(n * rows)), packed(plain.size());
                QVERIFY(matMul(w.m, x.data(), n, plain.data(), &pool, isa).isOk());
                QVERIFY(matMul(w.m, &p, x.data(), n, packed.data(), &pool, isa).isOk());
                const double scale = maxAbs(plain), err = maxDiff(packed, plain);
                worst = std::max(worst, err / scale);
                QVERIFY2(err <= 1e-5 * scale + 1e-6,
                         (std::string(quant::typeName(t)) + " " + isaName(isa) + " n " + std::to_string(n)).c_str());
            }
            qInfo("%s %s repacked vs plain kernel, worst max|d|/max|y|: %g",
                  std::string(quant::typeName(t)).c_str(), isaName(isa), worst);
        }
    }

    // Rows split in groups, tokens split too when groups are few: every output still comes from
    // one tile, so the bits do not depend on the pool.
    void threadCountsGiveBitwiseIdenticalResults() {
        if (!haveKernel()) QSKIP("this CPU has no AVX2: no repacked kernel to test");
        ThreadPool p1(1), p2(2), p3(3);
        for (Isa isa : packedLevels())
        for (Type t : kTypes) {
            for (int64_t rows : {37, 203, 1000}) {
                const int64_t cols = 512;
                const Weights w = makeWeights(t, rows, cols, 77);
                const PackedMatrix p = packOrDie(w.m);
                for (int64_t n : {1, 7, 16, 70}) {
                    const std::vector<float> x = gaussian(size_t(n * cols), 78);
                    std::vector<float> y0(size_t(n * rows)), y1(y0.size()), y2(y0.size()),
                        y3(y0.size());
                    QVERIFY(matMul(w.m, &p, x.data(), n, y0.data(), nullptr, isa).isOk());
                    QVERIFY(matMul(w.m, &p, x.data(), n, y1.data(), &p1, isa).isOk());
                    QVERIFY(matMul(w.m, &p, x.data(), n, y2.data(), &p2, isa).isOk());
                    QVERIFY(matMul(w.m, &p, x.data(), n, y3.data(), &p3, isa).isOk());
                    const size_t bytes = y0.size() * sizeof(float);
                    const std::string what = std::string(quant::typeName(t)) + " " + isaName(isa) + " rows " +
                                             std::to_string(rows) + " n " + std::to_string(n);
                    QVERIFY2(std::memcmp(y0.data(), y1.data(), bytes) == 0, what.c_str());
                    QVERIFY2(std::memcmp(y0.data(), y2.data(), bytes) == 0, what.c_str());
                    QVERIFY2(std::memcmp(y0.data(), y3.data(), bytes) == 0, what.c_str());
                }
            }
        }
    }

    // Matrices sharing x in one job (q, k, v at decode) give matMul's bits for each, whatever the
    // pool; past a few tokens it is matMul for each; a copy that does not match is an error.
    void sharedJobMatchesSeparateCalls() {
        if (!haveKernel()) QSKIP("this CPU has no AVX2: no repacked kernel to test");
        ThreadPool p2(2), p3(3);
        for (Isa isa : packedLevels())
        for (Type t : kTypes) {
            const ForcedIsa forced(isa);
            QVERIFY(forced.ok);
            const int64_t cols = superBlocks(t) ? 512 : 96;
            const int64_t rowsOf[] = {37, 203, 16};
            std::vector<Weights> ws;
            std::vector<PackedMatrix> ps;
            for (int i = 0; i < 3; ++i) {
                ws.push_back(makeWeights(t, rowsOf[i], cols, 90 + uint32_t(i)));
                ps.push_back(packOrDie(ws.back().m));
            }
            for (int64_t n : {1, 3, 4, 5, 20}) {
                const std::vector<float> x = gaussian(size_t(n * cols), 95);
                for (ThreadPool* pool : {&p2, &p3}) {
                    std::vector<std::vector<float>> got(3), want(3);
                    SharedMatMul outs[3];
                    for (int i = 0; i < 3; ++i) {
                        got[size_t(i)].assign(size_t(n * rowsOf[i]), -1.0f);
                        want[size_t(i)].assign(size_t(n * rowsOf[i]), -2.0f);
                        QVERIFY(matMul(ws[size_t(i)].m, &ps[size_t(i)], x.data(), n,
                                       want[size_t(i)].data(), nullptr).isOk());
                        outs[i] = {&ws[size_t(i)].m, &ps[size_t(i)], got[size_t(i)].data()};
                    }
                    QVERIFY(matMulShared(outs, x.data(), n, pool).isOk());
                    for (int i = 0; i < 3; ++i)
                        QVERIFY2(std::memcmp(got[size_t(i)].data(), want[size_t(i)].data(),
                                             want[size_t(i)].size() * sizeof(float)) == 0,
                                 (std::string(quant::typeName(t)) + " n " + std::to_string(n) +
                                  " matrix " + std::to_string(i)).c_str());
                }
            }
            std::vector<float> x(size_t(cols), 0.5f), y(1000);
            SharedMatMul wrong[2] = {{&ws[0].m, &ps[0], y.data()}, {&ws[1].m, &ps[0], y.data()}};
            QCOMPARE(matMulShared(wrong, x.data(), 1, &p2).code(), ErrorCode::InvalidArgument);
            SharedMatMul none[2] = {{&ws[0].m, &ps[0], y.data()}, {nullptr, nullptr, y.data()}};
            QCOMPARE(matMulShared(none, x.data(), 1, &p2).code(), ErrorCode::InvalidArgument);
        }
    }

    // Past decode, matrices of different types that take the same activations (Q4_K, Q6_K) share
    // one quantization of x: matMul's bits for each; a mix of activation formats (Q4_K with
    // Q8_0) still gives them.
    void sharedQuantizationMatchesSeparateCalls() {
        if (!haveKernel()) QSKIP("this CPU has no AVX2: no repacked kernel to test");
        ThreadPool pool(2);
        const int64_t cols = 512;
        for (Isa isa : packedLevels())
        for (const auto& types : {std::pair{Type::Q4_K, Type::Q6_K}, std::pair{Type::Q4_K, Type::Q8_0}}) {
            const ForcedIsa forced(isa);
            QVERIFY(forced.ok);
            const Weights a = makeWeights(types.first, 37, cols, 31), b = makeWeights(types.second, 203, cols, 32);
            const PackedMatrix pa = packOrDie(a.m), pb = packOrDie(b.m);
            for (int64_t n : {5, 9, 33}) {
                const std::vector<float> x = gaussian(size_t(n * cols), uint32_t(40 + n));
                std::vector<float> ya(size_t(n * 37), -1.0f), yb(size_t(n * 203), -1.0f);
                std::vector<float> wa(ya.size(), -2.0f), wb(yb.size(), -2.0f);
                QVERIFY(matMul(a.m, &pa, x.data(), n, wa.data(), &pool).isOk());
                QVERIFY(matMul(b.m, &pb, x.data(), n, wb.data(), &pool).isOk());
                const SharedMatMul outs[2] = {{&a.m, &pa, ya.data()}, {&b.m, &pb, yb.data()}};
                QVERIFY(matMulShared(outs, x.data(), n, &pool).isOk());
                const std::string what = std::string(quant::typeName(types.second)) + " n " + std::to_string(n);
                QVERIFY2(std::memcmp(ya.data(), wa.data(), ya.size() * sizeof(float)) == 0, what.c_str());
                QVERIFY2(std::memcmp(yb.data(), wb.data(), yb.size() * sizeof(float)) == 0, what.c_str());
            }
        }
    }

    // Without AVX2 (or for other types) the call takes the plain kernels, bit for bit.
    void lowerLevelsFallBackToThePlainKernels() {
        ThreadPool pool(2);
        for (Type t : kTypes) {
            const int64_t rows = 37, cols = 256, n = 9;
            const Weights w = makeWeights(t, rows, cols, 5);
            const PackedMatrix p = packOrDie(w.m);
            const std::vector<float> x = gaussian(size_t(n * cols), 6);
            for (Isa isa : {Isa::Scalar}) {
                QVERIFY(!canRepack(t, isa));
                std::vector<float> a(size_t(n * rows)), b(a.size());
                QVERIFY(matMul(w.m, x.data(), n, a.data(), &pool, isa).isOk());
                QVERIFY(matMul(w.m, &p, x.data(), n, b.data(), &pool, isa).isOk());
                QVERIFY2(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0,
                         isaName(isa));
            }
        }
        QVERIFY(!canRepack(Type::Q3_K, detectIsa()));
        QVERIFY(!canRepack(Type::F32, detectIsa()));
        QCOMPARE(canRepack(Type::Q8_0, Isa::Avx512), isaSupported(Isa::Avx512));
        QCOMPARE(canRepack(Type::Q8_0, Isa::AvxVnni), isaSupported(Isa::AvxVnni));
        QCOMPARE(canRepack(Type::Q8_0, Isa::Avx2), isaSupported(Isa::Avx2));
    }

    // The AVX-512 activation quantizers must give the portable definition's bits exactly
    // (scale amax/127, round half to even, clamp to ±127), ties and zero blocks included.
    // The activation quantizers of every level this CPU runs (AVX-512 intrinsics; the portable
    // code compiled per level, where a fused multiply-add would round differently) give the
    // definition's bits: q = round-half-even(x · 127 / amax) per block, its scale and sums.
    void activationQuantizersMatchTheDefinitionAtEveryLevel() {
        // 64 rows of 4096: a fused multiply-add rounds differently about once in 10^5 values.
        const int64_t cols = 4096, n = 64;
        std::vector<float> x = gaussian(size_t(n * cols), 9);
        for (int i = 0; i < 32; ++i) x[size_t(64 + i)] = 0.0f;              // an all-zero block
        for (int i = 0; i < 32; ++i) x[size_t(96 + i)] = float(i - 16) * 0.5f; // ties at ±x.5
        x[96] = -127.0f;
        int levels = 0;
        for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512}) {
            if (!isaSupported(isa)) continue;
            ForcedIsa forced(isa);
            QVERIFY(forced.ok);
            ++levels;
            uint64_t rowBytes = 0;
            const auto* p32 = reinterpret_cast<const cpu::kernels::ActQ8x32*>(
                cpu::kernels::quantizeActivations(cpu::kernels::ActKind::Q8x32, x.data(), n, cols, nullptr, &rowBytes));
            QVERIFY(p32);
            const std::vector<cpu::kernels::ActQ8x32> a32(p32, p32 + n * cols / 32);
            const auto* p256 = reinterpret_cast<const cpu::kernels::ActQ8x256*>(
                cpu::kernels::quantizeActivations(cpu::kernels::ActKind::Q8x256, x.data(), n, cols, nullptr, &rowBytes));
            QVERIFY(p256);
            const std::vector<cpu::kernels::ActQ8x256> a256(p256, p256 + n * cols / 256);
            auto check = [&](size_t block, auto&& at) {
                for (size_t b = 0; b < x.size(); b += block) {
                    float amax = 0;
                    for (size_t i = b; i < b + block; ++i) amax = std::max(amax, std::fabs(x[i]));
                    const float id = amax > 0 ? 127.0f / amax : 0.0f;
                    int32_t sum = 0;
                    for (size_t i = b; i < b + block; ++i) {
                        const int32_t q = std::clamp(int32_t(std::nearbyint(x[i] * id)), -127, 127);
                        sum += q;
                        if (!at(b / block, i - b, q, amax / 127.0f, sum)) return false;
                    }
                }
                return true;
            };
            const std::string level = isaName(isa);
            QVERIFY2(check(32, [&](size_t b, size_t i, int32_t q, float d, int32_t sum) {
                         const auto& blk = a32[b];
                         if (blk.qs[i] != q || blk.d != d) return false;
                         return i != 31 || blk.s == d * float(sum);
                     }),
                     level.c_str());
            QVERIFY2(check(256, [&](size_t b, size_t i, int32_t q, float d, int32_t) {
                         return a256[b].qs[i] == q && a256[b].d == d;
                     }),
                     level.c_str());
            for (size_t b = 0; b < a256.size(); ++b) {
                for (int g = 0; g < 16; ++g) {
                    int32_t sum = 0;
                    for (int i = 0; i < 16; ++i) sum += a256[b].qs[16 * g + i];
                    QCOMPARE(int32_t(a256[b].bsums[g]), sum);
                }
                for (int j = 0; j < 8; ++j) {
                    int32_t sum = 0;
                    for (int i = 0; i < 32; ++i) sum += a256[b].qs[32 * j + i];
                    QCOMPARE(int32_t(a256[b].sums32[j]), sum);
                }
            }
        }
        QVERIFY(levels >= 1);
    }

    void errorsAreStatuses() {
        const Weights k = makeWeights(Type::Q3_K, 16, 256, 1);
        QCOMPARE(PackedMatrix::pack(k.m).status().code(), ErrorCode::Unsupported);
        Weights w = makeWeights(Type::Q4_0, 16, 64, 2);
        ref::Matrix bad = w.m;
        bad.rowBytes = 10;
        QCOMPARE(PackedMatrix::pack(bad).status().code(), ErrorCode::InvalidArgument);
        bad = w.m;
        bad.data = nullptr;
        QCOMPARE(PackedMatrix::pack(bad).status().code(), ErrorCode::InvalidArgument);
        if (!haveKernel()) return;
        const PackedMatrix p = packOrDie(w.m);
        std::vector<float> x(64 * 2, 1.0f), y(32);
        bad = w.m;
        bad.rows = 15; // the copy no longer matches
        QCOMPARE(matMul(bad, &p, x.data(), 2, y.data(), nullptr, packedLevels().front()).code(),
                 ErrorCode::InvalidArgument);
        QCOMPARE(matMul(w.m, &p, nullptr, 2, y.data(), nullptr, packedLevels().front()).code(),
                 ErrorCode::InvalidArgument);
        QCOMPARE(matMul(w.m, &p, x.data(), -1, y.data(), nullptr, packedLevels().front()).code(),
                 ErrorCode::InvalidArgument);
        QVERIFY(matMul(w.m, &p, x.data(), 0, y.data(), nullptr, packedLevels().front()).isOk());
    }

    void repackedWeightsFindsItsCopies() {
        const Weights a = makeWeights(Type::Q4_0, 20, 64, 3);
        const Weights b = makeWeights(Type::Q3_K, 4, 256, 4);
        RepackedWeights set;
        QVERIFY(set.add(a.m, false).isOk());
        QVERIFY(set.add(a.m, false).isOk()); // twice: one copy
        QVERIFY(set.add(b.m, false).isOk()); // no layout: nothing
        QCOMPARE(set.find(b.m), static_cast<const PackedMatrix*>(nullptr));
        if (!canRepack(Type::Q4_0, activeIsaLevel())) {
            QCOMPARE(set.count(), size_t(0));
            return;
        }
        QCOMPARE(set.count(), size_t(1));
        QVERIFY(set.find(a.m) != nullptr);
        QCOMPARE(set.bytes(), set.find(a.m)->bytes());
        ref::Matrix other = a.m;
        other.rows = 19; // same data, other shape: no match
        QCOMPARE(set.find(other), static_cast<const PackedMatrix*>(nullptr));
    }

    // A matrix of another's first rows, whole row groups, is a view of that one's copy: in the
    // same set (the longer one packed, whichever comes first), or through a base set (a drafting
    // head's shortlist of its model's output); its products are the copy of its own's, bit for
    // bit. Rows that are not whole groups get no view.
    void firstRowsAreAViewOfTheLongerCopy() {
        if (!canRepack(Type::Q6_K, activeIsaLevel())) QSKIP("Q6_K is not repacked at this ISA level");
        const Weights w = makeWeights(Type::Q6_K, 96, 512, 31);
        ref::Matrix first = w.m, ragged = w.m;
        first.rows = 2 * kPackRows;
        ragged.rows = kPackRows + 3;
        RepackedWeights one;
        QVERIFY(one.addAll({first, w.m}, false, nullptr).isOk());
        QCOMPARE(one.count(), size_t(1));
        QCOMPARE(one.bytes(), packOrDie(w.m).bytes());
        const PackedMatrix* whole = one.find(w.m);
        const PackedMatrix* view = one.find(first);
        QVERIFY(whole && view);
        QCOMPARE(view->rows(), first.rows);
        QCOMPARE(view->group(0), whole->group(0));

        auto base = std::make_shared<RepackedWeights>();
        QVERIFY(base->add(w.m, false).isOk());
        RepackedWeights head;
        head.setBase(base);
        QVERIFY(head.addAll({first, ragged}, false, nullptr).isOk());
        QCOMPARE(head.bytes(), size_t(0));
        QVERIFY(head.find(first) && head.find(first)->group(0) == base->find(w.m)->group(0));
        QCOMPARE(head.find(ragged), static_cast<const PackedMatrix*>(nullptr));

        const int64_t n = 3;
        const std::vector<float> x = gaussian(size_t(n * first.cols), 32);
        const PackedMatrix own = packOrDie(first);
        std::vector<float> viaView(size_t(n * first.rows)), viaOwn(viaView.size());
        QVERIFY(matMul(first, head.find(first), x.data(), n, viaView.data(), nullptr).isOk());
        QVERIFY(matMul(first, &own, x.data(), n, viaOwn.data(), nullptr).isOk());
        QVERIFY(std::memcmp(viaView.data(), viaOwn.data(), viaOwn.size() * sizeof(float)) == 0);
    }

    // addAll puts the copies side by side in one mapping: each equals the copy pack() makes on
    // its own, none overlaps another, and a set of 2 MiB or more starts on a huge-page boundary.
    void repackedWeightsAddAllSharesOneMapping() {
        if (!haveKernel()) QSKIP("no AVX-512 VNNI: nothing is repacked");
        const Weights big = makeWeights(Type::Q8_0, 1040, 2048, 21); // 2.2 MB packed
        const Weights q4 = makeWeights(Type::Q4_0, 37, 96, 22);
        const Weights k4 = makeWeights(Type::Q4_K, 20, 512, 23);
        const Weights k6 = makeWeights(Type::Q6_K, 16, 256, 24);
        const Weights k5 = makeWeights(Type::Q3_K, 4, 256, 25); // no layout: left out
        const std::vector<ref::Matrix> ws = {big.m, q4.m, k4.m, q4.m, k6.m, k5.m};
        ThreadPool pool(2);
        RepackedWeights set;
        QVERIFY(set.addAll(ws, false, &pool).isOk());
        QCOMPARE(set.count(), size_t(4));
        QCOMPARE(set.find(k5.m), static_cast<const PackedMatrix*>(nullptr));
        size_t total = 0;
        std::vector<std::pair<uintptr_t, uintptr_t>> spans;
        for (const Weights* w : {&big, &q4, &k4, &k6}) {
            const PackedMatrix* p = set.find(w->m);
            QVERIFY(p != nullptr);
            const PackedMatrix own = packOrDie(w->m);
            QCOMPARE(p->bytes(), own.bytes());
            QVERIFY(std::memcmp(p->group(0), own.group(0), own.bytes()) == 0);
            QCOMPARE(reinterpret_cast<uintptr_t>(p->group(0)) % 64, uintptr_t(0));
            spans.emplace_back(reinterpret_cast<uintptr_t>(p->group(0)),
                               reinterpret_cast<uintptr_t>(p->group(0)) + p->bytes());
            total += p->bytes();
        }
        QCOMPARE(set.bytes(), total);
        std::sort(spans.begin(), spans.end());
        for (size_t i = 0; i + 1 < spans.size(); ++i) QVERIFY(spans[i].second <= spans[i + 1].first);
#if defined(__linux__)
        const char* env = std::getenv("HEARTH_CPU_HUGEPAGES");
        if (!(env && std::string(env) == "0"))
            QCOMPARE(spans.front().first % (uintptr_t(2) << 20), uintptr_t(0));
#endif
    }
};

QTEST_APPLESS_MAIN(TestCpuRepack)
#include "test_cpu_repack.moc"
