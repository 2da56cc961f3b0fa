// Quantization unit tests: half-precision conversions over every bit pattern, hand-built blocks
// with known values, error bounds per type, edge cases (zeros, NaN, odd sizes), thread
// determinism, and the per-tensor rules of the named mixes.
#include "hearth/model_info.h"
#include "hearth/quant.h"
#include "quant/blocks.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace hearth;
using namespace hearth::quant;

namespace {

// Plain reference for binary16 -> float: value = (-1)^s * 2^(e-15) * (1 + m/1024), etc.
double plainHalf(uint16_t h) {
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0) v = std::ldexp(double(m), -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = std::ldexp(1.0 + m / 1024.0, e - 15);
    return s ? -v : v;
}

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, sigma);
    std::vector<float> v(n);
    for (float& x : v) x = g(rng);
    return v;
}

std::vector<float> roundTrip(Type t, const std::vector<float>& x) {
    std::vector<uint8_t> q(static_cast<size_t>(*rowBytes(t, x.size())));
    std::vector<float> y(x.size());
    if (!quantizeRow(t, x.data(), q.data(), int64_t(x.size())).isOk()) return {};
    if (!dequantizeRow(t, q.data(), y.data(), int64_t(x.size())).isOk()) return {};
    return y;
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0.0;
    for (size_t i = 0; i < a.size(); ++i) s += double(a[i] - b[i]) * double(a[i] - b[i]);
    return std::sqrt(s / double(a.size()));
}

TensorRole role(std::string_view name, uint64_t ne0 = 4096, uint32_t nLayers = 32) {
    TensorRole r;
    r.name = name;
    r.ne0 = ne0;
    r.nDims = 2;
    r.nLayers = nLayers;
    return r;
}

} // namespace

class TestQuant : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void halfExhaustive() {
        for (uint32_t i = 0; i < 65536; ++i) {
            const uint16_t h = uint16_t(i);
            const float f = f16ToF32(h);
            const double ref = plainHalf(h);
            if (std::isnan(ref)) {
                QVERIFY(std::isnan(f));
                continue;
            }
            QCOMPARE(double(f), ref);
            QCOMPARE(f32ToF16(f), h); // exact values round-trip to the same bits (incl. -0)
        }
        // Rounding: halfway cases go to even; overflow to infinity; tiny to zero.
        QCOMPARE(f32ToF16(1.0f + 1.0f / 2048.0f), uint16_t(0x3c00));
        QCOMPARE(f32ToF16(1.0f + 3.0f / 2048.0f), uint16_t(0x3c02));
        QCOMPARE(f32ToF16(70000.0f), uint16_t(0x7c00));
        QCOMPARE(f32ToF16(-1e-10f), uint16_t(0x8000));
        QCOMPARE(f32ToF16(65519.0f), uint16_t(0x7bff));
    }

    void bf16Exhaustive() {
        for (uint32_t i = 0; i < 65536; ++i) {
            const uint16_t h = uint16_t(i);
            const float f = bf16ToF32(h);
            uint32_t bits;
            std::memcpy(&bits, &f, 4);
            QCOMPARE(bits, uint32_t(h) << 16);
            if (!std::isnan(f)) QCOMPARE(f32ToBf16(f), h);
        }
        QCOMPARE(f32ToBf16(1.0f + 1.0f / 256.0f), uint16_t(0x3f80)); // halfway -> even
        QCOMPARE(f32ToBf16(1.0f + 3.0f / 256.0f), uint16_t(0x3f82));
    }

    void handBuiltQ4_0() {
        BlockQ4_0 b{};
        b.d = f32ToF16(0.5f);
        for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
        float y[32];
        QVERIFY(dequantizeRow(Type::Q4_0, &b, y, 32).isOk());
        QCOMPARE(y[0], -4.0f);   // (0 - 8) * 0.5
        QCOMPARE(y[15], 3.5f);   // (15 - 8) * 0.5
        QCOMPARE(y[16], 3.5f);   // element 16 is byte 0's high nibble: 15
        QCOMPARE(y[31], -4.0f);
    }

    void handBuiltQ8_0() {
        BlockQ8_0 b{};
        b.d = f32ToF16(0.25f);
        for (int j = 0; j < 32; ++j) b.qs[j] = int8_t(j - 16);
        float y[32];
        QVERIFY(dequantizeRow(Type::Q8_0, &b, y, 32).isOk());
        QCOMPARE(y[0], -4.0f);
        QCOMPARE(y[31], 3.75f);
    }

    void handBuiltQ4_K() {
        BlockQ4_K b{};
        b.d = f32ToF16(1.0f);
        b.dmin = f32ToF16(0.5f);
        // Sub-block 0: scale 2, min 3; sub-block 5: scale 17 (low 4 bits 1, high 2 bits 1), min 33.
        b.scales[0] = 2;
        b.scales[4] = 3;
        b.scales[9] = uint8_t((17 & 15) | (33 & 15) << 4);
        b.scales[1] |= uint8_t((17 >> 4) << 6);
        b.scales[5] |= uint8_t((33 >> 4) << 6);
        b.qs[0] = 0x07;      // output 0 (sub 0): 7; output 32 (sub 1): 0
        b.qs[64 + 3] = 0x90; // chunk 2: output 128+3 (sub 4): 0; output 160+3 (sub 5): 9
        float y[256];
        QVERIFY(dequantizeRow(Type::Q4_K, &b, y, 256).isOk());
        QCOMPARE(y[0], 2.0f * 7 - 0.5f * 3);
        QCOMPARE(y[163], 17.0f * 9 - 0.5f * 33);
    }

    void handBuiltQ6_K() {
        BlockQ6_K b{};
        b.d = f32ToF16(0.5f);
        for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(j + 1);
        // Output 70 of half 0 = out[l + 64] with l = 6: high nibble of ql[6], bits 4-5 of qh[6],
        // scale index l/16 + 4 = 4. q = 0xA | 2 << 4 = 42 -> 42 - 32 = 10.
        b.ql[6] = 0xA0;
        b.qh[6] = 2 << 4;
        float y[256];
        QVERIFY(dequantizeRow(Type::Q6_K, &b, y, 256).isOk());
        QCOMPARE(y[70], 0.5f * 5 * 10);
        QCOMPARE(y[0], 0.5f * 1 * -32);
    }

    void handBuiltIQ4_NL() {
        BlockIQ4_NL b{};
        b.d = f32ToF16(0.5f);
        for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
        float y[32];
        QVERIFY(dequantizeRow(Type::IQ4_NL, &b, y, 32).isOk());
        QCOMPARE(y[0], -63.5f); // level 0 = -127
        QCOMPARE(y[8], 0.5f);   // level 8 = 1
        QCOMPARE(y[15], 56.5f); // level 15 = 113
        QCOMPARE(y[16], 56.5f); // byte 0's high nibble: 15
        QCOMPARE(y[31], -63.5f);
    }

    void handBuiltIQ4_XS() {
        BlockIQ4_XS b{};
        b.d = f32ToF16(0.25f);
        // Sub-block 0: scale 33 - 32 = 1; sub-block 5: 6-bit 0b010010 = 18 -> -14.
        b.scalesL[0] = 33 & 15;
        b.scalesH = uint16_t(33 >> 4);
        b.scalesL[2] = uint8_t((18 & 15) << 4);
        b.scalesH = uint16_t(b.scalesH | (18 >> 4) << 10);
        b.qs[3] = 0xf0;          // sub-block 0: element 3 level 0, element 19 level 15
        b.qs[16 * 5 + 2] = 0x09; // sub-block 5: element 160+2 level 9 (13), element 160+18 level 0
        float y[256];
        QVERIFY(dequantizeRow(Type::IQ4_XS, &b, y, 256).isOk());
        QCOMPARE(y[3], 0.25f * -127);
        QCOMPARE(y[19], 0.25f * 113);
        QCOMPARE(y[162], 0.25f * -14 * 13);
        QCOMPARE(y[178], 0.25f * -14 * -127);
        QCOMPARE(y[32], 0.25f * -32 * -127); // sub-block 1's scale is 0 - 32
    }

    void handBuiltMXFP4() {
        BlockMXFP4 b{};
        b.e = 127 + 3; // scale 2^3 for the real FP4 values
        for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(j | (15 - j) << 4);
        float y[32];
        QVERIFY(dequantizeRow(Type::MXFP4, &b, y, 32).isOk());
        QCOMPARE(y[1], 4.0f);    // 0.5 * 8
        QCOMPARE(y[7], 48.0f);   // 6 * 8
        QCOMPARE(y[14], -32.0f); // -4 * 8
        QCOMPARE(y[16], -48.0f); // byte 0's high nibble: 15 = -6
        b.e = 0;                 // 2^-127 in the OCP spec: subnormal floats
        QVERIFY(dequantizeRow(Type::MXFP4, &b, y, 32).isOk());
        QCOMPARE(y[2], std::ldexp(1.0f, -127));
        // Quantizing takes the exponent of amax less 2: 44 = 1.375 * 2^5 -> e = 127 + 5 - 2, so
        // the values are 8 * (0, 0.5, 1, 1.5, 2, 3, 4, 6) with either sign.
        float x[32] = {};
        x[4] = 44.0f;
        x[5] = 40.0f; // halfway between 32 and 48: the smaller wins
        x[20] = -3.0f;
        QVERIFY(quantizeRow(Type::MXFP4, x, &b, 32).isOk());
        QCOMPARE(int(b.e), 130);
        QVERIFY(dequantizeRow(Type::MXFP4, &b, y, 32).isOk());
        QCOMPARE(y[4], 48.0f);
        QCOMPARE(y[5], 32.0f);
        QCOMPARE(y[20], -4.0f);
        QCOMPARE(y[0], 0.0f);
    }

    void errorBoundsPerType_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<double>("maxRmse"); // on N(0,1) data; measured values are lower
        QTest::newRow("F16") << int(Type::F16) << 3e-4;
        QTest::newRow("BF16") << int(Type::BF16) << 2.5e-3;
        QTest::newRow("Q8_0") << int(Type::Q8_0) << 0.006;
        QTest::newRow("Q6_K") << int(Type::Q6_K) << 0.019;
        QTest::newRow("Q5_1") << int(Type::Q5_1) << 0.040;
        QTest::newRow("Q5_0") << int(Type::Q5_0) << 0.045;
        QTest::newRow("Q5_K") << int(Type::Q5_K) << 0.038;
        QTest::newRow("Q4_1") << int(Type::Q4_1) << 0.081;
        QTest::newRow("Q4_0") << int(Type::Q4_0) << 0.089;
        QTest::newRow("Q4_K") << int(Type::Q4_K) << 0.074;
        QTest::newRow("Q3_K") << int(Type::Q3_K) << 0.16;
        QTest::newRow("Q2_K") << int(Type::Q2_K) << 0.30;
        QTest::newRow("Q8_K") << int(Type::Q8_K) << 0.0075; // one scale per 256
        QTest::newRow("IQ4_NL") << int(Type::IQ4_NL) << 0.084;
        QTest::newRow("IQ4_XS") << int(Type::IQ4_XS) << 0.084;
        QTest::newRow("MXFP4") << int(Type::MXFP4) << 0.127;
    }
    void errorBoundsPerType() {
        QFETCH(int, type);
        QFETCH(double, maxRmse);
        const auto x = gaussian(1 << 16, 7);
        const auto y = roundTrip(Type(type), x);
        QCOMPARE(y.size(), x.size());
        const double e = rmse(x, y);
        qInfo("%s rmse %.6f", typeName(Type(type)).data(), e);
        QVERIFY2(e <= maxRmse, qPrintable(QString::number(e)));
        QVERIFY(e > 0.0 || type == int(Type::F32));
    }

    void zerosAndNonFinite() {
        for (const TypeInfo& info : allTypes()) {
            if (!info.canQuantize || info.type == Type::F32 || info.type == Type::F16 ||
                info.type == Type::BF16)
                continue;
            std::vector<float> zeros(256, 0.0f);
            auto y = roundTrip(info.type, zeros);
            QCOMPARE(y.size(), zeros.size());
            for (float v : y) QCOMPARE(v, 0.0f);
            auto x = gaussian(256, 3);
            x[5] = NAN;
            x[77] = INFINITY;
            y = roundTrip(info.type, x);
            QCOMPARE(y.size(), x.size());
            for (size_t i = 0; i < y.size(); ++i)
                QVERIFY2(std::isfinite(y[i]), info.name.data());
        }
    }

    void rejectsBadSizesAndTypes() {
        float x[48] = {};
        uint8_t buf[512];
        QCOMPARE(quantizeRow(Type::Q4_0, x, buf, 48).code(), ErrorCode::InvalidArgument);
        QCOMPARE(dequantizeRow(Type::Q4_K, buf, x, 32).code(), ErrorCode::InvalidArgument);
        QCOMPARE(quantizeRow(Type::IQ2_XXS, x, buf, 256).code(), ErrorCode::Unsupported);
        QCOMPARE(dequantizeRow(Type(99), buf, x, 32).code(), ErrorCode::Unsupported);
        QVERIFY(!rowBytes(Type::Q8_0, 33).isOk());
        QCOMPARE(*rowBytes(Type::Q4_K, 512), uint64_t(288));
        QVERIFY(!rowBytes(Type::F32, ~0ull / 2).isOk());
    }

    void threadsGiveIdenticalBytes() {
        const int64_t rows = 37, cols = 512;
        const auto x = gaussian(size_t(rows * cols), 11);
        for (Type t : {Type::Q4_K, Type::Q8_0, Type::Q6_K, Type::IQ4_XS}) {
            const size_t bytes = size_t(*rowBytes(t, cols) * rows);
            std::vector<uint8_t> a(bytes), b(bytes);
            QVERIFY(quantizeRows(t, x.data(), a.data(), rows, cols, 1).isOk());
            QVERIFY(quantizeRows(t, x.data(), b.data(), rows, cols, 2).isOk());
            QVERIFY(a == b);
        }
    }

    // general.file_type names: our mixes, and llama.cpp's file types we read but do not make.
    void fileTypeNames() {
        QCOMPARE(hearth::fileTypeName(15), std::string("Q4_K_M"));
        QCOMPARE(hearth::fileTypeName(19), std::string("IQ2_XXS"));
        QCOMPARE(hearth::fileTypeName(29), std::string("IQ2_M"));
        QCOMPARE(hearth::fileTypeName(37), std::string("TQ2_0"));
        QCOMPARE(hearth::fileTypeName(99), std::string("unknown"));
    }

    void mixNames() {
        QCOMPARE(mixFromName("q4_k_m")->fileType, 15u);
        QCOMPARE(mixFromName("Q4_K")->name, std::string_view("Q4_K_M"));
        QCOMPARE(mixFromName("Q8_0")->baseType, Type::Q8_0);
        QCOMPARE(mixFromName("BF16")->fileType, 32u);
        QVERIFY(!mixFromName("Q7_K"));
        QCOMPARE(int(allMixes().size()), 32);
        QCOMPARE(mixFromName("iq4_xs")->fileType, 30u);
        QCOMPARE(mixFromName("IQ4_NL")->fileType, 25u);
        QCOMPARE(mixFromName("MXFP4")->name, std::string_view("MXFP4_MOE"));
        QCOMPARE(mixFromName("MXFP4_MOE")->fileType, 38u);
    }

    void mixRulesIq4AndMxfp4() {
        const Mix xs = *mixFromName("IQ4_XS");
        QCOMPARE(chooseType(xs, role("blk.7.attn_q.weight")), Type::IQ4_XS);
        QCOMPARE(chooseType(xs, role("token_embd.weight")), Type::IQ4_XS);
        QCOMPARE(chooseType(xs, role("output.weight")), Type::Q6_K);
        // The first eighth of ffn_down gets Q5_K; attn_v too when 4+ heads share a KV head.
        QCOMPARE(chooseType(xs, role("blk.3.ffn_down.weight")), Type::Q5_K);
        QCOMPARE(chooseType(xs, role("blk.4.ffn_down.weight")), Type::IQ4_XS);
        QCOMPARE(chooseType(xs, role("blk.9.attn_v.weight")), Type::IQ4_XS);
        TensorRole v = role("blk.9.attn_v.weight");
        v.gqa = 4;
        QCOMPARE(chooseType(xs, v), Type::Q5_K);
        // Rows that 256-blocks cannot tile: IQ4_XS falls back to IQ4_NL, Q5_K to Q5_1.
        QCOMPARE(chooseType(xs, role("blk.7.attn_q.weight", 896)), Type::IQ4_NL);
        QCOMPARE(chooseType(xs, role("blk.0.ffn_down.weight", 896)), Type::Q5_1);
        QCOMPARE(chooseType(xs, role("output.weight", 896)), Type::Q8_0);
        QCOMPARE(chooseType(xs, role("blk.7.attn_q.weight", 100)), Type::F16);
        const Mix nl = *mixFromName("IQ4_NL");
        QCOMPARE(chooseType(nl, role("blk.7.attn_q.weight", 896)), Type::IQ4_NL);
        QCOMPARE(chooseType(nl, role("blk.3.ffn_down.weight")), Type::Q5_K);
        QCOMPARE(chooseType(nl, role("output.weight")), Type::Q6_K);
        // MXFP4_MOE: experts (3-D) in MXFP4, every other matrix and the output in Q8_0.
        const Mix mx = *mixFromName("MXFP4");
        TensorRole experts = role("blk.2.ffn_down_exps.weight", 2880);
        experts.nDims = 3;
        QCOMPARE(chooseType(mx, experts), Type::MXFP4);
        QCOMPARE(chooseType(mx, role("blk.2.attn_q.weight")), Type::Q8_0);
        QCOMPARE(chooseType(mx, role("token_embd.weight")), Type::Q8_0);
        QCOMPARE(chooseType(mx, role("output.weight")), Type::Q8_0);
        experts.ne0 = 100;
        QCOMPARE(chooseType(mx, experts), Type::F16);
    }

    // llama.cpp's low-bit mixes (llama-quant.cpp): file type ids, base types, the per-tensor rules
    // and the 32-block fallbacks (IQ types to IQ4_NL, ternary to Q4_0).
    void mixRulesLowBit() {
        const struct {
            const char* name;
            uint32_t fileType;
            Type base;
        } kIds[] = {{"IQ2_XXS", 19, Type::IQ2_XXS}, {"IQ2_XS", 20, Type::IQ2_XS}, {"IQ3_XS", 22, Type::IQ3_S},
                    {"IQ3_XXS", 23, Type::IQ3_XXS}, {"IQ1_S", 24, Type::IQ1_S},   {"IQ3_S", 26, Type::IQ3_S},
                    {"IQ3_M", 27, Type::IQ3_S},     {"IQ2_S", 28, Type::IQ2_XS},  {"IQ2_M", 29, Type::IQ2_S},
                    {"IQ1_M", 31, Type::IQ1_M},     {"TQ1_0", 36, Type::TQ1_0},   {"TQ2_0", 37, Type::TQ2_0}};
        for (const auto& id : kIds) {
            QCOMPARE(mixFromName(id.name)->fileType, id.fileType);
            QCOMPARE(mixFromName(id.name)->baseType, id.base);
            QCOMPARE(chooseType(*mixFromName(id.name), role("blk.9.ffn_up.weight")),
                     std::string_view(id.name) == "IQ3_XS" ? Type::IQ3_XXS : id.base);
        }
        const Mix xxs = *mixFromName("IQ2_XXS"), m2 = *mixFromName("IQ2_M"), s1 = *mixFromName("IQ1_S");
        QCOMPARE(chooseType(xxs, role("output.weight")), Type::Q5_K);
        QCOMPARE(chooseType(xxs, role("token_embd.weight")), Type::Q2_K);
        QCOMPARE(chooseType(xxs, role("blk.9.attn_v.weight")), Type::Q2_K);
        QCOMPARE(chooseType(xxs, role("blk.3.ffn_down.weight")), Type::Q2_K);
        QCOMPARE(chooseType(xxs, role("blk.4.ffn_down.weight")), Type::IQ2_XXS);
        QCOMPARE(chooseType(xxs, role("blk.4.attn_output.weight")), Type::IQ2_XXS);
        QCOMPARE(chooseType(m2, role("blk.9.attn_v.weight")), Type::IQ3_S);
        QCOMPARE(chooseType(m2, role("blk.3.ffn_down.weight")), Type::IQ3_S);
        QCOMPARE(chooseType(m2, role("token_embd.weight")), Type::IQ3_S);
        QCOMPARE(chooseType(s1, role("blk.4.attn_output.weight")), Type::IQ2_XXS);
        TensorRole v = role("blk.9.attn_v.weight");
        v.gqa = 4;
        QCOMPARE(chooseType(s1, v), Type::Q4_K);
        // IQ3_XXS: attn_q/k in IQ2_S; attn_v IQ3_XXS with an imatrix, IQ3_S without.
        const Mix x3 = *mixFromName("IQ3_XXS");
        QCOMPARE(chooseType(x3, role("blk.9.attn_q.weight")), Type::IQ2_S);
        QCOMPARE(chooseType(x3, role("blk.9.attn_output.weight")), Type::IQ3_S);
        TensorRole vi = role("blk.9.attn_v.weight");
        QCOMPARE(chooseType(x3, vi), Type::IQ3_S);
        vi.hasImatrix = true;
        QCOMPARE(chooseType(x3, vi), Type::IQ3_XXS);
        QCOMPARE(chooseType(x3, role("blk.9.ffn_down.weight")), Type::Q3_K);
        const Mix m3 = *mixFromName("IQ3_M");
        QCOMPARE(chooseType(m3, role("blk.9.attn_v.weight")), Type::Q4_K);
        QCOMPARE(chooseType(m3, role("blk.3.ffn_down.weight")), Type::Q4_K);
        QCOMPARE(chooseType(m3, role("blk.9.attn_output.weight")), Type::Q4_K);
        const Mix t1 = *mixFromName("TQ1_0");
        QCOMPARE(chooseType(t1, role("token_embd.weight")), Type::Q4_K);
        QCOMPARE(chooseType(t1, role("output.weight")), Type::Q6_K);
        // Rows of 64 (stories260K): IQ types fall back to IQ4_NL, ternary to Q4_0, output Q8_0.
        QCOMPARE(chooseType(xxs, role("blk.4.attn_q.weight", 64)), Type::IQ4_NL);
        QCOMPARE(chooseType(t1, role("blk.4.attn_q.weight", 64)), Type::Q4_0);
        QCOMPARE(chooseType(xxs, role("output.weight", 64)), Type::Q8_0);
        QCOMPARE(chooseType(x3, role("blk.4.attn_q.weight", 100)), Type::F16);
    }

    void mixRules() {
        const Mix m = *mixFromName("Q4_K_M");
        TensorRole norm = role("blk.0.attn_norm.weight");
        norm.nDims = 1;
        QCOMPARE(chooseType(m, norm), Type::F32);
        QCOMPARE(chooseType(m, role("output.weight")), Type::Q6_K);
        QCOMPARE(chooseType(m, role("token_embd.weight")), Type::Q4_K);
        TensorRole tied = role("token_embd.weight");
        tied.hasOutput = false;
        QCOMPARE(chooseType(m, tied), Type::Q6_K);
        // 32 layers: more bits in layers 0-3, 28-31, and every third from 4 (6, 9, 12, ...).
        QCOMPARE(chooseType(m, role("blk.0.attn_v.weight")), Type::Q6_K);
        QCOMPARE(chooseType(m, role("blk.4.attn_v.weight")), Type::Q4_K);
        QCOMPARE(chooseType(m, role("blk.6.ffn_down.weight")), Type::Q6_K);
        QCOMPARE(chooseType(m, role("blk.7.ffn_down.weight")), Type::Q4_K);
        QCOMPARE(chooseType(m, role("blk.31.ffn_down.weight")), Type::Q6_K);
        QCOMPARE(chooseType(m, role("blk.7.attn_q.weight")), Type::Q4_K);
        // Rows that 256-blocks cannot tile fall back to a 32-block type.
        QCOMPARE(chooseType(m, role("blk.7.attn_q.weight", 896)), Type::Q5_0);
        QCOMPARE(chooseType(m, role("output.weight", 896)), Type::Q8_0);
        QCOMPARE(chooseType(m, role("blk.7.attn_q.weight", 100)), Type::F16);
        // Mixtures of experts: routers and (2-D) expert biases stay F32; expert down projections
        // get the ffn_down rule.
        QCOMPARE(chooseType(m, role("blk.7.ffn_gate_inp.weight")), Type::F32);
        QCOMPARE(chooseType(m, role("blk.7.ffn_up_exps.bias")), Type::F32);
        QCOMPARE(chooseType(m, role("blk.6.ffn_down_exps.weight")), Type::Q6_K);
        QCOMPARE(chooseType(m, role("blk.7.ffn_down_exps.weight")), Type::Q4_K);

        const Mix s = *mixFromName("Q4_K_S");
        QCOMPARE(chooseType(s, role("blk.3.attn_v.weight")), Type::Q5_K);
        QCOMPARE(chooseType(s, role("blk.4.attn_v.weight")), Type::Q4_K);
        QCOMPARE(chooseType(s, role("blk.3.ffn_down.weight")), Type::Q5_K);
        const Mix q3 = *mixFromName("Q3_K_M");
        QCOMPARE(chooseType(q3, role("blk.1.attn_v.weight")), Type::Q5_K);
        QCOMPARE(chooseType(q3, role("blk.2.attn_v.weight")), Type::Q4_K);
        QCOMPARE(chooseType(q3, role("blk.9.attn_output.weight")), Type::Q4_K);
        QCOMPARE(chooseType(q3, role("blk.1.ffn_down.weight")), Type::Q5_K);
        QCOMPARE(chooseType(q3, role("blk.9.ffn_down.weight")), Type::Q4_K);
        const Mix q2 = *mixFromName("Q2_K");
        TensorRole v = role("blk.9.attn_v.weight");
        QCOMPARE(chooseType(q2, v), Type::Q3_K);
        v.gqa = 4;
        QCOMPARE(chooseType(q2, v), Type::Q4_K);
        const Mix q40 = *mixFromName("Q4_0");
        QCOMPARE(chooseType(q40, role("output.weight")), Type::Q6_K);
        QCOMPARE(chooseType(q40, role("blk.0.attn_v.weight")), Type::Q4_0);
        const Mix q8 = *mixFromName("Q8_0");
        QCOMPARE(chooseType(q8, role("output.weight")), Type::Q8_0);
        QCOMPARE(chooseType(*mixFromName("F16"), role("output.weight")), Type::F16);
    }
};

QTEST_GUILESS_MAIN(TestQuant)
#include "test_quant.moc"
