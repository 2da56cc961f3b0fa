// The CUDA kernels' own entry points, which a graph cannot choose between (every op of every
// device against the reference is the self-test's, run per device by tests/device): matVec (batch
// 1..8, 9 refused), matMul (WMMA prefill) and matMulInt8 (dp4a prefill, its activation chunks bit
// for bit and its products against the host emulation and the unquantized reference) for each
// weight type (the grid i-quants and TQ as random blocks), and a row gather replayed from a CUDA
// graph with new indices. Tolerances are stated at each check. Without a usable CUDA
// driver/device every test skips (QSKIP) with the runtime's reason.
#include "backend/cpu/ref_ops.h"
#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/int8_math.h"
#include "hearth/quant.h"
#include "random_blocks.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
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
    cuda::KernelMatrix dev;
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
