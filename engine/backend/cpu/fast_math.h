// Small vectorizable math helpers shared by the CPU kernels: an exponential written as plain
// arithmetic (no library call), so loops that use it vectorize on every instruction set level.
#pragma once

#include <bit>
#include <cstdint>

namespace hearth::cpu {

// exp(x) for x in [-87, 87] (inputs outside are clamped), within about 2 ulp: x = n ln2 + r with
// |r| <= ln2 / 2, a degree-7 polynomial for exp(r), and 2^n built in the exponent bits. Below
// -87 the result is e^-87 (about 1.6e-38), not 0: callers zero what they mask.
// The part of expClamped shared by floats and vectors (T{} is zero): clamps x, sets n to the
// nearest integer of x / ln2 and returns the polynomial for exp(x - n ln2).
template <typename T> __attribute__((always_inline)) inline T expPolynomial(T x, T& n) {
    const T lo = T{} - 87.0f, hi = T{} + 87.0f;
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    n = (x * 1.44269504f + 12582912.0f) - 12582912.0f; // round to nearest integer
    const T r = (x - n * 0.693359375f) + n * 2.12194440e-4f; // ln2 in two parts
    T p = T{} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * (r * r) + r + 1.0f;
}

__attribute__((always_inline)) inline float expClamped(float x) {
    float n;
    const float p = expPolynomial(x, n);
    return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}

// The float vectors of each instruction set level (a zmm, ymm or xmm register: F16, F8, F4) and
// their int32 twins, as GCC vector types. Kernels written over them (with the same arithmetic
// on plain floats for the tail) compute lane by lane in the written order, so every level gives
// the same results; each kernel is compiled once per level (target_clones.h) with always-inlined
// helpers, so no vector crosses a call and GCC's note that passing wide vectors depends on the
// ISA (-Wpsabi) does not apply: files using them build with -Wno-psabi.
typedef float F16 __attribute__((vector_size(64)));
typedef float F8 __attribute__((vector_size(32)));
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I16 __attribute__((vector_size(64)));
typedef int32_t I8 __attribute__((vector_size(32)));
typedef int32_t I4 __attribute__((vector_size(16)));
template <typename V> struct Lanes;
template <> struct Lanes<F16> { using I = I16; static constexpr int n = 16; };
template <> struct Lanes<F8> { using I = I8; static constexpr int n = 8; };
template <> struct Lanes<F4> { using I = I4; static constexpr int n = 4; };

template <typename V> __attribute__((always_inline)) inline V loadV(const float* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

template <typename V> __attribute__((always_inline)) inline void storeV(float* p, V v) { __builtin_memcpy(p, &v, sizeof v); }

// expClamped on each lane of V, the same operations in the same order, so every lane equals
// expClamped of it.
template <typename V> __attribute__((always_inline)) inline V expClamped(V x) {
    V n;
    const V p = expPolynomial(x, n);
    return p * std::bit_cast<V>((__builtin_convertvector(n, typename Lanes<V>::I) + 127) << 23);
}

// out[i] = f(in[i]) for i < n, L lanes at a time, then float by float; f is a generic lambda
// written once for floats and vectors alike.
template <typename V, typename F>
__attribute__((always_inline)) inline void mapLanes(const float* in, float* out, int64_t n, const F& f) {
    constexpr int L = Lanes<V>::n;
    int64_t i = 0;
    for (; i + L <= n; i += L) storeV(out + i, f(loadV<V>(in + i)));
    for (; i < n; ++i) out[i] = f(in[i]);
}

} // namespace hearth::cpu
