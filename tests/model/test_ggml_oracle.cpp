// Byte-level compatibility with ggml, checked against the reference engine's own prebuilt
// library (loaded at run time, a test oracle only): for every type, blocks quantized by ggml
// dequantize identically with our code, blocks quantized by us dequantize identically with
// ggml's, and our quantization error is no worse than ggml's. A deliberately mis-packed copy must
// fail the comparison, so the check can fail. The i-quant grids are re-derived from ggml's
// dequantizers and compared with ours (engine/quant/iq_grid_codes.inc).
#include "hearth/quant.h"
#include "iq_grid_probe.h"
#include "quant/blocks_iq.h"
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

const Type kTypes[] = {Type::F16,  Type::BF16, Type::Q4_0, Type::Q4_1,   Type::Q5_0,
                       Type::Q5_1, Type::Q8_0, Type::Q2_K, Type::Q3_K,   Type::Q4_K,
                       Type::Q5_K, Type::Q6_K, Type::IQ4_NL, Type::IQ4_XS, Type::MXFP4,
                       Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S,
                       Type::IQ1_S, Type::IQ1_M, Type::TQ1_0, Type::TQ2_0};

// Types we only dequantize: ggml quantizes them with a (flat) importance matrix, which three of
// them require.
bool dequantOnly(Type t) { return !typeInfo(t)->canQuantize; }

// Byte offset of a block's fp16 scale (-1: IQ1_M, whose scale is spread over four nibbles).
int scaleOffset(Type t) {
    switch (t) {
    case Type::MXFP4: case Type::IQ1_M: return -1;
    case Type::TQ1_0: return 52;
    case Type::TQ2_0: return 64;
    default: return 0;
    }
}

// Where the 4-bit quants of one block lie (byte offset and count), for the negative control.
struct NibbleSpan {
    Type type;
    size_t offset, count;
};
const NibbleSpan kNibbleSpans[] = {{Type::Q4_0, 2, 16},
                                   {Type::IQ4_NL, 2, 16},
                                   {Type::IQ4_XS, 8, 128},
                                   {Type::MXFP4, 1, 16},
                                   {Type::IQ2_XXS, 2, 64},
                                   {Type::IQ2_XS, 2, 64},
                                   {Type::IQ2_S, 2, 32},
                                   {Type::IQ3_XXS, 2, 64},
                                   {Type::IQ3_S, 2, 64},
                                   {Type::IQ1_S, 2, 32},
                                   {Type::IQ1_M, 0, 32},
                                   {Type::TQ1_0, 0, 48},
                                   {Type::TQ2_0, 0, 64}};

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
        const std::vector<float> flat(size_t(kCols), 1.0f);
        QCOMPARE(m_ggml.quantizeChunk(type, m_data.data(), theirs.data(), 0, kRows, kCols,
                                      dequantOnly(t) ? flat.data() : nullptr),
                 total);
        std::vector<float> theirsByUs(n), theirsByThem(n);
        for (int64_t r = 0; r < kRows; ++r)
            QVERIFY(dequantizeRow(t, theirs.data() + r * rb, theirsByUs.data() + r * kCols, kCols)
                        .isOk());
        tr->toFloat(theirs.data(), theirsByThem.data(), int64_t(n));
        QVERIFY2(bitEqual(theirsByUs, theirsByThem), "our dequantizer disagrees with ggml's");

        if (!typeInfo(t)->canQuantize) return; // (b) and (c) need our quantizer

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
        size_t sameBytes = 0;
        for (size_t i = 0; i < total; ++i) sameBytes += ours[i] == theirs[i];
        qInfo("%-6s rmse ours %.6f  ggml %.6f  ratio %.3f  (bytes identical to ggml's: %.2f%%)",
              typeName(t).data(), errOurs, errTheirs, errOurs / errTheirs,
              100.0 * double(sameBytes) / double(total));
        QVERIFY2(errOurs <= errTheirs * 1.05 + 1e-9,
                 qPrintable(QStringLiteral("rmse %1 vs ggml %2").arg(errOurs).arg(errTheirs)));
    }

    // Arbitrary bytes (every E8M0 exponent, every 6-bit IQ4_XS scale, subnormal and huge fp16
    // scales) decode to the same floats as ggml's, bit for bit; only fp16 infinities and NaNs
    // are left out.
    void arbitraryBlocksDecodeLikeGgml_data() {
        QTest::addColumn<int>("type");
        for (Type t : {Type::IQ4_NL, Type::IQ4_XS, Type::MXFP4, Type::IQ2_XXS, Type::IQ2_XS,
                       Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S, Type::IQ1_S, Type::IQ1_M,
                       Type::TQ1_0, Type::TQ2_0})
            QTest::newRow(typeName(t).data()) << int(t);
    }
    void arbitraryBlocksDecodeLikeGgml() {
        QFETCH(int, type);
        const Type t = Type(type);
        const TypeInfo* info = typeInfo(t);
        const int64_t blocks = 4096, n = blocks * info->blockElems;
        std::vector<uint8_t> bytes(static_cast<size_t>(blocks) * info->blockBytes);
        std::mt19937 rng(static_cast<uint32_t>(type));
        for (uint8_t& b : bytes) b = uint8_t(rng());
        for (int64_t b = 0; b < blocks; ++b) {
            uint8_t* block = bytes.data() + b * info->blockBytes;
            const int at = scaleOffset(t);
            if (t == Type::MXFP4) block[0] = uint8_t(b); // each exponent 16 times
            else if (at >= 0 && (block[at + 1] & 0x7c) == 0x7c) block[at + 1] &= 0xbf; // finite d
            else if (t == Type::IQ1_M) {
                const auto& m = *reinterpret_cast<const BlockIQ1_M*>(block);
                if ((iq1mScaleBits(m) & 0x7c00) == 0x7c00) block[55] &= 0xbf; // exponent bit 4
            }
        }
        std::vector<float> ours(static_cast<size_t>(n)), theirs(static_cast<size_t>(n));
        QVERIFY(dequantizeRow(t, bytes.data(), ours.data(), n).isOk());
        m_ggml.traits(type)->toFloat(bytes.data(), theirs.data(), n);
        QVERIFY2(bitEqual(ours, theirs), "our dequantizer disagrees with ggml's");
    }

    void negativeControlIsCaught_data() {
        QTest::addColumn<int>("span");
        for (size_t i = 0; i < std::size(kNibbleSpans); ++i)
            QTest::newRow(typeName(kNibbleSpans[i].type).data()) << int(i);
    }
    void negativeControlIsCaught() {
        // Swap the two nibbles of every quant byte of a copy: the comparison above must notice.
        QFETCH(int, span);
        const NibbleSpan& sp = kNibbleSpans[span];
        const int type = int(sp.type);
        const uint64_t rb = *rowBytes(sp.type, kCols);
        const size_t blockBytes = typeInfo(sp.type)->blockBytes;
        std::vector<uint8_t> original(static_cast<size_t>(rb));
        const std::vector<float> flat(size_t(kCols), 1.0f);
        m_ggml.quantizeChunk(type, m_data.data(), original.data(), 0, 1, kCols,
                             dequantOnly(sp.type) ? flat.data() : nullptr);
        std::vector<uint8_t> swapped = original;
        for (size_t b = 0; b < swapped.size(); b += blockBytes)
            for (size_t j = b + sp.offset; j < b + sp.offset + sp.count; ++j)
                swapped[j] = uint8_t((swapped[j] << 4) | (swapped[j] >> 4));
        std::vector<float> ours(static_cast<size_t>(kCols)), ref(static_cast<size_t>(kCols));
        QVERIFY(dequantizeRow(sp.type, swapped.data(), ours.data(), kCols).isOk());
        m_ggml.traits(type)->toFloat(original.data(), ref.data(), kCols);
        QVERIFY(!bitEqual(ours, ref));
        // ... while the unmodified bytes agree.
        QVERIFY(dequantizeRow(sp.type, original.data(), ours.data(), kCols).isOk());
        QVERIFY(bitEqual(ours, ref));
    }

    // With an importance vector (an imatrix) our quantizers give ggml_quantize_chunk's bytes
    // exactly. Negative controls: the same rows without it, or with it reversed, give other
    // bytes, so the comparison can fail.
    void importanceWeightedBytesMatchGgml_data() {
        QTest::addColumn<int>("type");
        for (Type t : {Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::IQ4_NL, Type::IQ4_XS, Type::Q2_K,
                       Type::Q3_K, Type::Q4_K, Type::Q5_K, Type::Q6_K, Type::IQ3_XXS, Type::IQ3_S,
                       Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S, Type::IQ1_S, Type::IQ1_M})
            QTest::newRow(typeName(t).data()) << int(t);
    }
    void importanceWeightedBytesMatchGgml() {
        QFETCH(int, type);
        const Type t = Type(type);
        QVERIFY(takesImportance(t));
        // Mean squared activations spanning five orders of magnitude, as real ones do.
        std::mt19937 rng(99);
        std::uniform_real_distribution<float> expo(-3.0f, 2.0f);
        std::vector<float> importance(static_cast<size_t>(kCols));
        for (float& v : importance) v = std::pow(10.0f, expo(rng));
        const uint64_t rb = *rowBytes(t, kCols);
        const size_t total = size_t(rb * kRows);
        std::vector<uint8_t> theirs(total), ours(total), plain(total), reversed(total);
        QCOMPARE(m_ggml.quantizeChunk(type, m_data.data(), theirs.data(), 0, kRows, kCols, importance.data()), total);
        const std::vector<float> backwards(importance.rbegin(), importance.rend());
        // Types that cannot go without one get a flat importance as the first negative control.
        const std::vector<float> flat(static_cast<size_t>(kCols), 1.0f);
        const float* none = requiresImportance(t) ? flat.data() : nullptr;
        for (int64_t r = 0; r < kRows; ++r) {
            const float* row = m_data.data() + r * kCols;
            QVERIFY(quantizeRowWeighted(t, row, ours.data() + r * rb, kCols, importance.data()).isOk());
            QVERIFY(quantizeRowWeighted(t, row, plain.data() + r * rb, kCols, none).isOk());
            QVERIFY(quantizeRowWeighted(t, row, reversed.data() + r * rb, kCols, backwards.data()).isOk());
        }
        size_t same = 0;
        for (size_t i = 0; i < total; ++i) same += ours[i] == theirs[i];
        qInfo("%-6s with imatrix: %zu of %zu bytes identical to ggml's", typeName(t).data(), same, total);
        QVERIFY2(ours == theirs, "importance-weighted bytes differ from ggml_quantize_chunk's");
        QVERIFY2(plain != theirs, "negative control: quantizing without the imatrix gave the same bytes");
        QVERIFY2(reversed != theirs, "negative control: a reversed imatrix gave the same bytes");
    }

    // Types ggml quantizes without an importance vector too (the ternary ones never take one):
    // our bytes are ggml_quantize_chunk's; the negated rows (negative control) give other bytes.
    void plainBytesMatchGgml_data() {
        QTest::addColumn<int>("type");
        for (Type t : {Type::TQ1_0, Type::TQ2_0, Type::IQ3_XXS, Type::IQ3_S, Type::IQ2_S, Type::IQ1_M})
            QTest::newRow(typeName(t).data()) << int(t);
    }
    void plainBytesMatchGgml() {
        QFETCH(int, type);
        const Type t = Type(type);
        const uint64_t rb = *rowBytes(t, kCols);
        const size_t total = size_t(rb * kRows);
        std::vector<uint8_t> theirs(total), ours(total), negated(total);
        QCOMPARE(m_ggml.quantizeChunk(type, m_data.data(), theirs.data(), 0, kRows, kCols, nullptr), total);
        QVERIFY(quantizeRows(t, m_data.data(), ours.data(), kRows, kCols, 2).isOk());
        std::vector<float> minus(m_data.size());
        for (size_t i = 0; i < minus.size(); ++i) minus[i] = -m_data[i];
        QVERIFY(quantizeRows(t, minus.data(), negated.data(), kRows, kCols, 2).isOk());
        size_t same = 0;
        for (size_t i = 0; i < total; ++i) same += ours[i] == theirs[i];
        qInfo("%-7s without imatrix: %zu of %zu bytes identical to ggml's (%lld rows)", typeName(t).data(), same,
              total, static_cast<long long>(kRows));
        QVERIFY2(ours == theirs, "bytes differ from ggml_quantize_chunk's");
        QVERIFY2(negated != theirs, "negative control: negated rows gave the same bytes");
    }

    // The grids our i-quant tables expand to are the ones ggml decodes with: every row of every
    // grid re-derived from ggml's dequantizers; a changed value must be noticed.
    void iqGridsMatchReference() {
        int count = 0;
        const grids::CodeTable* tables = grids::codeTables(&count);
        const uint8_t* expanded[] = {
            grids::kIq2xxs.data(), grids::kIq2xs.data(),
            grids::kIq2s.data(),   grids::kIq3xxs.data(),
            grids::kIq3s.data(),   reinterpret_cast<const uint8_t*>(grids::kIq1s.data())};
        QCOMPARE(size_t(count), test::gridSpecs().size());
        for (int i = 0; i < count; ++i) {
            const test::GridSpec& spec = test::gridSpecs()[size_t(i)];
            const grids::CodeTable& table = tables[i];
            QCOMPARE(QByteArray(table.name), QByteArray(spec.name));
            QCOMPARE(table.entries, spec.entries);
            QCOMPARE(table.width, spec.width);
            std::vector<int> probed;
            const std::string err =
                test::probeGrid(spec, m_ggml.traits(spec.ggmlType)->toFloat, probed);
            QVERIFY2(err.empty(), err.c_str());
            std::vector<int> ours(probed.size()), fromCodes(probed.size());
            for (size_t v = 0; v < ours.size(); ++v) {
                const int e = int(v) / spec.width, j = int(v) % spec.width;
                ours[v] = spec.ggmlType == 19 ? int(int8_t(expanded[i][v])) : int(expanded[i][v]);
                fromCodes[v] =
                    table.levels[(table.codes[e] >> (table.bits * j)) & ((1 << table.bits) - 1)];
            }
            QVERIFY2(ours == probed, spec.name);
            QVERIFY2(fromCodes == probed, spec.name);
            ours[size_t(count * 7 + i) % ours.size()] ^= 2; // negative control
            QVERIFY(ours != probed);
        }
    }

    // The sign bytes we compute (7 stored bits plus even parity) are ggml's: IQ2_XS grid row 0
    // (all 8s) with each of the 128 sign indices.
    void iqSignsMatchReference() {
        std::vector<BlockIQ2_XS> blocks(4);
        std::memset(blocks.data(), 0, blocks.size() * sizeof(BlockIQ2_XS));
        for (int i = 0; i < 128; ++i) {
            blocks[size_t(i / 32)].d = 0x3c00;
            blocks[size_t(i / 32)].qs[i % 32] = uint16_t(i << 9);
        }
        std::vector<float> y(4 * 256);
        m_ggml.traits(int(Type::IQ2_XS))->toFloat(blocks.data(), y.data(), int64_t(y.size()));
        int eighthBitSet = 0;
        for (int i = 0; i < 128; ++i) {
            uint8_t theirs = 0;
            for (int j = 0; j < 8; ++j) theirs |= uint8_t(y[size_t(8 * i + j)] < 0) << j;
            QCOMPARE(int(grids::evenParitySigns(uint32_t(i))), int(theirs));
            eighthBitSet += theirs >> 7; // the 7 stored bits alone would be wrong here
        }
        QCOMPARE(eighthBitSet, 64);
    }

    void cleanupTestCase() {
        if (m_ggml.handle) dlclose(m_ggml.handle);
    }
};

QTEST_GUILESS_MAIN(TestGgmlOracle)
#include "test_ggml_oracle.moc"
