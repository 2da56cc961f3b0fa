// Vectorized element-wise activations and RMSNorm for each instruction-set level
// (target_clones.h): SwiGLU, SiLU, GELU and GeGLU over the level's vector type (fast_math.h), RMSNorm as
// plain loops the compiler vectorizes.
#include "backend/cpu/activations.h"

#include "backend/cpu/fast_math.h"
#include "backend/cpu/target_clones.h"

#include <cmath>

namespace hearth::cpu {

// SwiGLU on L lanes at a time (V: the level's vector), then float by float. out may be gate
// itself: element i reads only index i before writing it.
template <typename V> inline void swigluLanes(const float* gate, const float* up, float* out, int64_t n) {
    const auto f = [](auto g, auto u) { return g / (1.0f + expClamped(-g)) * u; };
    constexpr int L = Lanes<V>::n;
    int64_t i = 0;
    for (; i + L <= n; i += L) storeV(out + i, f(loadV<V>(gate + i), loadV<V>(up + i)));
    for (; i < n; ++i) out[i] = f(gate[i], up[i]);
}

HEARTH_ISA_DISPATCH3(void, swiglu, (const float* gate, const float* up, float* out, int64_t n),
                     (gate, up, out, n), swigluLanes<F16>, swigluLanes<F8>, swigluLanes<F4>)

template <typename V> inline void siluLanes(const float* x, float* out, int64_t n) {
    mapLanes<V>(x, out, n, [](auto v) { return v / (1.0f + expClamped(-v)); });
}

HEARTH_ISA_DISPATCH3(void, silu, (const float* x, float* out, int64_t n),
                     (x, out, n), siluLanes<F16>, siluLanes<F8>, siluLanes<F4>)

// gelu(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = √(2/π) (x + 0.044715 x³): the tanh form
// through one exponential. The clamped exponential keeps both ends finite (x or a denormal-sized
// fraction of it).
template <typename T> __attribute__((always_inline)) inline T geluOf(T x) {
    const T u2 = x * (1.5957691216f + 0.0713548163f * x * x); // 2u
    return x / (1.0f + expClamped(T{} - u2));
}

template <typename V> inline void geluLanes(const float* x, float* out, int64_t n) {
    mapLanes<V>(x, out, n, [](auto v) { return geluOf(v); });
}

HEARTH_ISA_DISPATCH3(void, gelu, (const float* x, float* out, int64_t n), (x, out, n), geluLanes<F16>, geluLanes<F8>,
                     geluLanes<F4>)

template <typename V> inline void gegluLanes(const float* gate, const float* up, float* out, int64_t n) {
    constexpr int L = Lanes<V>::n;
    int64_t i = 0;
    for (; i + L <= n; i += L) storeV(out + i, geluOf(loadV<V>(gate + i)) * loadV<V>(up + i));
    for (; i < n; ++i) out[i] = geluOf(gate[i]) * up[i];
}

HEARTH_ISA_DISPATCH3(void, geglu, (const float* gate, const float* up, float* out, int64_t n),
                     (gate, up, out, n), gegluLanes<F16>, gegluLanes<F8>, gegluLanes<F4>)

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
