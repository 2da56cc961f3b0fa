// Reference quantizers of one row per type (n a multiple of the block size), used by convert.cpp.
#pragma once

#include "quant/blocks.h"
#include "quant/blocks_iq.h"

#include <cstdint>

namespace hearth::quant::detail {

void quantizeQ4_0(const float* x, BlockQ4_0* y, int64_t n);
void quantizeQ4_1(const float* x, BlockQ4_1* y, int64_t n);
void quantizeQ5_0(const float* x, BlockQ5_0* y, int64_t n);
void quantizeQ5_1(const float* x, BlockQ5_1* y, int64_t n);
void quantizeQ8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantizeQ8_1(const float* x, BlockQ8_1* y, int64_t n);
void quantizeQ2_K(const float* x, BlockQ2_K* y, int64_t n);
void quantizeQ3_K(const float* x, BlockQ3_K* y, int64_t n);
void quantizeQ4_K(const float* x, BlockQ4_K* y, int64_t n);
void quantizeQ5_K(const float* x, BlockQ5_K* y, int64_t n);
void quantizeQ6_K(const float* x, BlockQ6_K* y, int64_t n);
void quantizeQ8_K(const float* x, BlockQ8_K* y, int64_t n);
void quantizeIQ4_NL(const float* x, BlockIQ4_NL* y, int64_t n);
void quantizeIQ4_XS(const float* x, BlockIQ4_XS* y, int64_t n);
void quantizeMXFP4(const float* x, BlockMXFP4* y, int64_t n);
void quantizeTQ1_0(const float* x, BlockTQ1_0* y, int64_t n);
void quantizeTQ2_0(const float* x, BlockTQ2_0* y, int64_t n);
// The grid i-quant searches (quantize_iq3.cpp ...); importance may be null where ggml allows it
// (IQ3_XXS, IQ3_S: weights x² then).
void iq3XxsRows(const float* x, BlockIQ3_XXS* y, int64_t n, const float* importance);
void iq3SRows(const float* x, BlockIQ3_S* y, int64_t n, const float* importance);
void iq2XxsRows(const float* x, BlockIQ2_XXS* y, int64_t n, const float* importance); // importance required
void iq2XsRows(const float* x, BlockIQ2_XS* y, int64_t n, const float* importance);   // importance required
void iq2SRows(const float* x, BlockIQ2_S* y, int64_t n, const float* importance);
void iq1SRows(const float* x, BlockIQ1_S* y, int64_t n, const float* importance); // importance required
void iq1MRows(const float* x, BlockIQ1_M* y, int64_t n, const float* importance);

// Round half away from zero, as the reference formulas do; non-finite input gives 0.
inline int roundToInt(float v) {
    if (!(v == v) || v > 2.0e9f || v < -2.0e9f) return 0;
    return int(v >= 0.0f ? v + 0.5f : v - 0.5f);
}

} // namespace hearth::quant::detail
