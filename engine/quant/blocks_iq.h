// Block layouts (byte-compatible with GGUF/ggml) and host dequantizers of the grid i-quants
// (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and the ternary TQ1_0 / TQ2_0. The
// float operations follow the reference's order so that the results are bit-identical.
#pragma once

#include "quant/blocks.h"
#include "quant/iq_grids.h"

#include <cstdint>
#include <cstring>

namespace hearth::quant {

struct BlockIQ2_XXS { uint16_t d; uint16_t qs[kQKK / 8]; };
struct BlockIQ2_XS { uint16_t d; uint16_t qs[kQKK / 8]; uint8_t scales[kQKK / 32]; };
struct BlockIQ2_S { uint16_t d; uint8_t qs[kQKK / 4], qh[kQKK / 32], scales[kQKK / 32]; };
struct BlockIQ3_XXS { uint16_t d; uint8_t qs[3 * kQKK / 8]; };
struct BlockIQ3_S {
    uint16_t d;
    uint8_t qs[kQKK / 4], qh[kQKK / 32], signs[kQKK / 8], scales[kQKK / 64];
};
struct BlockIQ1_S { uint16_t d; uint8_t qs[kQKK / 8]; uint16_t qh[kQKK / 32]; };
struct BlockIQ1_M { uint8_t qs[kQKK / 8]; uint8_t qh[kQKK / 16]; uint8_t scales[kQKK / 32]; };
struct BlockTQ1_0 { uint8_t qs[48]; uint8_t qh[4]; uint16_t d; };
struct BlockTQ2_0 { uint8_t qs[kQKK / 4]; uint16_t d; };

static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ1_S) == 50 && sizeof(BlockIQ1_M) == 56);
static_assert(sizeof(BlockTQ1_0) == 54 && sizeof(BlockTQ2_0) == 66);

// The offset the 1-bit grids' values are shifted by (sign from a per-group bit).
inline constexpr float kIq1Delta = 0.125f;

// 8 grid magnitudes times dl, value j negated where bit j of `signs` is set (by flipping the
// sign bit, which is what negation does: no branch on random signs).
inline void signedGroup(const uint8_t* grid, uint8_t signs, float dl, float* y) {
    for (int j = 0; j < 8; ++j) {
        const float v = dl * float(grid[j]);
        y[j] = bitsFloat(floatBits(v) ^ (uint32_t(signs >> j) & 1u) << 31);
    }
}

inline uint32_t loadU32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// IQ2_XXS: per 32 values two u32 words: word 0 holds four 8-bit grid indices, word 1 four 7-bit
// sign indices (bits 7l..7l+6) and a 4-bit scale s (bits 28-31); x = d*(0.5+s)/4 * grid.
inline void dequantBlock(const BlockIQ2_XXS& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int ib = 0; ib < kQKK / 32; ++ib, y += 32) {
        const uint32_t idx = loadU32(b.qs + 4 * ib), aux = loadU32(b.qs + 4 * ib + 2);
        const float db = d * (0.5f + float(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; ++l)
            signedGroup(grids::kIq2xxs.data() + 8 * ((idx >> 8 * l) & 255),
                        grids::evenParitySigns(aux >> 7 * l), db, y + 8 * l);
    }
}

// IQ2_XS: one u16 per 8 values (9-bit grid index, 7-bit sign index); two 4-bit scales per 32.
inline void dequantBlock(const BlockIQ2_XS& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int ib = 0; ib < kQKK / 32; ++ib, y += 32) {
        const float db[2] = {d * (0.5f + float(b.scales[ib] & 15)) * 0.25f,
                             d * (0.5f + float(b.scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; ++l) {
            const uint16_t q = b.qs[4 * ib + l];
            signedGroup(grids::kIq2xs.data() + 8 * (q & 511), grids::evenParitySigns(q >> 9),
                        db[l / 2], y + 8 * l);
        }
    }
}

// IQ2_S: qs[0..31] are the low 8 bits of the 10-bit grid indices, qs[32..63] plain sign bytes;
// qh[ib] bits 2l..2l+1 are index bits 8-9 of group l.
inline void dequantBlock(const BlockIQ2_S& b, float* y) {
    const float d = halfToFloat(b.d);
    const uint8_t* signs = b.qs + kQKK / 8;
    for (int ib = 0; ib < kQKK / 32; ++ib, y += 32) {
        const float db[2] = {d * (0.5f + float(b.scales[ib] & 15)) * 0.25f,
                             d * (0.5f + float(b.scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; ++l) {
            const int index = b.qs[4 * ib + l] | ((b.qh[ib] >> 2 * l) & 3) << 8;
            signedGroup(grids::kIq2s.data() + 8 * index, signs[4 * ib + l], db[l / 2], y + 8 * l);
        }
    }
}

// IQ3_XXS: qs[0..63] are 8-bit indices into a grid of 4 magnitudes (two per group of 8);
// qs[64..95] one u32 per 32 values: four 7-bit sign indices and a 4-bit scale s;
// x = d*(0.5+s)/2 * grid.
inline void dequantBlock(const BlockIQ3_XXS& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int ib = 0; ib < kQKK / 32; ++ib, y += 32) {
        const uint32_t aux = loadU32(b.qs + kQKK / 4 + 4 * ib);
        const float db = d * (0.5f + float(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; ++l) {
            uint8_t grid[8];
            std::memcpy(grid, grids::kIq3xxs.data() + 4 * b.qs[8 * ib + 2 * l], 4);
            std::memcpy(grid + 4, grids::kIq3xxs.data() + 4 * b.qs[8 * ib + 2 * l + 1], 4);
            signedGroup(grid, grids::evenParitySigns(aux >> 7 * l), db, y + 8 * l);
        }
    }
}

// IQ3_S: 9-bit indices into a grid of 4 magnitudes: low 8 bits in qs (8 per 32 values), bit 8 of
// index k of sub-block ib is bit k of qh[ib]; plain sign bytes; 4-bit scales s (two per byte);
// x = d*(1+2s) * grid.
inline void dequantBlock(const BlockIQ3_S& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int ib = 0; ib < kQKK / 32; ++ib, y += 32) {
        const float db = d * float(1 + 2 * ((b.scales[ib / 2] >> 4 * (ib % 2)) & 15));
        for (int l = 0; l < 4; ++l) {
            uint8_t grid[8];
            for (int h = 0; h < 2; ++h) {
                const int k = 2 * l + h;
                const int index = b.qs[8 * ib + k] | ((b.qh[ib] >> k) & 1) << 8;
                std::memcpy(grid + 4 * h, grids::kIq3s.data() + 4 * index, 4);
            }
            signedGroup(grid, b.signs[4 * ib + l], db, y + 8 * l);
        }
    }
}

// 8 values of the 1-bit grid: dl * (grid + delta).
inline void iq1Group(int index, float dl, float delta, float* y) {
    const int8_t* grid = grids::kIq1s.data() + 8 * index;
    for (int j = 0; j < 8; ++j) y[j] = dl * (float(grid[j]) + delta);
}

// IQ1_S: per 32 values a u16 qh: bits 3l..3l+2 are index bits 8-10 of group l (low bits in qs),
// bits 12-14 a 3-bit scale s, bit 15 the sign of the delta; x = d*(2s+1) * (grid ± 1/8).
inline void dequantBlock(const BlockIQ1_S& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int ib = 0; ib < kQKK / 32; ++ib, y += 32) {
        const int qh = b.qh[ib];
        const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
        const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
        for (int l = 0; l < 4; ++l)
            iq1Group(b.qs[4 * ib + l] | ((qh >> 3 * l) & 7) << 8, dl, delta, y + 8 * l);
    }
}

// IQ1_M's fp16 super-block scale: the top nibbles of its four u16 scale words, word 0 lowest.
inline uint16_t iq1mScaleBits(const BlockIQ1_M& b) {
    uint16_t sc[4];
    std::memcpy(sc, b.scales, sizeof sc);
    return uint16_t((sc[0] >> 12) | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) |
                    (sc[3] & 0xf000));
}

// IQ1_M: per 32 values two qh bytes, each for two groups of 8: low nibble = index bits 8-10 and
// delta sign (bit 3) of the first, high nibble of the second; 3-bit scales, four per u16 word
// (bits 6(ib%2)+0..2 for the first 16 values, +3..5 for the second); x = d*(2s+1) * (grid ± 1/8).
inline void dequantBlock(const BlockIQ1_M& b, float* y) {
    uint16_t sc[4];
    std::memcpy(sc, b.scales, sizeof sc);
    const float d = halfToFloat(iq1mScaleBits(b));
    for (int ib = 0; ib < kQKK / 32; ++ib, y += 32) {
        const int shift = 6 * (ib % 2);
        const float dl[2] = {d * float(2 * ((sc[ib / 2] >> shift) & 7) + 1),
                             d * float(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1)};
        for (int l = 0; l < 4; ++l) {
            const int nib = (b.qh[2 * ib + l / 2] >> 4 * (l % 2)) & 15;
            const float delta =
                bitsFloat(floatBits(kIq1Delta) ^ uint32_t(nib >> 3) << 31); // bit 3: -
            iq1Group(b.qs[4 * ib + l] | (nib & 7) << 8, dl[l / 2], delta, y + 8 * l);
        }
    }
}

// Digit n (0 = most significant) of a base-3 byte stored as round(v * 256 / 243): the top
// "trit" of (q * 3^n mod 256), read as (q' * 3) >> 8.
inline int tq1Trit(uint8_t q, int n) {
    constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const uint8_t shifted = uint8_t(q * kPow3[n]);
    return (shifted * 3) >> 8;
}

// TQ1_0: ternary values -1/0/+1 times d. qs[0..31] give values 32n+m (digit n of byte m),
// qs[32..47] values 160+16n+m, qh[0..3] values 240+4n+j (digits 0-3).
inline void dequantBlock(const BlockTQ1_0& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int n = 0; n < 5; ++n)
        for (int m = 0; m < 32; ++m) y[32 * n + m] = float(tq1Trit(b.qs[m], n) - 1) * d;
    for (int n = 0; n < 5; ++n)
        for (int m = 0; m < 16; ++m) y[160 + 16 * n + m] = float(tq1Trit(b.qs[32 + m], n) - 1) * d;
    for (int n = 0; n < 4; ++n)
        for (int j = 0; j < 4; ++j) y[240 + 4 * n + j] = float(tq1Trit(b.qh[j], n) - 1) * d;
}

// TQ2_0: 2-bit q per value (x = (q - 1) * d); byte m of each 32-byte half h holds values
// 128h + 32l + m at bits 2l..2l+1.
inline void dequantBlock(const BlockTQ2_0& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 4; ++l)
            for (int m = 0; m < 32; ++m)
                y[128 * h + 32 * l + m] = float(((b.qs[32 * h + m] >> 2 * l) & 3) - 1) * d;
}

} // namespace hearth::quant
