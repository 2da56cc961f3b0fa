// IEEE binary16 and bfloat16 conversions as inline functions usable from host and device code
// (the CUDA backend includes this header so host tests exercise the exact same math).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define HEARTH_HD __host__ __device__
#else
#define HEARTH_HD
#endif

namespace hearth::quant {

HEARTH_HD inline uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

HEARTH_HD inline float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

// binary16 -> binary32, exact for every input (subnormals, infinities and NaNs included).
HEARTH_HD inline float halfToFloat(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return bitsFloat(sign | 0x7f800000u | (mant << 13)); // inf / nan
    if (exp != 0) return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return bitsFloat(sign); // +-0
    // subnormal: value = mant * 2^-24
    int e = -1;
    do {
        mant <<= 1;
        ++e;
    } while ((mant & 0x400u) == 0);
    mant &= 0x3ffu;
    return bitsFloat(sign | uint32_t(112 - e) << 23 | (mant << 13));
}

// binary32 -> binary16 with round-to-nearest-even; overflow gives infinity, NaN stays NaN.
HEARTH_HD inline uint16_t floatToHalf(float f) {
    const uint32_t x = floatBits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) // inf or nan
        return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u));
    if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00u); // rounds to >= 65520: infinity
    if (absx < 0x38800000u) {                                  // result is subnormal or zero
        if (absx < 0x33000000u) return uint16_t(sign);        // < 2^-25: rounds to zero
        const uint32_t e = absx >> 23;
        const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e; // 14..24 (value = m * 2^(e-150), unit = 2^-24)
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) ++q;
        return uint16_t(sign | q);
    }
    // normal: rebias exponent, round mantissa from 23 to 10 bits
    uint32_t h = ((absx >> 13) - (112u << 10));
    const uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h; // may carry into the exponent: fine
    return uint16_t(sign | h);
}

HEARTH_HD inline float bf16ToFloat(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }

// Round to nearest even; NaN stays NaN (quiet).
HEARTH_HD inline uint16_t floatToBf16(float f) {
    const uint32_t x = floatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
    return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

} // namespace hearth::quant
