// Element-wise activations and RMSNorm for the CPU forward, vectorized for the CPU it runs on (AVX-512, AVX2
// or baseline x86-64 clones chosen at load time); cpu::ref holds the plain versions they match.
#pragma once

#include <cstdint>

namespace hearth::cpu {

// out[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i]; out may alias gate.
// Agrees with ref::swiglu to a few ulp (a polynomial exponential).
void swiglu(const float* gate, const float* up, float* out, int64_t n);

// out[i] = silu(x[i]) = x[i] / (1 + exp(-x[i])); out may alias x.
void silu(const float* x, float* out, int64_t n);

// out[i] = gelu(x[i]) in the tanh form, as x / (1 + exp(-2u)) (see ref::gelu); out may alias x.
void gelu(const float* x, float* out, int64_t n);
// out[i] = gelu(gate[i]) * up[i]; out may alias gate.
void geglu(const float* gate, const float* up, float* out, int64_t n);

// out[i] = x[i] / sqrt(mean(x²) + eps) * weight[i]; out may alias x. As ref::rmsNorm (the sum of
// squares in double) but summed in eight interleaved partial sums, so it vectorizes: the scale
// agrees with the reference's to ~1e-15 relative.
void rmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps);

} // namespace hearth::cpu
