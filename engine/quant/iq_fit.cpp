// The IQ2/IQ3 grid sub-block search, in ggml's float order so that the bytes match its.
#include "quant/iq_fit.h"

#include "quant/weighted_fit.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace hearth::quant::detail {

namespace {

// The row among `nb` (nb[0] a count) minimising Σ w (scale q - x)² over one group; its levels
// go to L.
void bestNeighbour(const GridSearch& g, const uint16_t* nb, const float* xv, const float* w,
                   float scale, int8_t* L) {
    const int width = g.width;
    float best = FLT_MAX;
    int row = nb[1];
    for (int j = 1; j <= nb[0]; ++j) {
        const uint8_t* lv = g.level.data() + size_t(width) * nb[j];
        float d2 = 0.0f;
        for (int i = 0; i < width; ++i) {
            const float q = float(2 * lv[i] + 1);
            const float diff = scale * q - xv[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            row = nb[j];
        }
    }
    for (int i = 0; i < width; ++i) L[i] = int8_t(g.level[size_t(width) * size_t(row) + size_t(i)]);
}

uint32_t keyOf(const GridSearch& g, const int8_t* L) {
    uint32_t u = 0;
    for (int i = 0; i < g.width; ++i) u |= uint32_t(L[i]) << g.bits * i;
    return u;
}

// Levels of one group at inverse scale id, clamped to 0..maxQ-1, snapped to the grid (the best
// of the nearest rows at `scale` when off it). Returns whether the rounded point was on the grid.
bool snapGroup(const GridSearch& g, int maxQ, const float* xv, const float* waux, float id,
               float scale, int8_t* L) {
    for (int i = 0; i < g.width; ++i)
        L[i] = int8_t(std::max(0, std::min(maxQ - 1, nearestEven(0.5f * (id * xv[i] - 1.0f)))));
    const uint32_t u = keyOf(g, L);
    if (g.row(u) >= 0) return true;
    bestNeighbour(g, g.neighbours(u), xv, waux, scale, L);
    return false;
}

// Σ w x q and Σ w q² with q = 2L + 1.
void levelSums(int n, const float* weight, const float* xval, const int8_t* L, float* sumqx,
               float* sumq2) {
    float sx = 0.0f, s2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float w = weight[i], q = float(2 * L[i] + 1);
        sx += w * xval[i] * q;
        s2 += w * q * q;
    }
    *sumqx = sx;
    *sumq2 = s2;
}

} // namespace

int gridScaleLevel(float id, float scale) {
    return std::max(0, std::min(15, nearestEven(0.5f * (id * scale - 1.0f))));
}

void fitGridSubBlock(const GridFitParams& p, const float* xb, const float* weight, GridFit& out) {
    const GridSearch& g = *p.grid;
    const int n = p.n, width = g.width, groups = n / width;
    float xval[32] = {}, waux[32] = {};
    int8_t L[32] = {}, Laux[32];
    bool onGrid[8], onGridAux[8];
    for (int i = 0; i < n; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < n / 8; ++k) {
        int nflip = 0;
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
            const float v = xb[8 * k + i];
            if (v >= 0)
                xval[8 * k + i] = v;
            else {
                xval[8 * k + i] = -v;
                ++nflip;
                s |= uint8_t(1u << i);
            }
        }
        if (p.evenSigns && nflip % 2) {
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
        out.signs[k] = p.evenSigns ? uint8_t(s & 127) : s;
    }
    float max = xval[0];
    for (int i = 1; i < n; ++i) max = std::max(max, xval[i]);
    out.scale = 0.0f;
    out.zero = p.eps > 0.0f ? max < p.eps : max == 0.0f;
    if (out.zero) return;

    float best = 0.0f, scale, base = max;
    if (p.qpStart) {
        uint8_t Lq[32];
        scale = fitPositiveScale(n, p.maxQ + 1, xval, Lq, weight);
        base = scale * float(p.maxQ);
        if (base <= 0) {
            out.zero = true;
            return;
        }
    } else {
        scale = max / float(2 * p.maxQ - 1);
    }
    for (int k = 0; k < groups; ++k) onGrid[k] = !p.reSnapAll;
    for (int is = -p.steps; is <= p.steps; ++is) {
        const float id = (float(2 * p.maxQ - 1) + float(is) * p.stepSize) / base;
        const float thisScale = 1.0f / id;
        for (int k = 0; k < groups; ++k)
            onGridAux[k] = snapGroup(g, p.maxQ, xval + width * k, waux + width * k, id, thisScale,
                                     Laux + width * k);
        float sumqx, sumq2;
        levelSums(n, weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::memcpy(L, Laux, size_t(n));
            std::memcpy(onGrid, onGridAux, sizeof onGrid);
        }
    }
    int offGrid = 0;
    for (int k = 0; k < groups; ++k) offGrid += !onGrid[k];
    if ((p.qpStart || offGrid > 0) && scale > 0) {
        const float id = 1.0f / scale;
        for (int k = 0; k < groups; ++k) {
            if (!p.qpStart && !p.reSnapAll && onGrid[k]) continue;
            snapGroup(g, p.maxQ, xval + width * k, waux + width * k, id, scale, L + width * k);
        }
        float sumqx, sumq2;
        levelSums(n, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) { // cannot happen with non-negative weights; kept as the reference has it
        scale = -scale;
        for (uint8_t& s : out.signs) s = uint8_t(~s) & (p.evenSigns ? 127 : 255);
    }
    for (int k = 0; k < groups; ++k) {
        const int row = g.row(keyOf(g, L + width * k));
        out.rows[k] = row >= 0 ? row : 0;
    }
    out.scale = scale;
}

} // namespace hearth::quant::detail
