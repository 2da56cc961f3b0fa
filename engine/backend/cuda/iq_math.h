// The grid i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and the ternary
// TQ1_0 / TQ2_0 as 32-value chunks for the CUDA kernels, inline __host__ __device__ so the host
// tests run the kernels' code against quant's reference dequantizers (bit for bit: the float
// operations are the reference's, in its order). The grids come from quant::grids on the host and,
// on the device, from one copy per compiled module expanded at compile time from the same codes.
#pragma once

#include "quant/blocks_iq.h"

#include <cstddef>
#include <cstdint>

namespace hearth::cuda::math {

namespace gridcodes {
#include "quant/iq_grid_codes.inc"
} // namespace gridcodes

// Every grid, one byte per value, as quant::grids holds them.
struct DeviceGrids {
    uint8_t iq2xxs[256 * 8];
    uint8_t iq2xs[512 * 8];
    uint8_t iq2s[1024 * 8];
    uint8_t iq3xxs[256 * 4];
    uint8_t iq3s[512 * 4];
    int8_t iq1s[2048 * 8];
};

template <typename T, size_t Entries, size_t Levels>
constexpr void expandGrid(T* out, int width, const uint16_t (&codes)[Entries], int bits, const int8_t (&levels)[Levels]) {
    const unsigned mask = (1u << bits) - 1u;
    for (size_t e = 0; e < Entries; ++e)
        for (int j = 0; j < width; ++j) out[e * size_t(width) + size_t(j)] = T(levels[(codes[e] >> (bits * j)) & mask]);
}

constexpr DeviceGrids makeDeviceGrids() {
    DeviceGrids g{};
    using namespace gridcodes;
    expandGrid(g.iq2xxs, 8, kIq2xxsCodes, kIq2xxsBits, kIq2xxsLevels);
    expandGrid(g.iq2xs, 8, kIq2xsCodes, kIq2xsBits, kIq2xsLevels);
    expandGrid(g.iq2s, 8, kIq2sCodes, kIq2sBits, kIq2sLevels);
    expandGrid(g.iq3xxs, 4, kIq3xxsCodes, kIq3xxsBits, kIq3xxsLevels);
    expandGrid(g.iq3s, 4, kIq3sCodes, kIq3sBits, kIq3sLevels);
    expandGrid(g.iq1s, 8, kIq1sCodes, kIq1sBits, kIq1sLevels);
    return g;
}

#if defined(__CUDACC__)
// Module-local (each .cu is its own module): static, initialized at compile time.
static __device__ const DeviceGrids kDeviceGrids = makeDeviceGrids();
#endif

#if defined(__CUDA_ARCH__)
#define HEARTH_GRID(device, host) (kDeviceGrids.device)
#else
#define HEARTH_GRID(device, host) (quant::grids::host.data())
#endif

HEARTH_HD inline const uint8_t* gridIq2xxs() { return HEARTH_GRID(iq2xxs, kIq2xxs); }
HEARTH_HD inline const uint8_t* gridIq2xs() { return HEARTH_GRID(iq2xs, kIq2xs); }
HEARTH_HD inline const uint8_t* gridIq2s() { return HEARTH_GRID(iq2s, kIq2s); }
HEARTH_HD inline const uint8_t* gridIq3xxs() { return HEARTH_GRID(iq3xxs, kIq3xxs); }
HEARTH_HD inline const uint8_t* gridIq3s() { return HEARTH_GRID(iq3s, kIq3s); }
HEARTH_HD inline const int8_t* gridIq1s() { return HEARTH_GRID(iq1s, kIq1s); }
#undef HEARTH_GRID

// Bytes p[0..3] as a little-endian u32 (block fields need not be 4-byte aligned).
HEARTH_HD inline uint32_t iqLoadU32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
HEARTH_HD inline uint32_t iqLoadU32(const uint16_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 16; }

// quant::grids::evenParitySigns (the 7 stored sign bits and an eighth for even parity), callable
// on the device.
HEARTH_HD inline uint8_t iqParitySigns(uint32_t i) {
    i &= 127u;
    uint32_t p = i ^ (i >> 4);
    p ^= p >> 2;
    p ^= p >> 1;
    return uint8_t(i | (p & 1u) << 7);
}

// 8 grid magnitudes times dl, value j negated where bit j of `signs` is set (quant::signedGroup).
HEARTH_HD inline void iqSignedGroup(const uint8_t* grid, uint8_t signs, float dl, float* y) {
    for (int j = 0; j < 8; ++j) {
        const float v = dl * float(grid[j]);
        y[j] = quant::bitsFloat(quant::floatBits(v) ^ (uint32_t(signs >> j) & 1u) << 31);
    }
}

// IQ2_XXS chunk c: words 2c (four 8-bit grid indices) and 2c + 1 (four 7-bit sign indices, scale).
HEARTH_HD inline void dequantChunk(const quant::BlockIQ2_XXS& b, int c, float* y) {
    const float d = quant::halfToFloat(b.d);
    const uint32_t idx = iqLoadU32(b.qs + 4 * c), aux = iqLoadU32(b.qs + 4 * c + 2);
    const float db = d * (0.5f + float(aux >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l)
        iqSignedGroup(gridIq2xxs() + 8 * ((idx >> 8 * l) & 255), iqParitySigns(aux >> 7 * l), db,
                      y + 8 * l);
}

// IQ2_XS chunk c: four u16 (9-bit grid index, 7-bit sign index), two 4-bit scales.
HEARTH_HD inline void dequantChunk(const quant::BlockIQ2_XS& b, int c, float* y) {
    const float d = quant::halfToFloat(b.d);
    const float db[2] = {d * (0.5f + float(b.scales[c] & 15)) * 0.25f, d * (0.5f + float(b.scales[c] >> 4)) * 0.25f};
    for (int l = 0; l < 4; ++l) {
        const uint16_t q = b.qs[4 * c + l];
        iqSignedGroup(gridIq2xs() + 8 * (q & 511), iqParitySigns(q >> 9), db[l / 2], y + 8 * l);
    }
}

// IQ2_S chunk c: 10-bit indices (low bits in qs, high in qh[c]), plain sign bytes from qs[32..].
HEARTH_HD inline void dequantChunk(const quant::BlockIQ2_S& b, int c, float* y) {
    const float d = quant::halfToFloat(b.d);
    const uint8_t* signs = b.qs + quant::kQKK / 8;
    const float db[2] = {d * (0.5f + float(b.scales[c] & 15)) * 0.25f, d * (0.5f + float(b.scales[c] >> 4)) * 0.25f};
    for (int l = 0; l < 4; ++l) {
        const int index = b.qs[4 * c + l] | ((b.qh[c] >> 2 * l) & 3) << 8;
        iqSignedGroup(gridIq2s() + 8 * index, signs[4 * c + l], db[l / 2], y + 8 * l);
    }
}

// IQ3_XXS chunk c: 8 indices into the 4-wide grid, then one u32 of sign indices and scale.
HEARTH_HD inline void dequantChunk(const quant::BlockIQ3_XXS& b, int c, float* y) {
    const float d = quant::halfToFloat(b.d);
    const uint32_t aux = iqLoadU32(b.qs + quant::kQKK / 4 + 4 * c);
    const float db = d * (0.5f + float(aux >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
        uint8_t grid[8];
        const uint8_t* g0 = gridIq3xxs() + 4 * b.qs[8 * c + 2 * l];
        const uint8_t* g1 = gridIq3xxs() + 4 * b.qs[8 * c + 2 * l + 1];
        for (int j = 0; j < 4; ++j) {
            grid[j] = g0[j];
            grid[4 + j] = g1[j];
        }
        iqSignedGroup(grid, iqParitySigns(aux >> 7 * l), db, y + 8 * l);
    }
}

// IQ3_S chunk c: 9-bit indices into the 4-wide grid (bit 8 from qh[c]), plain signs, scale nibble.
HEARTH_HD inline void dequantChunk(const quant::BlockIQ3_S& b, int c, float* y) {
    const float d = quant::halfToFloat(b.d);
    const float db = d * float(1 + 2 * ((b.scales[c / 2] >> 4 * (c % 2)) & 15));
    for (int l = 0; l < 4; ++l) {
        uint8_t grid[8];
        for (int h = 0; h < 2; ++h) {
            const int k = 2 * l + h;
            const uint8_t* g = gridIq3s() + 4 * (b.qs[8 * c + k] | ((b.qh[c] >> k) & 1) << 8);
            for (int j = 0; j < 4; ++j) grid[4 * h + j] = g[j];
        }
        iqSignedGroup(grid, b.signs[4 * c + l], db, y + 8 * l);
    }
}

// 8 values of the 1-bit grid: dl * (grid + delta).
HEARTH_HD inline void iqOneBitGroup(int index, float dl, float delta, float* y) {
    const int8_t* grid = gridIq1s() + 8 * index;
    for (int j = 0; j < 8; ++j) y[j] = dl * (float(grid[j]) + delta);
}

// IQ1_S chunk c: qh[c] holds index bits 8-10 of each group, a 3-bit scale and the delta's sign.
HEARTH_HD inline void dequantChunk(const quant::BlockIQ1_S& b, int c, float* y) {
    const float d = quant::halfToFloat(b.d);
    const int qh = b.qh[c];
    const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
    const float delta = qh & 0x8000 ? -quant::kIq1Delta : quant::kIq1Delta;
    for (int l = 0; l < 4; ++l) iqOneBitGroup(b.qs[4 * c + l] | ((qh >> 3 * l) & 7) << 8, dl, delta, y + 8 * l);
}

// IQ1_M chunk c: the fp16 scale from the scale words' top nibbles, two 3-bit scales per chunk,
// per group a nibble of index bits 8-10 and the delta's sign.
HEARTH_HD inline void dequantChunk(const quant::BlockIQ1_M& b, int c, float* y) {
    uint16_t sc[4];
    for (int i = 0; i < 4; ++i) sc[i] = uint16_t(b.scales[2 * i] | b.scales[2 * i + 1] << 8);
    const uint16_t dBits =
        uint16_t((sc[0] >> 12) | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000));
    const float d = quant::halfToFloat(dBits);
    const int shift = 6 * (c % 2);
    const float dl[2] = {d * float(2 * ((sc[c / 2] >> shift) & 7) + 1), d * float(2 * ((sc[c / 2] >> (shift + 3)) & 7) + 1)};
    for (int l = 0; l < 4; ++l) {
        const int nib = (b.qh[2 * c + l / 2] >> 4 * (l % 2)) & 15;
        const float delta = quant::bitsFloat(quant::floatBits(quant::kIq1Delta) ^ uint32_t(nib >> 3) << 31);
        iqOneBitGroup(b.qs[4 * c + l] | (nib & 7) << 8, dl[l / 2], delta, y + 8 * l);
    }
}

// Digit n (0 = most significant) of a TQ1_0 base-3 byte (quant::tq1Trit).
HEARTH_HD inline int tq1Digit(uint8_t q, int n) {
    const uint8_t shifted = uint8_t(q * (n == 0 ? 1 : n == 1 ? 3 : n == 2 ? 9 : n == 3 ? 27 : 81));
    return (shifted * 3) >> 8;
}

// TQ1_0 chunk c of values [32c, 32c + 32): chunks 0-4 are digit c of qs[0..31]; values 160-239
// are digit (v - 160) / 16 of qs[32 + (v - 160) % 16]; values 240-255 digit (v - 240) / 4 of qh.
HEARTH_HD inline void dequantChunk(const quant::BlockTQ1_0& b, int c, float* y) {
    const float d = quant::halfToFloat(b.d);
    for (int i = 0; i < 32; ++i) {
        const int v = 32 * c + i;
        int t;
        if (v < 160) t = tq1Digit(b.qs[v % 32], v / 32);
        else if (v < 240) t = tq1Digit(b.qs[32 + (v - 160) % 16], (v - 160) / 16);
        else t = tq1Digit(b.qh[(v - 240) % 4], (v - 240) / 4);
        y[i] = float(t - 1) * d;
    }
}

// TQ2_0 chunk c: half c / 4, bit pair c % 4 of its 32 bytes; x = (q - 1) * d.
HEARTH_HD inline void dequantChunk(const quant::BlockTQ2_0& b, int c, float* y) {
    const float d = quant::halfToFloat(b.d);
    const uint8_t* qs = b.qs + 32 * (c / 4);
    const int shift = 2 * (c % 4);
    for (int m = 0; m < 32; ++m) y[m] = float(((qs[m] >> shift) & 3) - 1) * d;
}

} // namespace hearth::cuda::math
