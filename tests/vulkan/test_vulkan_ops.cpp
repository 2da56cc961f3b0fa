// Every Vulkan op (backend::OpDevice) against the CPU scalar reference (backend/cpu/ref_ops,
// rope_math.h) on random inputs with odd sizes: matMul (decode matvec and tiled prefill) and
// getRows for each weight type, weights bound in ranges under a forced small binding limit,
// rmsNorm (with and without a weight), rope (both pairings, partial rotation, frequency factors,
// linear scaling, out of place), add, bias add, mul, scale, silu, gelu, softcap, swiglu, geglu, KV
// writes into paged blocks and paged attention (with a sliding window, score soft-capping, sinks);
// the mixture-of-experts ops: matMulId (shared and per-slot x, decode and tiled, in row ranges
// too), gather, weightedSum, softmax, topK / argsort (with ties) and gpt-oss's clamped swiglu.
// Tolerances are stated next to each check. Skips with a message when there is no Vulkan device.
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/rope_math.h"
#include "backend/op_device.h"
#include "backend/vulkan/vk_device.h"
#include "quant/half.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace hearth;

namespace {

// Every weight type the device kernels read.
const quant::Type kTypes[] = {quant::Type::F32,  quant::Type::F16,  quant::Type::BF16,   quant::Type::Q8_0,
                              quant::Type::Q8_1, quant::Type::Q8_K, quant::Type::Q4_0,   quant::Type::Q4_1,
                              quant::Type::Q5_0, quant::Type::Q5_1, quant::Type::Q2_K,   quant::Type::Q3_K,
                              quant::Type::Q4_K, quant::Type::Q5_K, quant::Type::Q6_K,   quant::Type::IQ4_NL,
                              quant::Type::IQ4_XS, quant::Type::MXFP4, quant::Type::TQ1_0, quant::Type::TQ2_0,
                              quant::Type::IQ1_S, quant::Type::IQ1_M, quant::Type::IQ2_XXS, quant::Type::IQ2_XS,
                              quant::Type::IQ2_S, quant::Type::IQ3_XXS, quant::Type::IQ3_S};

std::vector<float> randomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// A quantized matrix on the host (the oracle's view) and its device copy.
struct TestMatrix {
    std::vector<uint8_t> bytes;
    cpu::ref::Matrix host;
    std::unique_ptr<backend::Buffer> buffer;
    backend::ops::DeviceMatrix dev;
};

Result<TestMatrix> makeMatrix(backend::OpDevice& device, quant::Type type, int64_t rows, int64_t cols, uint32_t seed) {
    TestMatrix m;
    HEARTH_ASSIGN_OR_RETURN(const uint64_t rowBytes, quant::rowBytes(type, uint64_t(cols)));
    const std::vector<float> values = randomFloats(size_t(rows * cols), seed);
    m.bytes.resize(size_t(rowBytes * uint64_t(rows)));
    if (quant::typeInfo(type)->canQuantize) {
        HEARTH_RETURN_IF_ERROR(quant::quantizeRows(type, values.data(), m.bytes.data(), rows, cols));
    } else { // IQ1_S, IQ2_XXS, IQ2_XS: their quantizers need an importance vector (uniform here)
        const std::vector<float> ones(size_t(cols), 1.0f);
        for (int64_t r = 0; r < rows; ++r)
            HEARTH_RETURN_IF_ERROR(quant::quantizeRowWeighted(type, &values[size_t(r * cols)],
                                                              m.bytes.data() + uint64_t(r) * rowBytes, cols, ones.data()));
    }
    m.host = {m.bytes.data(), type, cols, rows, rowBytes};
    HEARTH_ASSIGN_OR_RETURN(m.buffer, device.allocate(m.bytes.size()));
    HEARTH_RETURN_IF_ERROR(m.buffer->write(0, m.bytes.data(), m.bytes.size()));
    m.dev = {m.buffer.get(), type, cols, rows, rowBytes};
    return m;
}

template <typename T>
std::unique_ptr<backend::Buffer> upload(backend::OpDevice& device, const std::vector<T>& v) {
    auto b = device.allocate(std::max<size_t>(1, v.size()) * sizeof(T), true);
    if (!b) return nullptr;
    if (!(*b)->write(0, v.data(), v.size() * sizeof(T)).isOk()) return nullptr;
    return std::move(*b);
}

std::vector<float> download(const backend::Buffer& b, size_t n) {
    std::vector<float> v(n);
    if (!b.read(0, v.data(), n * sizeof(float)).isOk()) v.clear();
    return v;
}

double maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    double m = 0.0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

// y[n][rows] = W . x[t] by the scalar oracle, and per element the bound sum |w_i x_i|.
void referenceMatMul(const cpu::ref::Matrix& w, const std::vector<float>& x, int64_t n,
                     std::vector<float>& y, std::vector<float>& bound) {
    y.assign(size_t(n * w.rows), 0.0f);
    bound.assign(y.size(), 0.0f);
    std::vector<float> row(size_t(w.cols));
    for (int64_t r = 0; r < w.rows; ++r) {
        QVERIFY(cpu::ref::getRow(w, r, row.data()).isOk());
        for (int64_t t = 0; t < n; ++t) {
            double acc = 0.0, abs = 0.0;
            for (int64_t c = 0; c < w.cols; ++c) {
                acc += double(row[size_t(c)]) * x[size_t(t * w.cols + c)];
                abs += std::fabs(double(row[size_t(c)]) * x[size_t(t * w.cols + c)]);
            }
            y[size_t(t * w.rows + r)] = float(acc);
            bound[size_t(t * w.rows + r)] = float(abs);
        }
    }
}

} // namespace

class TestVulkanOps : public QObject {
    Q_OBJECT
    std::unique_ptr<backend::OpDevice> m_dev;
    std::string m_why;

    backend::OpDevice* device() { return m_dev.get(); }

    // Runs W.x on `dev` for n tokens and checks against the oracle: |d| <= 1e-4 * sum|w x| + 1e-5
    // (float sums in a different order; the weights are dequantized exactly alike).
    void checkMatMul(backend::OpDevice& dev, quant::Type type, int64_t rows, int64_t cols, int64_t n) {
        auto m = makeMatrix(dev, type, rows, cols, uint32_t(rows * 31 + cols));
        QVERIFY2(m.isOk(), m.status().toString().c_str());
        const std::vector<float> x = randomFloats(size_t(n * cols), 7);
        auto bx = upload(dev, x);
        auto by = dev.allocate(size_t(n * rows) * 4, true);
        QVERIFY(bx && by);
        Status s = dev.matMul(m->dev, *bx, n, **by);
        QVERIFY2(s.isOk(), s.toString().c_str());
        s = dev.run();
        QVERIFY2(s.isOk(), s.toString().c_str());
        std::vector<float> ref, bound;
        referenceMatMul(m->host, x, n, ref, bound);
        const std::vector<float> got = download(**by, ref.size());
        QCOMPARE(got.size(), ref.size());
        double worst = 0.0;
        for (size_t i = 0; i < ref.size(); ++i) {
            const double d = std::fabs(got[i] - ref[i]);
            worst = std::max(worst, d / (1e-4 * bound[i] + 1e-5));
        }
        QVERIFY2(worst <= 1.0, qPrintable(QStringLiteral("error / tolerance = %1").arg(worst)));
    }

    // y[n][k][rows] = W[ids[t][e]] . x[t][e or 0] on `dev` against the oracle (tolerance as
    // checkMatMul), the experts stacked as one matrix of nExp * rows rows.
    void checkMatMulId(backend::OpDevice& dev, quant::Type type, int64_t rows, int64_t cols, int64_t nExp,
                       int64_t k, int64_t n, bool shared) {
        auto m = makeMatrix(dev, type, nExp * rows, cols, uint32_t(rows * 17 + cols + nExp));
        QVERIFY2(m.isOk(), m.status().toString().c_str());
        const int64_t xSlots = shared ? 1 : k;
        const std::vector<float> x = randomFloats(size_t(n * xSlots * cols), 9);
        std::vector<int32_t> ids(size_t(n * k));
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 7 + i / size_t(k)) % size_t(nExp));
        auto bx = upload(dev, x);
        auto bi = upload(dev, ids);
        auto by = dev.allocate(size_t(n * k * rows) * 4, true);
        QVERIFY(bx && bi && by);
        const backend::ops::DeviceExperts e{m->dev, rows};
        std::unique_ptr<backend::Buffer> scratch;
        if (const uint64_t bytes = dev.matMulIdScratchBytes(nExp, k, n); bytes > 0) {
            auto b = dev.allocate(bytes, false);
            QVERIFY(b.isOk());
            scratch = std::move(*b);
        }
        Status s = dev.matMulId(e, *bx, xSlots, *bi, k, n, **by, scratch.get());
        QVERIFY2(s.isOk(), s.toString().c_str());
        s = dev.run();
        QVERIFY2(s.isOk(), s.toString().c_str());
        const std::vector<float> got = download(**by, size_t(n * k * rows));
        std::vector<float> row(static_cast<size_t>(cols));
        double worst = 0.0;
        for (int64_t t = 0; t < n; ++t)
            for (int64_t j = 0; j < k; ++j)
                for (int64_t r = 0; r < rows; ++r) {
                    QVERIFY(cpu::ref::getRow(m->host, ids[size_t(t * k + j)] * rows + r, row.data()).isOk());
                    const float* xr = &x[size_t((t * xSlots + (shared ? 0 : j)) * cols)];
                    double acc = 0.0, abs = 0.0;
                    for (int64_t c = 0; c < cols; ++c) {
                        acc += double(row[size_t(c)]) * xr[c];
                        abs += std::fabs(double(row[size_t(c)]) * xr[c]);
                    }
                    const double d = std::fabs(got[size_t((t * k + j) * rows + r)] - acc);
                    worst = std::max(worst, d / (1e-4 * abs + 1e-5));
                }
        QVERIFY2(worst <= 1.0, qPrintable(QStringLiteral("error / tolerance = %1").arg(worst)));
    }

private Q_SLOTS:
    void initTestCase() {
        auto dev = vk::createVulkanDevice();
        if (dev) {
            m_dev = std::move(*dev);
            const auto& i = m_dev->info();
            qInfo("Vulkan device: %s (%s), bind limit %llu, subgroup %u, fp16 %d, int8 %d", i.name.c_str(),
                  i.type.c_str(), static_cast<unsigned long long>(i.maxBindRange), i.subgroupSize, i.fp16, i.int8);
        } else {
            m_why = dev.status().toString();
        }
    }
    void init() {
        if (!m_dev) QSKIP(qPrintable(QStringLiteral("no Vulkan device: ") + QString::fromStdString(m_why)));
    }

    void matMul_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("cols");
        QTest::addColumn<int>("n");
        for (quant::Type t : kTypes) {
            const bool k = quant::typeInfo(t)->blockElems == 256;
            const bool block = quant::typeInfo(t)->blockElems == 32;
            const int cols = k ? 512 : block ? 96 : 75;
            for (int n : {1, 3, 8, 9, 21}) {
                const QString name = QString::fromLatin1(quant::typeName(t).data()) + QStringLiteral(" n=%1").arg(n);
                QTest::newRow(qPrintable(name)) << int(t) << 37 << cols << n;
            }
        }
    }
    void matMul() {
        QFETCH(int, type);
        QFETCH(int, rows);
        QFETCH(int, cols);
        QFETCH(int, n);
        checkMatMul(*device(), quant::Type(type), rows, cols, n);
    }

    // Weights larger than the binding limit: a device whose limit is forced to 4 KiB binds the
    // matrix in many row ranges (Q4_K rows are 288 bytes, so ~14 rows per range).
    void matMulInRanges() {
        vk::VulkanOptions o;
        o.maxWeightRange = 4096;
        auto small = vk::createVulkanDevice(o);
        QVERIFY2(small.isOk(), small.status().toString().c_str());
        checkMatMul(**small, quant::Type::Q4_K, 301, 512, 1);
        checkMatMul(**small, quant::Type::Q4_K, 301, 512, 12);
        checkMatMul(**small, quant::Type::Q8_0, 203, 96, 2); // 102-byte rows, unaligned starts
        // getRows over ranges too.
        auto m = makeMatrix(**small, quant::Type::Q6_K, 97, 256, 5);
        QVERIFY(m.isOk());
        const std::vector<int32_t> ids{96, 0, 50, 13, 96};
        auto bi = upload(**small, ids);
        auto bo = (*small)->allocate(ids.size() * 256 * 4, true);
        QVERIFY(bi && bo);
        QVERIFY((*small)->getRows(m->dev, *bi, int64_t(ids.size()), **bo).isOk());
        QVERIFY((*small)->run().isOk());
        std::vector<float> ref(ids.size() * 256);
        for (size_t t = 0; t < ids.size(); ++t) QVERIFY(cpu::ref::getRow(m->host, ids[t], &ref[t * 256]).isOk());
        QCOMPARE(maxAbsDiff(download(**bo, ref.size()), ref), 0.0);
    }

    void matMulId_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("n");
        QTest::addColumn<bool>("shared");
        for (quant::Type t : kTypes)
            for (int n : {1, 4, 13, 40}) // matvec_id up to 8 tokens, then matmul_id
                for (bool shared : {true, false}) {
                    const QString name = QString::fromLatin1(quant::typeName(t).data()) +
                                         QStringLiteral(" n=%1 %2").arg(n).arg(shared ? "shared x" : "x per slot");
                    QTest::newRow(qPrintable(name)) << int(t) << n << shared;
                }
    }
    void matMulId() {
        QFETCH(int, type);
        QFETCH(int, n);
        QFETCH(bool, shared);
        const uint32_t block = quant::typeInfo(quant::Type(type))->blockElems;
        checkMatMulId(*device(), quant::Type(type), 23, block == 256 ? 512 : block == 32 ? 96 : 75, 5, 3, n, shared);
    }

    // The matrix-vector kernels' shared-memory form, which devices without subgroup arithmetic
    // run (this device runs the subgroup form above when it has it).
    void matVecWithoutSubgroups() {
        vk::VulkanOptions o;
        o.subgroups = false;
        auto plain = vk::createVulkanDevice(o);
        QVERIFY2(plain.isOk(), plain.status().toString().c_str());
        QVERIFY(!(*plain)->info().subgroupArithmetic);
        for (quant::Type t : {quant::Type::F32, quant::Type::Q8_0, quant::Type::Q4_K, quant::Type::MXFP4,
                              quant::Type::IQ2_XXS}) {
            const uint32_t block = quant::typeInfo(t)->blockElems;
            const int cols = block == 256 ? 512 : block == 32 ? 96 : 75;
            checkMatMul(**plain, t, 37, cols, 1);
            checkMatMul(**plain, t, 37, cols, 3);
            checkMatMulId(**plain, t, 23, cols, 5, 3, 2, true);
            checkMatMulId(**plain, t, 23, cols, 5, 3, 1, false);
        }
    }

    // Stacked experts larger than the binding limit: bound in row ranges that split experts.
    void matMulIdInRanges() {
        vk::VulkanOptions o;
        o.maxWeightRange = 4096;
        auto small = vk::createVulkanDevice(o);
        QVERIFY2(small.isOk(), small.status().toString().c_str());
        checkMatMulId(**small, quant::Type::Q4_K, 37, 512, 6, 2, 3, true);    // 288-byte rows
        checkMatMulId(**small, quant::Type::Q4_K, 37, 512, 6, 2, 20, true);   // tiled
        checkMatMulId(**small, quant::Type::MXFP4, 29, 96, 8, 4, 2, false);  // 51-byte rows
        checkMatMulId(**small, quant::Type::MXFP4, 29, 96, 8, 4, 17, false); // tiled
        // 2 experts, 4 slots: each chosen twice per token, 40 pairs of 20 tokens for one expert.
        checkMatMulId(*device(), quant::Type::Q8_0, 19, 96, 2, 4, 20, false);
    }

    // Device buffers that are not mapped (as on a discrete GPU): weights, caches and activations
    // go through staging copies; results as with mapped memory.
    void stagingPath() {
        vk::VulkanOptions o;
        o.forceStaging = true;
        auto staged = vk::createVulkanDevice(o);
        QVERIFY2(staged.isOk(), staged.status().toString().c_str());
        checkMatMul(**staged, quant::Type::Q5_K, 45, 256, 3);
        checkMatMul(**staged, quant::Type::F16, 30, 75, 10);
        auto dev = (*staged)->allocate(1000);
        QVERIFY(dev.isOk());
        std::vector<uint8_t> in(1000), out(600);
        for (size_t i = 0; i < in.size(); ++i) in[i] = uint8_t(i * 7 + 3);
        QVERIFY((*dev)->write(0, in.data(), in.size()).isOk());
        QVERIFY((*dev)->read(400, out.data(), out.size()).isOk());
        QVERIFY(std::equal(out.begin(), out.end(), in.begin() + 400));
        // A recorded copy between unmapped buffers.
        auto other = (*staged)->allocate(1000);
        QVERIFY(other.isOk());
        QVERIFY((*staged)->copy(**dev, 100, **other, 500, 300).isOk());
        QVERIFY((*staged)->run().isOk());
        std::vector<uint8_t> copied(300);
        QVERIFY((*other)->read(500, copied.data(), copied.size()).isOk());
        QVERIFY(std::equal(copied.begin(), copied.end(), in.begin() + 100));
        QCOMPARE((*staged)->copy(**dev, 900, **other, 0, 200).code(), ErrorCode::OutOfRange);
    }

    void getRows_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("cols");
        for (quant::Type t : kTypes) {
            const uint32_t block = quant::typeInfo(t)->blockElems;
            QTest::newRow(quant::typeName(t).data()) << int(t) << (block == 256 ? 512 : block == 32 ? 96 : 67);
        }
    }
    // Exact: both sides dequantize the same bytes with the same float operations.
    void getRows() {
        QFETCH(int, type);
        QFETCH(int, cols);
        auto m = makeMatrix(*device(), quant::Type(type), 41, cols, 11);
        QVERIFY(m.isOk());
        const std::vector<int32_t> ids{40, 3, 3, 0, 17, 29, 1};
        auto bi = upload(*device(), ids);
        auto bo = device()->allocate(ids.size() * size_t(cols) * 4, true);
        QVERIFY(bi && bo);
        QVERIFY(device()->getRows(m->dev, *bi, int64_t(ids.size()), **bo).isOk());
        QVERIFY(device()->run().isOk());
        std::vector<float> ref(ids.size() * size_t(cols));
        for (size_t t = 0; t < ids.size(); ++t)
            QVERIFY(cpu::ref::getRow(m->host, ids[t], &ref[t * size_t(cols)]).isOk());
        const double d = maxAbsDiff(download(**bo, ref.size()), ref);
        QVERIFY2(d <= 1e-6, qPrintable(QString::number(d)));
    }

    // |d| <= 1e-5 (values of order 1; float vs double sum of squares).
    void rmsNorm() {
        const int64_t rows = 5, dim = 67;
        const auto x = randomFloats(size_t(rows * dim), 1, 3.0f), w = randomFloats(size_t(dim), 2);
        auto bx = upload(*device(), x), bw = upload(*device(), w);
        auto bo = device()->allocate(x.size() * 4, true);
        QVERIFY(bx && bw && bo);
        auto plain = device()->allocate(x.size() * 4, true);
        QVERIFY(plain.isOk());
        QVERIFY(device()->rmsNorm(*bx, bw.get(), rows, dim, 1e-5f, **bo).isOk());
        QVERIFY(device()->rmsNorm(*bx, nullptr, rows, dim, 1e-5f, **plain).isOk()); // without a weight
        QVERIFY(device()->rmsNorm(*bx, bw.get(), rows, dim, 1e-5f, *bx).isOk());    // in place
        QVERIFY(device()->run().isOk());
        std::vector<float> ref(x.size()), ones(size_t(dim), 1.0f), refPlain(x.size());
        for (int64_t r = 0; r < rows; ++r) {
            cpu::ref::rmsNorm(&x[size_t(r * dim)], w.data(), &ref[size_t(r * dim)], dim, 1e-5f);
            cpu::ref::rmsNorm(&x[size_t(r * dim)], ones.data(), &refPlain[size_t(r * dim)], dim, 1e-5f);
        }
        QVERIFY(maxAbsDiff(download(**bo, ref.size()), ref) <= 1e-5);
        QVERIFY(maxAbsDiff(download(**plain, ref.size()), refPlain) <= 1e-5);
        QVERIFY(maxAbsDiff(download(*bx, ref.size()), ref) <= 1e-5);
    }

    void rope_data() {
        QTest::addColumn<bool>("neox");
        QTest::addColumn<int>("headDim");
        QTest::addColumn<int>("nRot");
        QTest::addColumn<bool>("factors");
        QTest::addColumn<float>("freqScale");
        QTest::newRow("normal full") << false << 64 << 64 << false << 1.0f;
        QTest::newRow("neox full") << true << 64 << 64 << false << 1.0f;
        QTest::newRow("normal nRot<headDim") << false << 40 << 24 << false << 1.0f;
        QTest::newRow("neox nRot<headDim") << true << 40 << 24 << false << 1.0f;
        QTest::newRow("neox freq factors") << true << 64 << 64 << true << 1.0f;
        QTest::newRow("normal freq factors") << false << 8 << 8 << true << 1.0f;
        QTest::newRow("neox linear scaling") << true << 40 << 24 << false << 0.125f;
        QTest::newRow("normal scaling and factors") << false << 64 << 64 << true << 0.25f;
    }
    // |d| <= 2e-3: float angles at positions up to 1500 against double ones (rope_math.h, the
    // formula of every backend). Rotated in place and into a second buffer.
    void rope() {
        QFETCH(bool, neox);
        QFETCH(int, headDim);
        QFETCH(int, nRot);
        QFETCH(bool, factors);
        QFETCH(float, freqScale);
        const int nHeads = 3;
        const std::vector<int32_t> pos{0, 1, 17, 300, 1499};
        const int64_t n = int64_t(pos.size());
        const auto x = randomFloats(size_t(n * nHeads * headDim), 3);
        std::vector<float> freq;
        if (factors)
            for (int i = 0; i < nRot / 2; ++i) freq.push_back(1.0f + 0.37f * float(i % 5));
        auto bx = upload(*device(), x), bp = upload(*device(), pos), bf = upload(*device(), freq);
        auto bo = device()->allocate(x.size() * 4, true);
        QVERIFY(bx && bp && bf && bo);
        backend::ops::RopeParams p{n, nHeads, headDim, nRot, 10000.0f, neox, int(freq.size()), freqScale};
        QVERIFY(device()->rope(*bx, *bp, factors ? bf.get() : nullptr, p, **bo).isOk());
        QVERIFY(device()->rope(*bx, *bp, factors ? bf.get() : nullptr, p, *bx).isOk());
        QVERIFY(device()->run().isOk());
        graph::RopeParams rp;
        rp.nRot = nRot;
        rp.neox = neox;
        rp.freqBase = 10000.0f;
        rp.freqScale = freqScale;
        std::vector<float> ref = x;
        std::vector<double> cs(static_cast<size_t>(nRot));
        for (int64_t t = 0; t < n; ++t) {
            cpu::ropeAngles(rp, pos[size_t(t)], factors ? freq.data() : nullptr, cs.data());
            for (int h = 0; h < nHeads; ++h) cpu::ropeRotate(&ref[size_t((t * nHeads + h) * headDim)], nRot / 2, neox, cs.data());
        }
        const double d = maxAbsDiff(download(**bo, ref.size()), ref), inPlace = maxAbsDiff(download(*bx, ref.size()), ref);
        QVERIFY2(d <= 2e-3, qPrintable(QString::number(d)));
        QVERIFY2(inPlace <= 2e-3, qPrintable(QString::number(inPlace)));
    }

    // Exact for add, mul and scale; the others |d| <= 1e-5 (exp and tanh differ in the last bits;
    // values up to 4, soft cap 3 and 30).
    void elementwise() {
        using backend::ops::Binary;
        using backend::ops::Unary;
        const int64_t count = 1001, dim = 13;
        const size_t values = static_cast<size_t>(count);
        const auto a = randomFloats(values, 4, 4.0f), b = randomFloats(values, 5, 4.0f);
        auto ba = upload(*device(), a), bb = upload(*device(), b);
        QVERIFY(ba && bb);
        std::vector<std::unique_ptr<backend::Buffer>> outs;
        for (int i = 0; i < 11; ++i) {
            auto o = device()->allocate(values * 4, true);
            QVERIFY(o.isOk());
            outs.push_back(std::move(*o));
        }
        QVERIFY(device()->add(*ba, *bb, count, count, *outs[0]).isOk());
        QVERIFY(device()->add(*ba, *bb, count, dim, *outs[1]).isOk());
        QVERIFY(device()->swiglu(*ba, *bb, count, *outs[2]).isOk());
        QVERIFY(device()->binary(Binary::Mul, *ba, *bb, count, count, *outs[3]).isOk());
        QVERIFY(device()->binary(Binary::Mul, *ba, *bb, count, dim, *outs[4]).isOk());
        QVERIFY(device()->binary(Binary::Geglu, *ba, *bb, count, count, *outs[5]).isOk());
        QVERIFY(device()->unary(Unary::Scale, *ba, count, 0.37f, *outs[6]).isOk());
        QVERIFY(device()->unary(Unary::Silu, *ba, count, 0.0f, *outs[7]).isOk());
        QVERIFY(device()->unary(Unary::Gelu, *ba, count, 0.0f, *outs[8]).isOk());
        QVERIFY(device()->unary(Unary::Softcap, *ba, count, 3.0f, *outs[9]).isOk());
        QVERIFY(device()->unary(Unary::Softcap, *ba, count, 30.0f, *outs[10]).isOk());
        QVERIFY(device()->run().isOk());
        std::vector<std::vector<float>> ref(outs.size(), std::vector<float>(values));
        for (size_t i = 0; i < values; ++i) {
            ref[0][i] = a[i] + b[i];
            ref[1][i] = a[i] + b[i % size_t(dim)];
            ref[3][i] = a[i] * b[i];
            ref[4][i] = a[i] * b[i % size_t(dim)];
            ref[6][i] = a[i] * 0.37f;
            ref[7][i] = a[i] / (1.0f + std::exp(-a[i]));
            ref[8][i] = cpu::ref::gelu(a[i]);
            ref[9][i] = float(3.0 * std::tanh(double(a[i]) / 3.0));
            ref[10][i] = float(30.0 * std::tanh(double(a[i]) / 30.0));
        }
        cpu::ref::swiglu(a.data(), b.data(), ref[2].data(), count);
        cpu::ref::geglu(a.data(), b.data(), ref[5].data(), count);
        for (size_t k = 0; k < outs.size(); ++k) {
            const double d = maxAbsDiff(download(*outs[k], values), ref[k]);
            const bool exact = k == 0 || k == 1 || k == 3 || k == 4 || k == 6;
            QVERIFY2(exact ? d == 0.0 : d <= 1e-5, qPrintable(QStringLiteral("output %1: %2").arg(k).arg(d)));
        }
    }

    // KV rows land at their slots: exact for F32, within half-precision rounding (rel 2^-11) for F16.
    void kvWrite() {
        const int64_t rowSize = 2 * 20, nSlots = 64;
        const std::vector<int32_t> at{5, 63, 0, 17};
        const auto src = randomFloats(at.size() * size_t(rowSize), 6, 2.0f);
        auto bs = upload(*device(), src), bl = upload(*device(), at);
        auto c32 = device()->allocate(uint64_t(nSlots * rowSize) * 4), c16 = device()->allocate(uint64_t(nSlots * rowSize) * 2);
        QVERIFY(bs && bl && c32 && c16);
        QVERIFY(device()->kvWrite(*bs, *bl, int64_t(at.size()), rowSize, KvType::F32, **c32).isOk());
        QVERIFY(device()->kvWrite(*bs, *bl, int64_t(at.size()), rowSize, KvType::F16, **c16).isOk());
        QVERIFY(device()->run().isOk());
        const size_t cacheValues = static_cast<size_t>(nSlots * rowSize);
        std::vector<float> f32(cacheValues);
        std::vector<uint16_t> f16(cacheValues);
        QVERIFY((*c32)->read(0, f32.data(), f32.size() * 4).isOk());
        QVERIFY((*c16)->read(0, f16.data(), f16.size() * 2).isOk());
        int halfMismatches = 0;
        for (size_t t = 0; t < at.size(); ++t)
            for (int64_t j = 0; j < rowSize; ++j) {
                const float v = src[t * size_t(rowSize) + size_t(j)];
                const size_t k = size_t(at[t] * rowSize + j);
                QCOMPARE(f32[k], v);
                if (f16[k] != quant::floatToHalf(v)) ++halfMismatches;
                QVERIFY(std::fabs(quant::halfToFloat(f16[k]) - v) <= std::fabs(v) * 0x1p-11f + 1e-7f);
            }
        qInfo("F16 values differing from round-to-nearest-even: %d of %d", halfMismatches, int(src.size()));
    }

    void attention_data() {
        QTest::addColumn<int>("kv");
        QTest::addColumn<bool>("prefill");
        QTest::addColumn<int>("window");
        QTest::addColumn<float>("softcap");
        QTest::addColumn<bool>("sinks");
        QTest::newRow("f32 decode") << int(KvType::F32) << false << 0 << 0.0f << false;
        QTest::newRow("f16 decode") << int(KvType::F16) << false << 0 << 0.0f << false;
        QTest::newRow("f32 prefill chunk") << int(KvType::F32) << true << 0 << 0.0f << false;
        QTest::newRow("f16 prefill chunk") << int(KvType::F16) << true << 0 << 0.0f << false;
        QTest::newRow("f32 decode window 13") << int(KvType::F32) << false << 13 << 0.0f << false;
        QTest::newRow("f16 prefill window 70 softcap") << int(KvType::F16) << true << 70 << 0.5f << false;
        QTest::newRow("f32 prefill window 5 softcap") << int(KvType::F32) << true << 5 << 1.5f << false;
        QTest::newRow("f32 decode sinks") << int(KvType::F32) << false << 0 << 0.0f << true;
        QTest::newRow("f16 prefill window 8 sinks") << int(KvType::F16) << true << 8 << 0.0f << true;
    }
    // Two sequences with scattered blocks (70 positions over 5 blocks of 16, and 20 over 2), GQA
    // 8 query heads on 2 KV heads, headDim 40. Decode: the last position of each; prefill: a
    // causal chunk of 30 positions of the first. A window w > 0 limits a query at p to (p - w, p];
    // a soft cap c turns each score s into c tanh(s / c); a sink adds a score without a value per
    // head. Oracle: double softmax over the stored K/V (F16 rounded like the cache). |d| <= 2e-5.
    void attention() {
        QFETCH(int, kv);
        QFETCH(bool, prefill);
        QFETCH(int, window);
        QFETCH(float, softcap);
        QFETCH(bool, sinks);
        const KvType type = KvType(kv);
        const int nHead = 8, nHeadKv = 2, D = 40, bs = 16, rowSize = nHeadKv * D, nSlots = 7 * bs;
        const std::vector<int32_t> tables{3, 0, 5, 1, 6, 2, 4};
        const int lens[2] = {70, 20}, offsets[2] = {0, 5};
        auto slotOf = [&](int s, int p) { return tables[size_t(offsets[s] + p / bs)] * bs + p % bs; };
        // Fill the cache: every position of both sequences.
        std::vector<int32_t> slotList;
        for (int s = 0; s < 2; ++s)
            for (int p = 0; p < lens[s]; ++p) slotList.push_back(slotOf(s, p));
        auto kRows = randomFloats(slotList.size() * rowSize, 8), vRows = randomFloats(slotList.size() * rowSize, 9);
        if (type == KvType::F16)
            for (auto* rows : {&kRows, &vRows})
                for (float& f : *rows) f = quant::halfToFloat(quant::floatToHalf(f));
        const uint64_t cacheBytes = uint64_t(nSlots) * rowSize * (type == KvType::F16 ? 2 : 4);
        auto kc = device()->allocate(cacheBytes), vc = device()->allocate(cacheBytes);
        auto bk = upload(*device(), kRows), bv = upload(*device(), vRows), bsl = upload(*device(), slotList);
        QVERIFY(kc && vc && bk && bv && bsl);
        QVERIFY(device()->kvWrite(*bk, *bsl, int64_t(slotList.size()), rowSize, type, **kc).isOk());
        QVERIFY(device()->kvWrite(*bv, *bsl, int64_t(slotList.size()), rowSize, type, **vc).isOk());
        // Queries: (seq, pos).
        std::vector<std::pair<int, int>> queries;
        if (prefill)
            for (int p = 40; p < 70; ++p) queries.push_back({0, p});
        else
            queries = {{0, 69}, {1, 19}};
        std::vector<int32_t> info;
        for (auto [s, p] : queries) info.insert(info.end(), {p, offsets[s]});
        const int64_t n = int64_t(queries.size());
        const auto q = randomFloats(size_t(n * nHead * D), 10);
        auto bq = upload(*device(), q), bi = upload(*device(), info), bt = upload(*device(), tables);
        auto bo = device()->allocate(q.size() * 4, true);
        QVERIFY(bq && bi && bt && bo);
        const float scale = 1.0f / std::sqrt(float(D));
        const backend::ops::AttentionParams p{n, nHead, nHeadKv, D, bs, scale, type, window, softcap};
        const std::vector<float> sinkValues = randomFloats(size_t(nHead), 12, 2.0f);
        auto bsinks = upload(*device(), sinkValues);
        QVERIFY(bsinks);
        QVERIFY(device()->attention(*bq, **kc, **vc, *bi, *bt, sinks ? bsinks.get() : nullptr, p, **bo).isOk());
        const Status s = device()->run();
        QVERIFY2(s.isOk(), s.toString().c_str());
        // Oracle, reading K/V by (seq, pos) from the rows as written.
        auto rowIndex = [&](int seq, int pos) { return size_t(seq == 0 ? pos : lens[0] + pos); };
        std::vector<float> ref(q.size());
        for (int64_t t = 0; t < n; ++t) {
            const auto [seq, pos] = queries[size_t(t)];
            for (int h = 0; h < nHead; ++h) {
                const int kvh = h / (nHead / nHeadKv);
                const int first = window > 0 ? std::max(0, pos - window + 1) : 0;
                std::vector<double> sc(size_t(pos + 1), 0.0);
                double mx = sinks ? double(sinkValues[size_t(h)]) : -INFINITY;
                for (int j = first; j <= pos; ++j) {
                    double dot = 0.0;
                    for (int d = 0; d < D; ++d)
                        dot += double(q[size_t((t * nHead + h) * D + d)]) * kRows[rowIndex(seq, j) * rowSize + size_t(kvh * D + d)];
                    double score = dot * scale;
                    if (softcap > 0.0f) score = double(softcap) * std::tanh(score / double(softcap));
                    mx = std::max(mx, sc[size_t(j)] = score);
                }
                double sum = sinks ? std::exp(double(sinkValues[size_t(h)]) - mx) : 0.0;
                for (int j = first; j <= pos; ++j) sum += (sc[size_t(j)] = std::exp(sc[size_t(j)] - mx));
                for (int d = 0; d < D; ++d) {
                    double acc = 0.0;
                    for (int j = first; j <= pos; ++j) acc += sc[size_t(j)] * vRows[rowIndex(seq, j) * rowSize + size_t(kvh * D + d)];
                    ref[size_t((t * nHead + h) * D + d)] = float(acc / sum);
                }
            }
        }
        const double d = maxAbsDiff(download(**bo, ref.size()), ref);
        QVERIFY2(d <= 2e-5, qPrintable(QString::number(d)));
    }

    // The router and the expert mixing: gather and topK exact, the float math within 1e-5.
    void moeOps() {
        const int64_t rows = 5, width = 37, k = 4;
        std::vector<float> x = randomFloats(size_t(rows * width), 21, 4.0f);
        x[3] = x[7] = x[11]; // ties: index order
        std::vector<int32_t> ids(size_t(rows * k));
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 11) % size_t(width));
        const std::vector<float> y = randomFloats(size_t(rows * k * width), 22, 2.0f);
        const std::vector<float> w = randomFloats(size_t(rows * k), 23, 1.0f);
        const std::vector<float> up = randomFloats(size_t(rows * width), 24, 10.0f);
        std::vector<float> gate = randomFloats(size_t(rows * width), 25, 10.0f);
        auto bx = upload(*device(), x), bi = upload(*device(), ids), by = upload(*device(), y);
        auto bw = upload(*device(), w), bu = upload(*device(), up), bg = upload(*device(), gate);
        QVERIFY(bx && bi && by && bw && bu && bg);
        std::vector<std::unique_ptr<backend::Buffer>> outs;
        for (int i = 0; i < 6; ++i) {
            auto o = device()->allocate(size_t(rows * width) * 4, true);
            QVERIFY(o.isOk());
            outs.push_back(std::move(*o));
        }
        QVERIFY(device()->gather(*bx, *bi, rows, width, k, *outs[0]).isOk());
        QVERIFY(device()->weightedSum(*by, *bw, rows, k, width, *outs[1]).isOk());
        QVERIFY(device()->softmax(*bx, rows, width, 0.7f, *outs[2]).isOk());
        QVERIFY(device()->topK(*bx, rows, width, k, *outs[3]).isOk());
        QVERIFY(device()->topK(*bx, rows, width, width, *outs[4]).isOk());
        QVERIFY(device()->swigluOai(*bg, *bu, rows * width, 1.702f, 7.0f, *outs[5]).isOk());
        QVERIFY(device()->run().isOk());

        std::vector<float> gathered(size_t(rows * k)), mixed(size_t(rows * width)), soft(x.size()), oai(x.size());
        std::vector<int32_t> order(size_t(rows * width));
        for (int64_t r = 0; r < rows; ++r) {
            for (int64_t e = 0; e < k; ++e) gathered[size_t(r * k + e)] = x[size_t(r * width + ids[size_t(r * k + e)])];
            for (int64_t j = 0; j < width; ++j) {
                double acc = 0.0;
                for (int64_t e = 0; e < k; ++e) acc += double(w[size_t(r * k + e)]) * y[size_t((r * k + e) * width + j)];
                mixed[size_t(r * width + j)] = float(acc);
                soft[size_t(r * width + j)] = x[size_t(r * width + j)] * 0.7f;
            }
            cpu::ref::softmax(&soft[size_t(r * width)], width);
            int32_t* o = &order[size_t(r * width)];
            std::iota(o, o + width, 0);
            std::stable_sort(o, o + width, [&](int32_t a, int32_t b) { return x[size_t(r * width + a)] > x[size_t(r * width + b)]; });
        }
        for (size_t i = 0; i < oai.size(); ++i) {
            const double g = std::min(gate[i], 7.0f), u = std::clamp(up[i], -7.0f, 7.0f);
            oai[i] = float(g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0));
        }
        QCOMPARE(maxAbsDiff(download(*outs[0], gathered.size()), gathered), 0.0);
        QVERIFY(maxAbsDiff(download(*outs[1], mixed.size()), mixed) <= 1e-5);
        QVERIFY(maxAbsDiff(download(*outs[2], soft.size()), soft) <= 1e-6);
        std::vector<int32_t> top(size_t(rows * k)), all(order.size());
        QVERIFY(outs[3]->read(0, top.data(), top.size() * 4).isOk());
        QVERIFY(outs[4]->read(0, all.data(), all.size() * 4).isOk());
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t e = 0; e < k; ++e) QCOMPARE(top[size_t(r * k + e)], order[size_t(r * width + e)]);
        QVERIFY(all == order);
        const double d = maxAbsDiff(download(*outs[5], oai.size()), oai);
        QVERIFY2(d <= 1e-5 * 56.0, qPrintable(QString::number(d))); // 1e-5 of values up to 7 * 8
    }

    // Bad arguments come back as a Status.
    void errors() {
        backend::ops::AttentionParams p{1, 3, 2, 8, 16, 1.0f, KvType::F32};
        auto b = device()->allocate(64, true);
        QVERIFY(b.isOk());
        QVERIFY(!device()->attention(**b, **b, **b, **b, **b, nullptr, p, **b).isOk()); // 3 % 2 != 0
        // Every weight type we dequantize has a kernel: I32 stands for one without.
        backend::ops::DeviceMatrix m{b->get(), quant::Type::I32, 16, 1, 64};
        QVERIFY(!device()->supportsOp(backend::ops::Op::MatMul, quant::Type::I32));
        QCOMPARE(device()->matMul(m, **b, 1, **b).code(), ErrorCode::Unsupported);
        vk::VulkanOptions o;
        o.deviceIndex = 99;
        QVERIFY(!vk::createVulkanDevice(o).isOk());
    }
};

QTEST_GUILESS_MAIN(TestVulkanOps)
#include "test_vulkan_ops.moc"
