// Quantizers that take a per-column importance vector (an imatrix): the searches llama.cpp's
// quantize runs when given one, for the legacy 32-element types and IQ4_NL / IQ4_XS, following
// ggml's arithmetic step by step so that the bytes are identical to ggml_quantize_chunk's.
#include "hearth/quant.h"
#include "quant/quantizers.h"
#include "quant/weighted_fit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace hearth::quant {

namespace detail {

float fitSymmetric(int n, int nmax, const float* x, int8_t* L, const float* w) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupEps) {
        std::memset(L, 0, size_t(n));
        return 0.0f;
    }
    float iscale = float(-nmax) / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = std::max(-nmax, std::min(nmax - 1, nearestEven(iscale * x[i])));
        L[i] = int8_t(l + nmax);
        sumlx += w[i] * x[i] * float(l);
        suml2 += w[i] * float(l) * float(l);
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int step = -9; step <= 9; ++step) {
        if (step == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(step)) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::max(-nmax, std::min(nmax - 1, nearestEven(iscale * x[i])));
            sumlx += w[i] * x[i] * float(l);
            suml2 += w[i] * float(l) * float(l);
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i)
                L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, nearestEven(iscale * x[i]))));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float fitScaleMinWeighted(int n, int nmax, const float* x, const float* w, uint8_t* L, float* negMin,
                          float rmin, float rdelta, int nstep) {
    float lo = x[0], hi = x[0];
    float sumW = w[0];
    float sumX = sumW * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        sumW += w[i];
        sumX += w[i] * x[i];
    }
    if (lo > 0.0f) lo = 0.0f;
    if (hi <= lo) {
        std::memset(L, 0, size_t(n));
        *negMin = -lo;
        return 0.0f;
    }
    float iscale = float(nmax) / (hi - lo);
    float scale = 1.0f / iscale;
    float bestErr = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = nearestEven(iscale * (x[i] - lo));
        L[i] = uint8_t(std::max(0, std::min(nmax, l)));
        float diff = scale * float(L[i]) + lo - x[i];
        diff = diff * diff;
        bestErr += w[i] * diff;
    }
    uint8_t trial[32];
    for (int step = 0; step <= nstep; ++step) {
        iscale = (rmin + rdelta * float(step) + float(nmax)) / (hi - lo);
        float sl = 0.0f, sl2 = 0.0f, sxl = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::max(0, std::min(nmax, nearestEven(iscale * (x[i] - lo))));
            trial[i] = uint8_t(l);
            sl += w[i] * float(l);
            sl2 += w[i] * float(l) * float(l);
            sxl += w[i] * float(l) * x[i];
        }
        const float det = sumW * sl2 - sl * sl;
        if (det > 0.0f) {
            float s = (sumW * sxl - sumX * sl) / det;
            float m = (sl2 * sumX - sl * sxl) / det;
            if (m > 0.0f) {
                m = 0.0f;
                s = sxl / sl2;
            }
            float err = 0.0f;
            for (int i = 0; i < n; ++i) {
                float diff = s * float(trial[i]) + m - x[i];
                diff = diff * diff;
                err += w[i] * diff;
            }
            if (err < bestErr) {
                std::memcpy(L, trial, size_t(n));
                bestErr = err;
                scale = s;
                lo = m;
            }
        }
    }
    *negMin = -lo;
    return scale;
}

float fitPositiveScale(int n, int nmax, const float* x, uint8_t* L, const float* w) {
    float max = 0.0f;
    for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
    if (max < kGroupEps) {
        std::memset(L, 0, size_t(n));
        return 0.0f;
    }
    float iscale = float(nmax) / max;
    for (int i = 0; i < n; ++i) L[i] = uint8_t(nearestEven(iscale * x[i]));
    const float scale = 1.0f / iscale;
    float bestErr = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * float(L[i]);
        bestErr += w[i] * diff * diff;
    }
    for (int step = -4; step <= 4; ++step) {
        if (step == 0) continue;
        const float inv = (0.1f * float(step) + float(nmax)) / max;
        const float s = 1.0f / inv;
        float err = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearestEven(inv * x[i]));
            const float diff = x[i] - s * float(l);
            err += w[i] * diff * diff;
        }
        if (err < bestErr) {
            bestErr = err;
            iscale = inv;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = std::min(nmax, nearestEven(iscale * x[i]));
        L[i] = uint8_t(l);
        sumlx += w[i] * x[i] * float(l);
        suml2 += w[i] * float(l) * float(l);
    }
    // Coordinate descent: move single levels while that improves the fit.
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            float slx = sumlx - w[i] * x[i] * float(L[i]);
            float sl2 = suml2 - w[i] * float(L[i]) * float(L[i]);
            if (slx > 0.0f && sl2 > 0.0f) {
                const int l = std::min(nmax, nearestEven(x[i] * sl2 / slx));
                if (l != L[i]) {
                    slx += w[i] * x[i] * float(l);
                    sl2 += w[i] * float(l) * float(l);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = uint8_t(l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

} // namespace detail

namespace {

using namespace detail;

// σ² of a row: the mean of its squares.
float rowSigma2(const float* x, int64_t n) {
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) sum += x[j] * x[j];
    return sum / float(n);
}

void blockWeights(const float* x, const float* importance, float sigma2, float* w, int n) {
    for (int j = 0; j < n; ++j) w[j] = importance[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

void pack5(const uint8_t* L, uint8_t* qs, uint8_t* qhOut) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = uint8_t((L[j] & 0x0f) | (L[j + 16] & 0x0f) << 4);
        qh |= uint32_t((L[j] & 0x10u) >> 4) << j;
        qh |= uint32_t((L[j + 16] & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(qhOut, &qh, 4);
}

void weightedQ4_0(const float* x, BlockQ4_0* y, int64_t n, const float* imp) {
    const float sigma2 = rowSigma2(x, n);
    float w[kQK];
    int8_t L[kQK];
    for (int64_t b = 0; b < n / kQK; ++b) {
        const float* xb = x + b * kQK;
        blockWeights(xb, imp + b * kQK, sigma2, w, kQK);
        y[b].d = floatToHalf(fitSymmetric(kQK, 8, xb, L, w));
        for (int j = 0; j < 16; ++j) y[b].qs[j] = uint8_t(L[j] | L[j + 16] << 4);
    }
}

void weightedQ5_0(const float* x, BlockQ5_0* y, int64_t n, const float* imp) {
    const float sigma2 = rowSigma2(x, n);
    float w[kQK];
    int8_t L[kQK];
    for (int64_t b = 0; b < n / kQK; ++b) {
        const float* xb = x + b * kQK;
        blockWeights(xb, imp + b * kQK, sigma2, w, kQK);
        y[b].d = floatToHalf(fitSymmetric(kQK, 16, xb, L, w));
        pack5(reinterpret_cast<const uint8_t*>(L), y[b].qs, y[b].qh);
    }
}

template <typename Block>
void weightedMinType(const float* x, Block* y, int64_t n, const float* imp, int nmax) {
    const float sigma2 = rowSigma2(x, n);
    float w[kQK];
    uint8_t L[kQK];
    for (int64_t b = 0; b < n / kQK; ++b) {
        const float* xb = x + b * kQK;
        blockWeights(xb, imp + b * kQK, sigma2, w, kQK);
        float negMin = 0.0f;
        const float d = fitScaleMinWeighted(kQK, nmax, xb, w, L, &negMin, -0.9f, 0.05f, 36);
        y[b].d = floatToHalf(d);
        y[b].m = floatToHalf(-negMin);
        if constexpr (sizeof(Block) == sizeof(BlockQ4_1)) {
            for (int j = 0; j < 16; ++j) y[b].qs[j] = uint8_t(L[j] | L[j + 16] << 4);
        } else {
            pack5(L, y[b].qs, y[b].qh);
        }
    }
}

// The index of the IQ4 level nearest to v (the lower one on a tie).
int nearestIq4Level(float v) {
    if (v <= float(iq4Level(0))) return 0;
    if (v >= float(iq4Level(15))) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < float(iq4Level(mid))) hi = mid;
        else lo = mid;
    }
    return v - float(iq4Level(hi - 1)) < float(iq4Level(hi)) - v ? hi - 1 : hi;
}

// IQ4 fit of one 32-element group against its weights: the best scale over 15 candidates
// around max / level[0], refit by least squares. Returns the scale (0 for an all-zero group).
float fitIq4Weighted(const float* xb, const float* w) {
    constexpr int kTries = 7;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float ax = std::fabs(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < kGroupEps) return 0.0f;
    const float first = float(iq4Level(0));
    float d = -max / first;
    float id = 1.0f / d;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float q = float(iq4Level(nearestIq4Level(id * xb[j])));
        sumqx += w[j] * q * xb[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int t = -kTries; t <= kTries; ++t) {
        id = float(t + iq4Level(0)) / max;
        sumqx = sumq2 = 0.0f;
        for (int j = 0; j < 32; ++j) {
            const float q = float(iq4Level(nearestIq4Level(id * xb[j])));
            sumqx += w[j] * q * xb[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// σ² of an IQ4 super-block: twice the mean square.
float iq4Sigma2(const float* x, int n) {
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += x[j] * x[j];
    return s * (2.0f / float(n));
}

void packIq4Levels(const float* x, float inv, uint8_t* qs) {
    for (int j = 0; j < 16; ++j)
        qs[j] = uint8_t(nearestIq4Level(inv * x[j]) | nearestIq4Level(inv * x[j + 16]) << 4);
}

void weightedIQ4_NL(const float* x, BlockIQ4_NL* y, int64_t n, const float* imp) {
    float w[32];
    for (int64_t b = 0; b < n / kQK; ++b) {
        const float* xb = x + b * kQK;
        blockWeights(xb, imp + b * kQK, iq4Sigma2(xb, kQK), w, kQK);
        const float d = fitIq4Weighted(xb, w);
        y[b].d = floatToHalf(d);
        packIq4Levels(xb, d != 0.0f ? 1.0f / d : 0.0f, y[b].qs);
    }
}

void weightedIQ4_XS(const float* x, BlockIQ4_XS* y, int64_t n, const float* imp) {
    float w[32], scales[8];
    for (int64_t b = 0; b < n / kQKK; ++b) {
        const float* xs = x + b * kQKK;
        const float* is = imp + b * kQKK;
        const float sigma2 = iq4Sigma2(xs, kQKK);
        float maxScale = 0.0f, amaxScale = 0.0f;
        for (int j = 0; j < 8; ++j) {
            blockWeights(xs + 32 * j, is + 32 * j, sigma2, w, 32);
            scales[j] = fitIq4Weighted(xs + 32 * j, w);
            if (std::fabs(scales[j]) > amaxScale) {
                amaxScale = std::fabs(scales[j]);
                maxScale = scales[j];
            }
        }
        BlockIQ4_XS& o = y[b];
        const float d = -maxScale / 32.0f;
        o.d = floatToHalf(d);
        o.scalesH = 0;
        std::memset(o.scalesL, 0, sizeof o.scalesL);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < 8; ++j) {
            const int l = std::max(-32, std::min(31, nearestEven(id * scales[j])));
            const float dl = d * float(l);
            packIq4Levels(xs + 32 * j, dl != 0.0f ? 1.0f / dl : 0.0f, o.qs + 16 * j);
            const int stored = l + 32;
            o.scalesL[j / 2] = uint8_t(o.scalesL[j / 2] | (stored & 0x0f) << (4 * (j % 2)));
            o.scalesH = uint16_t(o.scalesH | (stored >> 4) << (2 * j));
        }
    }
}

} // namespace

bool takesImportance(Type t) {
    switch (t) {
    case Type::Q4_0:
    case Type::Q4_1:
    case Type::Q5_0:
    case Type::Q5_1:
    case Type::IQ4_NL:
    case Type::IQ4_XS:
    case Type::Q2_K:
    case Type::Q3_K:
    case Type::Q4_K:
    case Type::Q5_K:
    case Type::Q6_K:
    case Type::IQ3_XXS:
    case Type::IQ3_S:
    case Type::IQ2_XXS:
    case Type::IQ2_XS:
    case Type::IQ2_S:
    case Type::IQ1_S:
    case Type::IQ1_M: return true;
    default: return false;
    }
}

bool requiresImportance(Type t) {
    switch (t) {
    case Type::IQ2_XXS:
    case Type::IQ2_XS:
    case Type::IQ2_S:
    case Type::IQ3_XXS:
    case Type::IQ1_S:
    case Type::IQ1_M: return true;
    default: return false;
    }
}

Status quantizeRowWeighted(Type t, const float* src, void* dst, int64_t n, const float* importance) {
    if (!importance && takesImportance(t) && !typeInfo(t)->canQuantize)
        return invalidArgument(std::string(typeInfo(t)->name) + " needs an importance vector (an imatrix), as in ggml");
    if (!importance || !takesImportance(t)) return quantizeRow(t, src, dst, n);
    const TypeInfo* info = typeInfo(t);
    if (n <= 0 || n % info->blockElems != 0)
        return invalidArgument("row of " + std::to_string(n) + " elements is not a multiple of " +
                               std::string(info->name) + "'s block of " + std::to_string(info->blockElems));
    for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(src[i]) || !std::isfinite(importance[i]))
            return invalidArgument("non-finite value in a row or its importance (column " + std::to_string(i) + ")");
    switch (t) {
    case Type::Q4_0: weightedQ4_0(src, static_cast<BlockQ4_0*>(dst), n, importance); break;
    case Type::Q4_1: weightedMinType(src, static_cast<BlockQ4_1*>(dst), n, importance, 15); break;
    case Type::Q5_0: weightedQ5_0(src, static_cast<BlockQ5_0*>(dst), n, importance); break;
    case Type::Q5_1: weightedMinType(src, static_cast<BlockQ5_1*>(dst), n, importance, 31); break;
    case Type::IQ4_NL: weightedIQ4_NL(src, static_cast<BlockIQ4_NL*>(dst), n, importance); break;
    case Type::IQ4_XS: weightedIQ4_XS(src, static_cast<BlockIQ4_XS*>(dst), n, importance); break;
    case Type::Q2_K: weightedQ2_K(src, static_cast<BlockQ2_K*>(dst), n, importance); break;
    case Type::Q3_K: weightedQ3_K(src, static_cast<BlockQ3_K*>(dst), n, importance); break;
    case Type::Q4_K: weightedQ4_K(src, static_cast<BlockQ4_K*>(dst), n, importance); break;
    case Type::Q5_K: weightedQ5_K(src, static_cast<BlockQ5_K*>(dst), n, importance); break;
    case Type::Q6_K: weightedQ6_K(src, static_cast<BlockQ6_K*>(dst), n, importance); break;
    case Type::IQ3_XXS: iq3XxsRows(src, static_cast<BlockIQ3_XXS*>(dst), n, importance); break;
    case Type::IQ3_S: iq3SRows(src, static_cast<BlockIQ3_S*>(dst), n, importance); break;
    case Type::IQ2_XXS: iq2XxsRows(src, static_cast<BlockIQ2_XXS*>(dst), n, importance); break;
    case Type::IQ2_XS: iq2XsRows(src, static_cast<BlockIQ2_XS*>(dst), n, importance); break;
    case Type::IQ2_S: iq2SRows(src, static_cast<BlockIQ2_S*>(dst), n, importance); break;
    case Type::IQ1_S: iq1SRows(src, static_cast<BlockIQ1_S*>(dst), n, importance); break;
    case Type::IQ1_M: iq1MRows(src, static_cast<BlockIQ1_M*>(dst), n, importance); break;
    default: break;
    }
    return Status::ok();
}

} // namespace hearth::quant
