// The Vulkan op device (backend::OpDevice) where only Vulkan is tested this way (every op of every
// device against the reference is the self-test's, run per device by tests/device): matMul
// (decode matvec and tiled prefill) and matMulId (shared and per-slot x, decode and tiled) for each
// weight type held to 1e-4 of Σ|w·x| — Vulkan dequantizes exactly as the reference and sums in
// fp32, which the self-test's int8-sized bound would not notice —, weights and stacked experts
// bound in row ranges under a forced small binding limit, the matrix-vector kernels without
// subgroup arithmetic, unmapped buffers through staging copies, and bad arguments as statuses.
// Skips with a message when there is no Vulkan device.
#include "backend/cpu/ref_ops.h"
#include "backend/op_device.h"
#include "backend/vulkan/vk_device.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
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
    std::unique_ptr<backend::OpDevice> m_other; // m_dev with the other form of the matrix kernels
    std::string m_why;

    backend::OpDevice* device() { return m_dev.get(); }
    // The device whose quantized products take the row form (matmul_rows) or the GPU forms
    // (matvec / tiled matmul): lavapipe takes the row form by default, GPUs the others.
    backend::OpDevice* deviceWithRowKernels(bool rows) {
        return m_dev->info().rowKernels == rows ? m_dev.get() : m_other.get();
    }

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
            qInfo("Vulkan device: %s (%s), bind limit %llu, subgroup %u, fp16 %d, int8 %d, row kernels %d", i.name.c_str(),
                  i.type.c_str(), static_cast<unsigned long long>(i.maxBindRange), i.subgroupSize, i.fp16, i.int8,
                  i.rowKernels);
            vk::VulkanOptions o;
            o.rowKernels = i.rowKernels ? 0 : 1;
            if (auto other = vk::createVulkanDevice(o)) m_other = std::move(*other);
            else qInfo("no row kernels here: %s", other.status().toString().c_str());
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
        QTest::addColumn<bool>("rowKernels");
        for (bool rowKernels : {false, true})
            for (quant::Type t : kTypes) {
                const bool k = quant::typeInfo(t)->blockElems == 256;
                const bool block = quant::typeInfo(t)->blockElems == 32;
                const int cols = k ? 512 : block ? 96 : 75;
                for (int n : {1, 3, 8, 9, 21, 40}) {
                    const QString name = QString::fromLatin1(quant::typeName(t).data()) +
                                         QStringLiteral(" n=%1%2").arg(n).arg(rowKernels ? " rows" : "");
                    QTest::newRow(qPrintable(name)) << int(t) << 37 << cols << n << rowKernels;
                }
            }
    }
    // Every type in both forms of the kernels: the GPUs' (matrix-vector up to 8 tokens, tiled
    // beyond) and the row form of CPU implementations (70 rows: a second, partly filled workgroup).
    void matMul() {
        QFETCH(int, type);
        QFETCH(int, rows);
        QFETCH(int, cols);
        QFETCH(int, n);
        QFETCH(bool, rowKernels);
        backend::OpDevice* dev = deviceWithRowKernels(rowKernels);
        if (!dev) QSKIP("this device cannot run the row form");
        checkMatMul(*dev, quant::Type(type), rowKernels ? 70 : rows, cols, n);
    }

    // Weights larger than the binding limit: a device whose limit is forced to 4 KiB binds the
    // matrix in many row ranges (Q4_K rows are 288 bytes, so ~14 rows per range).
    void matMulInRanges() {
        vk::VulkanOptions o;
        o.maxWeightRange = 4096;
        for (int rowKernels : {0, 1}) {
            o.rowKernels = rowKernels;
            auto form = vk::createVulkanDevice(o);
            if (!form) continue; // no row form on this device
            checkMatMul(**form, quant::Type::Q4_K, 301, 512, 1);
            checkMatMul(**form, quant::Type::Q4_K, 301, 512, 12);
            checkMatMul(**form, quant::Type::Q8_0, 203, 96, 2); // 102-byte rows, unaligned starts
            checkMatMul(**form, quant::Type::MXFP4, 203, 96, 37); // 51-byte rows
        }
        o.rowKernels = -1;
        auto small = vk::createVulkanDevice(o);
        QVERIFY2(small.isOk(), small.status().toString().c_str());
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
        QTest::addColumn<bool>("rowKernels");
        for (bool rowKernels : {false, true})
            for (quant::Type t : kTypes)
                for (int n : {1, 4, 13, 40}) // one pair per workgroup up to 8 tokens, then routed
                    for (bool shared : {true, false}) {
                        const QString name = QString::fromLatin1(quant::typeName(t).data()) +
                                             QStringLiteral(" n=%1 %2%3")
                                                 .arg(n)
                                                 .arg(shared ? "shared x" : "x per slot")
                                                 .arg(rowKernels ? " rows" : "");
                        QTest::newRow(qPrintable(name)) << int(t) << n << shared << rowKernels;
                    }
    }
    // Both forms, as matMul (the row form with 70 rows per expert: two workgroups, one partly filled).
    void matMulId() {
        QFETCH(int, type);
        QFETCH(int, n);
        QFETCH(bool, shared);
        QFETCH(bool, rowKernels);
        backend::OpDevice* dev = deviceWithRowKernels(rowKernels);
        if (!dev) QSKIP("this device cannot run the row form");
        const uint32_t block = quant::typeInfo(quant::Type(type))->blockElems;
        checkMatMulId(*dev, quant::Type(type), rowKernels ? 70 : 23, block == 256 ? 512 : block == 32 ? 96 : 75, 5, 3, n,
                      shared);
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
        for (int rowKernels : {0, 1}) {
            o.rowKernels = rowKernels;
            auto small = vk::createVulkanDevice(o);
            if (!small) continue; // no row form on this device
            checkMatMulId(**small, quant::Type::Q4_K, 37, 512, 6, 2, 3, true);    // 288-byte rows
            checkMatMulId(**small, quant::Type::Q4_K, 37, 512, 6, 2, 20, true);   // routed
            checkMatMulId(**small, quant::Type::MXFP4, 29, 96, 8, 4, 2, false);  // 51-byte rows
            checkMatMulId(**small, quant::Type::MXFP4, 29, 96, 8, 4, 17, false); // routed
            checkMatMulId(**small, quant::Type::Q8_0, 70, 96, 3, 2, 45, false);  // two row tiles
        }
        // 2 experts, 4 slots: each chosen twice per token, 40 pairs of 20 tokens for one expert.
        for (bool rowKernels : {false, true})
            if (backend::OpDevice* dev = deviceWithRowKernels(rowKernels))
                checkMatMulId(*dev, quant::Type::Q8_0, 19, 96, 2, 4, 20, false);
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
