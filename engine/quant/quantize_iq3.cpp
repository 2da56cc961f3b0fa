// Quantizers of IQ3_XXS and IQ3_S: per 32 values, signs split off (IQ3_XXS keeps an even count
// by flipping the least important one), a scale search over 31 (IQ3_S: 19) candidates snapping
// groups of 4 magnitudes to the grid or its nearest rows, then 4-bit sub-block scales; ggml's
// float arithmetic step by step, so the bytes equal ggml_quantize_chunk's.
#include "quant/blocks_iq.h"
#include "quant/iq_fit.h"
#include "quant/quantizers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth::quant::detail {

namespace {

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

GridFitParams iq3Params(bool xxs) {
    return {&gridSearch(xxs ? Grid::Iq3xxs : Grid::Iq3s),
            32,
            8,
            xxs ? 15 : 9,
            0.2f,
            xxs ? 1e-8f : 0.0f,
            xxs,
            !xxs,
            false};
}

} // namespace

void iq3XxsRows(const float* x, BlockIQ3_XXS* y, int64_t n, const float* importance) {
    const GridFitParams p = iq3Params(true);
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ3_XXS& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = blockSigma2(xbl);
        float scales[8], maxScale = 0.0f, weight[32];
        uint32_t signWords[8];
        for (int ib = 0; ib < 8; ++ib) {
            subBlockWeights(xbl + 32 * ib, importance ? importance + kQKK * ibl + 32 * ib : nullptr,
                            sigma2, weight);
            GridFit sb;
            fitGridSubBlock(p, xbl + 32 * ib, weight, sb);
            scales[ib] = sb.scale;
            signWords[ib] = 0;
            if (sb.zero) continue;
            for (int k = 0; k < 8; ++k) b.qs[8 * ib + k] = uint8_t(sb.rows[k]);
            signWords[ib] = uint32_t(sb.signs[0]) | uint32_t(sb.signs[1]) << 7 |
                            uint32_t(sb.signs[2]) << 14 | uint32_t(sb.signs[3]) << 21;
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
            const uint32_t word = signWords[ib] | uint32_t(gridScaleLevel(id, scales[ib])) << 28;
            std::memcpy(b.qs + kQKK / 4 + 4 * ib, &word, 4);
        }
    }
}

void iq3SRows(const float* x, BlockIQ3_S* y, int64_t n, const float* importance) {
    const GridFitParams p = iq3Params(false);
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ3_S& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = blockSigma2(xbl);
        float scales[8], maxScale = 0.0f, weight[32];
        // The reference advances its grid-index and sign cursors only past sub-blocks it stores,
        // so an all-zero sub-block shifts the following ones' bytes back (kept for identical
        // bytes).
        int stored = 0;
        for (int ib = 0; ib < 8; ++ib) {
            subBlockWeights(xbl + 32 * ib, importance ? importance + kQKK * ibl + 32 * ib : nullptr,
                            sigma2, weight);
            GridFit sb;
            fitGridSubBlock(p, xbl + 32 * ib, weight, sb);
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
            b.scales[ib / 2] =
                uint8_t(gridScaleLevel(id, scales[ib]) | gridScaleLevel(id, scales[ib + 1]) << 4);
    }
}

} // namespace hearth::quant::detail
