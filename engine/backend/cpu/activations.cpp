// Vectorized element-wise activations and RMSNorm: plain loops (over expClamped for SwiGLU) that
// the compiler turns into SIMD code for each instruction-set level (target_clones.h).
#include "backend/cpu/activations.h"

#include "backend/cpu/fast_math.h"
#include "backend/cpu/target_clones.h"

#include <cmath>

namespace hearth::cpu {

inline void swigluBody(const float* gate, const float* up, float* out, int64_t n) {
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

HEARTH_ISA_DISPATCH(void, swiglu, (const float* gate, const float* up, float* out, int64_t n),
                    (gate, up, out, n), swigluBody)

inline void siluBody(const float* x, float* out, int64_t n) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        out[i] = v / (1.0f + expClamped(-v));
    }
}

HEARTH_ISA_DISPATCH(void, silu, (const float* x, float* out, int64_t n),
                    (x, out, n), siluBody)

inline void rmsNormBody(const float* x, const float* weight, float* out, int64_t n, float eps) {
    double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) part[k] += double(x[i + k]) * double(x[i + k]);
    double ss = 0.0;
    for (; i < n; ++i) ss += double(x[i]) * double(x[i]);
    for (double p : part) ss += p;
    const float scale = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
    for (i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

HEARTH_ISA_DISPATCH(void, rmsNorm, (const float* x, const float* weight, float* out, int64_t n, float eps),
                    (x, weight, out, n, eps), rmsNormBody)

} // namespace hearth::cpu
