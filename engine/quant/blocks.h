// Quantized block layouts (byte-compatible with GGUF/ggml) and per-block dequantization as inline
// host/device functions: the CPU reference, the tests and the CUDA kernels share this exact math.
#pragma once

#include "quant/half.h"

#include <cstdint>

namespace hearth::quant {

inline constexpr int kQK = 32;   // elements per legacy block
inline constexpr int kQKK = 256; // elements per K-quant super-block

struct BlockQ4_0 { uint16_t d; uint8_t qs[kQK / 2]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[kQK / 2]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[kQK]; };
struct BlockQ8_1 { uint16_t d, s; int8_t qs[kQK]; };
struct BlockQ2_K { uint8_t scales[kQKK / 16]; uint8_t qs[kQKK / 4]; uint16_t d, dmin; };
struct BlockQ3_K { uint8_t hmask[kQKK / 8]; uint8_t qs[kQKK / 4]; uint8_t scales[12]; uint16_t d; };
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[kQKK / 2]; };
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[kQKK / 8]; uint8_t qs[kQKK / 2]; };
struct BlockQ6_K { uint8_t ql[kQKK / 2]; uint8_t qh[kQKK / 4]; int8_t scales[kQKK / 16]; uint16_t d; };
struct BlockQ8_K { float d; int8_t qs[kQKK]; int16_t bsums[kQKK / 16]; };
struct BlockIQ4_NL { uint16_t d; uint8_t qs[kQK / 2]; };
struct BlockIQ4_XS { uint16_t d, scalesH; uint8_t scalesL[kQKK / 64]; uint8_t qs[kQKK / 2]; };
struct BlockMXFP4 { uint8_t e; uint8_t qs[kQK / 2]; };

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136 && sizeof(BlockMXFP4) == 17);

// Q4_0: byte j holds element j (low nibble) and element j+16 (high nibble); x = d * (q - 8).
HEARTH_HD inline void dequantBlock(const BlockQ4_0& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * float((b.qs[j] & 0x0f) - 8);
        y[j + kQK / 2] = d * float((b.qs[j] >> 4) - 8);
    }
}

// Q4_1: x = d * q + m.
HEARTH_HD inline void dequantBlock(const BlockQ4_1& b, float* y) {
    const float d = halfToFloat(b.d), m = halfToFloat(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * float(b.qs[j] & 0x0f) + m;
        y[j + kQK / 2] = d * float(b.qs[j] >> 4) + m;
    }
}

// The 32 fifth bits of a Q5 block: bit j of qh (little-endian u32) belongs to element j.
HEARTH_HD inline uint32_t loadQh(const uint8_t* qh) {
    return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

// Q5_0: 5-bit q = nibble | fifth bit << 4; x = d * (q - 16).
HEARTH_HD inline void dequantBlock(const BlockQ5_0& b, float* y) {
    const float d = halfToFloat(b.d);
    const uint32_t qh = loadQh(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (b.qs[j] & 0x0f) | int((qh >> j) & 1u) << 4;
        const int hi = (b.qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4;
        y[j] = d * float(lo - 16);
        y[j + kQK / 2] = d * float(hi - 16);
    }
}

// Q5_1: x = d * q + m.
HEARTH_HD inline void dequantBlock(const BlockQ5_1& b, float* y) {
    const float d = halfToFloat(b.d), m = halfToFloat(b.m);
    const uint32_t qh = loadQh(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (b.qs[j] & 0x0f) | int((qh >> j) & 1u) << 4;
        const int hi = (b.qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4;
        y[j] = d * float(lo) + m;
        y[j + kQK / 2] = d * float(hi) + m;
    }
}

HEARTH_HD inline void dequantBlock(const BlockQ8_0& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int j = 0; j < kQK; ++j) y[j] = d * float(b.qs[j]);
}

HEARTH_HD inline void dequantBlock(const BlockQ8_1& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int j = 0; j < kQK; ++j) y[j] = d * float(b.qs[j]);
}

// Q2_K: 16 sub-blocks of 16 with a 4-bit scale (low nibble) and 4-bit min (high nibble).
// Within each 128-element half, byte l of its 32 qs bytes holds elements l, l+32, l+64, l+96 at
// bit offsets 0, 2, 4, 6. x = d * sc * q - dmin * m.
HEARTH_HD inline void dequantBlock(const BlockQ2_K& b, float* y) {
    const float d = halfToFloat(b.d), dmin = halfToFloat(b.dmin);
    for (int e = 0; e < kQKK; ++e) {
        const int half = e / 128, r = e % 128, shift = 2 * (r / 32), l = r % 32;
        const int q = (b.qs[half * 32 + l] >> shift) & 3;
        const uint8_t sc = b.scales[e / 16];
        y[e] = d * float(sc & 0x0f) * float(q) - dmin * float(sc >> 4);
    }
}

// Q3_K's 16 six-bit scales: low 4 bits in bytes 0..7 (elements j and j+8 as low/high nibbles),
// high 2 bits in bytes 8..11 (byte 8 + j%4, bit pair j/4). Stored with a +32 offset.
HEARTH_HD inline int q3kScale(const uint8_t* scales, int j) {
    const int lo = j < 8 ? (scales[j] & 0x0f) : (scales[j - 8] >> 4);
    const int hi = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | hi << 4) - 32;
}

// Q3_K: q = 2 low bits (packed as in Q2_K) + 4 unless the element's hmask bit is set;
// element e's high bit is bit e/32 of hmask[e%32]. x = d * scale * (q - 4).
HEARTH_HD inline void dequantBlock(const BlockQ3_K& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int e = 0; e < kQKK; ++e) {
        const int half = e / 128, r = e % 128, shift = 2 * (r / 32), l = r % 32;
        const int low = (b.qs[half * 32 + l] >> shift) & 3;
        const int high = (b.hmask[e % 32] >> (e / 32)) & 1;
        y[e] = d * float(q3kScale(b.scales, e / 16)) * float(low - (high ? 0 : 4));
    }
}

// Q4_K/Q5_K's 8 six-bit (scale, min) pairs packed in 12 bytes.
HEARTH_HD inline void k4ScaleMin(const uint8_t* s, int j, int& sc, int& m) {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// Q4_K: 4 chunks of 64 outputs; chunk c reads qs[32c..32c+31]: low nibbles are outputs 64c+l
// (sub-block 2c), high nibbles outputs 64c+32+l (sub-block 2c+1). x = d*sc*q - dmin*m.
HEARTH_HD inline void dequantBlock(const BlockQ4_K& b, float* y) {
    const float d = halfToFloat(b.d), dmin = halfToFloat(b.dmin);
    for (int c = 0; c < 4; ++c) {
        int sc0, m0, sc1, m1;
        k4ScaleMin(b.scales, 2 * c, sc0, m0);
        k4ScaleMin(b.scales, 2 * c + 1, sc1, m1);
        for (int l = 0; l < 32; ++l) {
            y[64 * c + l] = d * float(sc0) * float(b.qs[32 * c + l] & 0x0f) - dmin * float(m0);
            y[64 * c + 32 + l] = d * float(sc1) * float(b.qs[32 * c + l] >> 4) - dmin * float(m1);
        }
    }
}

// Q5_K: as Q4_K plus a fifth bit: bit 2c of qh[l] for output 64c+l, bit 2c+1 for 64c+32+l.
HEARTH_HD inline void dequantBlock(const BlockQ5_K& b, float* y) {
    const float d = halfToFloat(b.d), dmin = halfToFloat(b.dmin);
    for (int c = 0; c < 4; ++c) {
        int sc0, m0, sc1, m1;
        k4ScaleMin(b.scales, 2 * c, sc0, m0);
        k4ScaleMin(b.scales, 2 * c + 1, sc1, m1);
        for (int l = 0; l < 32; ++l) {
            const int q0 = (b.qs[32 * c + l] & 0x0f) | ((b.qh[l] >> (2 * c)) & 1) << 4;
            const int q1 = (b.qs[32 * c + l] >> 4) | ((b.qh[l] >> (2 * c + 1)) & 1) << 4;
            y[64 * c + l] = d * float(sc0) * float(q0) - dmin * float(m0);
            y[64 * c + 32 + l] = d * float(sc1) * float(q1) - dmin * float(m1);
        }
    }
}

// Q6_K: two halves of 128; half h uses ql[64h..], qh[32h..], scales[8h..]. For l < 32:
// out[l] = ql[l] low | qh[l] bits 0-1, out[l+32] = ql[l+32] low | bits 2-3,
// out[l+64] = ql[l] high | bits 4-5, out[l+96] = ql[l+32] high | bits 6-7; x = d*sc*(q - 32),
// with scale index (l/16) + 2k for out[l + 32k].
HEARTH_HD inline void dequantBlock(const BlockQ6_K& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t* qh = b.qh + 32 * h;
        const int8_t* sc = b.scales + 8 * h;
        float* out = y + 128 * h;
        for (int l = 0; l < 32; ++l) {
            const int s = l / 16;
            const int q0 = ((ql[l] & 0x0f) | ((qh[l] >> 0) & 3) << 4) - 32;
            const int q1 = ((ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4) - 32;
            const int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            const int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            out[l] = d * float(sc[s]) * float(q0);
            out[l + 32] = d * float(sc[s + 2]) * float(q1);
            out[l + 64] = d * float(sc[s + 4]) * float(q2);
            out[l + 96] = d * float(sc[s + 6]) * float(q3);
        }
    }
}

HEARTH_HD inline void dequantBlock(const BlockQ8_K& b, float* y) {
    for (int j = 0; j < kQKK; ++j) y[j] = b.d * float(b.qs[j]);
}

// The 16 levels a nibble of IQ4_NL or IQ4_XS stands for (non-linear, denser near zero).
HEARTH_HD constexpr int8_t iq4Level(int i) {
    constexpr int8_t levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};
    return levels[i & 15];
}

// The 16 FP4 (E2M1) values a nibble of MXFP4 stands for, doubled so that they are integers:
// bit 3 is the sign, bits 0-2 index 0, 0.5, 1, 1.5, 2, 3, 4, 6 (ggml's convention).
HEARTH_HD constexpr int8_t mxfp4Level(int i) {
    constexpr int8_t levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    return levels[i & 15];
}

// Half of the E8M0 scale 2^(e-127), i.e. 2^(e-128), undoing the doubling of mxfp4Level. The two
// smallest exponents give subnormal floats; e = 255 (NaN in the OCP spec) is read as 2^127.
HEARTH_HD inline float e8m0Half(uint8_t e) {
    return bitsFloat(e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23);
}

// IQ4_NL: as Q4_0's nibble order (byte j: element j low, element j+16 high); x = d * level(q).
HEARTH_HD inline void dequantBlock(const BlockIQ4_NL& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * float(iq4Level(b.qs[j] & 0x0f));
        y[j + kQK / 2] = d * float(iq4Level(b.qs[j] >> 4));
    }
}

// IQ4_XS's 6-bit scale of sub-block j (0..7), stored +32: low 4 bits are nibble j%2 of
// scalesL[j/2], high 2 bits are bits 2j..2j+1 of scalesH.
HEARTH_HD inline int iq4xsScale(const BlockIQ4_XS& b, int j) {
    const int lo = (b.scalesL[j / 2] >> (4 * (j % 2))) & 0x0f;
    const int hi = (b.scalesH >> (2 * j)) & 3;
    return (lo | hi << 4) - 32;
}

// IQ4_XS: 8 sub-blocks of 32, each packed like an IQ4_NL block in qs[16j..16j+15];
// x = (d * scale) * level(q).
HEARTH_HD inline void dequantBlock(const BlockIQ4_XS& b, float* y) {
    const float d = halfToFloat(b.d);
    for (int j = 0; j < kQKK / 32; ++j) {
        const float dl = d * float(iq4xsScale(b, j));
        const uint8_t* qs = b.qs + 16 * j;
        for (int l = 0; l < 16; ++l) {
            y[32 * j + l] = dl * float(iq4Level(qs[l] & 0x0f));
            y[32 * j + 16 + l] = dl * float(iq4Level(qs[l] >> 4));
        }
    }
}

// MXFP4: Q4_0's nibble order; x = level(q) * 2^(e-128).
HEARTH_HD inline void dequantBlock(const BlockMXFP4& b, float* y) {
    const float d = e8m0Half(b.e);
    for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * float(mxfp4Level(b.qs[j] & 0x0f));
        y[j + kQK / 2] = d * float(mxfp4Level(b.qs[j] >> 4));
    }
}

} // namespace hearth::quant
