// Quantizers of IQ2_XXS (per 32 values: four 8-bit grid rows of 8, four 7-bit sign indices, a
// 4-bit scale) and IQ2_XS (per 16 values: two 9-bit rows with their signs, a 4-bit scale), both
// needing an importance vector as in ggml; its float order, so the bytes equal ggml's.
#include "quant/blocks_iq.h"
#include "quant/iq_fit.h"
#include "quant/quantizers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth::quant::detail {

namespace {

float sumSquares(const float* xbl) {
    float sumx2 = 0.0f;
    for (int i = 0; i < kQKK; ++i) sumx2 += xbl[i] * xbl[i];
    return sumx2;
}

// sigma² of one 256-block: the mean square of its values.
float meanSquare(const float* xbl) {
    return sumSquares(xbl) / kQKK;
}

void importanceWeights(int n, const float* xb, const float* qw, float sigma2, float* weight) {
    for (int i = 0; i < n; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
}

} // namespace

void iq2XxsRows(const float* x, BlockIQ2_XXS* y, int64_t n, const float* importance) {
    const GridFitParams p{&gridSearch(Grid::Iq2xxs), 32, 3, 6, 0.1f, 1e-15f, true, true, true};
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ2_XXS& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = meanSquare(xbl);
        uint32_t q2[16] = {};
        float scales[8], maxScale = 0.0f, weight[32];
        for (int ib = 0; ib < 8; ++ib) {
            importanceWeights(32, xbl + 32 * ib, importance + kQKK * ibl + 32 * ib, sigma2, weight);
            GridFit f;
            fitGridSubBlock(p, xbl + 32 * ib, weight, f);
            scales[ib] = f.scale;
            if (f.zero) continue;
            for (int k = 0; k < 4; ++k) {
                q2[2 * ib] |= uint32_t(f.rows[k]) << 8 * k;
                q2[2 * ib + 1] |= uint32_t(f.signs[k]) << 7 * k;
            }
            maxScale = std::max(maxScale, f.scale);
        }
        if (maxScale == 0.0f) continue;
        const float d = maxScale / 31;
        b.d = floatToHalf(d);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ++ib)
            q2[2 * ib + 1] |= uint32_t(gridScaleLevel(id, scales[ib])) << 28;
        std::memcpy(b.qs, q2, sizeof q2);
    }
}

void iq2XsRows(const float* x, BlockIQ2_XS* y, int64_t n, const float* importance) {
    const GridFitParams p{&gridSearch(Grid::Iq2xs), 16, 3, 9, 0.1f, 1e-15f, true, false, false};
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ2_XS& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = meanSquare(xbl);
        uint16_t q2[32] = {};
        float scales[16], maxScale = 0.0f, weight[16];
        for (int ib = 0; ib < 16; ++ib) {
            importanceWeights(16, xbl + 16 * ib, importance + kQKK * ibl + 16 * ib, sigma2, weight);
            GridFit f;
            fitGridSubBlock(p, xbl + 16 * ib, weight, f);
            scales[ib] = f.scale;
            if (f.zero) continue;
            for (int k = 0; k < 2; ++k) q2[2 * ib + k] = uint16_t(f.rows[k] | f.signs[k] << 9);
            maxScale = std::max(maxScale, f.scale);
        }
        if (maxScale == 0.0f) continue;
        const float d = maxScale / 31;
        b.d = floatToHalf(d);
        const float id = 1 / d;
        for (int ib = 0; ib < 16; ++ib)
            b.scales[ib / 2] |= uint8_t(gridScaleLevel(id, scales[ib]) << 4 * (ib % 2));
        std::memcpy(b.qs, q2, sizeof q2);
    }
}

// IQ2_S: per 16 values two 10-bit rows (low bytes in qs, high bits in qh) with plain sign
// bytes, a 4-bit scale; without importance the weights are sigma²/4 + x².
void iq2SRows(const float* x, BlockIQ2_S* y, int64_t n, const float* importance) {
    const GridFitParams p{&gridSearch(Grid::Iq2s), 16, 3, 9, 0.1f, 1e-8f, false, false, false};
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ2_S& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = 2 * sumSquares(xbl) / kQKK;
        float scales[16], maxScale = 0.0f, weight[16];
        for (int ib = 0; ib < 16; ++ib) {
            const float* xb = xbl + 16 * ib;
            if (importance)
                importanceWeights(16, xb, importance + kQKK * ibl + 16 * ib, sigma2, weight);
            else
                for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
            GridFit f;
            fitGridSubBlock(p, xb, weight, f);
            scales[ib] = f.scale;
            if (f.zero) continue;
            for (int k = 0; k < 2; ++k) {
                const int i8 = 2 * ib + k;
                b.qs[i8] = uint8_t(f.rows[k] & 255);
                b.qh[i8 / 4] |= uint8_t((f.rows[k] >> 8) << 2 * (i8 % 4));
                b.qs[kQKK / 8 + i8] = f.signs[k];
            }
            maxScale = std::max(maxScale, f.scale);
        }
        if (maxScale == 0.0f) continue;
        const float d = maxScale / 31;
        b.d = floatToHalf(d * 0.9875f);
        const float id = 1 / d;
        for (int ib = 0; ib < 16; ++ib)
            b.scales[ib / 2] |= uint8_t(gridScaleLevel(id, scales[ib]) << 4 * (ib % 2));
    }
}

} // namespace hearth::quant::detail
