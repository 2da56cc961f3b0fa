// Tests of the optimized CPU matMul and its thread pool against the scalar reference matVec:
// every weight type at every instruction-set level this machine has, odd shapes, batch sizes,
// bitwise thread-count independence, detection of a corrupted block, and error statuses.
#include "backend/cpu/matmul.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/thread_pool.h"
#include "hearth/quant.h"

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <sys/mman.h>
#include <thread>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace hearth;
using namespace hearth::cpu;
using quant::Type;

namespace {

// Bounds on max|Δ| / max|y| against ref::matVec. Quantized weights take integer paths that
// quantize the activations to 8 bits (per 32 values for legacy types, IQ4_NL and MXFP4, per 256
// for K types and IQ4_XS), so each x moves by up to amax/254: with gaussian data that is ~0.5%
// of the output's typical size per output, and the worst of ~37·n outputs measured 0.75-1.3% of
// max|y| (same at avx2 and avx512; e.g. Q4_0 0.75%, Q4_1 1.2%, Q5_1 1.3%, Q4_K 0.9%, Q6_K 1.3%,
// IQ4_NL 0.86%, IQ4_XS 1.3%, MXFP4 0.76%). The bound, 2.5%, has 2x headroom; the kernels'
// arithmetic itself is checked much more tightly (1e-4) against the reference run on the same
// 8-bit activations, see matchesReferenceOnQuantizedActivations.
// Float weights (and the scalar level, which dequantizes rows) only see float rounding
// (measured < 1e-6), bounded by the 2e-3·(1 + max|y|) the spec asks for.
double tolerance(Type t, Isa isa) {
    if (isa == Isa::Scalar) return 2e-3;
    switch (t) {
    case Type::F32: case Type::F16: case Type::BF16: case Type::Q8_1: case Type::Q8_K:
        return 2e-3; // float path (Q8_1/Q8_K are dequantized to floats at every level)
    default: return 2.5e-2;
    }
}

// The activations the integer paths see: 8-bit blocks of 32 (legacy) or 256 (K types) with
// scale amax/127, rounded to nearest even, then expanded back to floats. Float types: x itself.
std::vector<float> quantizedActivations(Type t, Isa isa, const std::vector<float>& x) {
    if (isa == Isa::Scalar || !hasFastPath(t, isa) || t == Type::F32 || t == Type::F16)
        return x;
    const size_t block = quant::typeInfo(t)->blockElems == 256 ? 256 : 32;
    std::vector<float> out(x.size());
    for (size_t b = 0; b < x.size(); b += block) {
        float amax = 0;
        for (size_t i = b; i < b + block; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
        for (size_t i = b; i < b + block; ++i) out[i] = d * std::nearbyint(x[i] * id);
    }
    return out;
}

bool usesAbsoluteOne(Type t, Isa isa) { return tolerance(t, isa) <= 2e-3; }

const std::vector<Type>& allTypes() {
    static const std::vector<Type> types = {
        Type::F32,  Type::F16,  Type::BF16, Type::Q4_0,   Type::Q4_1,   Type::Q5_0,
        Type::Q5_1, Type::Q8_0, Type::Q8_1, Type::Q2_K,   Type::Q3_K,   Type::Q4_K,
        Type::Q5_K, Type::Q6_K, Type::Q8_K, Type::IQ4_NL, Type::IQ4_XS, Type::MXFP4,
        Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S, Type::IQ1_S,
        Type::IQ1_M, Type::TQ1_0, Type::TQ2_0};
    return types;
}

std::vector<Isa> levels() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512})
        if (isaSupported(isa)) out.push_back(isa);
    return out;
}

std::vector<float> gaussian(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& f : v) f = dist(rng);
    return v;
}

// A quantized weight matrix with its own storage.
struct Weights {
    std::vector<uint8_t> bytes;
    ref::Matrix m;
};

Weights makeWeights(Type t, int64_t rows, int64_t cols, uint32_t seed) {
    Weights w;
    const uint64_t rb = *quant::rowBytes(t, uint64_t(cols));
    w.bytes.resize(rb * uint64_t(rows));
    std::vector<float> f = gaussian(size_t(rows * cols), seed);
    // Rows of different magnitudes, like real layers.
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) f[size_t(r * cols + c)] *= 0.25f + float(r % 5) * 0.3f;
    const quant::TypeInfo* info = quant::typeInfo(t);
    if (!info->canQuantize) {
        // No quantizer (the grid i-quants, TQ2_0): random blocks, each fp16 scale set so that
        // values are about 1 (largest grid value times largest sub-block scale), times the row's
        // magnitude.
        std::mt19937 rng(seed);
        for (uint8_t& b : w.bytes) b = uint8_t(rng());
        const float base = t == Type::IQ1_S || t == Type::IQ1_M   ? 1.0f / 16
                           : t == Type::TQ1_0 || t == Type::TQ2_0 ? 0.5f
                           : t == Type::IQ3_XXS || t == Type::IQ3_S ? 1.0f / 256
                                                : 1.0f / 128;
        const int at = t == Type::TQ2_0 ? 64 : t == Type::TQ1_0 ? 52 : 0;
        for (int64_t r = 0; r < rows; ++r)
            for (uint64_t b = 0; b < rb; b += info->blockBytes) {
                const uint16_t d = quant::f32ToF16(base * (0.25f + float(r % 5) * 0.3f));
                uint8_t* block = w.bytes.data() + rb * uint64_t(r) + b;
                if (t != Type::IQ1_M) {
                    std::memcpy(block + at, &d, 2);
                    continue;
                }
                // IQ1_M: the scale's nibbles are the top nibbles of the u16 words at 48..55.
                for (int k = 0; k < 4; ++k)
                    block[49 + 2 * k] = uint8_t((block[49 + 2 * k] & 0x0f) | ((d >> 4 * k) & 15) << 4);
            }
    }
    for (int64_t r = 0; r < rows && info->canQuantize; ++r) {
        const Status s = quant::quantizeRow(t, f.data() + r * cols, w.bytes.data() + rb * r, cols);
        if (!s.isOk()) qFatal("quantizeRow: %s", s.toString().c_str());
    }
    w.m = {w.bytes.data(), t, cols, rows, rb};
    return w;
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

double maxDiff(const float* a, const float* b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = std::fabs(double(a[i]) - double(b[i]));
        if (!(d <= m)) m = d; // NaN propagates as a failure
    }
    return m;
}

double bound(Type t, Isa isa, double scale) {
    return usesAbsoluteOne(t, isa) ? tolerance(t, isa) * (1.0 + scale)
                                   : tolerance(t, isa) * scale + 1e-5;
}

std::vector<int64_t> colsFor(Type t) {
    const uint32_t block = quant::typeInfo(t)->blockElems;
    if (block == 256) return {256, 512};
    return {96, 256, 512};
}

// "0.0093" style text for the summary lines.
std::string ratioText(double err, double scale) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", err / std::max(scale, 1e-30));
    return buf;
}

} // namespace

class TestCpuMatMul : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void environmentVariableLowersTheLevel() {
        // Runs first: activeIsaLevel() reads HEARTH_CPU_ISA once, on first use.
        const QByteArray saved = qgetenv("HEARTH_CPU_ISA");
        qputenv("HEARTH_CPU_ISA", "scalar");
        QCOMPARE(activeIsaLevel(), Isa::Scalar);
        QCOMPARE(std::string(activeIsa()), std::string("scalar"));
        if (saved.isNull()) qunsetenv("HEARTH_CPU_ISA");
        else qputenv("HEARTH_CPU_ISA", saved);
        QVERIFY(forceIsa(detectIsa()));
        QCOMPARE(activeIsaLevel(), detectIsa());
        qInfo("detected ISA: %s", isaName(detectIsa()));
    }

    // HEARTH_CPU_ISA naming something else than a level this CPU runs is an error that says what
    // the CPU has (the kernels stay at the detected level); a level it runs is fine.
    void environmentVariableErrors() {
        const QByteArray saved = qgetenv("HEARTH_CPU_ISA");
        qputenv("HEARTH_CPU_ISA", "sse9");
        Status s = isaEnvStatus();
        QCOMPARE(s.code(), ErrorCode::InvalidArgument);
        QVERIFY2(s.message().find("'sse9' is not a level") != std::string::npos, s.message().c_str());
        QVERIFY2(s.message().find("this CPU runs scalar") != std::string::npos, s.message().c_str());
        for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512}) {
            qputenv("HEARTH_CPU_ISA", isaName(isa));
            s = isaEnvStatus();
            QCOMPARE(s.isOk(), isaSupported(isa));
            if (!s.isOk())
                QVERIFY2(s.message().find(std::string(isaName(isa)) + ": this CPU runs scalar") != std::string::npos,
                         s.message().c_str());
        }
        qputenv("HEARTH_CPU_ISA", "");
        QVERIFY(isaEnvStatus().isOk());
        if (saved.isNull()) qunsetenv("HEARTH_CPU_ISA");
        else qputenv("HEARTH_CPU_ISA", saved);
        Isa isa = Isa::Scalar;
        QVERIFY(isaFromName("avxvnni", &isa) && isa == Isa::AvxVnni);
        QVERIFY(!isaFromName("AVX2", &isa));
    }

    void forceIsaRefusesWhatTheCpuLacks() {
        for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512}) {
            QCOMPARE(forceIsa(isa), isaSupported(isa));
            if (isaSupported(isa)) QCOMPARE(activeIsaLevel(), isa);
        }
        QVERIFY(forceIsa(detectIsa()));
        QVERIFY(isaSupported(Isa::Scalar));
    }

    void matchesReferenceForEveryTypeLevelAndShape() {
        ThreadPool pool(2);
        const std::vector<int64_t> ns = {1, 3, 17, 64};
        const int64_t rows = 37; // not a multiple of 4, 8 or 16
        uint32_t seed = 1;
        std::string failures;
        for (Type t : allTypes()) {
            std::string line = std::string(quant::typeName(t)) + " worst max|d|/max|y|:";
            for (Isa isa : levels()) {
                double worst = 0;
                for (int64_t cols : colsFor(t)) {
                    const Weights w = makeWeights(t, rows, cols, seed + uint32_t(cols));
                    for (int64_t n : ns) {
                        const std::vector<float> x =
                            gaussian(size_t(n * cols), seed + uint32_t(cols * 7 + n));
                        const std::vector<float> want = reference(w.m, x, n);
                        const double scale = maxAbs(want);
                        std::vector<float> got(want.size(), NAN);
                        const Status s = matMul(w.m, x.data(), n, got.data(), &pool, isa);
                        QVERIFY2(s.isOk(), s.toString().c_str());
                        const double err = maxDiff(got.data(), want.data(), got.size());
                        worst = std::max(worst, err / scale);
                        if (!(err <= bound(t, isa, scale)))
                            failures += std::string(quant::typeName(t)) + " " + isaName(isa) +
                                        " cols " + std::to_string(cols) + " n " +
                                        std::to_string(n) + ": max|d| " + std::to_string(err) +
                                        " max|y| " + std::to_string(scale) + "\n";
                    }
                }
                line += std::string(" ") + isaName(isa) + " " + ratioText(worst, 1.0);
            }
            qInfo("%s (tolerance %g)", line.c_str(), tolerance(t, levels().back()));
            ++seed;
        }
        QVERIFY2(failures.empty(), failures.c_str());
    }

    // With the reference fed the same 8-bit activations the integer kernels use, only float
    // rounding separates them (measured < 2e-6 of max|y|): a wrong scale, offset or nibble order
    // shows up here even when it hides inside the 8-bit error above.
    void matchesReferenceOnQuantizedActivations() {
        ThreadPool pool(2);
        std::string failures;
        for (Type t : allTypes()) {
            double worst = 0;
            for (int64_t cols : colsFor(t)) {
                const Weights w = makeWeights(t, 29, cols, 300 + uint32_t(cols));
                for (int64_t n : {1, 5}) {
                    const std::vector<float> x = gaussian(size_t(n * cols), 400 + uint32_t(n));
                    for (Isa isa : levels()) {
                        const std::vector<float> want =
                            reference(w.m, quantizedActivations(t, isa, x), n);
                        std::vector<float> got(want.size(), NAN);
                        QVERIFY(matMul(w.m, x.data(), n, got.data(), &pool, isa).isOk());
                        const double scale = maxAbs(want);
                        const double err = maxDiff(got.data(), want.data(), got.size());
                        worst = std::max(worst, err / scale);
                        if (!(err <= 1e-4 * scale + 1e-6))
                            failures += std::string(quant::typeName(t)) + " " + isaName(isa) +
                                        " cols " + std::to_string(cols) + " n " +
                                        std::to_string(n) + ": " + std::to_string(err / scale) +
                                        "\n";
                    }
                }
            }
            qInfo("%s worst max|d|/max|y| on 8-bit activations: %g",
                  std::string(quant::typeName(t)).c_str(), worst);
        }
        QVERIFY2(failures.empty(), failures.c_str());
    }

    void threadCountsGiveBitwiseIdenticalResults() {
        ThreadPool p1(1), p2(2), p3(3);
        for (Type t :
             {Type::F32, Type::F16, Type::Q4_0, Type::Q8_0, Type::Q4_K, Type::Q6_K, Type::Q5_K,
              Type::BF16, Type::IQ4_NL, Type::IQ4_XS, Type::MXFP4, Type::IQ2_XXS, Type::IQ2_XS,
              Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S, Type::IQ1_S, Type::IQ1_M, Type::TQ1_0,
              Type::TQ2_0}) {
            const int64_t cols = 512, rows = 203, n = 7;
            const Weights w = makeWeights(t, rows, cols, 77);
            const std::vector<float> x = gaussian(size_t(n * cols), 78);
            for (Isa isa : levels()) {
                std::vector<float> y0(size_t(n * rows)), y1(y0.size()), y2(y0.size()),
                    y3(y0.size());
                QVERIFY(matMul(w.m, x.data(), n, y0.data(), nullptr, isa).isOk());
                QVERIFY(matMul(w.m, x.data(), n, y1.data(), &p1, isa).isOk());
                QVERIFY(matMul(w.m, x.data(), n, y2.data(), &p2, isa).isOk());
                QVERIFY(matMul(w.m, x.data(), n, y3.data(), &p3, isa).isOk());
                const size_t bytes = y0.size() * sizeof(float);
                QVERIFY2(std::memcmp(y0.data(), y1.data(), bytes) == 0, isaName(isa));
                QVERIFY2(std::memcmp(y0.data(), y2.data(), bytes) == 0, isaName(isa));
                QVERIFY2(std::memcmp(y0.data(), y3.data(), bytes) == 0, isaName(isa));
            }
        }
    }

    // The float path (F32, F16, BF16) computes several tokens together: each token's outputs are
    // bit for bit those it gets alone, for column counts with and without vector tails and row
    // counts that leave a partial group (what keeps speculative decoding's output the same).
    void floatTokensAreBatchInvariant() {
        ThreadPool pool(2);
        for (Type t : {Type::F32, Type::F16, Type::BF16})
            for (int64_t cols : {8, 64, 72, 100, 512})
                for (Isa isa : levels()) {
                    const int64_t rows = 39, n = 9;
                    const Weights w = makeWeights(t, rows, cols, 500 + uint32_t(cols));
                    const std::vector<float> x = gaussian(size_t(n * cols), 600 + uint32_t(cols));
                    std::vector<float> all(size_t(n * rows)), one(static_cast<size_t>(rows));
                    QVERIFY(matMul(w.m, x.data(), n, all.data(), &pool, isa).isOk());
                    for (int64_t j = 0; j < n; ++j) {
                        QVERIFY(matMul(w.m, x.data() + j * cols, 1, one.data(), &pool, isa).isOk());
                        QVERIFY2(std::memcmp(one.data(), all.data() + j * rows, size_t(rows) * sizeof(float)) == 0,
                                 qPrintable(QStringLiteral("%1 %2 cols %3 token %4")
                                                .arg(QLatin1String(quant::typeName(t).data(), int(quant::typeName(t).size())))
                                                .arg(QLatin1String(isaName(isa))).arg(cols).arg(j)));
                    }
                }
    }

    // The tolerance is tight enough to catch a wrong block: replacing one block of one row
    // (with valid data from another row) must push that row out of bounds against the original.
    void corruptedBlockIsDetected() {
        ThreadPool pool(2);
        for (Type t : allTypes()) {
            const int64_t cols = 512, rows = 21, n = 5, victim = 10;
            Weights w = makeWeights(t, rows, cols, 900);
            const std::vector<float> x = gaussian(size_t(n * cols), 901);
            const std::vector<float> want = reference(w.m, x, n);
            const quant::TypeInfo* info = quant::typeInfo(t);
            // One block, or 32 elements for the float types.
            const size_t len = info->blockElems == 1 ? 32 * info->blockBytes : info->blockBytes;
            std::memcpy(w.bytes.data() + w.m.rowBytes * victim,
                        w.bytes.data() + w.m.rowBytes * (victim + 1), len);
            const std::vector<float> wantCorrupt = reference(w.m, x, n);
            for (Isa isa : levels()) {
                std::vector<float> got(want.size());
                QVERIFY(matMul(w.m, x.data(), n, got.data(), &pool, isa).isOk());
                double errOrig = 0, errCorrupt = 0;
                for (int64_t j = 0; j < n; ++j) {
                    const size_t i = size_t(j * rows + victim);
                    errOrig = std::max(errOrig, double(std::fabs(got[i] - want[i])));
                    errCorrupt = std::max(errCorrupt, double(std::fabs(got[i] - wantCorrupt[i])));
                }
                const std::string what = std::string(quant::typeName(t)) + " " + isaName(isa);
                QVERIFY2(errOrig > bound(t, isa, maxAbs(want)), what.c_str());
                QVERIFY2(errCorrupt <= bound(t, isa, maxAbs(wantCorrupt)), what.c_str());
            }
        }
    }

    void errorsAreStatuses() {
        const Weights w = makeWeights(Type::Q4_K, 4, 256, 5);
        std::vector<float> x(256 * 2, 1.0f), y(8);
        ThreadPool pool(2);
        for (Isa isa : levels()) {
            ref::Matrix bad = w.m;
            bad.type = Type::F64; // a type with no dequantizer
            bad.rowBytes = *quant::rowBytes(Type::F64, 256);
            QCOMPARE(matMul(bad, x.data(), 2, y.data(), &pool, isa).code(),
                     ErrorCode::Unsupported);
            bad = w.m;
            bad.cols = 100; // not a multiple of 256
            QCOMPARE(matMul(bad, x.data(), 2, y.data(), &pool, isa).code(),
                     ErrorCode::InvalidArgument);
            bad = w.m;
            bad.rowBytes = w.m.rowBytes - 1;
            QCOMPARE(matMul(bad, x.data(), 2, y.data(), &pool, isa).code(),
                     ErrorCode::InvalidArgument);
            QCOMPARE(matMul(w.m, nullptr, 2, y.data(), &pool, isa).code(),
                     ErrorCode::InvalidArgument);
            QCOMPARE(matMul(w.m, x.data(), 2, nullptr, &pool, isa).code(),
                     ErrorCode::InvalidArgument);
            QCOMPARE(matMul(w.m, x.data(), -1, y.data(), &pool, isa).code(),
                     ErrorCode::InvalidArgument);
            bad = w.m;
            bad.data = nullptr;
            QCOMPARE(matMul(bad, x.data(), 2, y.data(), &pool, isa).code(),
                     ErrorCode::InvalidArgument);
            QVERIFY(matMul(w.m, x.data(), 0, y.data(), &pool, isa).isOk()); // nothing to do
        }
        if (!isaSupported(Isa::Avx512))
            QCOMPARE(matMul(w.m, x.data(), 2, y.data(), &pool, Isa::Avx512).code(),
                     ErrorCode::Unsupported);
        QVERIFY(!matMulSupports(Type::F64));
        QVERIFY(matMulSupports(Type::Q8_K) && !hasFastPath(Type::Q8_K, detectIsa()));
        QVERIFY(matMulSupports(Type::Q4_K));
        for (Type t : {Type::F32, Type::F16, Type::Q8_0, Type::Q4_0, Type::Q4_K, Type::Q6_K,
                       Type::IQ4_NL, Type::IQ4_XS, Type::MXFP4, Type::IQ2_XXS, Type::IQ2_XS,
                       Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S, Type::IQ1_S, Type::IQ1_M,
                       Type::TQ1_0, Type::TQ2_0})
            for (Isa isa : levels()) QVERIFY(hasFastPath(t, isa) == (isa != Isa::Scalar));
        for (Type t : {Type::IQ4_NL, Type::IQ4_XS, Type::MXFP4}) QVERIFY(matMulSupports(t));
    }

    void defaultLevelIsUsed() {
        const Weights w = makeWeights(Type::Q8_0, 9, 64, 3);
        const std::vector<float> x = gaussian(64, 4);
        std::vector<float> a(9), b(9);
        for (Isa isa : levels()) {
            QVERIFY(forceIsa(isa));
            QVERIFY(matMul(w.m, x.data(), 1, a.data(), nullptr).isOk());
            QVERIFY(matMul(w.m, x.data(), 1, b.data(), nullptr, isa).isOk());
            QVERIFY(std::memcmp(a.data(), b.data(), sizeof(float) * 9) == 0);
        }
        QVERIFY(forceIsa(detectIsa()));
    }

    void threadPoolCoversEveryIndexOnce() {
        for (int threads : {1, 2, 3, 5}) {
            ThreadPool pool(threads);
            QCOMPARE(pool.size(), threads);
            for (int64_t n : {0, 1, 2, 7, 100, 1001}) {
                for (int64_t grain : {1, 3, 64}) {
                    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
                    for (auto& h : hits) h = 0;
                    pool.parallelFor(
                        n,
                        [&](int64_t b, int64_t e) {
                            for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
                        },
                        grain);
                    for (auto& h : hits) QCOMPARE(h.load(), 1);
                }
            }
            std::atomic<int64_t> total{0};
            pool.parallelParts(10, [&](int64_t, int64_t b, int64_t e) { total += e - b; });
            QCOMPARE(total.load(), int64_t(10));
        }
    }

    // Chunks are claimed guided: a 1/(2·threads) share of what is left, never under the grain
    // (but the last, cut at n), so in index order their sizes never grow.
    void threadPoolChunksShrinkGuided() {
        for (int threads : {2, 3}) {
            ThreadPool pool(threads);
            for (int64_t grain : {1, 5}) {
                const int64_t n = 1000;
                std::mutex m;
                std::vector<std::pair<int64_t, int64_t>> chunks;
                pool.parallelFor(
                    n,
                    [&](int64_t b, int64_t e) {
                        std::lock_guard<std::mutex> lock(m);
                        chunks.emplace_back(b, e);
                    },
                    grain);
                std::sort(chunks.begin(), chunks.end());
                QVERIFY(chunks.size() > 2);
                QCOMPARE(chunks.front(), std::make_pair(int64_t(0), n / (2 * threads)));
                QCOMPARE(chunks.back().second, n);
                for (size_t i = 0; i + 1 < chunks.size(); ++i) {
                    const int64_t size = chunks[i].second - chunks[i].first;
                    QCOMPARE(chunks[i].second, chunks[i + 1].first);
                    QVERIFY(size >= grain);
                    QCOMPARE(size, std::max(grain, (n - chunks[i].first) / (2 * threads)));
                    QVERIFY(chunks[i + 1].second - chunks[i + 1].first <= size);
                }
            }
        }
    }

    // prefetchWhileIdle and prefetchWhileWaiting only prefetch: a hint at memory that is no longer
    // mapped is taken by an idle worker (or the waiting caller) without a fault, and jobs before
    // and after it run as usual.
    void threadPoolIdlePrefetchIsHarmless() {
        ThreadPool pool(2);
        const size_t bytes = size_t(4) << 20;
        void* gone = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        QVERIFY(gone != MAP_FAILED);
        QCOMPARE(::munmap(gone, bytes), 0);
        bool taken = false;
        for (int attempt = 0; attempt < 50 && !taken; ++attempt) {
            std::atomic<int64_t> count{0};
            pool.parallelFor(64, [&](int64_t b, int64_t e) { count += e - b; });
            QCOMPARE(count.load(), int64_t(64));
            // Right after a job the worker spins (then sleeps): it should take the hint.
            pool.prefetchWhileIdle(static_cast<const uint8_t*>(gone) + 64 * attempt, bytes / 2);
            const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
            while (pool.prefetchHintPending() && std::chrono::steady_clock::now() < until)
                std::this_thread::yield();
            taken = !pool.prefetchHintPending();
        }
        QVERIFY(taken);
        std::atomic<int64_t> count{0};
        pool.parallelFor(1000, [&](int64_t b, int64_t e) { count += e - b; });
        QCOMPARE(count.load(), int64_t(1000));
        pool.prefetchWhileIdle(nullptr, bytes); // no range: ignored
        QVERIFY(!pool.prefetchHintPending());
        // The caller's hint, prefetched while it waits for a worker that sleeps in its chunk.
        for (int rep = 0; rep < 3; ++rep) {
            pool.prefetchWhileWaiting(gone, bytes);
            std::atomic<int64_t> done{0};
            pool.parallelFor(2, [&](int64_t b, int64_t e) {
                if (b > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
                done += e - b;
            });
            QCOMPARE(done.load(), int64_t(2));
        }
    }

    void threadPoolNestedCallRunsInline() {
        ThreadPool pool(3);
        std::atomic<int64_t> sum{0};
        pool.parallelFor(8, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
                pool.parallelFor(10, [&](int64_t b2, int64_t e2) { sum += e2 - b2; });
        });
        QCOMPARE(sum.load(), int64_t(80));
        // Many small jobs in a row (wake-up / completion handshake).
        std::atomic<int64_t> count{0};
        for (int rep = 0; rep < 2000; ++rep)
            pool.parallelFor(6, [&](int64_t b, int64_t e) { count += e - b; });
        QCOMPARE(count.load(), int64_t(12000));
    }
};

QTEST_APPLESS_MAIN(TestCpuMatMul)
#include "test_cpu_matmul.moc"
