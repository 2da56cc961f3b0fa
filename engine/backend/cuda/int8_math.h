// The int8 side of the CUDA prefill: weight chunks as 32 small integers with per-half scale and
// offset, activations quantized to int8 per 32 values, and their dot product through dp4a (four
// int8 products summed into an int32). Inline __host__ __device__ so the host tests run the code
// the kernels run; on the host dp4a is emulated byte by byte.
#pragma once

#include "backend/cuda/cuda_math.h"

#include <math.h>
#include <cstdint>

namespace hearth::cuda::math {

// a·b over the four signed bytes of each word, plus c.
HEARTH_HD inline int32_t dp4a(int32_t a, int32_t b, int32_t c) {
#if defined(__CUDA_ARCH__)
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; ++i)
        c += int32_t(int8_t(uint8_t(uint32_t(a) >> (8 * i)))) * int32_t(int8_t(uint8_t(uint32_t(b) >> (8 * i))));
    return c;
#endif
}

// Element j of 32 int8 values packed four to a word (byte j % 4 of word j / 4).
HEARTH_HD inline int packedByte(const int32_t* q, int j) {
    return int(int8_t(uint8_t(uint32_t(q[j / 4]) >> (8 * (j % 4)))));
}

// Sets byte j of words that start zeroed (clearWords) to v (-128 <= v <= 127).
HEARTH_HD inline void packByte(int32_t* q, int j, int v) {
    q[j / 4] = int32_t(uint32_t(q[j / 4]) | (uint32_t(uint8_t(int8_t(v))) << (8 * (j % 4))));
}

HEARTH_HD inline void clearWords(int32_t* q) {
    for (int k = 0; k < 8; ++k) q[k] = 0;
}

// One weight chunk of 32 values: w[j] = d[j / 16] * q[j] + m[j / 16]. Every quantized type fits:
// legacy blocks have one scale (d[0] == d[1]) and Q4_1/Q5_1 an offset; K-quants carry their
// sub-block scale (Q2_K, Q3_K, Q6_K scale each 16 values) and minimum folded into d and m.
struct IntChunk {
    int32_t q[kChunk / 4];
    float d[2];
    float m[2];
};

// 32 activations quantized symmetrically: x[j] ≈ d * q[j], |q| <= 127; sum[h] = d * Σ q over
// half h (what a weight offset multiplies).
struct ActChunk {
    int32_t q[kChunk / 4];
    float d;
    float sum[2];
};

HEARTH_HD inline void quantizeActChunk(const float* x, ActChunk& a) {
    float amax = 0.0f;
    for (int j = 0; j < kChunk; ++j) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
    int sum[2] = {0, 0};
    clearWords(a.q);
    for (int j = 0; j < kChunk; ++j) {
        const int q = int(rintf(x[j] * id)); // nearest, ties to even, on both sides
        packByte(a.q, j, q);
        sum[j / 16] += q;
    }
    a.d = d;
    a.sum[0] = d * float(sum[0]);
    a.sum[1] = d * float(sum[1]);
}

// The dot of a weight chunk and an activation chunk from the integer sums of each half
// (s_h = Σ_{j in half h} w.q[j] * a.q[j]): Σ_h a.d * d_h * s_h + m_h * a.sum_h.
HEARTH_HD inline float intDotFinish(float wd0, float wd1, float wm0, float wm1, int32_t s0, int32_t s1, float ad,
                                    float asum0, float asum1) {
    return ad * (wd0 * float(s0) + wd1 * float(s1)) + (wm0 * asum0 + wm1 * asum1);
}

HEARTH_HD inline float dotIntChunk(const IntChunk& w, const ActChunk& a) {
    int32_t s0 = 0, s1 = 0;
    for (int k = 0; k < kChunk / 8; ++k) s0 = dp4a(w.q[k], a.q[k], s0);
    for (int k = kChunk / 8; k < kChunk / 4; ++k) s1 = dp4a(w.q[k], a.q[k], s1);
    return intDotFinish(w.d[0], w.d[1], w.m[0], w.m[1], s0, s1, a.d, a.sum[0], a.sum[1]);
}

// ---- weight blocks as IntChunk (the same values as dequantChunk, c as there) ------------------

HEARTH_HD inline void setScales(IntChunk& w, float d0, float d1, float m0, float m1) {
    w.d[0] = d0;
    w.d[1] = d1;
    w.m[0] = m0;
    w.m[1] = m1;
}

HEARTH_HD inline void intChunk(const quant::BlockQ4_0& b, int, IntChunk& w) {
    clearWords(w.q);
    for (int j = 0; j < kChunk / 2; ++j) {
        packByte(w.q, j, (b.qs[j] & 0x0f) - 8);
        packByte(w.q, j + kChunk / 2, (b.qs[j] >> 4) - 8);
    }
    const float d = fp16ToFloat(b.d);
    setScales(w, d, d, 0.0f, 0.0f);
}

HEARTH_HD inline void intChunk(const quant::BlockQ4_1& b, int, IntChunk& w) {
    clearWords(w.q);
    for (int j = 0; j < kChunk / 2; ++j) {
        packByte(w.q, j, b.qs[j] & 0x0f);
        packByte(w.q, j + kChunk / 2, b.qs[j] >> 4);
    }
    const float d = fp16ToFloat(b.d), m = fp16ToFloat(b.m);
    setScales(w, d, d, m, m);
}

HEARTH_HD inline void intChunk(const quant::BlockQ5_0& b, int, IntChunk& w) {
    clearWords(w.q);
    const uint32_t qh = quant::loadQh(b.qh);
    for (int j = 0; j < kChunk / 2; ++j) {
        packByte(w.q, j, ((b.qs[j] & 0x0f) | q5HighBit(qh, j)) - 16);
        packByte(w.q, j + kChunk / 2, ((b.qs[j] >> 4) | q5HighBit(qh, j + 16)) - 16);
    }
    const float d = fp16ToFloat(b.d);
    setScales(w, d, d, 0.0f, 0.0f);
}

HEARTH_HD inline void intChunk(const quant::BlockQ5_1& b, int, IntChunk& w) {
    clearWords(w.q);
    const uint32_t qh = quant::loadQh(b.qh);
    for (int j = 0; j < kChunk / 2; ++j) {
        packByte(w.q, j, (b.qs[j] & 0x0f) | q5HighBit(qh, j));
        packByte(w.q, j + kChunk / 2, (b.qs[j] >> 4) | q5HighBit(qh, j + 16));
    }
    const float d = fp16ToFloat(b.d), m = fp16ToFloat(b.m);
    setScales(w, d, d, m, m);
}

HEARTH_HD inline void intChunk(const quant::BlockQ8_0& b, int, IntChunk& w) {
    clearWords(w.q);
    for (int j = 0; j < kChunk; ++j) packByte(w.q, j, b.qs[j]);
    const float d = fp16ToFloat(b.d);
    setScales(w, d, d, 0.0f, 0.0f);
}

HEARTH_HD inline void intChunk(const quant::BlockQ2_K& b, int c, IntChunk& w) {
    clearWords(w.q);
    const uint8_t* qs = b.qs + 32 * (c / 4);
    const int shift = 2 * (c % 4);
    for (int l = 0; l < kChunk; ++l) packByte(w.q, l, (qs[l] >> shift) & 3);
    const float d = fp16ToFloat(b.d), dmin = fp16ToFloat(b.dmin);
    const uint8_t s0 = b.scales[2 * c], s1 = b.scales[2 * c + 1];
    setScales(w, d * float(s0 & 0x0f), d * float(s1 & 0x0f), -(dmin * float(s0 >> 4)), -(dmin * float(s1 >> 4)));
}

HEARTH_HD inline void intChunk(const quant::BlockQ3_K& b, int c, IntChunk& w) {
    clearWords(w.q);
    const uint8_t* qs = b.qs + 32 * (c / 4);
    const int shift = 2 * (c % 4);
    for (int l = 0; l < kChunk; ++l) {
        const int low = (qs[l] >> shift) & 3;
        const int high = (b.hmask[l] >> c) & 1;
        packByte(w.q, l, low - (high ? 0 : 4));
    }
    const float d = fp16ToFloat(b.d);
    setScales(w, d * float(quant::q3kScale(b.scales, 2 * c)), d * float(quant::q3kScale(b.scales, 2 * c + 1)),
              0.0f, 0.0f);
}

// Q4_K / Q5_K chunk c: nibble (c & 1) of qs[32 * (c / 2) + l], with (Q5_K, qh not null) bit c of
// qh[l] as the fifth; one scale and one minimum for the whole chunk.
template <typename B> HEARTH_HD inline void k4IntChunk(const B& b, int c, const uint8_t* qh, IntChunk& w) {
    clearWords(w.q);
    int sc = 0, m = 0;
    quant::k4ScaleMin(b.scales, c, sc, m);
    const uint8_t* qs = b.qs + 32 * (c / 2);
    const int shift = 4 * (c & 1);
    for (int l = 0; l < kChunk; ++l)
        packByte(w.q, l, ((qs[l] >> shift) & 0x0f) | (qh ? ((qh[l] >> c) & 1) << 4 : 0));
    const float d = fp16ToFloat(b.d) * float(sc), dm = fp16ToFloat(b.dmin) * float(m);
    setScales(w, d, d, -dm, -dm);
}

HEARTH_HD inline void intChunk(const quant::BlockQ4_K& b, int c, IntChunk& w) { k4IntChunk(b, c, nullptr, w); }
HEARTH_HD inline void intChunk(const quant::BlockQ5_K& b, int c, IntChunk& w) { k4IntChunk(b, c, b.qh, w); }

HEARTH_HD inline void intChunk(const quant::BlockQ6_K& b, int c, IntChunk& w) {
    clearWords(w.q);
    const int h = c / 4, k = c % 4;
    const uint8_t* ql = b.ql + 64 * h + 32 * (k & 1);
    const uint8_t* qh = b.qh + 32 * h;
    const int8_t* sc = b.scales + 8 * h + 2 * k;
    const int lowShift = 4 * (k / 2), highShift = 2 * k;
    for (int l = 0; l < kChunk; ++l)
        packByte(w.q, l, (((ql[l] >> lowShift) & 0x0f) | ((qh[l] >> highShift) & 3) << 4) - 32);
    const float d = fp16ToFloat(b.d);
    setScales(w, d * float(sc[0]), d * float(sc[1]), 0.0f, 0.0f);
}

// Chunk c of a weight row stored as blocks B.
template <typename B> HEARTH_HD inline void intRowChunk(const B* row, int64_t c, IntChunk& w) {
    constexpr int per = ChunkTraits<B>::kChunks;
    intChunk(row[c / per], int(c % per), w);
}

// IQ4_NL, IQ4_XS and MXFP4: the levels are the int8 values, the chunk's scale both halves' d.
HEARTH_HD inline void intChunk(const quant::BlockIQ4_NL& b, int, IntChunk& w) {
    clearWords(w.q);
    for (int j = 0; j < kChunk / 2; ++j) {
        packByte(w.q, j, quant::iq4Level(b.qs[j] & 0x0f));
        packByte(w.q, j + kChunk / 2, quant::iq4Level(b.qs[j] >> 4));
    }
    const float d = fp16ToFloat(b.d);
    setScales(w, d, d, 0.0f, 0.0f);
}

HEARTH_HD inline void intChunk(const quant::BlockIQ4_XS& b, int c, IntChunk& w) {
    clearWords(w.q);
    const uint8_t* qs = b.qs + 16 * c;
    for (int l = 0; l < kChunk / 2; ++l) {
        packByte(w.q, l, quant::iq4Level(qs[l] & 0x0f));
        packByte(w.q, l + kChunk / 2, quant::iq4Level(qs[l] >> 4));
    }
    const float dl = fp16ToFloat(b.d) * float(quant::iq4xsScale(b, c));
    setScales(w, dl, dl, 0.0f, 0.0f);
}

HEARTH_HD inline void intChunk(const quant::BlockMXFP4& b, int, IntChunk& w) {
    clearWords(w.q);
    for (int j = 0; j < kChunk / 2; ++j) {
        packByte(w.q, j, quant::mxfp4Level(b.qs[j] & 0x0f));
        packByte(w.q, j + kChunk / 2, quant::mxfp4Level(b.qs[j] >> 4));
    }
    const float d = quant::e8m0Half(b.e);
    setScales(w, d, d, 0.0f, 0.0f);
}

// The weight value j of an IntChunk (what dequantChunk gives for the same chunk).
HEARTH_HD inline float intChunkValue(const IntChunk& w, int j) {
    return w.d[j / 16] * float(packedByte(w.q, j)) + w.m[j / 16];
}

} // namespace hearth::cuda::math
