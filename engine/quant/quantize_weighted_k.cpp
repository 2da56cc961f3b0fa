// The K-quant searches given an importance vector (an imatrix), as ggml runs them: per sub-block a
// weighted fit of the values, then a weighted fit of the sub-blocks' scales (and mins) to the
// super-block's 4- or 6-bit grid, then the values re-quantized against the stored scales.
#include "quant/weighted_fit.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth::quant::detail {

namespace {

// Q2_K / Q3_K: within each 128-element half, byte l holds elements l, l+32, l+64, l+96.
void pack2Bits(const uint8_t* L, uint8_t* qs) {
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const uint8_t* v = L + 128 * h + l;
            qs[32 * h + l] = uint8_t(v[0] | v[32] << 2 | v[64] << 4 | v[96] << 6);
        }
}

// Q4_K / Q5_K: 6-bit scales and mins of the 8 sub-blocks in 12 bytes (values as given; callers
// keep ggml's wrap-around of out-of-range levels).
void packScaleMin(const uint8_t* ls, const uint8_t* lm, uint8_t* out) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            out[j] = ls[j];
            out[j + 4] = lm[j];
        } else {
            out[j + 4] = uint8_t((ls[j] & 0x0f) | (lm[j] & 0x0f) << 4);
            out[j - 4] = uint8_t(out[j - 4] | (ls[j] >> 4) << 6);
            out[j] = uint8_t(out[j] | (lm[j] >> 4) << 6);
        }
    }
}

void unpackScaleMin(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = uint8_t((q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4);
        m = uint8_t((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

float sumSquares(const float* x, int n) {
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += x[j] * x[j];
    return s;
}

// Q4_K and Q5_K (nmax 15 or 31): returns the levels in L; fills d, dmin and the scales.
void weightedK4Like(const float* x, const float* imp, int nmax, bool clampLevels, uint16_t& dOut, uint16_t& dminOut,
                    uint8_t* packed, uint8_t* L) {
    float w[32], sw[8], scales[8], mins[8];
    uint8_t ls[8], lm[8];
    const float sigma2 = 2.0f * sumSquares(x, kQKK) / float(kQKK);
    for (int j = 0; j < 8; ++j) {
        for (int l = 0; l < 32; ++l) w[l] = imp[32 * j + l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
        float sumw = 0.0f;
        for (int l = 0; l < 32; ++l) sumw += w[l];
        sw[j] = sumw;
        scales[j] = fitScaleMinWeighted(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], -0.9f, 0.05f, 36);
    }
    const float dBlock = fitPositiveScale(8, 63, scales, ls, sw);
    const float mBlock = fitPositiveScale(8, 63, mins, lm, sw);
    if (clampLevels)
        for (int j = 0; j < 8; ++j) {
            ls[j] = std::min<uint8_t>(63, ls[j]);
            lm[j] = std::min<uint8_t>(63, lm[j]);
        }
    packScaleMin(ls, lm, packed);
    dOut = floatToHalf(dBlock);
    dminOut = floatToHalf(mBlock);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc = 0, m = 0;
        unpackScaleMin(j, packed, sc, m);
        const float d = halfToFloat(dOut) * float(sc);
        if (d == 0.0f) continue;
        const float dm = halfToFloat(dminOut) * float(m);
        for (int i = 0; i < 32; ++i)
            L[32 * j + i] = uint8_t(std::max(0, std::min(nmax, nearestEven((x[32 * j + i] + dm) / d))));
    }
}

} // namespace

void weightedQ2_K(const float* x, BlockQ2_K* y, int64_t n, const float* imp) {
    uint8_t L[kQKK], ls[16], lm[16];
    float w[16], sw[16], scales[16], mins[16];
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK, imp += kQKK) {
        const float sigma2 = sumSquares(x, kQKK) / float(kQKK);
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) w[l] = imp[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
            sw[j] = 0.0f;
            for (int l = 0; l < 16; ++l) sw[j] += w[l];
            scales[j] = fitScaleMinWeighted(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.9f, 0.05f, 36);
        }
        const float dm = fitPositiveScale(16, 15, scales, ls, sw);
        const float mm = fitPositiveScale(16, 15, mins, lm, sw);
        y[b].d = floatToHalf(dm);
        y[b].dmin = floatToHalf(mm);
        const float dq = halfToFloat(y[b].d), mq = halfToFloat(y[b].dmin);
        for (int j = 0; j < 16; ++j) y[b].scales[j] = uint8_t(ls[j] | lm[j] << 4);
        for (int j = 0; j < 16; ++j) {
            const float d = dq * float(y[b].scales[j] & 0x0f);
            if (d == 0.0f) continue;
            const float m = mq * float(y[b].scales[j] >> 4);
            for (int i = 0; i < 16; ++i)
                L[16 * j + i] = uint8_t(std::max(0, std::min(3, nearestEven((x[16 * j + i] + m) / d))));
        }
        pack2Bits(L, y[b].qs);
    }
}

void weightedQ3_K(const float* x, BlockQ3_K* y, int64_t n, const float* imp) {
    int8_t L[kQKK], ls[16];
    float w[16], sw[16], scales[16];
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK, imp += kQKK) {
        const float sigma2 = 2.0f * sumSquares(x, kQKK) / float(kQKK);
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) w[l] = imp[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
            float sumw = 0.0f;
            for (int l = 0; l < 16; ++l) sumw += w[l];
            sw[j] = sumw;
            scales[j] = fitSymmetric(16, 4, x + 16 * j, L + 16 * j, w);
        }
        BlockQ3_K& o = y[b];
        std::memset(o.scales, 0, 12);
        const float dBlock = fitSymmetric(16, 32, scales, ls, sw);
        for (int j = 0; j < 16; ++j) {
            int l = ls[j];
            if (j < 8) o.scales[j] = uint8_t(l & 0x0f);
            else o.scales[j - 8] = uint8_t(o.scales[j - 8] | (l & 0x0f) << 4);
            l >>= 4;
            o.scales[j % 4 + 8] = uint8_t(o.scales[j % 4 + 8] | l << (2 * (j / 4)));
        }
        o.d = floatToHalf(dBlock);
        for (int j = 0; j < 16; ++j) {
            int sc = j < 8 ? o.scales[j] & 0x0f : o.scales[j - 8] >> 4;
            sc = (sc | ((o.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
            const float d = halfToFloat(o.d) * float(sc);
            if (d == 0.0f) continue;
            for (int i = 0; i < 16; ++i)
                L[16 * j + i] = int8_t(std::max(-4, std::min(3, nearestEven(x[16 * j + i] / d))) + 4);
        }
        std::memset(o.hmask, 0, sizeof o.hmask);
        uint8_t U[kQKK];
        for (int e = 0; e < kQKK; ++e) {
            U[e] = uint8_t(L[e]);
            if (U[e] > 3) {
                o.hmask[e % 32] = uint8_t(o.hmask[e % 32] | 1u << (e / 32));
                U[e] = uint8_t(U[e] - 4);
            }
        }
        pack2Bits(U, o.qs);
    }
}

void weightedQ4_K(const float* x, BlockQ4_K* y, int64_t n, const float* imp) {
    uint8_t L[kQKK];
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK, imp += kQKK) {
        weightedK4Like(x, imp, 15, false, y[b].d, y[b].dmin, y[b].scales, L);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) y[b].qs[32 * c + l] = uint8_t(L[64 * c + l] | L[64 * c + 32 + l] << 4);
    }
}

void weightedQ5_K(const float* x, BlockQ5_K* y, int64_t n, const float* imp) {
    uint8_t L[kQKK];
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK, imp += kQKK) {
        weightedK4Like(x, imp, 31, true, y[b].d, y[b].dmin, y[b].scales, L);
        std::memset(y[b].qh, 0, sizeof y[b].qh);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) {
                int q0 = L[64 * c + l], q1 = L[64 * c + 32 + l];
                if (q0 > 15) {
                    q0 -= 16;
                    y[b].qh[l] = uint8_t(y[b].qh[l] | 1u << (2 * c));
                }
                if (q1 > 15) {
                    q1 -= 16;
                    y[b].qh[l] = uint8_t(y[b].qh[l] | 2u << (2 * c));
                }
                y[b].qs[32 * c + l] = uint8_t(q0 | q1 << 4);
            }
    }
}

void weightedQ6_K(const float* x, BlockQ6_K* y, int64_t n, const float* imp) {
    int8_t L[kQKK];
    float scales[16];
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK, imp += kQKK) {
        float maxScale = 0.0f, maxAbs = 0.0f;
        for (int j = 0; j < 16; ++j) {
            // ggml weights Q6_K by the importance alone (no σ² term).
            scales[j] = fitSymmetric(16, 32, x + 16 * j, L + 16 * j, imp + 16 * j);
            if (std::fabs(scales[j]) > maxAbs) {
                maxAbs = std::fabs(scales[j]);
                maxScale = scales[j];
            }
        }
        BlockQ6_K& o = y[b];
        if (maxAbs < kGroupEps) {
            std::memset(&o, 0, sizeof o);
            continue;
        }
        const float iscale = -128.0f / maxScale;
        o.d = floatToHalf(1.0f / iscale);
        for (int j = 0; j < 16; ++j) o.scales[j] = int8_t(std::min(127, nearestEven(iscale * scales[j])));
        for (int j = 0; j < 16; ++j) {
            const float d = halfToFloat(o.d) * float(o.scales[j]);
            if (d == 0.0f) continue;
            for (int i = 0; i < 16; ++i)
                L[16 * j + i] = int8_t(std::max(-32, std::min(31, nearestEven(x[16 * j + i] / d))) + 32);
        }
        for (int h = 0; h < 2; ++h) {
            const int8_t* v = L + 128 * h;
            for (int l = 0; l < 32; ++l) {
                o.ql[64 * h + l] = uint8_t((v[l] & 0x0f) | (v[l + 64] & 0x0f) << 4);
                o.ql[64 * h + l + 32] = uint8_t((v[l + 32] & 0x0f) | (v[l + 96] & 0x0f) << 4);
                o.qh[32 * h + l] = uint8_t((v[l] >> 4) | (v[l + 32] >> 4) << 2 | (v[l + 64] >> 4) << 4 | (v[l + 96] >> 4) << 6);
            }
        }
    }
}

} // namespace hearth::quant::detail
