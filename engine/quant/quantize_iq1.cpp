// Quantizers of IQ1_S (per 32 values one scale and one ±1/8 shift) and IQ1_M (per 16 values a
// scale, per 8 a shift): an exhaustive search of the two thresholds that split the sorted values
// into levels -1, 0, +1 (plus the shift), then each 8 snapped to the grid or its nearest rows;
// ggml's float order step by step, so the bytes equal ggml_quantize_chunk's.
#include "quant/blocks_iq.h"
#include "quant/iq_search.h"
#include "quant/quantizers.h"
#include "quant/weighted_fit.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>

namespace hearth::quant::detail {

namespace {

// The three values of levels 0, 1, 2 shifted up (+) or down (-) by 1/8.
constexpr float kShiftUp[3] = {-1 + kIq1Delta, kIq1Delta, 1 + kIq1Delta};
constexpr float kShiftDown[3] = {-1 - kIq1Delta, -kIq1Delta, 1 - kIq1Delta};

uint32_t keyOf(const int8_t* L) {
    uint32_t u = 0;
    for (int j = 0; j < 8; ++j) u |= uint32_t(L[j]) << 2 * j;
    return u;
}

// The grid row of 8 levels, or the neighbour minimising Σ w (scale xx[l] - x)² (its levels go to
// L).
int snapToGrid(const GridSearch& g, const float* xb, const float* w, float scale, const float* xx,
               int8_t* L, bool* onGrid) {
    const uint32_t u = keyOf(L);
    const int row = g.row(u);
    *onGrid = row >= 0;
    if (row >= 0) return row;
    const uint16_t* nb = g.neighbours(u);
    float best = FLT_MAX;
    int bestRow = nb[1];
    for (int j = 1; j <= nb[0]; ++j) {
        const uint8_t* lv = g.level.data() + 8 * size_t(nb[j]);
        float d2 = 0.0f;
        for (int i = 0; i < 8; ++i) {
            const float q = xx[lv[i]];
            const float diff = scale * q - xb[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            bestRow = nb[j];
        }
    }
    for (int i = 0; i < 8; ++i) L[i] = int8_t(g.level[8 * size_t(bestRow) + size_t(i)]);
    return bestRow;
}

// Indices of xb[0..n) in ascending order of value (stable, as the reference's sort is here).
void sortedOrder(int n, const float* xb, int* idx) {
    std::iota(idx, idx + n, 0);
    std::stable_sort(idx, idx + n, [xb](int a, int b) { return xb[a] < xb[b]; });
}

float blockSigma2(const float* xbl) {
    float sumx2 = 0.0f;
    for (int i = 0; i < kQKK; ++i) sumx2 += xbl[i] * xbl[i];
    return 2 * sumx2 / kQKK;
}

void subWeights(int n, const float* xb, const float* qw, float sigma2, float* weight) {
    if (qw)
        for (int i = 0; i < n; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
    else
        for (int i = 0; i < n; ++i) weight[i] = xb[i] * xb[i];
}

float absMax(int n, const float* xb) {
    float max = std::fabs(xb[0]);
    for (int i = 1; i < n; ++i) max = std::max(max, std::fabs(xb[i]));
    return max;
}

} // namespace

void iq1SRows(const float* x, BlockIQ1_S* y, int64_t n, const float* importance) {
    const GridSearch& g = gridSearch(Grid::Iq1s);
    constexpr int bs = 32;
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ1_S& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = blockSigma2(xbl);
        float scales[kQKK / bs], maxScale = 0.0f, weight[bs], sumx[bs + 1], sumw[bs + 1];
        int shifts[kQKK / bs], idx[bs];
        int8_t L[bs];
        for (int ib = 0; ib < kQKK / bs; ++ib) {
            const float* xb = xbl + bs * ib;
            subWeights(bs, xb, importance + kQKK * ibl + bs * ib, sigma2, weight);
            scales[ib] = 0.0f;
            shifts[ib] = 1;
            if (absMax(bs, xb) < 1e-12f) continue;
            sortedOrder(bs, xb, idx);
            sumx[0] = sumw[0] = 0.0f;
            for (int j = 0; j < bs; ++j) {
                const int i = idx[j];
                sumx[j + 1] = sumx[j] + weight[i] * xb[i];
                sumw[j + 1] = sumw[j] + weight[i];
            }
            // Values below the i1-th sorted one get level 0, those below the i2-th level 1.
            float best = -FLT_MAX, scale = 0.0f;
            int bestI1 = -1, bestI2 = -1, bestShift = 0;
            for (int i1 = 0; i1 <= bs; ++i1)
                for (int i2 = i1; i2 <= bs; ++i2)
                    for (int shift : {1, -1}) {
                        const float* v = shift == 1 ? kShiftUp : kShiftDown;
                        const float sumqx = (sumx[i1] - sumx[0]) * v[0] +
                                            (sumx[i2] - sumx[i1]) * v[1] +
                                            (sumx[bs] - sumx[i2]) * v[2];
                        const float sumq2 = (sumw[i1] - sumw[0]) * v[0] * v[0] +
                                            (sumw[i2] - sumw[i1]) * v[1] * v[1] +
                                            (sumw[bs] - sumw[i2]) * v[2] * v[2];
                        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                            scale = sumqx / sumq2;
                            best = scale * sumqx;
                            bestI1 = i1;
                            bestI2 = i2;
                            bestShift = shift;
                        }
                    }
            if (bestI1 < 0) continue;
            for (int j = 0; j < bs; ++j) L[idx[j]] = int8_t(j < bestI1 ? 0 : j < bestI2 ? 1 : 2);
            if (scale < 0) {
                for (int8_t& l : L) l = int8_t(2 - l);
                scale = -scale;
                bestShift = -bestShift;
            }
            const float* xx = bestShift == 1 ? kShiftUp : kShiftDown;
            bool allOnGrid = true;
            int rows[bs / 8];
            for (int k = 0; k < bs / 8; ++k) {
                bool on;
                rows[k] = snapToGrid(g, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k, &on);
                allOnGrid = allOnGrid && on;
            }
            if (!allOnGrid) {
                float sumqx = 0.0f, sumq2 = 0.0f;
                for (int k = 0; k < bs / 8; ++k)
                    for (int j = 0; j < 8; ++j) {
                        const float w = weight[8 * k + j],
                                    q = xx[g.level[8 * size_t(rows[k]) + size_t(j)]];
                        sumqx += w * q * xb[8 * k + j];
                        sumq2 += w * q * q;
                    }
                if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
            }
            uint16_t h = 0;
            for (int k = 0; k < bs / 8; ++k) {
                b.qs[(bs / 8) * ib + k] = uint8_t(rows[k] & 255);
                h = uint16_t(h | (rows[k] >> 8) << 3 * k);
            }
            b.qh[ib] = h;
            scales[ib] = scale;
            shifts[ib] = bestShift;
            maxScale = std::max(maxScale, scale);
        }
        if (maxScale == 0.0f) continue;
        const float d = maxScale / 15;
        b.d = floatToHalf(d * 1.125f);
        const float id = 1 / d;
        for (int ib = 0; ib < kQKK / bs; ++ib) {
            int l = std::max(0, std::min(7, nearestEven(0.5f * (id * scales[ib] - 1.0f))));
            if (shifts[ib] == -1) l |= 8;
            b.qh[ib] = uint16_t(b.qh[ib] | l << 12);
        }
    }
}

void iq1MRows(const float* x, BlockIQ1_M* y, int64_t n, const float* importance) {
    const GridSearch& g = gridSearch(Grid::Iq1s);
    constexpr int bs = 16;
    constexpr uint8_t kMasks[4] = {0x00, 0x80, 0x08, 0x88};
    // Shift choice k: bit 1 = the first 8 shifted down, bit 0 = the second 8.
    auto shiftOf = [](int k, int group) {
        return (group == 0 ? k < 2 : k % 2 == 0) ? kShiftUp : kShiftDown;
    };
    for (int64_t ibl = 0; ibl < n / kQKK; ++ibl) {
        const float* xbl = x + kQKK * ibl;
        BlockIQ1_M& b = y[ibl];
        std::memset(&b, 0, sizeof b);
        const float sigma2 = blockSigma2(xbl);
        float scales[kQKK / bs], maxScale = 0.0f, weight[bs];
        int shifts[kQKK / bs], idx[bs];
        int8_t L[bs];
        for (int ib = 0; ib < kQKK / bs; ++ib) {
            const float* xb = xbl + bs * ib;
            subWeights(bs, xb, importance ? importance + kQKK * ibl + bs * ib : nullptr, sigma2,
                       weight);
            scales[ib] = 0.0f;
            shifts[ib] = 0;
            if (absMax(bs, xb) < 1e-7f) continue;
            sortedOrder(bs, xb, idx);
            // Prefix sums per half (each 8 has its own shift); level sums collapse to
            // T v2 - px[i1] - px[i2] since the levels are one apart.
            float px[2][bs + 1], pw[2][bs + 1];
            px[0][0] = px[1][0] = pw[0][0] = pw[1][0] = 0.0f;
            for (int j = 0; j < bs; ++j) {
                const int i = idx[j], h = i < bs / 2 ? 0 : 1;
                px[h][j + 1] = px[h][j] + weight[i] * xb[i];
                px[1 - h][j + 1] = px[1 - h][j];
                pw[h][j + 1] = pw[h][j] + weight[i];
                pw[1 - h][j + 1] = pw[1 - h][j];
            }
            const float txs[2] = {px[0][bs], px[1][bs]}, tws[2] = {pw[0][bs], pw[1][bs]};
            const float p2 = kShiftUp[2], m2 = kShiftDown[2];
            const float cp1 = kShiftUp[0] * kShiftUp[0] - kShiftUp[1] * kShiftUp[1];
            const float cp2 = kShiftUp[1] * kShiftUp[1] - kShiftUp[2] * kShiftUp[2];
            const float cm1 = kShiftDown[0] * kShiftDown[0] - kShiftDown[1] * kShiftDown[1];
            const float cm2 = kShiftDown[1] * kShiftDown[1] - kShiftDown[2] * kShiftDown[2];
            float best = -FLT_MAX, scale = 0.0f;
            int bestI1 = -1, bestI2 = -1, bestK = -1;
            for (int i1 = 0; i1 <= bs; ++i1)
                for (int i2 = i1; i2 <= bs; ++i2) {
                    float qxp[2], qxm[2], q2p[2], q2m[2];
                    for (int h = 0; h < 2; ++h) {
                        const float sx = px[h][i1] + px[h][i2];
                        qxp[h] = txs[h] * p2 - sx;
                        qxm[h] = txs[h] * m2 - sx;
                        q2p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
                        q2m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
                    }
                    const float sumqx[4] = {qxp[0] + qxp[1], qxp[0] + qxm[1], qxm[0] + qxp[1],
                                            qxm[0] + qxm[1]};
                    const float sumq2[4] = {q2p[0] + q2p[1], q2p[0] + q2m[1], q2m[0] + q2p[1],
                                            q2m[0] + q2m[1]};
                    for (int k = 0; k < 4; ++k)
                        if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best * sumq2[k]) {
                            scale = sumqx[k] / sumq2[k];
                            best = scale * sumqx[k];
                            bestI1 = i1;
                            bestI2 = i2;
                            bestK = k;
                        }
                }
            if (bestI1 < 0) continue;
            for (int j = 0; j < bs; ++j) L[idx[j]] = int8_t(j < bestI1 ? 0 : j < bestI2 ? 1 : 2);
            if (scale < 0) {
                for (int8_t& l : L) l = int8_t(2 - l);
                scale = -scale;
                bestK = 3 - bestK;
            }
            bool allOnGrid = true;
            int rows[2];
            for (int k = 0; k < 2; ++k) {
                bool on;
                rows[k] = snapToGrid(g, xb + 8 * k, weight + 8 * k, scale, shiftOf(bestK, k),
                                     L + 8 * k, &on);
                allOnGrid = allOnGrid && on;
            }
            if (!allOnGrid) {
                float sumqx = 0.0f, sumq2 = 0.0f;
                for (int k = 0; k < 2; ++k) {
                    const float* xx = shiftOf(bestK, k);
                    for (int j = 0; j < 8; ++j) {
                        const float w = weight[8 * k + j],
                                    q = xx[g.level[8 * size_t(rows[k]) + size_t(j)]];
                        sumqx += w * q * xb[8 * k + j];
                        sumq2 += w * q * q;
                    }
                }
                if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
            }
            b.qs[2 * ib] = uint8_t(rows[0] & 255);
            b.qs[2 * ib + 1] = uint8_t(rows[1] & 255);
            b.qh[ib] = uint8_t((rows[0] >> 8) | (rows[1] >> 8) << 4);
            scales[ib] = scale;
            shifts[ib] = bestK;
            maxScale = std::max(maxScale, scale);
        }
        if (maxScale == 0.0f) continue;
        uint16_t sc[4] = {};
        float d = maxScale / 15;
        const float id = 1 / d;
        // The super-block scale is refit to the stored levels and sub-block scales.
        float sumqx = 0.0f, sumq2 = 0.0f;
        for (int ib = 0; ib < kQKK / bs; ++ib) {
            const int l = std::max(0, std::min(7, nearestEven(0.5f * (id * scales[ib] - 1.0f))));
            sc[ib / 4] = uint16_t(sc[ib / 4] | l << 3 * (ib % 4));
            b.qh[ib] |= kMasks[shifts[ib]];
            const float* xb = xbl + bs * ib;
            subWeights(bs, xb, importance ? importance + kQKK * ibl + bs * ib : nullptr, sigma2,
                       weight);
            for (int k = 0; k < 2; ++k) {
                const float* xx = shiftOf(shifts[ib], k);
                const int row = b.qs[2 * ib + k] | ((b.qh[ib] << (8 - 4 * k)) & 0x700);
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = xx[g.level[8 * size_t(row) + size_t(j)]] * float(2 * l + 1);
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
        }
        if (sumq2 > 0) d = sumqx / sumq2;
        const uint16_t h = floatToHalf(d * 1.1125f);
        sc[0] = uint16_t(sc[0] | (h & 0x000f) << 12);
        sc[1] = uint16_t(sc[1] | (h & 0x00f0) << 8);
        sc[2] = uint16_t(sc[2] | (h & 0x0f00) << 4);
        sc[3] = uint16_t(sc[3] | (h & 0xf000));
        std::memcpy(b.scales, sc, sizeof sc);
    }
}

} // namespace hearth::quant::detail
