// Small vectorizable math helpers shared by the CPU kernels: an exponential written as plain
// arithmetic (no library call), so loops that use it vectorize on every instruction set level.
#pragma once

#include <bit>
#include <cstdint>

namespace hearth::cpu {

// exp(x) for x in [-87, 87] (inputs outside are clamped), within about 2 ulp: x = n ln2 + r with
// |r| <= ln2 / 2, a degree-7 polynomial for exp(r), and 2^n built in the exponent bits. Below
// -87 the result is e^-87 (about 1.6e-38), not 0: callers zero what they mask.
__attribute__((always_inline)) inline float expClamped(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 87.0f ? 87.0f : x;
    const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f; // round to nearest integer
    const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;    // ln2 in two parts
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}

// expClamped on each lane of a GCC vector V of floats (VI: the int32 vector of as many lanes),
// the same operations in the same order, so every lane equals expClamped of it. Always inlined
// into a kernel compiled for the vector's width, so the ABI note about passing wide vectors does
// not apply.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
template <typename V, typename VI> __attribute__((always_inline)) inline V expClampedLanes(V x) {
    const V lo = V{} - 87.0f, hi = V{} + 87.0f;
    x = x < lo ? lo : x;
    x = x > hi ? hi : x;
    const V n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
    const V r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
    V p = V{} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    return p * std::bit_cast<V>((__builtin_convertvector(n, VI) + 127) << 23);
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

} // namespace hearth::cpu
