// Quantizers of IQ3_XXS and IQ3_S: per 32 values, signs split off (IQ3_XXS keeps an even count
// by flipping the least important one), a scale search over 31 (IQ3_S: 19) candidates snapping
// groups of 4 magnitudes to the grid or its nearest rows, then 4-bit sub-block scales; ggml's
// float arithmetic step by step, so the bytes equal ggml_quantize_chunk's.
#include "quant/blocks_iq.h"
#include "quant/iq_search.h"
#include "quant/weighted_fit.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace hearth::quant::detail {

namespace {

constexpr int kMaxQ = 8; // 3-bit levels: magnitude 2l + 1

// The row among `nb` (nb[0] a count) minimising Σ w (scale q - x)² over 4 values; its levels go
// to L.
int bestNeighbour(const GridSearch& g, const uint16_t* nb, const float* xv, const float* w, float scale,
                  int8_t* L) {
    float best = FLT_MAX;
    int row = nb[1];
    for (int j = 1; j <= nb[0]; ++j) {
        const uint8_t* lv = g.level.data() + 4 * nb[j];
        float d2 = 0.0f;
        for (int i = 0; i < 4; ++i) {
            const float q = float(2 * lv[i] + 1);
            const float diff = scale * q - xv[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            row = nb[j];
        }
    }
    for (int i = 0; i < 4; ++i) L[i] = int8_t(g.level[4 * size_t(row) + size_t(i)]);
    return row;
}

uint32_t keyOf(const int8_t* L) {
    uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= uint32_t(L[i]) << 3 * i;
    return u;
}

// Levels of 4 magnitudes at inverse scale id, clamped to 0..7.
void roundLevels(const float* xv, float id, int8_t* L) {
    for (int i = 0; i < 4; ++i) L[i] = int8_t(std::max(0, std::min(kMaxQ - 1, nearestEven(0.5f * (id * xv[i] - 1.0f)))));
}

// One 32-value sub-block: the scale, its 8 grid rows and sign bytes (xxs: 7-bit, even parity).
struct SubBlock {
    float scale = 0.0f;
    bool zero = false; // all values (near) zero: nothing stored
    int rows[8] = {};
    uint8_t signs[4] = {};
};

void fitSubBlock(const GridSearch& g, const float* xb, const float* weight, bool xxs, SubBlock& out) {
    float xval[32], waux[32];
    int8_t L[32] = {}, Laux[32];
    bool onGrid[8], onGridAux[8];
    for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < 4; ++k) {
        int nflip = 0;
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
            const float v = xb[8 * k + i];
            if (v >= 0) xval[8 * k + i] = v;
            else {
                xval[8 * k + i] = -v;
                ++nflip;
                s |= uint8_t(1u << i);
            }
        }
        if (xxs && nflip % 2) {
            // An odd count: flip the value that matters least (the parity bit is implied).
            int imin = 0;
            float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; ++i) {
                const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            s ^= uint8_t(1u << imin);
        }
        out.signs[k] = xxs ? uint8_t(s & 127) : s;
    }
    float max = xval[0];
    for (int i = 1; i < 32; ++i) max = std::max(max, xval[i]);
    out.scale = 0.0f;
    if (xxs ? max < 1e-8f : max == 0.0f) {
        out.zero = true;
        return;
    }
    float best = 0.0f;
    float scale = max / float(2 * kMaxQ - 1);
    for (bool& b : onGrid) b = xxs; // IQ3_S re-snaps every group after the search
    const int steps = xxs ? 15 : 9;
    for (int is = -steps; is <= steps; ++is) {
        const float id = (float(2 * kMaxQ - 1) + float(is) * 0.2f) / max;
        const float thisScale = 1.0f / id;
        for (int k = 0; k < 8; ++k) {
            roundLevels(xval + 4 * k, id, Laux + 4 * k);
            const uint32_t u = keyOf(Laux + 4 * k);
            onGridAux[k] = g.row(u) >= 0;
            if (!onGridAux[k]) bestNeighbour(g, g.neighbours(u), xval + 4 * k, waux + 4 * k, thisScale, Laux + 4 * k);
        }
        float sumqx = 0.0f, sumq2 = 0.0f;
        for (int i = 0; i < 32; ++i) {
            const float w = weight[i], q = float(2 * Laux[i] + 1);
            sumqx += w * xval[i] * q;
            sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::memcpy(L, Laux, 32);
            std::memcpy(onGrid, onGridAux, sizeof onGrid);
        }
    }
    int offGrid = 0;
    for (bool b : onGrid) offGrid += !b;
    if (offGrid > 0 && scale > 0) {
        const float id = 1.0f / scale;
        for (int k = 0; k < 8; ++k) {
            if (xxs && onGrid[k]) continue;
            int8_t l[4];
            roundLevels(xval + 4 * k, id, l);
            const uint32_t u = keyOf(l);
            if (g.row(u) >= 0) std::memcpy(L + 4 * k, l, 4);
            else bestNeighbour(g, g.neighbours(u), xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
        }
        float sumqx = 0.0f, sumq2 = 0.0f;
        for (int i = 0; i < 32; ++i) {
            const float w = weight[i], q = float(2 * L[i] + 1);
            sumqx += w * xval[i] * q;
            sumq2 += w * q * q;
        }
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) { // cannot happen with non-negative weights; kept as the reference has it
        scale = -scale;
        for (uint8_t& s : out.signs) s = uint8_t(~s) & (xxs ? 127 : 255);
    }
    for (int k = 0; k < 8; ++k) {
        const int row = g.row(keyOf(L + 4 * k));
        out.rows[k] = row >= 0 ? row : 0;
    }
    out.scale = scale;
}

// Per-value weights of one sub-block: importance * sqrt(sigma² + x²), or x² without importance.
void subBlockWeights(const float* xb, const float* qw, float sigma2, float* weight) {
    if (qw)
        for (int i = 0; i < 32; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
    else
        for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
}

float blockSigma2(const float* xbl) {
    float sumx2 = 0.0f;
    for (int i = 0; i < kQKK; ++i) sumx2 += xbl[i] * xbl[i];
    return 2 * sumx2 / kQKK;
}

int scaleLevel(float id, float scale) {
    return std::max(0, std::min(15, nearestEven(0.5f * (id * scale - 1.0f))));
}

} // namespace

void iq3XxsRows(const float* x, BlockIQ3_XXS* y, int64_t n, const float* importance) {
    const GridSearch& g = gridSearch(Grid::Iq3xxs);
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ3_XXS& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = blockSigma2(xbl);
        float scales[8], maxScale = 0.0f, weight[32];
        uint32_t signWords[8];
        for (int ib = 0; ib < 8; ++ib) {
            subBlockWeights(xbl + 32 * ib, importance ? importance + kQKK * ibl + 32 * ib : nullptr, sigma2, weight);
            SubBlock sb;
            fitSubBlock(g, xbl + 32 * ib, weight, true, sb);
            scales[ib] = sb.scale;
            signWords[ib] = 0;
            if (sb.zero) continue;
            for (int k = 0; k < 8; ++k) b.qs[8 * ib + k] = uint8_t(sb.rows[k]);
            signWords[ib] = uint32_t(sb.signs[0]) | uint32_t(sb.signs[1]) << 7 | uint32_t(sb.signs[2]) << 14 |
                            uint32_t(sb.signs[3]) << 21;
            maxScale = std::max(maxScale, sb.scale);
        }
        if (maxScale == 0.0f) {
            std::memset(&b, 0, sizeof b);
            continue;
        }
        const float d = maxScale / 31;
        b.d = floatToHalf(d * 1.0125f);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t word = signWords[ib] | uint32_t(scaleLevel(id, scales[ib])) << 28;
            std::memcpy(b.qs + kQKK / 4 + 4 * ib, &word, 4);
        }
    }
}

void iq3SRows(const float* x, BlockIQ3_S* y, int64_t n, const float* importance) {
    const GridSearch& g = gridSearch(Grid::Iq3s);
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ3_S& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = blockSigma2(xbl);
        float scales[8], maxScale = 0.0f, weight[32];
        // The reference advances its grid-index and sign cursors only past sub-blocks it stores,
        // so an all-zero sub-block shifts the following ones' bytes back (kept for identical bytes).
        int stored = 0;
        for (int ib = 0; ib < 8; ++ib) {
            subBlockWeights(xbl + 32 * ib, importance ? importance + kQKK * ibl + 32 * ib : nullptr, sigma2, weight);
            SubBlock sb;
            fitSubBlock(g, xbl + 32 * ib, weight, false, sb);
            scales[ib] = sb.scale;
            if (sb.zero) continue;
            for (int k = 0; k < 8; ++k) {
                b.qs[8 * stored + k] = uint8_t(sb.rows[k] & 255);
                b.qh[ib] |= uint8_t((sb.rows[k] >> 8) << k);
            }
            std::memcpy(b.signs + 4 * stored, sb.signs, 4);
            ++stored;
            maxScale = std::max(maxScale, sb.scale);
        }
        if (maxScale == 0.0f) continue;
        const float d = maxScale / 31;
        b.d = floatToHalf(d * 1.033f);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ib += 2)
            b.scales[ib / 2] = uint8_t(scaleLevel(id, scales[ib]) | scaleLevel(id, scales[ib + 1]) << 4);
    }
}

} // namespace hearth::quant::detail
