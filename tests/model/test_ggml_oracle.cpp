// Byte-level compatibility with ggml, checked against the reference engine's own prebuilt
// library (loaded at run time, a test oracle only): for every type, blocks quantized by ggml
// dequantize identically with our code, blocks quantized by us dequantize identically with
// ggml's, and our quantization error is no worse than ggml's. A deliberately mis-packed copy must
// fail the comparison, so the check can fail.
#include "hearth/quant.h"
#include "test_support.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <vector>

using namespace hearth;
using namespace hearth::quant;

namespace {

// The few declarations we need from ggml.h, with matching layouts.
using ToFloatFn = void (*)(const void* x, float* y, int64_t k);
struct GgmlTypeTraits {
    const char* typeName;
    int64_t blockSize;
    int64_t blockSizeInterleave;
    size_t typeSize;
    bool isQuantized;
    ToFloatFn toFloat;
    void* fromFloatRef;
};
using QuantizeChunkFn = size_t (*)(int type, const float* src, void* dst, int64_t start,
                                   int64_t nrows, int64_t nPerRow, const float* imatrix);
using GetTraitsFn = const GgmlTypeTraits* (*)(int type);

struct Ggml {
    void* handle = nullptr;
    QuantizeChunkFn quantizeChunk = nullptr;
    GetTraitsFn traits = nullptr;
};

QString referenceLibDir() {
    QByteArray ref = qgetenv("HEARTH_REF");
    QString dir = ref.isEmpty() ? QDir::homePath() + QStringLiteral("/.cache/hearth-ref")
                                : QString::fromLocal8Bit(ref);
    return dir + QStringLiteral("/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64");
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0.0;
    for (size_t i = 0; i < a.size(); ++i) s += double(a[i] - b[i]) * double(a[i] - b[i]);
    return std::sqrt(s / double(a.size()));
}

bool bitEqual(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

const Type kTypes[] = {Type::F16,  Type::BF16, Type::Q4_0, Type::Q4_1, Type::Q5_0,
                       Type::Q5_1, Type::Q8_0, Type::Q2_K, Type::Q3_K, Type::Q4_K,
                       Type::Q5_K, Type::Q6_K};

} // namespace

class TestGgmlOracle : public QObject {
    Q_OBJECT
    Ggml m_ggml;
    std::vector<float> m_data;
    static constexpr int64_t kRows = 64, kCols = 4096;

private Q_SLOTS:
    void initTestCase() {
        const QString lib = referenceLibDir() + QStringLiteral("/libggml-base.so");
        if (!QFileInfo::exists(lib))
            QSKIP(qPrintable(QStringLiteral("reference engine not set up (%1 missing); run "
                                            "../shared/tools/reference/setup.sh")
                                 .arg(lib)));
        m_ggml.handle = dlopen(lib.toLocal8Bit().constData(), RTLD_NOW | RTLD_LOCAL);
        QVERIFY2(m_ggml.handle, dlerror());
        m_ggml.quantizeChunk =
            reinterpret_cast<QuantizeChunkFn>(dlsym(m_ggml.handle, "ggml_quantize_chunk"));
        m_ggml.traits = reinterpret_cast<GetTraitsFn>(dlsym(m_ggml.handle, "ggml_get_type_traits"));
        QVERIFY(m_ggml.quantizeChunk && m_ggml.traits);
        std::mt19937 rng(2024);
        std::normal_distribution<float> gauss(0.0f, 1.0f);
        m_data.resize(size_t(kRows * kCols));
        for (float& v : m_data) v = gauss(rng);
    }

    void layoutsMatchGgml_data() {
        QTest::addColumn<int>("type");
        for (Type t : kTypes) QTest::newRow(typeName(t).data()) << int(t);
    }
    void layoutsMatchGgml() {
        QFETCH(int, type);
        const Type t = Type(type);
        const GgmlTypeTraits* tr = m_ggml.traits(type);
        QVERIFY(tr && tr->toFloat);
        const uint64_t rb = *rowBytes(t, kCols);
        QCOMPARE(uint64_t(tr->typeSize * uint64_t(kCols / tr->blockSize)), rb);
        const size_t total = size_t(rb * kRows), n = m_data.size();

        // (a) ggml's bytes, dequantized by us and by ggml.
        std::vector<uint8_t> theirs(total);
        QCOMPARE(m_ggml.quantizeChunk(type, m_data.data(), theirs.data(), 0, kRows, kCols, nullptr),
                 total);
        std::vector<float> theirsByUs(n), theirsByThem(n);
        for (int64_t r = 0; r < kRows; ++r)
            QVERIFY(dequantizeRow(t, theirs.data() + r * rb, theirsByUs.data() + r * kCols, kCols)
                        .isOk());
        tr->toFloat(theirs.data(), theirsByThem.data(), int64_t(n));
        QVERIFY2(bitEqual(theirsByUs, theirsByThem), "our dequantizer disagrees with ggml's");

        // (b) our bytes, dequantized by ggml and by us.
        std::vector<uint8_t> ours(total);
        QVERIFY(quantizeRows(t, m_data.data(), ours.data(), kRows, kCols, 2).isOk());
        std::vector<float> oursByUs(n), oursByThem(n);
        for (int64_t r = 0; r < kRows; ++r)
            QVERIFY(dequantizeRow(t, ours.data() + r * rb, oursByUs.data() + r * kCols, kCols).isOk());
        tr->toFloat(ours.data(), oursByThem.data(), int64_t(n));
        QVERIFY2(bitEqual(oursByUs, oursByThem), "ggml reads our bytes differently");

        // (c) quantization error: ours no worse than ggml's (5% slack for K-quant searches).
        const double errOurs = rmse(m_data, oursByUs), errTheirs = rmse(m_data, theirsByThem);
        qInfo("%-5s rmse ours %.6f  ggml %.6f  ratio %.3f", typeName(t).data(), errOurs, errTheirs,
              errOurs / errTheirs);
        QVERIFY2(errOurs <= errTheirs * 1.05 + 1e-9,
                 qPrintable(QStringLiteral("rmse %1 vs ggml %2").arg(errOurs).arg(errTheirs)));
    }

    void negativeControlIsCaught() {
        // Swap the nibbles of a Q4_0 copy: the comparison above must notice.
        const uint64_t rb = *rowBytes(Type::Q4_0, kCols);
        std::vector<uint8_t> theirs(static_cast<size_t>(rb));
        m_ggml.quantizeChunk(int(Type::Q4_0), m_data.data(), theirs.data(), 0, 1, kCols, nullptr);
        for (size_t b = 0; b < theirs.size(); b += 18)
            for (size_t j = 2; j < 18; ++j)
                theirs[b + j] = uint8_t((theirs[b + j] << 4) | (theirs[b + j] >> 4));
        std::vector<float> ours(static_cast<size_t>(kCols)), ref(static_cast<size_t>(kCols));
        QVERIFY(dequantizeRow(Type::Q4_0, theirs.data(), ours.data(), kCols).isOk());
        std::vector<uint8_t> original(static_cast<size_t>(rb));
        m_ggml.quantizeChunk(int(Type::Q4_0), m_data.data(), original.data(), 0, 1, kCols, nullptr);
        m_ggml.traits(int(Type::Q4_0))->toFloat(original.data(), ref.data(), kCols);
        QVERIFY(!bitEqual(ours, ref));
    }

    void cleanupTestCase() {
        if (m_ggml.handle) dlclose(m_ggml.handle);
    }
};

QTEST_GUILESS_MAIN(TestGgmlOracle)
#include "test_ggml_oracle.moc"
