// Reference quantizers for the K-quant super-block formats (Q2_K..Q6_K, Q8_K). Each sub-block's
// scale (and min) comes from a search over candidate scales with a weighted least-squares refit,
// then the scales themselves are quantized and the values re-quantized against the final scales.
#include "quant/quantizers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth::quant::detail {

namespace {

inline bool finite(float v) { return std::isfinite(v); }

// Fits x[i] ≈ scale * L[i] + lo with integer L in [0, nmax] and lo <= 0, minimising the
// w-weighted squared error. Candidate scales (nmax + rmin + k*rdelta) / (max - min) for k in
// [0, nstep] are each rounded, refit in closed form, and the best is kept. x must be finite.
// Returns scale; *negMin receives -lo (>= 0).
float fitScaleMin(const float* x, const float* w, int n, int nmax, uint8_t* L, float* negMin,
                  float rmin, float rdelta, int nstep) {
    float lo = x[0], hi = x[0], sumW = 0.0f, sumWx = 0.0f, sumWxx = 0.0f;
    for (int i = 0; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
        sumW += w[i];
        sumWx += w[i] * x[i];
        sumWxx += w[i] * x[i] * x[i];
    }
    lo = std::min(lo, 0.0f);
    if (hi <= lo) {
        std::memset(L, 0, size_t(n));
        *negMin = -lo;
        return 0.0f;
    }
    // Weighted squared error of x ≈ scale*q + offset from the sums over q.
    auto error = [&](float scale, float offset, float sl, float sll, float sxl) {
        return scale * scale * sll + 2.0f * scale * offset * sl + offset * offset * sumW -
               2.0f * scale * sxl - 2.0f * offset * sumWx + sumWxx;
    };
    float bestScale = (hi - lo) / float(nmax), bestMin = lo;
    float bestErr;
    {
        const float inv = 1.0f / bestScale;
        float sl = 0.0f, sll = 0.0f, sxl = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int q = std::min(nmax, int((x[i] - lo) * inv + 0.5f));
            L[i] = uint8_t(q);
            sl += w[i] * float(q);
            sll += w[i] * float(q * q);
            sxl += w[i] * float(q) * x[i];
        }
        bestErr = error(bestScale, bestMin, sl, sll, sxl);
    }
    uint8_t trial[32];
    for (int step = 0; step <= nstep; ++step) {
        const float inv = (float(nmax) + rmin + rdelta * float(step)) / (hi - lo);
        float sl = 0.0f, sll = 0.0f, sxl = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int q = std::min(nmax, int((x[i] - lo) * inv + 0.5f));
            trial[i] = uint8_t(q);
            sl += w[i] * float(q);
            sll += w[i] * float(q * q);
            sxl += w[i] * float(q) * x[i];
        }
        const float det = sumW * sll - sl * sl;
        if (det <= 0.0f) continue;
        float scale = (sumW * sxl - sumWx * sl) / det;
        float offset = (sll * sumWx - sl * sxl) / det;
        if (offset > 0.0f) { // keep the offset non-positive: refit the scale alone
            offset = 0.0f;
            scale = sll > 0.0f ? sxl / sll : 0.0f;
        }
        const float err = error(scale, offset, sl, sll, sxl);
        if (err < bestErr) {
            bestErr = err;
            bestScale = scale;
            bestMin = offset;
            std::memcpy(L, trial, size_t(n));
        }
    }
    *negMin = -bestMin;
    return bestScale;
}

// A super-block with non-finite values replaced by 0, so the searches can skip checks.
struct FiniteBlock {
    explicit FiniteBlock(const float* x) {
        for (int i = 0; i < kQKK; ++i) v[i] = std::isfinite(x[i]) ? x[i] : 0.0f;
    }
    float v[kQKK];
};

// Fits x[i] ≈ scale * q[i] with integer q in [-nmax, nmax - 1], weights w. Tries scales around
// nmax / max and keeps the best least-squares fit. Returns the scale (may be negative).
float fitScaleSymmetric(const float* x, const float* w, int n, int nmax) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (amax < 1e-30f) return 0.0f;
    float bestScale = 0.0f, bestScore = -1.0f;
    for (int step = -9; step <= 9; ++step) {
        const float inv = -(float(nmax) + 0.1f * float(step)) / max;
        float sxq = 0.0f, sqq = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float v = x[i];
            const int q = std::clamp(roundToInt(inv * v), -nmax, nmax - 1);
            sxq += w[i] * v * float(q);
            sqq += w[i] * float(q * q);
        }
        // The least-squares scale sxq/sqq reduces the error by sxq²/sqq: maximise that.
        if (sqq > 0.0f && sxq * sxq / sqq > bestScore) {
            bestScore = sxq * sxq / sqq;
            bestScale = sxq / sqq;
        }
    }
    return bestScale;
}

// Symmetric scales of the 16 sub-blocks of 16 (Q3_K, Q6_K), weighted by x². Returns the scale of
// largest magnitude, with its sign (0 when the block is all zeros).
float fitSubBlockScales(const float* x, int nmax, float* scales) {
    float w[16];
    float maxScale = 0.0f, amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
        for (int i = 0; i < 16; ++i) w[i] = x[16 * j + i] * x[16 * j + i];
        scales[j] = fitScaleSymmetric(x + 16 * j, w, 16, nmax);
        if (std::fabs(scales[j]) > amax) {
            amax = std::fabs(scales[j]);
            maxScale = scales[j];
        }
    }
    return maxScale;
}

// Packs 2-bit values for Q2_K/Q3_K: within each 128-element half, byte l holds elements
// l, l+32, l+64, l+96 at bit offsets 0, 2, 4, 6.
void pack2Bit(const uint8_t* L, uint8_t* qs) {
    for (int half = 0; half < 2; ++half)
        for (int l = 0; l < 32; ++l) {
            const uint8_t* v = L + 128 * half + l;
            qs[32 * half + l] = uint8_t(v[0] | v[32] << 2 | v[64] << 4 | v[96] << 6);
        }
}

// 6-bit scale/min packing of Q4_K and Q5_K (see k4ScaleMin in blocks.h for the reading side).
void packK4Scales(const uint8_t* sc, const uint8_t* mn, uint8_t* out) {
    std::memset(out, 0, 12);
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            out[j] = sc[j];
            out[j + 4] = mn[j];
        } else {
            out[j + 4] = uint8_t((sc[j] & 0x0f) | (mn[j] & 0x0f) << 4);
            out[j - 4] |= uint8_t((sc[j] >> 4) << 6);
            out[j] |= uint8_t((mn[j] >> 4) << 6);
        }
    }
}

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): per 32-element sub-block scale and min, both
// quantized to 6 bits against the super-block's d and dmin. L receives values in [0, nmax].
void quantizeK4Like(const float* x, int nmax, uint16_t& dOut, uint16_t& dminOut,
                    uint8_t* packedScales, uint8_t* L) {
    float scales[8], mins[8], w[32];
    float maxScale = 0.0f, maxMin = 0.0f;
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float ss = 0.0f;
        for (int i = 0; i < 32; ++i) ss += finite(xs[i]) ? xs[i] * xs[i] : 0.0f;
        const float rms = std::sqrt(ss / 32.0f);
        for (int i = 0; i < 32; ++i) w[i] = rms + std::fabs(finite(xs[i]) ? xs[i] : 0.0f);
        scales[j] = fitScaleMin(xs, w, 32, nmax, L + 32 * j, &mins[j], nmax == 15 ? -1.0f : -0.5f,
                                0.1f, nmax == 15 ? 20 : 15);
        maxScale = std::max(maxScale, scales[j]);
        maxMin = std::max(maxMin, mins[j]);
    }
    const float invScale = maxScale > 0.0f ? 63.0f / maxScale : 0.0f;
    const float invMin = maxMin > 0.0f ? 63.0f / maxMin : 0.0f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; ++j) {
        ls[j] = uint8_t(std::clamp(roundToInt(invScale * scales[j]), 0, 63));
        lm[j] = uint8_t(std::clamp(roundToInt(invMin * mins[j]), 0, 63));
    }
    packK4Scales(ls, lm, packedScales);
    dOut = floatToHalf(maxScale / 63.0f);
    dminOut = floatToHalf(maxMin / 63.0f);
    const float d = halfToFloat(dOut), dmin = halfToFloat(dminOut);
    for (int j = 0; j < 8; ++j) {
        const float step = d * float(ls[j]);
        if (step == 0.0f) {
            std::memset(L + 32 * j, 0, 32);
            continue;
        }
        const float offset = dmin * float(lm[j]);
        for (int i = 0; i < 32; ++i) {
            const float v = finite(x[32 * j + i]) ? x[32 * j + i] : 0.0f;
            L[32 * j + i] = uint8_t(std::clamp(roundToInt((v + offset) / step), 0, nmax));
        }
    }
}

} // namespace

void quantizeQ2_K(const float* src, BlockQ2_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, src += kQKK) {
        const FiniteBlock block(src);
        const float* x = block.v;
        uint8_t L[kQKK];
        float scales[16], mins[16], w[16];
        float maxScale = 0.0f, maxMin = 0.0f;
        for (int j = 0; j < 16; ++j) {
            for (int i = 0; i < 16; ++i) w[i] = std::fabs(finite(x[16 * j + i]) ? x[16 * j + i] : 0.0f);
            scales[j] = fitScaleMin(x + 16 * j, w, 16, 3, L + 16 * j, &mins[j], -0.5f, 0.1f, 15);
            maxScale = std::max(maxScale, scales[j]);
            maxMin = std::max(maxMin, mins[j]);
        }
        const float invScale = maxScale > 0.0f ? 15.0f / maxScale : 0.0f;
        const float invMin = maxMin > 0.0f ? 15.0f / maxMin : 0.0f;
        for (int j = 0; j < 16; ++j) {
            const int ls = std::clamp(roundToInt(invScale * scales[j]), 0, 15);
            const int lm = std::clamp(roundToInt(invMin * mins[j]), 0, 15);
            y[b].scales[j] = uint8_t(ls | lm << 4);
        }
        y[b].d = floatToHalf(maxScale / 15.0f);
        y[b].dmin = floatToHalf(maxMin / 15.0f);
        const float d = halfToFloat(y[b].d), dmin = halfToFloat(y[b].dmin);
        for (int j = 0; j < 16; ++j) {
            const float step = d * float(y[b].scales[j] & 0x0f);
            if (step == 0.0f) {
                std::memset(L + 16 * j, 0, 16);
                continue;
            }
            const float offset = dmin * float(y[b].scales[j] >> 4);
            for (int i = 0; i < 16; ++i) {
                const float v = finite(x[16 * j + i]) ? x[16 * j + i] : 0.0f;
                L[16 * j + i] = uint8_t(std::clamp(roundToInt((v + offset) / step), 0, 3));
            }
        }
        pack2Bit(L, y[b].qs);
    }
}

void quantizeQ3_K(const float* src, BlockQ3_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, src += kQKK) {
        const FiniteBlock block(src);
        const float* x = block.v;
        float scales[16];
        const float maxScale = fitSubBlockScales(x, 4, scales);
        std::memset(y[b].scales, 0, 12);
        int8_t ls[16] = {};
        if (maxScale != 0.0f) {
            const float inv = -32.0f / maxScale;
            for (int j = 0; j < 16; ++j) {
                ls[j] = int8_t(std::clamp(roundToInt(inv * scales[j]), -32, 31));
                const int stored = ls[j] + 32;
                if (j < 8)
                    y[b].scales[j] = uint8_t(stored & 0x0f);
                else
                    y[b].scales[j - 8] |= uint8_t((stored & 0x0f) << 4);
                y[b].scales[8 + j % 4] |= uint8_t((stored >> 4) << (2 * (j / 4)));
            }
            y[b].d = floatToHalf(1.0f / inv);
        } else {
            y[b].d = floatToHalf(0.0f);
        }
        const float d = halfToFloat(y[b].d);
        uint8_t L[kQKK];
        for (int j = 0; j < 16; ++j) {
            const float step = d * float(q3kScale(y[b].scales, j));
            for (int i = 0; i < 16; ++i) {
                const float v = finite(x[16 * j + i]) ? x[16 * j + i] : 0.0f;
                const int q = step != 0.0f ? std::clamp(roundToInt(v / step), -4, 3) : 0;
                L[16 * j + i] = uint8_t(q + 4);
            }
        }
        std::memset(y[b].hmask, 0, sizeof y[b].hmask);
        for (int e = 0; e < kQKK; ++e) {
            if (L[e] > 3) {
                y[b].hmask[e % 32] |= uint8_t(1u << (e / 32));
                L[e] -= 4;
            }
        }
        pack2Bit(L, y[b].qs);
    }
}

void quantizeQ4_K(const float* src, BlockQ4_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, src += kQKK) {
        const FiniteBlock block(src);
        const float* x = block.v;
        uint8_t L[kQKK];
        quantizeK4Like(x, 15, y[b].d, y[b].dmin, y[b].scales, L);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l)
                y[b].qs[32 * c + l] = uint8_t(L[64 * c + l] | L[64 * c + 32 + l] << 4);
    }
}

void quantizeQ5_K(const float* src, BlockQ5_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, src += kQKK) {
        const FiniteBlock block(src);
        const float* x = block.v;
        uint8_t L[kQKK];
        quantizeK4Like(x, 31, y[b].d, y[b].dmin, y[b].scales, L);
        std::memset(y[b].qh, 0, sizeof y[b].qh);
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                const int q0 = L[64 * c + l], q1 = L[64 * c + 32 + l];
                y[b].qs[32 * c + l] = uint8_t((q0 & 0x0f) | (q1 & 0x0f) << 4);
                y[b].qh[l] |= uint8_t((q0 >> 4) << (2 * c) | (q1 >> 4) << (2 * c + 1));
            }
        }
    }
}

void quantizeQ6_K(const float* src, BlockQ6_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, src += kQKK) {
        const FiniteBlock block(src);
        const float* x = block.v;
        float scales[16];
        const float maxScale = fitSubBlockScales(x, 32, scales);
        if (std::fabs(maxScale) < 1e-30f) {
            std::memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float inv = -128.0f / maxScale;
        for (int j = 0; j < 16; ++j)
            y[b].scales[j] = int8_t(std::min(127, roundToInt(inv * scales[j])));
        y[b].d = floatToHalf(1.0f / inv);
        const float d = halfToFloat(y[b].d);
        uint8_t L[kQKK];
        for (int j = 0; j < 16; ++j) {
            const float step = d * float(y[b].scales[j]);
            for (int i = 0; i < 16; ++i) {
                const float v = finite(x[16 * j + i]) ? x[16 * j + i] : 0.0f;
                const int q = step != 0.0f ? std::clamp(roundToInt(v / step), -32, 31) : 0;
                L[16 * j + i] = uint8_t(q + 32);
            }
        }
        for (int h = 0; h < 2; ++h) {
            const uint8_t* v = L + 128 * h;
            for (int l = 0; l < 32; ++l) {
                y[b].ql[64 * h + l] = uint8_t((v[l] & 0x0f) | (v[l + 64] & 0x0f) << 4);
                y[b].ql[64 * h + l + 32] = uint8_t((v[l + 32] & 0x0f) | (v[l + 96] & 0x0f) << 4);
                y[b].qh[32 * h + l] = uint8_t((v[l] >> 4) | (v[l + 32] >> 4) << 2 |
                                              (v[l + 64] >> 4) << 4 | (v[l + 96] >> 4) << 6);
            }
        }
    }
}

void quantizeQ8_K(const float* x, BlockQ8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
        float amax = 0.0f, max = 0.0f;
        for (int i = 0; i < kQKK; ++i)
            if (finite(x[i]) && std::fabs(x[i]) > amax) {
                amax = std::fabs(x[i]);
                max = x[i];
            }
        if (amax == 0.0f) {
            std::memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        const float inv = -127.0f / max;
        for (int i = 0; i < kQKK; ++i)
            y[b].qs[i] = int8_t(std::min(127, roundToInt(inv * (finite(x[i]) ? x[i] : 0.0f))));
        for (int j = 0; j < 16; ++j) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * j + i];
            y[b].bsums[j] = int16_t(sum);
        }
        y[b].d = 1.0f / inv;
    }
}

} // namespace hearth::quant::detail
