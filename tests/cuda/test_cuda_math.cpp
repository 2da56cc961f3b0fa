// Host tests of the CUDA kernels' shared math (backend/cuda/cuda_math.h, int8_math.h) against the
// CPU scalar reference (backend/cpu/ref_ops, rope_math.h) and quant's reference dequantizers, on
// random inputs: fp16, RMSNorm, RoPE (also linearly scaled), SwiGLU, gpt-oss's gated unit, sigmoid,
// softplus, GELU/GeGLU, soft-capping, the attention window, the online softmax, weight chunks and
// the int8 path.
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/rope_math.h"
#include "backend/cuda/cuda_math.h"
#include "backend/cuda/int8_math.h"
#include "hearth/quant.h"
#include "random_blocks.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

using namespace hearth;
namespace cm = hearth::cuda::math;

namespace {

std::vector<float> randomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// A random weight matrix quantized with the reference quantizer.
struct HostMatrix {
    std::vector<uint8_t> bytes;
    cpu::ref::Matrix m;
};

HostMatrix makeMatrix(quant::Type type, int64_t rows, int64_t cols, uint32_t seed) {
    HostMatrix h;
    const uint64_t rowBytes = quant::rowBytes(type, uint64_t(cols)).value();
    h.bytes.resize(rowBytes * uint64_t(rows));
    const std::vector<float> src = randomFloats(size_t(rows * cols), seed);
    for (int64_t r = 0; r < rows; ++r)
        if (!quant::quantizeRow(type, src.data() + r * cols, h.bytes.data() + uint64_t(r) * rowBytes, cols).isOk())
            qFatal("quantizeRow failed");
    h.m = {h.bytes.data(), type, cols, rows, rowBytes};
    return h;
}

// The whole row through dequantRowChunk, chunk by chunk, as the kernels read it.
template <typename B> std::vector<float> chunkedRow(const HostMatrix& h, int64_t r) {
    std::vector<float> out(size_t(h.m.cols));
    const B* row = reinterpret_cast<const B*>(h.bytes.data() + uint64_t(r) * h.m.rowBytes);
    float chunk[cm::kChunk];
    for (int64_t c = 0; c * cm::kChunk < h.m.cols; ++c) {
        cm::dequantRowChunkBounded(row, c, h.m.cols, chunk);
        for (int j = 0; j < cm::kChunk; ++j) {
            if (c * cm::kChunk + j < h.m.cols) out[size_t(c * cm::kChunk + j)] = chunk[j];
            else if (chunk[j] != 0.0f) qFatal("value past the end of the row is not 0");
        }
    }
    return out;
}

// Checks dequantRowChunkBounded (exact) and dotChunk (relative to Σ|w·x|) for one type.
template <typename B> void checkType(quant::Type type, int64_t cols) {
    const int64_t rows = 5;
    const HostMatrix h = makeMatrix(type, rows, cols, 17u + uint32_t(type));
    const std::vector<float> x = randomFloats(size_t(cols), 99);
    std::vector<float> ref(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        QVERIFY(cpu::ref::getRow(h.m, r, ref.data()).isOk());
        const std::vector<float> got = chunkedRow<B>(h, r);
        for (int64_t i = 0; i < cols; ++i)
            QVERIFY2(got[size_t(i)] == ref[size_t(i)],
                     qPrintable(QStringLiteral("%1 row %2 elem %3: %4 vs %5")
                                    .arg(quant::typeName(type).data()).arg(r).arg(i)
                                    .arg(got[size_t(i)]).arg(ref[size_t(i)])));
        if (cols % cm::kChunk != 0) continue; // dotChunk reads whole chunks
        // dot product, chunk by chunk like one kernel lane
        const B* row = reinterpret_cast<const B*>(h.bytes.data() + uint64_t(r) * h.m.rowBytes);
        constexpr int per = cm::ChunkTraits<B>::kChunks;
        float dot = 0.0f;
        double exact = 0.0, mag = 0.0;
        for (int64_t c = 0; c < cols / cm::kChunk; ++c)
            dot += cm::dotChunk(row[c / per], int(c % per), x.data() + c * cm::kChunk);
        for (int64_t i = 0; i < cols; ++i) {
            exact += double(ref[size_t(i)]) * x[size_t(i)];
            mag += std::fabs(double(ref[size_t(i)]) * x[size_t(i)]);
        }
        QVERIFY2(std::fabs(dot - exact) <= 1e-5 * mag + 1e-6,
                 qPrintable(QStringLiteral("dot %1 vs %2").arg(dot).arg(exact)));
    }
}

// The int8 view of one type: every value of intRowChunk equals dequantRowChunk's bit for bit, and
// dotIntChunk with quantized activations equals the double dot of those same values to 1e-6 of
// Σ|w·x̂| (only the final fp32 scaling rounds).
template <typename B> void checkIntType(quant::Type type, int64_t cols) {
    const int64_t rows = 4, nChunks = cols / cm::kChunk;
    const HostMatrix h = makeMatrix(type, rows, cols, 41u + uint32_t(type));
    std::vector<float> x = randomFloats(size_t(cols), 7, 3.0f);
    for (int j = 0; j < cm::kChunk; ++j) x[size_t(j)] *= 1e-3f; // a chunk of tiny values
    for (int64_t r = 0; r < rows; ++r) {
        const B* row = reinterpret_cast<const B*>(h.bytes.data() + uint64_t(r) * h.m.rowBytes);
        for (int64_t c = 0; c < nChunks; ++c) {
            cm::IntChunk w;
            cm::intRowChunk(row, c, w);
            float ref[cm::kChunk];
            cm::dequantRowChunk(row, c, ref);
            for (int j = 0; j < cm::kChunk; ++j)
                QVERIFY2(cm::intChunkValue(w, j) == ref[j],
                         qPrintable(QStringLiteral("%1 row %2 chunk %3 elem %4: %5 vs %6")
                                        .arg(quant::typeName(type).data()).arg(r).arg(c).arg(j)
                                        .arg(cm::intChunkValue(w, j)).arg(ref[j])));
            cm::ActChunk a;
            cm::quantizeActChunk(x.data() + c * cm::kChunk, a);
            double exact = 0.0, mag = 0.0;
            for (int j = 0; j < cm::kChunk; ++j) {
                const double xv = double(a.d) * cm::packedByte(a.q, j);
                exact += double(ref[j]) * xv;
                mag += std::fabs(double(ref[j]) * xv);
            }
            const float got = cm::dotIntChunk(w, a);
            QVERIFY2(std::fabs(got - exact) <= 1e-6 * mag + 1e-12,
                     qPrintable(QStringLiteral("%1 chunk dot %2 vs %3").arg(quant::typeName(type).data())
                                    .arg(got).arg(exact)));
        }
    }
}

// A matrix of random blocks of a grid i-quant or ternary type (test::randomGridBlocks).
HostMatrix randomGridMatrix(quant::Type type, int64_t rows, int64_t cols, uint32_t seed) {
    HostMatrix h;
    h.bytes = test::randomGridBlocks(type, rows, cols, seed);
    const uint64_t rowBytes = quant::rowBytes(type, uint64_t(cols)).value();
    if (type == quant::Type::IQ1_M) {
        const auto* first = reinterpret_cast<const quant::BlockIQ1_M*>(h.bytes.data());
        if (!std::isfinite(quant::halfToFloat(quant::iq1mScaleBits(*first)))) qFatal("IQ1_M scale not placed");
    }
    h.m = {h.bytes.data(), type, cols, rows, rowBytes};
    return h;
}

// dequantRowChunk of a grid/ternary type equals quant's reference row bit for bit.
template <typename B> void checkGridType(quant::Type type) {
    const int64_t rows = 6, cols = 4 * quant::kQKK;
    const HostMatrix h = randomGridMatrix(type, rows, cols, 5u + uint32_t(type));
    std::vector<float> ref(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        QVERIFY(cpu::ref::getRow(h.m, r, ref.data()).isOk());
        const std::vector<float> got = chunkedRow<B>(h, r);
        for (int64_t i = 0; i < cols; ++i)
            QVERIFY2(std::memcmp(&got[size_t(i)], &ref[size_t(i)], sizeof(float)) == 0,
                     qPrintable(QStringLiteral("%1 row %2 elem %3: %4 vs %5")
                                    .arg(quant::typeName(type).data()).arg(r).arg(i)
                                    .arg(got[size_t(i)]).arg(ref[size_t(i)])));
    }
}

} // namespace

class TestCudaMath : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Every half value, and random floats with round-to-nearest-even, match quant's conversions.
    void fp16Conversions() {
        for (uint32_t h = 0; h < 65536; ++h) {
            const float a = cm::fp16ToFloat(uint16_t(h)), b = quant::f16ToF32(uint16_t(h));
            QVERIFY((std::isnan(a) && std::isnan(b)) || quant::floatBits(a) == quant::floatBits(b));
        }
        std::mt19937 rng(5);
        std::uniform_int_distribution<uint32_t> bits;
        for (int i = 0; i < 200000; ++i) {
            const float f = quant::bitsFloat(bits(rng));
            if (std::isnan(f)) continue;
            QCOMPARE(cm::floatToFp16(f), quant::f32ToF16(f));
        }
    }

    // Relative 1e-5 against the double-accumulating reference.
    void rmsNorm() {
        for (int64_t n : {1, 31, 4097}) {
            const auto x = randomFloats(size_t(n), 1, 3.0f), w = randomFloats(size_t(n), 2);
            std::vector<float> got(static_cast<size_t>(n)), ref(static_cast<size_t>(n));
            cm::rmsNormRow(x.data(), w.data(), got.data(), n, 1e-5f);
            cpu::ref::rmsNorm(x.data(), w.data(), ref.data(), n, 1e-5f);
            for (int64_t i = 0; i < n; ++i)
                QVERIFY(std::fabs(got[size_t(i)] - ref[size_t(i)]) <= 1e-5f * std::fabs(ref[size_t(i)]) + 1e-6f);
        }
    }

    // Both pairings, partial rotation, freq factors; absolute 2e-3 (float angles at pos <= 5000
    // vs the reference's double angles).
    void rope() {
        for (bool neox : {false, true})
            for (int nRot : {128, 64, 32})
                for (bool factors : {false, true})
                    for (int64_t pos : {0, 1, 17, 999, 5000}) {
                        const int headDim = 128;
                        auto x = randomFloats(size_t(headDim), uint32_t(pos + nRot));
                        std::vector<float> ref = x;
                        std::vector<float> ff = randomFloats(size_t(nRot / 2), 3);
                        for (float& f : ff) f = 1.0f + 4.0f * std::fabs(f);
                        cm::ropeHead(x.data(), headDim, nRot, pos, 500000.0f, neox, factors ? ff.data() : nullptr);
                        cpu::ref::rope(ref.data(), headDim, nRot, pos, 500000.0f, neox,
                                       factors ? std::span<const float>(ff) : std::span<const float>());
                        for (int i = 0; i < headDim; ++i)
                            QVERIFY2(std::fabs(x[size_t(i)] - ref[size_t(i)]) <= 2e-3f,
                                     qPrintable(QStringLiteral("neox %1 nRot %2 pos %3 dim %4: %5 vs %6")
                                                    .arg(neox).arg(nRot).arg(pos).arg(i)
                                                    .arg(x[size_t(i)]).arg(ref[size_t(i)])));
                    }
    }

    // Linear position scaling (RopeParams::freqScale, as Gemma 3's global layers use it): the angle
    // against rope_math.h's ropeAngles (double) for each pair: cos and sin to 2e-3 absolute.
    void ropeScaled() {
        for (float freqScale : {1.0f, 0.125f, 0.25f})
            for (bool factors : {false, true})
                for (int64_t pos : {0, 1, 17, 999, 5000}) {
                    graph::RopeParams p;
                    p.nRot = 64;
                    p.freqBase = 1000000.0f;
                    p.freqScale = freqScale;
                    std::vector<float> ff = randomFloats(size_t(p.nRot / 2), 3);
                    for (float& f : ff) f = 1.0f + 4.0f * std::fabs(f);
                    std::vector<double> cs(size_t(p.nRot));
                    cpu::ropeAngles(p, pos, factors ? ff.data() : nullptr, cs.data());
                    for (int i = 0; i < p.nRot / 2; ++i) {
                        const float theta = cm::ropeThetaScaled(pos, i, p.nRot, p.freqBase,
                                                                factors ? ff[size_t(i)] : 1.0f, freqScale);
                        QVERIFY2(std::fabs(std::cos(theta) - cs[size_t(2 * i)]) <= 2e-3 &&
                                     std::fabs(std::sin(theta) - cs[size_t(2 * i + 1)]) <= 2e-3,
                                 qPrintable(QStringLiteral("scale %1 pos %2 pair %3").arg(freqScale).arg(pos).arg(i)));
                        if (freqScale == 1.0f)
                            QCOMPARE(theta, cm::ropeTheta(pos, i, p.nRot, p.freqBase, factors ? ff[size_t(i)] : 1.0f));
                    }
                }
    }

    // YaRN and the attention temperature: the kernel's angle and magnitude (math::ropeThetaYarn,
    // ropeTemperature, the node's range from cpu::ropeYarnRange) against ropeAngles' (cos, sin) ·
    // magnitude for each pair, 2e-3 absolute (relative to the magnitude).
    void ropeYarn() {
        for (float ext : {0.0f, 1.0f})
            for (float temp : {0.0f, 0.1f})
                for (int64_t pos : {0, 3, 17, 999, 5000}) {
                    graph::RopeParams p;
                    p.nRot = 64;
                    p.freqBase = 1000000.0f;
                    p.freqScale = 0.025f;
                    p.extFactor = ext;
                    p.attnFactor = 1.0f;
                    p.nCtxOrig = 4096;
                    p.tempScale = temp;
                    p.tempLength = 8;
                    std::vector<double> cs(size_t(p.nRot));
                    cpu::ropeAngles(p, pos, nullptr, cs.data());
                    double low = 0.0, high = 0.0;
                    cpu::ropeYarnRange(p, low, high);
                    float magnitude = p.attnFactor;
                    if (ext != 0.0f) magnitude *= float(1.0 + 0.1 * std::log(1.0 / double(p.freqScale)));
                    magnitude *= cm::ropeTemperature(pos, p.tempScale, p.tempLength);
                    for (int i = 0; i < p.nRot / 2; ++i) {
                        const float theta = cm::ropeThetaYarn(pos, i, p.nRot, p.freqBase, 1.0f, p.freqScale, ext,
                                                              float(low), float(high));
                        const double tol = 2e-3 * magnitude;
                        QVERIFY2(std::fabs(std::cos(theta) * magnitude - cs[size_t(2 * i)]) <= tol &&
                                     std::fabs(std::sin(theta) * magnitude - cs[size_t(2 * i + 1)]) <= tol,
                                 qPrintable(QStringLiteral("ext %1 temp %2 pos %3 pair %4").arg(ext).arg(temp).arg(pos).arg(i)));
                    }
                }
    }

    // A Q8_0 K/V block as the device quantizes it equals the reference quantizer's bytes (the CPU's
    // K/V store), ties and zeros included.
    void q8KvBlocks() {
        std::vector<float> x = randomFloats(32 * 64, 21, 3.0f);
        for (int j = 0; j < 32; ++j) x[size_t(32 + j)] = 0.0f;                 // an all-zero block
        for (int j = 0; j < 32; ++j) x[size_t(64 + j)] = float(j - 16) * 0.5f; // halves: ties
        for (int b = 0; b < 64; ++b) {
            quant::BlockQ8_0 want{}, got{};
            QVERIFY(quant::quantizeRow(quant::Type::Q8_0, x.data() + 32 * b, &want, 32).isOk());
            cm::quantizeQ8Block(x.data() + 32 * b, got);
            QVERIFY2(std::memcmp(&want, &got, sizeof want) == 0, qPrintable(QStringLiteral("block %1").arg(b)));
        }
    }

    // Tanh GELU and GeGLU against ref_ops over [-12, 12]: relative 1e-5 plus 1e-6.
    void gelu() {
        const int64_t n = 4001;
        auto g = randomFloats(size_t(n), 17, 12.0f);
        g[0] = 0.0f;
        g[1] = -12.0f;
        g[2] = 12.0f;
        const auto u = randomFloats(size_t(n), 18, 3.0f);
        std::vector<float> ref(static_cast<size_t>(n));
        cpu::ref::geglu(g.data(), u.data(), ref.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const float r = cpu::ref::gelu(g[size_t(i)]);
            QVERIFY2(std::fabs(cm::gelu(g[size_t(i)]) - r) <= 1e-5f * std::fabs(r) + 1e-6f,
                     qPrintable(QStringLiteral("gelu(%1): %2 vs %3").arg(g[size_t(i)]).arg(cm::gelu(g[size_t(i)])).arg(r)));
            const float got = cm::geglu(g[size_t(i)], u[size_t(i)]);
            QVERIFY(std::fabs(got - ref[size_t(i)]) <= 1e-5f * std::fabs(ref[size_t(i)]) + 1e-6f);
        }
    }

    // Soft-capping as the reference computes it (cap · tanh(v / cap) in double): relative 1e-6
    // plus 1e-6; a cap of 0 leaves the value alone.
    void softcap() {
        const auto v = randomFloats(4001, 19, 200.0f);
        for (float cap : {30.0f, 50.0f, 1.0f})
            for (float x : v) {
                const double ref = double(cap) * std::tanh(double(x) / double(cap));
                QVERIFY(std::fabs(cm::softcap(x, cap) - ref) <= 1e-6 * std::fabs(ref) + 1e-6);
            }
        QCOMPARE(cm::softcap(123.5f, 0.0f), 123.5f);
    }

    // The first key position of a sliding window: (pos - window, pos] as the reference walks it.
    void attentionWindow() {
        QCOMPARE(cm::attentionFirst(100, 0), int64_t(0));
        QCOMPARE(cm::attentionFirst(0, 8), int64_t(0));
        QCOMPARE(cm::attentionFirst(7, 8), int64_t(0));
        QCOMPARE(cm::attentionFirst(8, 8), int64_t(1));
        QCOMPARE(cm::attentionFirst(36, 8), int64_t(29));
        QCOMPARE(cm::attentionFirst(5000, 512), int64_t(4489));
        for (int window : {1, 8, 512})
            for (int64_t pos : {0, 3, 511, 512, 9999}) {
                const int64_t first = cm::attentionFirst(pos, window);
                QCOMPARE(pos - first + 1, std::min<int64_t>(window, pos + 1)); // keys attended to
            }
    }

    // A windowed, soft-capped attention row as the kernel computes it (q pre-scaled, scores
    // capped, streamed into 4 warp states, merged) against the reference's formula in double.
    void cappedWindowAttention() {
        const int D = 64, window = 8;
        const float scale = 0.125f, cap = 5.0f;
        for (int64_t pos : {0, 5, 7, 8, 40}) {
            const auto q = randomFloats(size_t(D), uint32_t(pos) + 1, 3.0f);
            const auto k = randomFloats(size_t((pos + 1) * D), uint32_t(pos) + 2, 3.0f);
            const auto v = randomFloats(size_t(pos + 1), uint32_t(pos) + 3);
            cm::OnlineSoftmax st[4];
            double acc[4] = {};
            const int64_t first = cm::attentionFirst(pos, window);
            for (int w = 0; w < 4; ++w)
                for (int64_t p = first + w; p <= pos; p += 4) {
                    float s = 0.0f;
                    for (int d = 0; d < D; ++d) s += q[size_t(d)] * scale * k[size_t(p * D + d)];
                    s = cm::softcap(s, cap);
                    float scaleOld = 0, weight = 0;
                    cm::softmaxAdd(st[w], s, scaleOld, weight);
                    acc[w] = acc[w] * scaleOld + weight * v[size_t(p)];
                }
            for (int w = 1; w < 4; ++w) {
                float a = 0, b = 0;
                cm::softmaxMerge(st[0], st[w], a, b);
                acc[0] = acc[0] * a + acc[w] * b;
            }
            std::vector<double> sc;
            double mx = -INFINITY;
            for (int64_t p = std::max<int64_t>(0, pos - window + 1); p <= pos; ++p) {
                double dot = 0.0;
                for (int d = 0; d < D; ++d) dot += double(q[size_t(d)]) * double(k[size_t(p * D + d)]);
                const double s = double(cap) * std::tanh(double(float(dot) * scale) / double(cap));
                sc.push_back(s);
                mx = std::max(mx, s);
            }
            double sum = 0.0, ref = 0.0;
            for (size_t j = 0; j < sc.size(); ++j) sum += std::exp(sc[j] - mx);
            for (size_t j = 0; j < sc.size(); ++j)
                ref += std::exp(sc[j] - mx) / sum * v[size_t(std::max<int64_t>(0, pos - window + 1) + int64_t(j))];
            const double got = acc[0] / st[0].sum;
            QVERIFY2(std::fabs(got - ref) <= 1e-5, qPrintable(QStringLiteral("pos %1: %2 vs %3").arg(pos).arg(got).arg(ref)));
        }
    }

    // Relative 1e-6.
    void swiglu() {
        const int64_t n = 1001;
        const auto g = randomFloats(size_t(n), 7, 8.0f), u = randomFloats(size_t(n), 8, 2.0f);
        std::vector<float> ref(static_cast<size_t>(n));
        cpu::ref::swiglu(g.data(), u.data(), ref.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const float got = cm::swiglu(g[size_t(i)], u[size_t(i)]);
            QVERIFY(std::fabs(got - ref[size_t(i)]) <= 1e-6f * std::fabs(ref[size_t(i)]) + 1e-7f);
        }
    }

    // gpt-oss's gated unit (inputs beyond its limit of 7 too), sigmoid and softplus against the
    // reference's double formulas (ref_program.cpp), relative 1e-5.
    void gatedAndLogistic() {
        const int64_t n = 2001;
        const auto g = randomFloats(size_t(n), 11, 12.0f), u = randomFloats(size_t(n), 12, 12.0f);
        const auto x = randomFloats(size_t(n), 13, 30.0f);
        auto close = [](double got, double want) { return std::fabs(got - want) <= 1e-5 * std::fabs(want) + 1e-6; };
        for (int64_t i = 0; i < n; ++i) {
            const double gv = std::min(g[size_t(i)], 7.0f), uv = std::clamp(u[size_t(i)], -7.0f, 7.0f);
            const double oai = gv / (1.0 + std::exp(-1.702 * gv)) * (uv + 1.0);
            QVERIFY2(close(cm::swigluOai(g[size_t(i)], u[size_t(i)], 1.702f, 7.0f), oai), qPrintable(QString::number(i)));
            const double v = x[size_t(i)];
            QVERIFY(close(cm::sigmoid(x[size_t(i)]), 1.0 / (1.0 + std::exp(-v))));
            QVERIFY(close(cm::softplus(x[size_t(i)]), v > 20.0 ? v : std::log1p(std::exp(v))));
        }
        QCOMPARE(cm::softplus(25.0f), 25.0f);
    }

    // Scores streamed into 4 states (as the attention kernel's warps do), merged in order with an
    // empty state mixed in; the weighted sum of values matches softmax(scores)·values to 1e-5.
    void onlineSoftmax() {
        for (int n : {1, 3, 100, 2049}) {
            auto scores = randomFloats(size_t(n), uint32_t(n), 20.0f);
            const auto values = randomFloats(size_t(n), uint32_t(n) + 1);
            cm::OnlineSoftmax st[5];
            double acc[5] = {};
            for (int i = 0; i < n; ++i) {
                float scaleOld = 0, weight = 0;
                cm::softmaxAdd(st[i % 4], scores[size_t(i)], scaleOld, weight);
                acc[i % 4] = acc[i % 4] * scaleOld + weight * values[size_t(i)];
            }
            for (int w = 1; w < 5; ++w) { // st[4] stays empty
                float a = 0, b = 0;
                cm::softmaxMerge(st[0], st[w], a, b);
                acc[0] = acc[0] * a + acc[w] * b;
            }
            std::vector<float> p = scores;
            cpu::ref::softmax(p.data(), n);
            double ref = 0.0;
            for (int i = 0; i < n; ++i) ref += double(p[size_t(i)]) * values[size_t(i)];
            const double got = acc[0] / st[0].sum;
            QVERIFY2(std::fabs(got - ref) <= 1e-5, qPrintable(QStringLiteral("n %1: %2 vs %3").arg(n).arg(got).arg(ref)));
        }
        // Two empty states merge into an empty one without NaN.
        cm::OnlineSoftmax a, b;
        float sa = 1, sb = 1;
        cm::softmaxMerge(a, b, sa, sb);
        QCOMPARE(sa, 0.0f);
        QCOMPARE(sb, 0.0f);
        QCOMPARE(a.sum, 0.0f);
    }

    // Chunk dequantization equals the reference bit for bit; chunk dot products match in double.
    void weightChunks() {
        checkType<cm::F32Chunk>(quant::Type::F32, 96);
        checkType<cm::F16Chunk>(quant::Type::F16, 96);
        // F32/F16 rows of any length: the last chunk is partial and reads zeros past the end.
        checkType<cm::F32Chunk>(quant::Type::F32, 172);
        checkType<cm::F16Chunk>(quant::Type::F16, 8);
        checkType<cm::F16Chunk>(quant::Type::F16, 45);
        checkType<cm::BF16Chunk>(quant::Type::BF16, 96);
        checkType<cm::BF16Chunk>(quant::Type::BF16, 45);
        checkType<quant::BlockQ4_0>(quant::Type::Q4_0, 160);
        checkType<quant::BlockQ4_1>(quant::Type::Q4_1, 160);
        checkType<quant::BlockQ5_0>(quant::Type::Q5_0, 160);
        checkType<quant::BlockQ5_1>(quant::Type::Q5_1, 160);
        checkType<quant::BlockQ8_0>(quant::Type::Q8_0, 160);
        checkType<quant::BlockQ2_K>(quant::Type::Q2_K, 768);
        checkType<quant::BlockQ3_K>(quant::Type::Q3_K, 768);
        checkType<quant::BlockQ4_K>(quant::Type::Q4_K, 768);
        checkType<quant::BlockQ5_K>(quant::Type::Q5_K, 768);
        checkType<quant::BlockQ6_K>(quant::Type::Q6_K, 768);
        checkType<quant::BlockIQ4_NL>(quant::Type::IQ4_NL, 160);
        checkType<quant::BlockIQ4_XS>(quant::Type::IQ4_XS, 768);
        checkType<quant::BlockMXFP4>(quant::Type::MXFP4, 160);
        checkType<quant::BlockQ8_1>(quant::Type::Q8_1, 160);
        checkType<quant::BlockQ8_K>(quant::Type::Q8_K, 768);
    }
    // The grid i-quants and the ternary types on random blocks (their grids from quant::grids on
    // the host; on the device from the same codes), bit for bit against the reference rows.
    void gridAndTernaryChunks() {
        checkGridType<quant::BlockIQ2_XXS>(quant::Type::IQ2_XXS);
        checkGridType<quant::BlockIQ2_XS>(quant::Type::IQ2_XS);
        checkGridType<quant::BlockIQ2_S>(quant::Type::IQ2_S);
        checkGridType<quant::BlockIQ3_XXS>(quant::Type::IQ3_XXS);
        checkGridType<quant::BlockIQ3_S>(quant::Type::IQ3_S);
        checkGridType<quant::BlockIQ1_S>(quant::Type::IQ1_S);
        checkGridType<quant::BlockIQ1_M>(quant::Type::IQ1_M);
        checkGridType<quant::BlockTQ1_0>(quant::Type::TQ1_0);
        checkGridType<quant::BlockTQ2_0>(quant::Type::TQ2_0);
        // The device's copy of the grids (expanded from the same codes at compile time) holds
        // quant::grids' bytes.
        const cm::DeviceGrids g = cm::makeDeviceGrids();
        QVERIFY(std::memcmp(g.iq2xxs, quant::grids::kIq2xxs.data(), sizeof g.iq2xxs) == 0);
        QVERIFY(std::memcmp(g.iq2xs, quant::grids::kIq2xs.data(), sizeof g.iq2xs) == 0);
        QVERIFY(std::memcmp(g.iq2s, quant::grids::kIq2s.data(), sizeof g.iq2s) == 0);
        QVERIFY(std::memcmp(g.iq3xxs, quant::grids::kIq3xxs.data(), sizeof g.iq3xxs) == 0);
        QVERIFY(std::memcmp(g.iq3s, quant::grids::kIq3s.data(), sizeof g.iq3s) == 0);
        QVERIFY(std::memcmp(g.iq1s, quant::grids::kIq1s.data(), sizeof g.iq1s) == 0);
    }
    // dp4a's emulation: four signed byte products plus the accumulator, on random words.
    void dp4a() {
        std::mt19937 rng(5);
        for (int i = 0; i < 10000; ++i) {
            const auto a = int32_t(rng()), b = int32_t(rng()), c = int32_t(rng() % 100000) - 50000;
            int8_t ab[4], bb[4];
            std::memcpy(ab, &a, 4); // little-endian: byte k is bits 8k..8k+7
            std::memcpy(bb, &b, 4);
            int32_t want = c;
            for (int k = 0; k < 4; ++k) want += int32_t(ab[k]) * int32_t(bb[k]);
            QCOMPARE(cm::dp4a(a, b, c), want);
        }
        QCOMPARE(cm::dp4a(int32_t(0x80808080u), int32_t(0x80808080u), 0), 4 * 128 * 128);
    }

    // Activation chunks: |q| <= 127 with the largest value at ±127, each value within half a step
    // of x, the half sums exact, and a chunk of zeros all zero.
    void quantizeActivations() {
        for (float scale : {1.0f, 1e-4f, 300.0f}) {
            const std::vector<float> x = randomFloats(size_t(cm::kChunk), uint32_t(scale * 10), scale);
            cm::ActChunk a;
            cm::quantizeActChunk(x.data(), a);
            float amax = 0.0f;
            for (float v : x) amax = std::max(amax, std::fabs(v));
            QCOMPARE(a.d, amax / 127.0f);
            int sums[2] = {0, 0}, peak = 0;
            for (int j = 0; j < cm::kChunk; ++j) {
                const int q = cm::packedByte(a.q, j);
                QVERIFY(q >= -127 && q <= 127);
                QVERIFY(std::fabs(a.d * float(q) - x[size_t(j)]) <= 0.5001f * a.d);
                sums[j / 16] += q;
                peak = std::max(peak, std::abs(q));
            }
            QCOMPARE(peak, 127);
            QCOMPARE(a.sum[0], a.d * float(sums[0]));
            QCOMPARE(a.sum[1], a.d * float(sums[1]));
        }
        const std::vector<float> zeros(size_t(cm::kChunk), 0.0f);
        cm::ActChunk a;
        cm::quantizeActChunk(zeros.data(), a);
        QCOMPARE(a.d, 0.0f);
        for (int k = 0; k < cm::kChunk / 4; ++k) QCOMPARE(a.q[k], 0);
        QCOMPARE(a.sum[0] + a.sum[1], 0.0f);
    }

    void intChunks() {
        checkIntType<quant::BlockQ4_0>(quant::Type::Q4_0, 160);
        checkIntType<quant::BlockQ4_1>(quant::Type::Q4_1, 160);
        checkIntType<quant::BlockQ5_0>(quant::Type::Q5_0, 160);
        checkIntType<quant::BlockQ5_1>(quant::Type::Q5_1, 160);
        checkIntType<quant::BlockQ8_0>(quant::Type::Q8_0, 160);
        checkIntType<quant::BlockQ2_K>(quant::Type::Q2_K, 768);
        checkIntType<quant::BlockQ3_K>(quant::Type::Q3_K, 768);
        checkIntType<quant::BlockQ4_K>(quant::Type::Q4_K, 768);
        checkIntType<quant::BlockQ5_K>(quant::Type::Q5_K, 768);
        checkIntType<quant::BlockQ6_K>(quant::Type::Q6_K, 768);
        checkIntType<quant::BlockIQ4_NL>(quant::Type::IQ4_NL, 160);
        checkIntType<quant::BlockIQ4_XS>(quant::Type::IQ4_XS, 768);
        checkIntType<quant::BlockMXFP4>(quant::Type::MXFP4, 160);
    }
};

QTEST_GUILESS_MAIN(TestCudaMath)
#include "test_cuda_math.moc"
