// The sub-block search shared by the IQ2 and IQ3 grid quantizers: signs split off, a scan of
// candidate scales snapping each group of magnitudes to the grid (or its nearest rows), then a
// refit; one set of parameters per type reproduces ggml's variant of it.
#pragma once

#include "quant/iq_search.h"

#include <cstdint>

namespace hearth::quant::detail {

struct GridFitParams {
    const GridSearch* grid;
    int n;     // values in the sub-block (16 or 32); groups of grid->width
    int maxQ;  // levels per value: magnitude 2l + 1, l < maxQ
    int steps; // candidate inverse scales (2 maxQ - 1 + is * stepSize) / max, |is| <= steps
    float stepSize;
    float eps;      // max below this: an all-zero sub-block (0: only an exact zero)
    bool evenSigns; // flip the least important sign to keep each 8's count even (7 bits stored)
    bool reSnapAll; // after the scan, re-snap every group (else only the off-grid ones)
    bool qpStart;   // IQ2_XXS: scan around a positive-level fit's scale, re-snap always
};

struct GridFit {
    float scale = 0.0f;
    bool zero = false;     // all values (near) zero: nothing stored
    int rows[8] = {};      // grid row per group
    uint8_t signs[4] = {}; // per 8 values (7 bits when evenSigns)
};

// xb: n values; weight: their n weights.
void fitGridSubBlock(const GridFitParams& p, const float* xb, const float* weight, GridFit& out);

// Round half to even of 0.5 (id s - 1) into 0..15: a sub-block scale's 4-bit level.
int gridScaleLevel(float id, float scale);

} // namespace hearth::quant::detail
