// Element-wise activations for the CPU forward, vectorized for the CPU it runs on (AVX-512, AVX2
// or baseline x86-64 clones chosen at load time); cpu::ref holds the plain versions they match.
#pragma once

#include <cstdint>

namespace hearth::cpu {

// out[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i]; out may alias gate.
// Agrees with ref::swiglu to a few ulp (a polynomial exponential).
void swiglu(const float* gate, const float* up, float* out, int64_t n);

} // namespace hearth::cpu
