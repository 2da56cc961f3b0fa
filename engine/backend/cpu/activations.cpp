// Vectorized element-wise activations: plain loops over expClamped that the compiler turns into
// SIMD code for each instruction set clone.
#include "backend/cpu/activations.h"

#include "backend/cpu/fast_math.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define HEARTH_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HEARTH_CLONES
#endif

namespace hearth::cpu {

HEARTH_CLONES
void swiglu(const float* gate, const float* up, float* out, int64_t n) {
    // out may be gate itself: element i reads only index i before writing it, so there is no
    // loop-carried dependence and the compiler need not check for overlap.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        out[i] = g / (1.0f + expClamped(-g)) * up[i];
    }
}

} // namespace hearth::cpu
