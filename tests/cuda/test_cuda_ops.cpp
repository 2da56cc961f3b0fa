// Every CUDA op against the CPU scalar reference (backend/cpu/ref_ops, cpu::PagedKvStore) on random
// inputs with odd sizes: matVec (batch 1..8), matMul (WMMA prefill) and matMulInt8 (dp4a prefill,
// against the host emulation and the unquantized reference) for each weight type (the grid
// i-quants and TQ as random blocks), getRows,
// rmsNorm (also in place), addRows, rope (both pairings, partial rotation, freq factors, linear
// scaling), swiglu, geglu, scale, softcap, add, softmax, row gathers (also replayed from a CUDA
// graph), KV writes into paged blocks and paged attention (decode batches of many sequences,
// prefill chunks, both mixed, GQA, sliding windows and soft-capped scores).
// Tolerances are stated at each check. Without a usable CUDA driver/device every test skips
// (QSKIP) with the runtime's reason.
#include "backend/cpu/paged_kv.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/rope_math.h"
#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/int8_math.h"
#include "hearth/quant.h"
#include "random_blocks.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

using namespace hearth;

namespace {

std::vector<float> randomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

template <typename T> cuda::DeviceBuffer upload(const std::vector<T>& v) {
    auto buf = cuda::DeviceBuffer::allocate(v.size() * sizeof(T));
    if (!buf) qFatal("%s", buf.status().toString().c_str());
    if (auto s = cuda::copyToDevice(buf->data(), v.data(), v.size() * sizeof(T)); !s)
        qFatal("%s", s.toString().c_str());
    return std::move(buf).value();
}

cuda::DeviceBuffer deviceFloats(size_t n) {
    auto buf = cuda::DeviceBuffer::allocate(n * sizeof(float));
    if (!buf) qFatal("%s", buf.status().toString().c_str());
    return std::move(buf).value();
}

template <typename T> std::vector<T> download(const cuda::DeviceBuffer& buf, size_t n) {
    std::vector<T> v(n);
    if (auto s = cuda::copyToHost(v.data(), buf.data(), n * sizeof(T)); !s) qFatal("%s", s.toString().c_str());
    return v;
}

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        const ::hearth::Status s_ = (expr);                                                        \
        QVERIFY2(s_.isOk(), s_.toString().c_str());                                                \
    } while (0)

// A quantized weight on the host (the oracle's view) and its device copy.
struct TestMatrix {
    std::vector<uint8_t> bytes;
    cpu::ref::Matrix host;
    cuda::DeviceBuffer buffer;
    cuda::DeviceMatrix dev;
};

TestMatrix makeMatrix(quant::Type type, int64_t rows, int64_t cols, uint32_t seed) {
    TestMatrix m;
    const uint64_t rowBytes = quant::rowBytes(type, uint64_t(cols)).value();
    m.bytes.resize(rowBytes * uint64_t(rows));
    if (test::isGridOrTernary(type)) {
        m.bytes = test::randomGridBlocks(type, rows, cols, seed);
    } else {
        const auto src = randomFloats(size_t(rows * cols), seed);
        for (int64_t r = 0; r < rows; ++r)
            if (!quant::quantizeRow(type, src.data() + r * cols, m.bytes.data() + uint64_t(r) * rowBytes, cols).isOk())
                qFatal("quantizeRow failed");
    }
    m.host = {m.bytes.data(), type, cols, rows, rowBytes};
    m.buffer = upload(m.bytes);
    m.dev = {m.buffer.data(), type, cols, rows, rowBytes};
    return m;
}

struct TypeCase {
    quant::Type type;
    int64_t cols;
};
const TypeCase kTypes[] = {{quant::Type::F32, 96},   {quant::Type::F16, 160},  {quant::Type::Q4_0, 160},
                           {quant::Type::Q8_0, 224}, {quant::Type::Q4_K, 512}, {quant::Type::Q5_K, 768},
                           {quant::Type::Q6_K, 512}, {quant::Type::F32, 172},  {quant::Type::F16, 45},
                           {quant::Type::F16, 8},    {quant::Type::BF16, 96},  {quant::Type::BF16, 45},
                           {quant::Type::Q4_1, 160}, {quant::Type::Q5_0, 224}, {quant::Type::Q5_1, 160},
                           {quant::Type::Q2_K, 512}, {quant::Type::Q3_K, 768}, {quant::Type::IQ4_NL, 160},
                           {quant::Type::IQ4_XS, 512}, {quant::Type::MXFP4, 160}, {quant::Type::Q8_1, 160},
                           {quant::Type::Q8_K, 512}, {quant::Type::IQ2_XXS, 512}, {quant::Type::IQ2_XS, 512},
                           {quant::Type::IQ2_S, 512}, {quant::Type::IQ3_XXS, 512}, {quant::Type::IQ3_S, 768},
                           {quant::Type::IQ1_S, 512}, {quant::Type::IQ1_M, 512}, {quant::Type::TQ1_0, 512},
                           {quant::Type::TQ2_0, 768}};

// Reference y[n][rows] and Σ|w·x| per output (the scale of the rounding error).
void referenceMatMul(const TestMatrix& m, const std::vector<float>& x, int64_t n, std::vector<float>& y,
                     std::vector<double>& mag) {
    const int64_t rows = m.host.rows, cols = m.host.cols;
    y.assign(size_t(n * rows), 0.0f);
    mag.assign(size_t(n * rows), 0.0);
    std::vector<float> w(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        if (!cpu::ref::getRow(m.host, r, w.data()).isOk()) qFatal("getRow failed");
        for (int64_t k = 0; k < n; ++k) {
            double acc = 0.0, a = 0.0;
            for (int64_t c = 0; c < cols; ++c) {
                acc += double(w[size_t(c)]) * x[size_t(k * cols + c)];
                a += std::fabs(double(w[size_t(c)]) * x[size_t(k * cols + c)]);
            }
            y[size_t(k * rows + r)] = float(acc);
            mag[size_t(k * rows + r)] = a;
        }
    }
}

void compareMatMul(const TestMatrix& m, int64_t n, bool prefill, double relTol) {
    const int64_t rows = m.host.rows, cols = m.host.cols;
    const auto x = randomFloats(size_t(n * cols), uint32_t(n * 7 + cols));
    const auto dx = upload(x);
    auto dy = deviceFloats(size_t(n * rows));
    const Status s = prefill ? cuda::matMul(m.dev, dx.as<float>(), dy.as<float>(), n, nullptr)
                             : cuda::matVec(m.dev, dx.as<float>(), dy.as<float>(), int(n), nullptr);
    QVERIFY2(s.isOk(), s.toString().c_str());
    const auto got = download<float>(dy, size_t(n * rows));
    std::vector<float> ref;
    std::vector<double> mag;
    referenceMatMul(m, x, n, ref, mag);
    for (size_t i = 0; i < got.size(); ++i)
        QVERIFY2(std::fabs(double(got[i]) - ref[i]) <= relTol * mag[i] + 1e-5,
                 qPrintable(QStringLiteral("%1 n %2 %3 out %4: %5 vs %6")
                                .arg(quant::typeName(m.host.type).data()).arg(n)
                                .arg(prefill ? "matMul" : "matVec").arg(i).arg(got[i]).arg(ref[i])));
}

// Chunk c of row r of a quantized host matrix as the int8 kernel unpacks it.
cuda::math::IntChunk hostIntChunk(const TestMatrix& m, int64_t r, int64_t c) {
    const uint8_t* row = m.bytes.data() + uint64_t(r) * m.host.rowBytes;
    cuda::math::IntChunk w{};
    auto as = [&](auto block) { cuda::math::intRowChunk(reinterpret_cast<const decltype(block)*>(row), c, w); };
    switch (m.host.type) {
    case quant::Type::Q4_0: as(quant::BlockQ4_0{}); break;
    case quant::Type::Q4_1: as(quant::BlockQ4_1{}); break;
    case quant::Type::Q5_0: as(quant::BlockQ5_0{}); break;
    case quant::Type::Q5_1: as(quant::BlockQ5_1{}); break;
    case quant::Type::Q8_0: as(quant::BlockQ8_0{}); break;
    case quant::Type::Q2_K: as(quant::BlockQ2_K{}); break;
    case quant::Type::Q3_K: as(quant::BlockQ3_K{}); break;
    case quant::Type::Q4_K: as(quant::BlockQ4_K{}); break;
    case quant::Type::Q5_K: as(quant::BlockQ5_K{}); break;
    case quant::Type::Q6_K: as(quant::BlockQ6_K{}); break;
    case quant::Type::IQ4_NL: as(quant::BlockIQ4_NL{}); break;
    case quant::Type::IQ4_XS: as(quant::BlockIQ4_XS{}); break;
    case quant::Type::MXFP4: as(quant::BlockMXFP4{}); break;
    default: qFatal("no int8 view of this type");
    }
    return w;
}

} // namespace

class TestCudaOps : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Without a usable driver or device every test skips with the runtime's reason.
    void initTestCase() {
        const auto count = cuda::deviceCount();
        if (!count.isOk()) QSKIP(("no usable CUDA device/driver: " + count.status().toString()).c_str());
    }

    void devices() {
        auto list = cuda::listDevices();
        QVERIFY2(list.isOk(), list.status().toString().c_str());
        for (const cuda::DeviceInfo& d : *list)
            std::printf("cuda device %d: %s, cc %d.%d, %d SMs, %.1f / %.1f GiB free\n", d.index, d.name.c_str(),
                        d.ccMajor, d.ccMinor, d.smCount, double(d.freeBytes) / (1 << 30),
                        double(d.totalBytes) / (1 << 30));
        QVERIFY(!list->empty());
    }

    // fp32 accumulation over at most 768 products: 1e-4 of Σ|w·x|.
    void matVec() {
        for (const TypeCase& tc : kTypes) {
            const TestMatrix m = makeMatrix(tc.type, 67, tc.cols, uint32_t(tc.type) + 1);
            for (int n : {1, 3, 8}) compareMatMul(m, n, false, 1e-4);
        }
        const TestMatrix m = makeMatrix(quant::Type::Q4_0, 3, 64, 1);
        QVERIFY(!cuda::matVec(m.dev, nullptr, nullptr, 9, nullptr).isOk()); // batch > 8 refused
    }

    // fp16 activations and weights on tensor cores (each rounded by <= 2^-11): 4e-3 of Σ|w·x|.
    void matMul() {
        for (const TypeCase& tc : kTypes) {
            const TestMatrix m = makeMatrix(tc.type, 130, tc.cols, uint32_t(tc.type) + 11);
            for (int64_t n : {1, 33, 70}) compareMatMul(m, n, true, 4e-3);
        }
    }

    // Int8 prefill. The device's activation chunks equal the host's quantizeActChunk bit for bit;
    // the products equal Σ dotIntChunk on the host to 1e-5 of Σ|w·x̂| (fp32 summation order) and
    // the unquantized reference within Σ|w| * step/2 (each activation moves by at most half its
    // chunk's step) plus 1e-4 of Σ|w·x|.
    void matMulInt8() {
        namespace cm = cuda::math;
        for (const TypeCase& tc : kTypes) {
            if (!cuda::int8TypeSupported(tc.type)) continue;
            const int64_t rows = 130, cols = tc.cols, nc = cols / cm::kChunk;
            const TestMatrix m = makeMatrix(tc.type, rows, cols, uint32_t(tc.type) + 31);
            for (int64_t n : {1, 33, 70}) {
                auto x = randomFloats(size_t(n * cols), uint32_t(n + cols), 2.0f);
                for (int j = 0; j < cm::kChunk; ++j) x[size_t(j)] *= 100.0f; // chunks of unlike scale
                if (nc > 1)
                    for (int j = cm::kChunk; j < 2 * cm::kChunk; ++j) x[size_t(j)] = 0.0f; // and of zeros
                const auto dx = upload(x);
                auto dq = cuda::DeviceBuffer::allocate(size_t(n * nc) * sizeof(cm::ActChunk));
                QVERIFY(dq.isOk());
                auto dy = deviceFloats(size_t(n * rows));
                auto* xq = static_cast<cm::ActChunk*>(dq->data());
                CHECK_OK(cuda::quantizeActivations(dx.as<float>(), n, cols, xq, nullptr));
                CHECK_OK(cuda::matMulInt8(m.dev, xq, dy.as<float>(), n, nullptr));
                const auto got = download<float>(dy, size_t(n * rows));
                const auto gotQ = download<cm::ActChunk>(*dq, size_t(n * nc));

                std::vector<cm::ActChunk> hq(size_t(n * nc));
                for (int64_t i = 0; i < n * nc; ++i) {
                    cm::quantizeActChunk(x.data() + i * cm::kChunk, hq[size_t(i)]);
                    QVERIFY(std::memcmp(hq[size_t(i)].q, gotQ[size_t(i)].q, sizeof hq[0].q) == 0);
                    QCOMPARE(gotQ[size_t(i)].d, hq[size_t(i)].d);
                    QCOMPARE(gotQ[size_t(i)].sum[0], hq[size_t(i)].sum[0]);
                    QCOMPARE(gotQ[size_t(i)].sum[1], hq[size_t(i)].sum[1]);
                }
                std::vector<float> ref;
                std::vector<double> mag;
                referenceMatMul(m, x, n, ref, mag);
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t k = 0; k < n; ++k) {
                        double emu = 0.0, emuMag = 0.0, bound = 0.0;
                        for (int64_t c = 0; c < nc; ++c) {
                            const cm::IntChunk w = hostIntChunk(m, r, c);
                            const cm::ActChunk& a = hq[size_t(k * nc + c)];
                            emu += cm::dotIntChunk(w, a);
                            for (int j = 0; j < cm::kChunk; ++j) {
                                const double wv = cm::intChunkValue(w, j);
                                emuMag += std::fabs(wv * a.d * cm::packedByte(a.q, j));
                                bound += std::fabs(wv) * a.d * 0.5;
                            }
                        }
                        const size_t i = size_t(k * rows + r);
                        QVERIFY2(std::fabs(got[i] - emu) <= 1e-5 * emuMag + 1e-6,
                                 qPrintable(QStringLiteral("%1 n %2 out %3: %4 vs host emulation %5")
                                                .arg(quant::typeName(tc.type).data()).arg(n).arg(i).arg(got[i]).arg(emu)));
                        QVERIFY2(std::fabs(got[i] - ref[i]) <= bound * 1.001 + 1e-4 * mag[i] + 1e-5,
                                 qPrintable(QStringLiteral("%1 n %2 out %3: %4 vs reference %5")
                                                .arg(quant::typeName(tc.type).data()).arg(n).arg(i).arg(got[i]).arg(ref[i])));
                    }
            }
        }
        const TestMatrix f16 = makeMatrix(quant::Type::F16, 3, 64, 1);
        QVERIFY(!cuda::int8TypeSupported(quant::Type::F16));
        auto y = deviceFloats(3);
        const Status refused =
            cuda::matMulInt8(f16.dev, static_cast<const cm::ActChunk*>(f16.dev.data), y.as<float>(), 1, nullptr);
        QCOMPARE(refused.code(), ErrorCode::Unsupported);
    }

    // Same values as the reference dequantizer up to fused multiply-adds: 1e-6 of the row's max.
    void getRows() {
        for (const TypeCase& tc : kTypes) {
            const TestMatrix m = makeMatrix(tc.type, 41, tc.cols, uint32_t(tc.type) + 21);
            const std::vector<int32_t> ids = {0, 40, 7, 7, 19};
            const auto dIds = upload(ids);
            auto dOut = deviceFloats(ids.size() * size_t(tc.cols));
            CHECK_OK(cuda::getRows(m.dev, dIds.as<int32_t>(), int64_t(ids.size()), dOut.as<float>(), nullptr));
            const auto got = download<float>(dOut, ids.size() * size_t(tc.cols));
            std::vector<float> ref(size_t(tc.cols));
            for (size_t i = 0; i < ids.size(); ++i) {
                QVERIFY(cpu::ref::getRow(m.host, ids[i], ref.data()).isOk());
                float maxAbs = 0.0f;
                for (float v : ref) maxAbs = std::max(maxAbs, std::fabs(v));
                for (int64_t c = 0; c < tc.cols; ++c)
                    QVERIFY(std::fabs(got[i * size_t(tc.cols) + size_t(c)] - ref[size_t(c)]) <= 1e-6f * maxAbs);
            }
        }
    }

    // Relative 1e-5.
    void rmsNorm() {
        // Model rows (4097 wide), and per-head Q/K norm rows (37 x 64) normalized in place.
        for (auto [rows, n, inPlace] : {std::tuple<int64_t, int64_t, bool>{3, 4097, false}, {37, 64, true}}) {
            const auto x = randomFloats(size_t(rows * n), 1, 3.0f), w = randomFloats(size_t(n), 2);
            auto dx = upload(x);
            const auto dw = upload(w);
            auto dy = deviceFloats(size_t(rows * n));
            float* out = inPlace ? dx.as<float>() : dy.as<float>();
            CHECK_OK(cuda::rmsNorm(dx.as<float>(), dw.as<float>(), out, rows, n, 1e-5f, nullptr));
            const auto got = download<float>(inPlace ? dx : dy, size_t(rows * n));
            std::vector<float> ref(static_cast<size_t>(n));
            for (int64_t r = 0; r < rows; ++r) {
                cpu::ref::rmsNorm(x.data() + r * n, w.data(), ref.data(), n, 1e-5f);
                for (int64_t i = 0; i < n; ++i)
                    QVERIFY(std::fabs(got[size_t(r * n + i)] - ref[size_t(i)]) <= 1e-5f * std::fabs(ref[size_t(i)]) + 1e-6f);
            }
        }
    }

    // Bias rows: exact.
    void addRows() {
        const int64_t rows = 5, dim = 333;
        const auto x = randomFloats(size_t(rows * dim), 41), b = randomFloats(size_t(dim), 42);
        auto dx = upload(x);
        const auto db = upload(b);
        CHECK_OK(cuda::addRows(dx.as<float>(), db.as<float>(), rows, dim, nullptr));
        const auto got = download<float>(dx, x.size());
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t d = 0; d < dim; ++d)
                QCOMPARE(got[size_t(r * dim + d)], x[size_t(r * dim + d)] + b[size_t(d)]);
    }

    // Absolute 2e-3 (float angles at positions up to 5000) against rope_math.h's double angles.
    void rope() {
        const int64_t nTokens = 5;
        const int nHeads = 4, headDim = 128;
        const std::vector<int32_t> pos = {0, 1, 77, 1234, 5000};
        const auto dPos = upload(pos);
        for (bool neox : {false, true})
            for (int nRot : {128, 64})
                for (bool factors : {false, true})
                    for (float freqScale : {1.0f, 0.125f}) {
                    const auto x = randomFloats(size_t(nTokens * nHeads * headDim), uint32_t(nRot + neox));
                    std::vector<float> ff = randomFloats(size_t(nRot / 2), 3);
                    for (float& f : ff) f = 1.0f + 4.0f * std::fabs(f);
                    auto dx = upload(x);
                    const auto dff = upload(ff);
                    cuda::RopeParams p;
                    p.nHeads = nHeads;
                    p.headDim = headDim;
                    p.nRot = nRot;
                    p.freqBase = 500000.0f;
                    p.neox = neox;
                    p.freqScale = freqScale;
                    p.freqFactors = factors ? dff.as<float>() : nullptr;
                    CHECK_OK(cuda::rope(dx.as<float>(), dPos.as<int32_t>(), nTokens, p, nullptr));
                    const auto got = download<float>(dx, x.size());
                    std::vector<float> ref = x;
                    graph::RopeParams rp;
                    rp.nRot = nRot;
                    rp.neox = neox;
                    rp.freqBase = 500000.0f;
                    rp.freqScale = freqScale;
                    std::vector<double> cs(static_cast<size_t>(nRot));
                    for (int64_t t = 0; t < nTokens; ++t) {
                        cpu::ropeAngles(rp, pos[size_t(t)], factors ? ff.data() : nullptr, cs.data());
                        for (int h = 0; h < nHeads; ++h)
                            cpu::ropeRotate(ref.data() + (t * nHeads + h) * headDim, nRot / 2, neox, cs.data());
                    }
                    for (size_t i = 0; i < x.size(); ++i) QVERIFY(std::fabs(got[i] - ref[i]) <= 2e-3f);
                }
    }

    // Relative 1e-5 (device expf).
    void swigluAdd() {
        const int64_t n = 100003;
        const auto g = randomFloats(size_t(n), 7, 8.0f), u = randomFloats(size_t(n), 8, 2.0f);
        const auto dg = upload(g), du = upload(u);
        auto dy = deviceFloats(static_cast<size_t>(n));
        CHECK_OK(cuda::swiglu(dg.as<float>(), du.as<float>(), dy.as<float>(), n, nullptr));
        auto got = download<float>(dy, size_t(n));
        std::vector<float> ref(static_cast<size_t>(n));
        cpu::ref::swiglu(g.data(), u.data(), ref.data(), n);
        for (int64_t i = 0; i < n; ++i)
            QVERIFY(std::fabs(got[size_t(i)] - ref[size_t(i)]) <= 1e-5f * std::fabs(ref[size_t(i)]) + 1e-6f);
        CHECK_OK(cuda::add(dg.as<float>(), du.as<float>(), dy.as<float>(), n, nullptr));
        got = download<float>(dy, size_t(n));
        for (int64_t i = 0; i < n; ++i) QCOMPARE(got[size_t(i)], g[size_t(i)] + u[size_t(i)]);
    }

    // GeGLU relative 1e-5 (device tanhf); scale exact; softcap relative 1e-6 plus 1e-6 of the
    // reference's double tanh; the outputs may alias the input.
    void gegluScaleSoftcap() {
        const int64_t n = 100003;
        const auto g = randomFloats(size_t(n), 17, 8.0f), u = randomFloats(size_t(n), 18, 2.0f);
        const auto dg = upload(g), du = upload(u);
        auto dy = deviceFloats(static_cast<size_t>(n));
        CHECK_OK(cuda::geglu(dg.as<float>(), du.as<float>(), dy.as<float>(), n, nullptr));
        auto got = download<float>(dy, size_t(n));
        std::vector<float> ref(static_cast<size_t>(n));
        cpu::ref::geglu(g.data(), u.data(), ref.data(), n);
        for (int64_t i = 0; i < n; ++i)
            QVERIFY(std::fabs(got[size_t(i)] - ref[size_t(i)]) <= 1e-5f * std::fabs(ref[size_t(i)]) + 1e-6f);
        CHECK_OK(cuda::scale(dg.as<float>(), 33.9411255f, dy.as<float>(), n, nullptr));
        got = download<float>(dy, size_t(n));
        for (int64_t i = 0; i < n; ++i) QCOMPARE(got[size_t(i)], g[size_t(i)] * 33.9411255f);
        CHECK_OK(cuda::scale(dy.as<float>(), 10.0f, dy.as<float>(), n, nullptr)); // in place
        got = download<float>(dy, size_t(n));
        for (int64_t i = 0; i < n; ++i) QCOMPARE(got[size_t(i)], (g[size_t(i)] * 33.9411255f) * 10.0f);
        CHECK_OK(cuda::softcap(dy.as<float>(), 30.0f, dy.as<float>(), n, nullptr));
        got = download<float>(dy, size_t(n));
        for (int64_t i = 0; i < n; ++i) {
            const double r = 30.0 * std::tanh(double((g[size_t(i)] * 33.9411255f) * 10.0f) / 30.0);
            QVERIFY(std::fabs(got[size_t(i)] - r) <= 1e-6 * std::fabs(r) + 1e-6);
        }
        QVERIFY(!cuda::softcap(dy.as<float>(), 0.0f, dy.as<float>(), n, nullptr).isOk()); // cap must be > 0
    }

    // Absolute 1e-6.
    void softmax() {
        const int64_t rows = 3, n = 1000;
        const auto x = randomFloats(size_t(rows * n), 9, 10.0f);
        auto dx = upload(x);
        CHECK_OK(cuda::softmax(dx.as<float>(), rows, n, nullptr));
        const auto got = download<float>(dx, x.size());
        std::vector<float> ref = x;
        for (int64_t r = 0; r < rows; ++r) cpu::ref::softmax(ref.data() + r * n, n);
        for (size_t i = 0; i < x.size(); ++i) QVERIFY(std::fabs(got[i] - ref[i]) <= 1e-6f);
    }

    void attention_data() {
        QTest::addColumn<bool>("f16");
        QTest::addColumn<int>("headDim");
        QTest::addColumn<QString>("runs"); // "firstPos:nTokens" per sequence
        QTest::addColumn<int>("window");   // sliding window (0: none)
        QTest::addColumn<float>("softcap"); // score soft-capping (0: none)
        QTest::newRow("f32 decode d128") << false << 128 << "40:1" << 0 << 0.0f;
        QTest::newRow("f16 decode d80") << true << 80 << "100:1" << 0 << 0.0f;
        QTest::newRow("f32 prefill d64") << false << 64 << "0:37" << 0 << 0.0f;
        QTest::newRow("f16 prefill chunk d128") << true << 128 << "21:17" << 0 << 0.0f;
        QTest::newRow("f16 decode batch of 5 d64") << true << 64 << "40:1,0:1,17:1,63:1,5:1" << 0 << 0.0f;
        QTest::newRow("f32 decodes beside a prefill d96") << false << 96 << "33:1,9:12,70:1" << 0 << 0.0f;
        QTest::newRow("f32 prefill d64, window 8") << false << 64 << "0:37" << 8 << 0.0f;
        QTest::newRow("f16 mixed d256, window 5, softcap 2") << true << 256 << "33:1,9:12,70:1" << 5 << 2.0f;
        QTest::newRow("f32 decode batch d128, softcap 1") << false << 128 << "40:1,0:1,17:1" << 0 << 1.0f;
    }

    // KV writes (int32 slots, K and V one cache at a time) equal cpu::PagedKvStore's conversion
    // exactly; attention outputs match the reference softmax over those stored keys/values (within
    // the window, scores soft-capped) to 1e-4 absolute. Several sequences share
    // one launch: each has its own shuffled blocks, and their tokens are interleaved in the batch.
    void attention() {
        QFETCH(bool, f16);
        QFETCH(int, headDim);
        QFETCH(QString, runs);
        QFETCH(int, window);
        QFETCH(float, softcap);
        const int nHeads = 8, nKvHeads = 2, blockSize = 16, numBlocks = 32;
        const int64_t rowSize = int64_t(nKvHeads) * headDim;
        const KvType kvType = f16 ? KvType::F16 : KvType::F32;
        auto store = cpu::PagedKvStore::create(1, numBlocks, blockSize, nKvHeads, headDim, kvType);
        QVERIFY(store.isOk());

        // Sequence s: positions [0, firstPos + nTokens) written, queries at the last nTokens.
        struct Seq {
            int firstPos = 0, nTokens = 0, tableStart = 0;
            std::vector<int32_t> slotIds;
        };
        std::vector<Seq> seqs;
        std::vector<int32_t> perm(numBlocks), tables;
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), std::mt19937(4));
        std::vector<int32_t> allSlots;
        for (const QString& run : runs.split(',')) {
            Seq sq;
            sq.firstPos = run.section(':', 0, 0).toInt();
            sq.nTokens = run.section(':', 1, 1).toInt();
            const int total = sq.firstPos + sq.nTokens, blocks = (total + blockSize - 1) / blockSize;
            sq.tableStart = int(tables.size());
            QVERIFY(tables.size() + size_t(blocks) <= perm.size());
            tables.insert(tables.end(), perm.begin() + ptrdiff_t(tables.size()),
                          perm.begin() + ptrdiff_t(tables.size()) + blocks);
            for (int p = 0; p < total; ++p)
                sq.slotIds.push_back(tables[size_t(sq.tableStart + p / blockSize)] * blockSize + p % blockSize);
            allSlots.insert(allSlots.end(), sq.slotIds.begin(), sq.slotIds.end());
            seqs.push_back(std::move(sq));
        }
        const int64_t totalRows = int64_t(allSlots.size());
        const auto k = randomFloats(size_t(totalRows * rowSize), 31), v = randomFloats(size_t(totalRows * rowSize), 32);
        for (int64_t r = 0; r < totalRows; ++r) {
            store->writeKey(0, allSlots[size_t(r)], k.data() + r * rowSize);
            store->writeValue(0, allSlots[size_t(r)], v.data() + r * rowSize);
        }
        const size_t elemBytes = f16 ? 2 : 4, cacheElems = size_t(numBlocks) * blockSize * size_t(rowSize);
        auto dk = cuda::DeviceBuffer::allocate(cacheElems * elemBytes);
        auto dv = cuda::DeviceBuffer::allocate(cacheElems * elemBytes);
        QVERIFY(dk.isOk() && dv.isOk());
        cuda::PagedKvView view;
        view.k = dk->data();
        view.v = dv->data();
        view.type = f16 ? cuda::KvFormat::F16 : cuda::KvFormat::F32;
        view.numBlocks = numBlocks;
        view.blockSize = blockSize;
        view.nKvHeads = nKvHeads;
        view.headDim = headDim;
        const auto dkIn = upload(k), dvIn = upload(v), dSlots = upload(allSlots), dTables = upload(tables);
        const int64_t nSlots = int64_t(numBlocks) * blockSize;
        CHECK_OK(cuda::kvWrite(view.k, view.type, nSlots, rowSize, dkIn.as<float>(), dSlots.as<int32_t>(), totalRows, nullptr));
        CHECK_OK(cuda::kvWrite(view.v, view.type, nSlots, rowSize, dvIn.as<float>(), dSlots.as<int32_t>(), totalRows, nullptr));

        // The device cache holds what the CPU store holds, slot by slot.
        std::vector<uint8_t> rawK(cacheElems * elemBytes), rawV(cacheElems * elemBytes);
        CHECK_OK(cuda::copyToHost(rawK.data(), dk->data(), rawK.size()));
        CHECK_OK(cuda::copyToHost(rawV.data(), dv->data(), rawV.size()));
        auto elem = [&](const std::vector<uint8_t>& raw, int64_t i) {
            if (f16) {
                uint16_t h;
                std::memcpy(&h, raw.data() + size_t(i) * 2, 2);
                return quant::f16ToF32(h);
            }
            float f;
            std::memcpy(&f, raw.data() + size_t(i) * 4, 4);
            return f;
        };
        std::vector<float> stored(static_cast<size_t>(rowSize));
        for (int64_t slot : allSlots) {
            store->readKey(0, slot, stored.data());
            for (int64_t e = 0; e < rowSize; ++e) QCOMPARE(elem(rawK, slot * rowSize + e), stored[size_t(e)]);
            store->readValue(0, slot, stored.data());
            for (int64_t e = 0; e < rowSize; ++e) QCOMPARE(elem(rawV, slot * rowSize + e), stored[size_t(e)]);
        }

        // Batch order interleaves the sequences: their first query tokens, then their second, ...
        std::vector<std::pair<int, int>> tokens; // (sequence, position)
        for (int t = 0;; ++t) {
            const size_t before = tokens.size();
            for (size_t sq = 0; sq < seqs.size(); ++sq)
                if (t < seqs[sq].nTokens) tokens.emplace_back(int(sq), seqs[sq].firstPos + t);
            if (tokens.size() == before) break;
        }
        const int nTokens = int(tokens.size());
        std::vector<int32_t> info; // per token: position, offset of its block table (graph::StepInput::AttnInfo)
        for (auto [sq, p] : tokens) {
            info.push_back(p);
            info.push_back(seqs[size_t(sq)].tableStart);
        }
        const auto q = randomFloats(size_t(nTokens) * nHeads * size_t(headDim), 33, 2.0f);
        const auto dq = upload(q), dInfo = upload(info);
        auto dout = deviceFloats(q.size());
        cuda::AttentionArgs a;
        a.q = dq.as<float>();
        a.out = dout.as<float>();
        a.tables = dTables.as<int32_t>();
        a.info = dInfo.as<int32_t>();
        a.nTokens = nTokens;
        a.nHeads = nHeads;
        a.scale = 1.0f / std::sqrt(float(headDim));
        a.window = window;
        a.softcap = softcap;
        CHECK_OK(cuda::pagedAttention(view, a, nullptr));
        const auto got = download<float>(dout, q.size());

        const int group = nHeads / nKvHeads;
        std::vector<float> keys(static_cast<size_t>(rowSize)), values(static_cast<size_t>(rowSize));
        for (int t = 0; t < nTokens; ++t) {
            const Seq& sq = seqs[size_t(tokens[size_t(t)].first)];
            const int64_t pos = tokens[size_t(t)].second;
            const int64_t first = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0, n = pos - first + 1;
            for (int h = 0; h < nHeads; ++h) {
                const float* qh = q.data() + (size_t(t) * nHeads + size_t(h)) * size_t(headDim);
                const int64_t off = int64_t(h / group) * headDim;
                std::vector<float> s(static_cast<size_t>(n));
                for (int64_t j = 0; j < n; ++j) {
                    store->readKey(0, sq.slotIds[size_t(first + j)], keys.data());
                    double d = 0.0;
                    for (int i = 0; i < headDim; ++i) d += double(qh[i]) * keys[size_t(off + i)];
                    double sc = d * a.scale;
                    if (softcap > 0.0f) sc = double(softcap) * std::tanh(sc / double(softcap));
                    s[size_t(j)] = float(sc);
                }
                cpu::ref::softmax(s.data(), n);
                std::vector<double> o(static_cast<size_t>(headDim), 0.0);
                for (int64_t j = 0; j < n; ++j) {
                    store->readValue(0, sq.slotIds[size_t(first + j)], values.data());
                    for (int i = 0; i < headDim; ++i) o[size_t(i)] += double(s[size_t(j)]) * values[size_t(off + i)];
                }
                for (int i = 0; i < headDim; ++i) {
                    const float g = got[(size_t(t) * nHeads + size_t(h)) * size_t(headDim) + size_t(i)];
                    QVERIFY2(std::fabs(g - o[size_t(i)]) <= 1e-4,
                             qPrintable(QStringLiteral("token %1 head %2 dim %3: %4 vs %5")
                                            .arg(t).arg(h).arg(i).arg(g).arg(o[size_t(i)])));
                }
            }
        }
    }

    // Row gathers copy exactly; a graph captured from a gather replays with new row indices.
    void gatherRowsAndGraphReplay() {
        const int64_t dim = 77, nRows = 9;
        const auto x = randomFloats(size_t(nRows * dim), 41);
        const auto dx = upload(x);
        std::vector<int32_t> rows = {8, 0, 3};
        auto dRows = upload(rows);
        auto dout = deviceFloats(rows.size() * size_t(dim));
        auto stream = cuda::Stream::create();
        QVERIFY(stream.isOk());
        CHECK_OK(cuda::Graph::beginCapture(stream->handle()));
        const Status enq = cuda::gatherRows(dx.as<float>(), dRows.as<int32_t>(), int64_t(rows.size()), dim,
                                            dout.as<float>(), stream->handle());
        if (!enq.isOk()) cuda::Graph::abortCapture(stream->handle());
        CHECK_OK(enq);
        auto graph = cuda::Graph::endCapture(stream->handle());
        QVERIFY2(graph.isOk(), graph.status().toString().c_str());
        for (const std::vector<int32_t>& pick : {std::vector<int32_t>{8, 0, 3}, std::vector<int32_t>{2, 2, 7}}) {
            CHECK_OK(cuda::copyToDevice(dRows.data(), pick.data(), pick.size() * sizeof(int32_t), stream->handle()));
            CHECK_OK(graph->launch(stream->handle()));
            CHECK_OK(stream->synchronize());
            const auto got = download<float>(dout, pick.size() * size_t(dim));
            for (size_t r = 0; r < pick.size(); ++r)
                for (int64_t e = 0; e < dim; ++e)
                    QCOMPARE(got[r * size_t(dim) + size_t(e)], x[size_t(pick[r]) * size_t(dim) + size_t(e)]);
        }
    }
};

QTEST_GUILESS_MAIN(TestCudaOps)
#include "test_cuda_ops.moc"
