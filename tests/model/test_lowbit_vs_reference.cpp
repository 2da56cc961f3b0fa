// The 1-3 bit i-quants and the ternary types in a whole model against llama.cpp: a synthetic
// 2-layer llama-tiny whose layer matrices ggml itself quantizes (ggml_quantize_chunk, a flat
// importance matrix; we have no quantizer for these types), evaluated by our reference and CPU
// devices and by llama.cpp on the same file. Our logits must match llama.cpp's fp32 evaluation of
// the same weights (the file widened to F32 by ggml's own dequantizers, so a wrong decode of ours
// shows) closely, and its evaluation of the quantized file within the 8-bit activation rounding
// it adds.
#include "backend/cpu/matmul.h"
#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "model_harness.h"
#include "reference_logits.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <dlfcn.h>
#include <numeric>

using namespace hearth;

namespace {

using QuantizeChunkFn = size_t (*)(int type, const float* src, void* dst, int64_t start,
                                   int64_t nrows, int64_t nPerRow, const float* imatrix);
using ToFloatFn = void (*)(const void* x, float* y, int64_t k);
struct GgmlTypeTraits { // the head of ggml's ggml_type_traits
    const char* typeName;
    int64_t blockSize, blockSizeInterleave;
    size_t typeSize;
    bool isQuantized;
    ToFloatFn toFloat;
};
using GetTraitsFn = const GgmlTypeTraits* (*)(int type);

// Teacher-forced logits [ids][vocab] of the model on `device`; empty on failure.
std::vector<float> evaluate(const std::string& path, const std::vector<int32_t>& ids,
                            const std::string& device) {
    test::LoadOptions o;
    o.device = device;
    o.numBlocks = int(ids.size() + 15) / 16;
    o.contextLength = 256;
    auto m = test::loadModel(path, o);
    if (!m) {
        qWarning("%s", m.status().toString().c_str());
        return {};
    }
    graph::Batch batch;
    std::vector<int32_t> table(static_cast<size_t>(o.numBlocks));
    std::iota(table.begin(), table.end(), 0);
    batch.blockTables.emplace_back(table);
    for (size_t i = 0; i < ids.size(); ++i) batch.tokens.push_back({ids[i], int32_t(i), 0, true});
    std::vector<float> out;
    const Status s = (*m)->runner->forward(batch, out);
    if (!s.isOk()) qWarning("%s", s.toString().c_str());
    return s.isOk() ? out : std::vector<float>{};
}

int topOverlap(const float* a, const float* b, size_t n) {
    auto top = [n](const float* v) {
        std::vector<int32_t> idx(n);
        std::iota(idx.begin(), idx.end(), 0);
        std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(),
                          [&](int32_t x, int32_t y) { return v[x] > v[y]; });
        idx.resize(5);
        return idx;
    };
    const auto ta = top(a), tb = top(b);
    int overlap = 0;
    for (int32_t x : ta) overlap += std::count(tb.begin(), tb.end(), x) ? 1 : 0;
    return overlap;
}

double maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0.0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

} // namespace

class TestLowbitVsReference : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    test::ReferenceLogits m_ref;
    void* m_ggml = nullptr;
    QuantizeChunkFn m_quantize = nullptr;
    GetTraitsFn m_traits = nullptr;
    QString m_f32;

    // The F32 model with every blk.* matrix quantized by ggml to `type` (written to `out`), and
    // the same with those matrices dequantized again by ggml (written to `widened`).
    Status requantize(quant::Type type, const QString& out, const QString& widened) {
        HEARTH_ASSIGN_OR_RETURN(gguf::File in, gguf::File::open(m_f32.toStdString()));
        gguf::Writer w(in.version()), wide(in.version());
        for (const gguf::KeyValue& kv : in.metadata())
            w.set(kv.key, kv.value), wide.set(kv.key, kv.value);
        for (const gguf::TensorInfo& t : in.tensors()) {
            const uint8_t* p = in.tensorData(t);
            std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.nDims);
            if (t.name.rfind("blk.", 0) != 0 || t.nDims != 2 || t.type != quant::Type::F32) {
                HEARTH_RETURN_IF_ERROR(
                    w.addTensor(t.name, t.type, shape, std::vector<uint8_t>(p, p + t.bytes)));
                HEARTH_RETURN_IF_ERROR(
                    wide.addTensor(t.name, t.type, shape, std::vector<uint8_t>(p, p + t.bytes)));
                continue;
            }
            HEARTH_ASSIGN_OR_RETURN(const uint64_t rb, quant::rowBytes(type, t.ne[0]));
            std::vector<uint8_t> bytes(size_t(rb * t.ne[1]));
            std::vector<float> src(size_t(t.ne[0] * t.ne[1]));
            std::memcpy(src.data(), p, src.size() * 4);
            const std::vector<float> flat(size_t(t.ne[0]), 1.0f);
            if (m_quantize(int(type), src.data(), bytes.data(), 0, int64_t(t.ne[1]),
                           int64_t(t.ne[0]), flat.data()) != bytes.size())
                return internalError("ggml_quantize_chunk wrote an unexpected size for " + t.name);
            m_traits(int(type))->toFloat(bytes.data(), src.data(), int64_t(src.size()));
            std::vector<uint8_t> f32(src.size() * 4);
            std::memcpy(f32.data(), src.data(), f32.size());
            HEARTH_RETURN_IF_ERROR(w.addTensor(t.name, type, shape, std::move(bytes)));
            HEARTH_RETURN_IF_ERROR(wide.addTensor(t.name, quant::Type::F32, shape, std::move(f32)));
        }
        HEARTH_RETURN_IF_ERROR(w.writeFile(out.toStdString()));
        return wide.writeFile(widened.toStdString());
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        bool skip = false;
        const QString err = m_ref.build(m_dir.path(), skip);
        if (skip) QSKIP(qPrintable(err));
        QVERIFY2(err.isEmpty(), qPrintable(err));
        m_ggml = dlopen(
            (m_ref.backendDir + QStringLiteral("/libggml-base.so")).toLocal8Bit().constData(),
            RTLD_NOW | RTLD_LOCAL);
        QVERIFY2(m_ggml, dlerror());
        m_quantize = reinterpret_cast<QuantizeChunkFn>(dlsym(m_ggml, "ggml_quantize_chunk"));
        m_traits = reinterpret_cast<GetTraitsFn>(dlsym(m_ggml, "ggml_get_type_traits"));
        QVERIFY(m_quantize && m_traits);
        m_f32 = m_dir.filePath(QStringLiteral("llama-tiny-F32.gguf"));
        QProcess synth;
        synth.start(test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"),
                     QStringLiteral("llama-tiny"), QStringLiteral("--type"), QStringLiteral("F32"),
                     QStringLiteral("--layers"), QStringLiteral("2"), QStringLiteral("--vocab"),
                     QString::fromStdString(
                         test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"))),
                     QStringLiteral("-o"), m_f32});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().constData());
    }

    // The types in two functions (each ~30 s at the AVX2 level), which CTest runs side by side.
    void iq2AndIq1sAgreeWithReference_data() {
        QTest::addColumn<int>("type");
        for (quant::Type t : {quant::Type::IQ2_XXS, quant::Type::IQ2_XS, quant::Type::IQ2_S, quant::Type::IQ1_S})
            QTest::newRow(quant::typeName(t).data()) << int(t);
    }
    void iq2AndIq1sAgreeWithReference() { agreesWithReference(); }
    void iq3Iq1mAndTernaryAgreeWithReference_data() {
        QTest::addColumn<int>("type");
        for (quant::Type t : {quant::Type::IQ3_XXS, quant::Type::IQ3_S, quant::Type::IQ1_M, quant::Type::TQ1_0,
                              quant::Type::TQ2_0})
            QTest::newRow(quant::typeName(t).data()) << int(t);
    }
    void iq3Iq1mAndTernaryAgreeWithReference() { agreesWithReference(); }

private:
    // The current row's type on each device against llama.cpp, on the file and widened to fp32.
    void agreesWithReference() {
        QFETCH(int, type);
        const QString name = QString::fromLatin1(quant::typeName(quant::Type(type)).data());
        const QString path = m_dir.filePath(QStringLiteral("llama-tiny-%1.gguf").arg(name));
        const QString widened = path + QStringLiteral(".f32.gguf");
        const Status made = requantize(quant::Type(type), path, widened);
        QVERIFY2(made.isOk(), made.toString().c_str());

        std::vector<int32_t> ids{1};
        for (int i = 0; i < 19; ++i) ids.push_back((i * 7919 + 13) % 30000 + 300);
        const std::vector<float> theirs = m_ref.run(path, ids),
                                 theirsFp32 = m_ref.run(widened, ids);
        QVERIFY(!theirs.empty() && theirs.size() == theirsFp32.size());
        const size_t V = theirs.size() / ids.size();
        // Devices computing in fp32 (our reference; Vulkan, whose shaders take every one of these
        // types; the CPU for types without an integer kernel): 1e-2
        // against llama.cpp in fp32 on the same weights (summation order; measured < 1.2e-6),
        // top-5 overlapping in at least 4 of 5 at every position. The CPU's IQ2/IQ3 kernels take
        // 8-bit activations per 256 as llama.cpp does, so they are held to llama.cpp on the file
        // instead: 5e-3 (measured < 6e-7, IQ3_S 4.8e-4: an activation rounded the other way
        // somewhere), top-5 4 of 5. Either way 0.15 against the other evaluation, whose rounding
        // differs (measured 2-3e-2; its top-5 is only reported: random weights make near-ties
        // that the rounding reorders, 3/5 at one position for IQ3_XXS).
        std::vector<std::string> devices{"ref", "cpu"};
        if (findDevice(listDevices(), "vulkan:0")) devices.push_back("vulkan:0");
        for (const std::string& device : devices) {
            const std::vector<float> ours = evaluate(path.toStdString(), ids, device);
            QCOMPARE(ours.size(), theirs.size());
            int overlapFp32 = 5, overlapFile = 5;
            for (size_t p = 0; p < ids.size(); ++p) {
                overlapFp32 =
                    std::min(overlapFp32, topOverlap(&ours[p * V], &theirsFp32[p * V], V));
                overlapFile = std::min(overlapFile, topOverlap(&ours[p * V], &theirs[p * V], V));
            }
            const double dFp32 = maxAbsDiff(ours, theirsFp32), dFile = maxAbsDiff(ours, theirs);
            qInfo("%s on %s: max |dlogit| %.2e vs llama.cpp fp32 (top-5 %d/5), %.2e vs llama.cpp "
                  "on the file (top-5 %d/5)",
                  qPrintable(name), device.c_str(), dFp32, overlapFp32, dFile, overlapFile);
            const bool int8 = device != "ref" && device != "vulkan:0" &&
                              cpu::hasFastPath(quant::Type(type), cpu::activeIsaLevel());
            const double near = int8 ? dFile : dFp32, far = int8 ? dFp32 : dFile;
            QVERIFY2(near <= (int8 ? 5e-3 : 1e-2), qPrintable(QString::number(near)));
            QVERIFY((int8 ? overlapFile : overlapFp32) >= 4);
            QVERIFY2(far <= 0.15, qPrintable(QString::number(far)));
        }
    }

private Q_SLOTS:
    void cleanupTestCase() {
        if (m_ggml) dlclose(m_ggml);
    }
};

QTEST_GUILESS_MAIN(TestLowbitVsReference)
#include "test_lowbit_vs_reference.moc"
