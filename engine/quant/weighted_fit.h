// The importance-weighted fits shared by the imatrix quantizers (quantize_weighted*.cpp), with
// ggml's rounding, so that their bytes match ggml_quantize_chunk's given an imatrix.
#pragma once

#include "quant/blocks.h"

#include <cstdint>
#include <cstring>

namespace hearth::quant::detail {

// Below this a group counts as all zeros, as in ggml.
inline constexpr float kGroupEps = 1e-15f;

// Round to nearest, ties to even, the way ggml does it: add 1.5 * 2^23 and read the mantissa
// (valid for |v| < 2^22).
inline int nearestEven(float v) {
    const float t = v + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &t, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

// Symmetric fit x ≈ scale * (L - nmax), L in [0, 2 nmax - 1], minimising Σ w (x - scale q)²
// over 19 candidate inverse scales around -nmax / max. Returns the scale.
float fitSymmetric(int n, int nmax, const float* x, int8_t* L, const float* w);

// Fit x ≈ scale * L + lo with L in [0, nmax] and lo <= 0 (n <= 32), minimising the weighted
// squared error over nstep + 1 candidate scales (rmin + k rdelta + nmax) / (max - min), each
// refit in closed form. Returns the scale; *negMin receives -lo.
float fitScaleMinWeighted(int n, int nmax, const float* x, const float* w, uint8_t* L, float* negMin, float rmin,
                          float rdelta, int nstep);

// Fit of non-negative values (sub-block scales or mins) x ≈ scale * L, L in [0, nmax]: the best
// of 9 candidate scales, then single levels moved while the weighted fit improves.
float fitPositiveScale(int n, int nmax, const float* x, uint8_t* L, const float* w);

// The K-type searches given an importance vector (quantize_weighted_k.cpp); n a multiple of 256.
void weightedQ2_K(const float* x, BlockQ2_K* y, int64_t n, const float* importance);
void weightedQ3_K(const float* x, BlockQ3_K* y, int64_t n, const float* importance);
void weightedQ4_K(const float* x, BlockQ4_K* y, int64_t n, const float* importance);
void weightedQ5_K(const float* x, BlockQ5_K* y, int64_t n, const float* importance);
void weightedQ6_K(const float* x, BlockQ6_K* y, int64_t n, const float* importance);

} // namespace hearth::quant::detail
