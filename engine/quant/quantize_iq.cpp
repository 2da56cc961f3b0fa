// Reference quantizers for the 4-bit non-linear formats: IQ4_NL and IQ4_XS (a scale search over
// the 16 levels per 32 values, as llama.cpp does without an importance matrix) and MXFP4 (a
// power-of-two scale from the block's largest magnitude, then the nearest FP4 value).
#include "quant/quantizers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth::quant::detail {

namespace {

// Blocks whose largest magnitude is below this get a zero scale.
constexpr float kTinyBlock = 1e-15f;
// Candidate scales tried on either side of the one that maps the largest value to level 0.
constexpr int kScaleTries = 7;

// Round to nearest, ties to even, for |v| < 2^22 (the scale arithmetic stays far below).
inline int roundEven(float v) {
    const float t = v + 12582912.0f; // 1.5 * 2^23
    int32_t bits;
    std::memcpy(&bits, &t, sizeof bits);
    return bits - 0x4B400000;
}

// The index of the IQ4 level nearest to v (the upper one on a tie), by bisection.
int nearestIq4(float v) {
    if (!(v > float(iq4Level(0)))) return 0; // also catches NaN
    if (v >= float(iq4Level(15))) return 15;
    int lo = 0, hi = 15; // level(lo) < v < level(hi) holds throughout
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < float(iq4Level(mid))) hi = mid;
        else lo = mid;
    }
    return v - float(iq4Level(lo)) < float(iq4Level(hi)) - v ? lo : hi;
}

// Copies n values, replacing non-finite ones by 0, so the searches need no checks.
void finiteCopy(const float* x, float* out, int n) {
    for (int i = 0; i < n; ++i) out[i] = std::isfinite(x[i]) ? x[i] : 0.0f;
}

// Σ w·q·x and Σ w·q² over 32 values quantized as levels of x·inv, with weights w = x².
void levelSums(const float* x, float inv, float& sumQX, float& sumQQ) {
    sumQX = sumQQ = 0.0f;
    for (int i = 0; i < 32; ++i) {
        const float q = float(iq4Level(nearestIq4(inv * x[i])));
        const float w = x[i] * x[i];
        sumQX += w * q * x[i];
        sumQQ += w * q * q;
    }
}

// The scale d of x ≈ d · level(L) for 32 finite values, minimising Σ x²·(x - d·level)²: starting
// from the scale that sends the largest magnitude to the top level, then trying the ones that
// send it to level 0 shifted by -7..7, each refit in closed form; the best fit wins.
float fitIq4Scale(const float* x) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 32; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (amax < kTinyBlock) return 0.0f;
    const float level0 = float(iq4Level(0)); // -127
    float sumQX, sumQQ;
    levelSums(x, level0 / -max, sumQX, sumQQ);
    float d = sumQQ > 0.0f ? sumQX / sumQQ : 0.0f;
    float best = d * sumQX; // the error reduction of this fit: (Σwqx)² / Σwq²
    for (int t = -kScaleTries; t <= kScaleTries; ++t) {
        levelSums(x, (float(t) + level0) / max, sumQX, sumQQ);
        if (sumQQ > 0.0f && sumQX * sumQX > best * sumQQ) {
            d = sumQX / sumQQ;
            best = d * sumQX;
        }
    }
    return d;
}

// Packs 32 level indices the IQ4_NL way: byte j holds value j (low nibble) and j+16 (high).
void packIq4(const float* x, float inv, uint8_t* qs) {
    for (int j = 0; j < 16; ++j)
        qs[j] = uint8_t(nearestIq4(inv * x[j]) | nearestIq4(inv * x[j + 16]) << 4);
}

// The index of the doubled FP4 value v·2^(e-128) nearest to x (the first such index on a tie).
int nearestFp4(float x, float scale) {
    int best = 0;
    float bestErr = std::fabs(float(mxfp4Level(0)) * scale - x);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(float(mxfp4Level(i)) * scale - x);
        if (err < bestErr) {
            best = i;
            bestErr = err;
        }
    }
    return best;
}

} // namespace

void quantizeIQ4_NL(const float* x, BlockIQ4_NL* y, int64_t n) {
    float v[32];
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        finiteCopy(x, v, 32);
        const float d = fitIq4Scale(v);
        y[b].d = floatToHalf(d);
        packIq4(v, d != 0.0f ? 1.0f / d : 0.0f, y[b].qs);
    }
}

void quantizeIQ4_XS(const float* x, BlockIQ4_XS* y, int64_t n) {
    float v[kQKK], scales[8];
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
        finiteCopy(x, v, kQKK);
        // Each sub-block's own best scale; the largest in magnitude sets the block's d so that
        // it becomes the 6-bit scale -32.
        float maxScale = 0.0f;
        for (int j = 0; j < 8; ++j) {
            scales[j] = fitIq4Scale(v + 32 * j);
            if (std::fabs(scales[j]) > std::fabs(maxScale)) maxScale = scales[j];
        }
        const float d = -maxScale / 32.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        BlockIQ4_XS& o = y[b];
        o.d = floatToHalf(d);
        o.scalesH = 0;
        std::memset(o.scalesL, 0, sizeof o.scalesL);
        for (int j = 0; j < 8; ++j) {
            const int l = std::clamp(roundEven(id * scales[j]), -32, 31);
            const float dl = d * float(l);
            packIq4(v + 32 * j, dl != 0.0f ? 1.0f / dl : 0.0f, o.qs + 16 * j);
            const int stored = l + 32;
            o.scalesL[j / 2] = uint8_t(o.scalesL[j / 2] | (stored & 0x0f) << (4 * (j % 2)));
            o.scalesH = uint16_t(o.scalesH | (stored >> 4) << (2 * j));
        }
    }
}

void quantizeMXFP4(const float* x, BlockMXFP4* y, int64_t n) {
    float v[32];
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        finiteCopy(x, v, 32);
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
        // amax = m·2^k with m in [0.5, 1): the largest value is 2^(k-1) or more, and the scale
        // 2^(k-3) brings it to [4, 8) in units of the FP4 values (top value 6).
        int e = 0;
        if (amax > 0.0f) {
            int k = 0;
            std::frexp(amax, &k);
            e = std::clamp(k - 1 - 2 + 127, 0, 255);
        }
        y[b].e = uint8_t(e);
        const float scale = e8m0Half(uint8_t(e));
        for (int j = 0; j < 16; ++j)
            y[b].qs[j] = uint8_t(nearestFp4(v[j], scale) | nearestFp4(v[j + 16], scale) << 4);
    }
}

} // namespace hearth::quant::detail
