// The per-element math of the CUDA kernels as inline __host__ __device__ functions, so the host
// tests run the exact code the kernels run: fp16 conversion, RMSNorm pieces, RoPE, SiLU/SwiGLU,
// GELU/GeGLU, soft-capping, the attention window, the online-softmax state, and 32-value chunk
// dequantization + dot for every weight type (the grid i-quants and TQ in iq_math.h).
#pragma once

#include "backend/cuda/iq_math.h"
#include "quant/blocks.h" // defines: HEARTH_HD, Block*, halfToFloat, floatToHalf, k4ScaleMin

#include <math.h>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace hearth::cuda::math {

// ---- fp16 --------------------------------------------------------------------------------------

// binary16 bits -> float; the hardware conversion on the device, the exact bit version on the host.
HEARTH_HD inline float fp16ToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    return quant::halfToFloat(h);
#endif
}

// float -> binary16 bits, round to nearest even on both sides.
HEARTH_HD inline uint16_t floatToFp16(float f) {
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f));
#else
    return quant::floatToHalf(f);
#endif
}

// ---- Q8_0 K/V rows ------------------------------------------------------------------------------

// One block of 32 values as the reference quantizer writes it (quant::quantizeRow, the CPU's K/V
// store): d = amax / 127 kept as fp16, each value x / d rounded half away from zero into ±127.
HEARTH_HD inline void quantizeQ8Block(const float* x, quant::BlockQ8_0& b) {
    float amax = 0.0f;
    for (int j = 0; j < quant::kQK; ++j) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    b.d = floatToFp16(d);
    for (int j = 0; j < quant::kQK; ++j) {
        const float v = x[j] * id;
        int q = v == v && v < 2.0e9f && v > -2.0e9f ? int(v >= 0.0f ? v + 0.5f : v - 0.5f) : 0;
        q = q < -127 ? -127 : q > 127 ? 127 : q;
        b.qs[j] = int8_t(q);
    }
}

// ---- RMSNorm -----------------------------------------------------------------------------------

// 1 / sqrt(mean(x²) + eps) from the row's sum of squares over n values.
HEARTH_HD inline float rmsScale(float sumSquares, int64_t n, float eps) {
    return 1.0f / sqrtf(sumSquares / float(n) + eps);
}

// out[n] = x[n] * scale * weight[n] for one row, sequentially (the kernel splits the loops).
HEARTH_HD inline void rmsNormRow(const float* x, const float* weight, float* out, int64_t n, float eps) {
    float ss = 0.0f;
    for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
    const float scale = rmsScale(ss, n, eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

// ---- RoPE --------------------------------------------------------------------------------------

// Angle of rotation pair i (0 <= i < nRot/2) at `pos`: pos * base^(-2i/nRot) / freqFactor.
HEARTH_HD inline float ropeTheta(int64_t pos, int i, int nRot, float freqBase, float freqFactor) {
    return float(pos) * powf(freqBase, -2.0f * float(i) / float(nRot)) / freqFactor;
}

// The angle with linear position scaling (RopeParams::freqScale, no YaRN): freqScale * ropeTheta.
HEARTH_HD inline float ropeThetaScaled(int64_t pos, int i, int nRot, float freqBase, float freqFactor,
                                       float freqScale) {
    const float theta = ropeTheta(pos, i, nRot, freqBase, freqFactor);
    return freqScale == 1.0f ? theta : freqScale * theta;
}

// The angle with YaRN (extFactor != 0): the linearly scaled angle blended with the unscaled one
// by the ramp over pairs [low, high] (cpu::ropeYarnRange, computed once per node on the host);
// extFactor 0 gives ropeThetaScaled.
HEARTH_HD inline float ropeThetaYarn(int64_t pos, int i, int nRot, float freqBase, float freqFactor, float freqScale,
                                     float extFactor, float low, float high) {
    if (extFactor == 0.0f) return ropeThetaScaled(pos, i, nRot, freqBase, freqFactor, freqScale);
    const float theta = ropeTheta(pos, i, nRot, freqBase, freqFactor);
    const float ramp = (float(i) - low) / fmaxf(0.001f, high - low);
    const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, ramp))) * extFactor;
    return freqScale * theta * (1.0f - mix) + theta * mix;
}

// The attention temperature's factor at pos: 1 + tempScale · ln(1 + floor(pos / tempLength)), or 1
// when off (tempScale 0).
HEARTH_HD inline float ropeTemperature(int64_t pos, float tempScale, int tempLength) {
    if (tempScale == 0.0f || tempLength <= 0) return 1.0f;
    return 1.0f + tempScale * logf(floorf(float(pos) / float(tempLength)) + 1.0f);
}

// The two dims pair i rotates: normal (2i, 2i+1), NeoX (i, i + nRot/2).
HEARTH_HD inline void ropePair(int i, int nRot, bool neox, int& a, int& b) {
    a = neox ? i : 2 * i;
    b = neox ? i + nRot / 2 : 2 * i + 1;
}

HEARTH_HD inline void ropeRotate(float& x0, float& x1, float theta, float magnitude = 1.0f) {
    const float c = cosf(theta) * magnitude, s = sinf(theta) * magnitude;
    const float a = x0, b = x1;
    x0 = a * c - b * s;
    x1 = a * s + b * c;
}

// Rotates one head x[headDim] in place; dims >= nRot stay. freqFactors: nRot/2 values or null.
HEARTH_HD inline void ropeHead(float* x, int headDim, int nRot, int64_t pos, float freqBase, bool neox,
                               const float* freqFactors) {
    if (nRot > headDim) nRot = headDim;
    for (int i = 0; i < nRot / 2; ++i) {
        int a = 0, b = 0;
        ropePair(i, nRot, neox, a, b);
        ropeRotate(x[a], x[b], ropeTheta(pos, i, nRot, freqBase, freqFactors ? freqFactors[i] : 1.0f));
    }
}

// ---- SiLU / SwiGLU -----------------------------------------------------------------------------

HEARTH_HD inline float silu(float v) { return v / (1.0f + expf(-v)); }
HEARTH_HD inline float swiglu(float gate, float up) { return silu(gate) * up; }

// gpt-oss's gated unit: g = min(gate, limit), u = clamp(up, ±limit); g · σ(alpha · g) · (u + 1).
HEARTH_HD inline float swigluOai(float gate, float up, float alpha, float limit) {
    const float g = fminf(gate, limit), u = fminf(fmaxf(up, -limit), limit);
    return g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
}

// ---- sigmoid, softplus -------------------------------------------------------------------------

HEARTH_HD inline float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
// ln(1 + e^v), v itself past 20 (where the two agree in float).
HEARTH_HD inline float softplus(float v) { return v > 20.0f ? v : log1pf(expf(v)); }

// ---- GELU / GeGLU, soft-capping, the attention window ---------------------------------------

// gelu(v) = 0.5 v (1 + tanh(√(2/π) (v + 0.044715 v³))), the tanh form ggml and Gemma use.
HEARTH_HD inline float gelu(float v) {
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
}
HEARTH_HD inline float geglu(float gate, float up) { return gelu(gate) * up; }

// cap · tanh(v / cap) for cap > 0 (Gemma's logit soft-capping); v unchanged for cap <= 0.
HEARTH_HD inline float softcap(float v, float cap) { return cap > 0.0f ? cap * tanhf(v / cap) : v; }

// The first position a query at `pos` attends to: pos - window + 1 with a sliding window
// (window > 0), else 0.
HEARTH_HD inline int64_t attentionFirst(int64_t pos, int window) {
    if (window <= 0) return 0;
    const int64_t first = pos - int64_t(window) + 1;
    return first > 0 ? first : 0;
}

// ---- online softmax ----------------------------------------------------------------------------

// Running state of softmax over a stream of scores: the largest score so far and the sum of
// exp(score - max). Weighted sums kept beside it are rescaled by the factors the updates return.
struct OnlineSoftmax {
    float max = -INFINITY;
    float sum = 0.0f;
};

// Adds score s: the running weighted sum must become acc * scaleOld + weight * value.
HEARTH_HD inline void softmaxAdd(OnlineSoftmax& st, float s, float& scaleOld, float& weight) {
    const float m = fmaxf(st.max, s);
    scaleOld = st.max == -INFINITY ? 0.0f : expf(st.max - m);
    weight = expf(s - m);
    st.sum = st.sum * scaleOld + weight;
    st.max = m;
}

// Merges b into a: the combined weighted sum is accA * scaleA + accB * scaleB. Empty states work.
HEARTH_HD inline void softmaxMerge(OnlineSoftmax& a, const OnlineSoftmax& b, float& scaleA, float& scaleB) {
    const float m = fmaxf(a.max, b.max);
    scaleA = a.max == -INFINITY ? 0.0f : expf(a.max - m);
    scaleB = b.max == -INFINITY ? 0.0f : expf(b.max - m);
    a.sum = a.sum * scaleA + b.sum * scaleB;
    a.max = m;
}

// ---- weight chunks -----------------------------------------------------------------------------
// Kernels walk a weight row in chunks of 32 consecutive values: a legacy block is one chunk, a
// K-quant super-block eight. dequantChunk(block, c, y) writes values [32c, 32c + 32) of the block.

inline constexpr int kChunk = 32;

struct F16Chunk { uint16_t v[kChunk]; };  // plain F16 row data viewed in chunks
struct BF16Chunk { uint16_t v[kChunk]; }; // plain BF16 row data viewed in chunks
struct F32Chunk { float v[kChunk]; };     // plain F32 row data viewed in chunks

// Plain rows (F32, F16, BF16) may have any length; quantized rows are whole blocks.
template <typename B>
inline constexpr bool kPlainChunk =
    std::is_same_v<B, F32Chunk> || std::is_same_v<B, F16Chunk> || std::is_same_v<B, BF16Chunk>;

template <typename B> struct ChunkTraits;
template <> struct ChunkTraits<F32Chunk> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<F16Chunk> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<BF16Chunk> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockQ4_0> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockQ4_1> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockQ5_0> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockQ5_1> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockQ8_0> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockQ2_K> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockQ3_K> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockQ4_K> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockQ5_K> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockQ6_K> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockIQ4_NL> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockIQ4_XS> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockMXFP4> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockIQ2_XXS> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockIQ2_XS> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockIQ2_S> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockIQ3_XXS> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockIQ3_S> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockIQ1_S> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockIQ1_M> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockTQ1_0> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockTQ2_0> { static constexpr int kChunks = 8; };
template <> struct ChunkTraits<quant::BlockQ8_1> { static constexpr int kChunks = 1; };
template <> struct ChunkTraits<quant::BlockQ8_K> { static constexpr int kChunks = 8; };

// The grid, ternary and activation (Q8_1, Q8_K) types have no int8 view (IntChunk): their
// prefill takes the fp16 path.
template <typename B>
inline constexpr bool kGridChunk =
    std::is_same_v<B, quant::BlockIQ2_XXS> || std::is_same_v<B, quant::BlockIQ2_XS> ||
    std::is_same_v<B, quant::BlockIQ2_S> || std::is_same_v<B, quant::BlockIQ3_XXS> ||
    std::is_same_v<B, quant::BlockIQ3_S> || std::is_same_v<B, quant::BlockIQ1_S> ||
    std::is_same_v<B, quant::BlockIQ1_M> || std::is_same_v<B, quant::BlockTQ1_0> ||
    std::is_same_v<B, quant::BlockTQ2_0> || std::is_same_v<B, quant::BlockQ8_1> || std::is_same_v<B, quant::BlockQ8_K>;

HEARTH_HD inline void dequantChunk(const F32Chunk& b, int, float* y) {
    for (int j = 0; j < kChunk; ++j) y[j] = b.v[j];
}

HEARTH_HD inline void dequantChunk(const F16Chunk& b, int, float* y) {
    for (int j = 0; j < kChunk; ++j) y[j] = fp16ToFloat(b.v[j]);
}

// BF16 is the high half of a float's bits.
HEARTH_HD inline float bf16ToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(uint32_t(h) << 16);
#else
    return quant::bf16ToFloat(h);
#endif
}

HEARTH_HD inline void dequantChunk(const BF16Chunk& b, int, float* y) {
    for (int j = 0; j < kChunk; ++j) y[j] = bf16ToFloat(b.v[j]);
}

// Q4_0: byte j holds element j (low nibble) and j+16 (high nibble); x = d * (q - 8).
HEARTH_HD inline void dequantChunk(const quant::BlockQ4_0& b, int, float* y) {
    const float d = fp16ToFloat(b.d);
    for (int j = 0; j < kChunk / 2; ++j) {
        y[j] = d * float((b.qs[j] & 0x0f) - 8);
        y[j + kChunk / 2] = d * float((b.qs[j] >> 4) - 8);
    }
}

// Q4_1: as Q4_0 without the offset; x = d * q + m.
HEARTH_HD inline void dequantChunk(const quant::BlockQ4_1& b, int, float* y) {
    const float d = fp16ToFloat(b.d), m = fp16ToFloat(b.m);
    for (int j = 0; j < kChunk / 2; ++j) {
        y[j] = d * float(b.qs[j] & 0x0f) + m;
        y[j + kChunk / 2] = d * float(b.qs[j] >> 4) + m;
    }
}

// The fifth bit of element j of a Q5_0/Q5_1 block: bit j of qh read as a little-endian u32.
HEARTH_HD inline int q5HighBit(uint32_t qh, int j) { return int((qh >> j) & 1u) << 4; }

// Q5_0: q = nibble | fifth bit << 4; x = d * (q - 16).
HEARTH_HD inline void dequantChunk(const quant::BlockQ5_0& b, int, float* y) {
    const float d = fp16ToFloat(b.d);
    const uint32_t qh = quant::loadQh(b.qh);
    for (int j = 0; j < kChunk / 2; ++j) {
        y[j] = d * float(((b.qs[j] & 0x0f) | q5HighBit(qh, j)) - 16);
        y[j + kChunk / 2] = d * float(((b.qs[j] >> 4) | q5HighBit(qh, j + 16)) - 16);
    }
}

// Q5_1: x = d * q + m.
HEARTH_HD inline void dequantChunk(const quant::BlockQ5_1& b, int, float* y) {
    const float d = fp16ToFloat(b.d), m = fp16ToFloat(b.m);
    const uint32_t qh = quant::loadQh(b.qh);
    for (int j = 0; j < kChunk / 2; ++j) {
        y[j] = d * float((b.qs[j] & 0x0f) | q5HighBit(qh, j)) + m;
        y[j + kChunk / 2] = d * float((b.qs[j] >> 4) | q5HighBit(qh, j + 16)) + m;
    }
}

HEARTH_HD inline void dequantChunk(const quant::BlockQ8_0& b, int, float* y) {
    const float d = fp16ToFloat(b.d);
    for (int j = 0; j < kChunk; ++j) y[j] = d * float(b.qs[j]);
}

// Q8_1 (its sum s unused) and Q8_K chunk c: x = d * q.
HEARTH_HD inline void dequantChunk(const quant::BlockQ8_1& b, int, float* y) {
    const float d = fp16ToFloat(b.d);
    for (int j = 0; j < kChunk; ++j) y[j] = d * float(b.qs[j]);
}
HEARTH_HD inline void dequantChunk(const quant::BlockQ8_K& b, int c, float* y) {
    for (int j = 0; j < kChunk; ++j) y[j] = b.d * float(b.qs[kChunk * c + j]);
}

// Q2_K chunk c: half h = c / 4 of the super-block, bit pair c % 4 of qs[32h + l]; sub-block
// scale/min byte scales[2c + l / 16] (scale low nibble, min high); x = d*sc*q - dmin*m.
HEARTH_HD inline void dequantChunk(const quant::BlockQ2_K& b, int c, float* y) {
    const float d = fp16ToFloat(b.d), dmin = fp16ToFloat(b.dmin);
    const uint8_t* qs = b.qs + 32 * (c / 4);
    const int shift = 2 * (c % 4);
    for (int l = 0; l < kChunk; ++l) {
        const uint8_t sc = b.scales[2 * c + l / 16];
        const int q = (qs[l] >> shift) & 3;
        y[l] = d * float(sc & 0x0f) * float(q) - dmin * float(sc >> 4);
    }
}

// Q3_K chunk c: the low two bits as in Q2_K; element 32c + l is 4 lower unless bit c of hmask[l]
// is set; six-bit scale q3kScale(2c + l / 16); x = d * scale * (q - 4).
HEARTH_HD inline void dequantChunk(const quant::BlockQ3_K& b, int c, float* y) {
    const float d = fp16ToFloat(b.d);
    const uint8_t* qs = b.qs + 32 * (c / 4);
    const int shift = 2 * (c % 4);
    for (int l = 0; l < kChunk; ++l) {
        const int low = (qs[l] >> shift) & 3;
        const int high = (b.hmask[l] >> c) & 1;
        y[l] = d * float(quant::q3kScale(b.scales, 2 * c + l / 16)) * float(low - (high ? 0 : 4));
    }
}

// Q4_K chunk c = sub-block c: nibble (c & 1) of qs[32 * (c / 2) + l]; x = d*sc*q - dmin*m.
HEARTH_HD inline void dequantChunk(const quant::BlockQ4_K& b, int c, float* y) {
    int sc = 0, m = 0;
    quant::k4ScaleMin(b.scales, c, sc, m);
    const float d = fp16ToFloat(b.d) * float(sc), dm = fp16ToFloat(b.dmin) * float(m);
    const uint8_t* qs = b.qs + 32 * (c / 2);
    const int shift = 4 * (c & 1);
    for (int l = 0; l < kChunk; ++l) y[l] = d * float((qs[l] >> shift) & 0x0f) - dm;
}

// Q5_K chunk c: as Q4_K with the fifth bit c of qh[l].
HEARTH_HD inline void dequantChunk(const quant::BlockQ5_K& b, int c, float* y) {
    int sc = 0, m = 0;
    quant::k4ScaleMin(b.scales, c, sc, m);
    const float d = fp16ToFloat(b.d) * float(sc), dm = fp16ToFloat(b.dmin) * float(m);
    const uint8_t* qs = b.qs + 32 * (c / 2);
    const int shift = 4 * (c & 1);
    for (int l = 0; l < kChunk; ++l) {
        const int q = ((qs[l] >> shift) & 0x0f) | ((b.qh[l] >> c) & 1) << 4;
        y[l] = d * float(q) - dm;
    }
}

// Q6_K chunk c: half h = c / 4, quarter k = c % 4 of that half. Low 4 bits from
// ql[64h + 32(k & 1) + l] (nibble k / 2), high 2 bits from qh[32h + l] bits 2k; scale
// scales[8h + 2k + l / 16]; x = d * sc * (q - 32).
HEARTH_HD inline void dequantChunk(const quant::BlockQ6_K& b, int c, float* y) {
    const int h = c / 4, k = c % 4;
    const uint8_t* ql = b.ql + 64 * h + 32 * (k & 1);
    const uint8_t* qh = b.qh + 32 * h;
    const int8_t* sc = b.scales + 8 * h + 2 * k;
    const float d = fp16ToFloat(b.d);
    const int lowShift = 4 * (k / 2), highShift = 2 * k;
    for (int l = 0; l < kChunk; ++l) {
        const int q = (((ql[l] >> lowShift) & 0x0f) | ((qh[l] >> highShift) & 3) << 4) - 32;
        y[l] = d * float(sc[l / 16]) * float(q);
    }
}

// The non-linear 4-bit types: a 16-entry level per nibble (quant::iq4Level, mxfp4Level) in
// Q4_0's order (byte j: element j low, element j + 16 high), times one scale per 32 values.
HEARTH_HD inline void dequantChunk(const quant::BlockIQ4_NL& b, int, float* y) {
    const float d = fp16ToFloat(b.d);
    for (int j = 0; j < kChunk / 2; ++j) {
        y[j] = d * float(quant::iq4Level(b.qs[j] & 0x0f));
        y[j + kChunk / 2] = d * float(quant::iq4Level(b.qs[j] >> 4));
    }
}

// IQ4_XS chunk c: sub-block c of the super-block, scale d * (6-bit scale c).
HEARTH_HD inline void dequantChunk(const quant::BlockIQ4_XS& b, int c, float* y) {
    const float dl = fp16ToFloat(b.d) * float(quant::iq4xsScale(b, c));
    const uint8_t* qs = b.qs + 16 * c;
    for (int l = 0; l < kChunk / 2; ++l) {
        y[l] = dl * float(quant::iq4Level(qs[l] & 0x0f));
        y[l + kChunk / 2] = dl * float(quant::iq4Level(qs[l] >> 4));
    }
}

HEARTH_HD inline void dequantChunk(const quant::BlockMXFP4& b, int, float* y) {
    const float d = quant::e8m0Half(b.e);
    for (int j = 0; j < kChunk / 2; ++j) {
        y[j] = d * float(quant::mxfp4Level(b.qs[j] & 0x0f));
        y[j + kChunk / 2] = d * float(quant::mxfp4Level(b.qs[j] >> 4));
    }
}

// Values [32c, 32c + 32) of a weight row stored as blocks B (what each kernel thread loads).
template <typename B> HEARTH_HD inline void dequantRowChunk(const B* row, int64_t c, float* y) {
    constexpr int per = ChunkTraits<B>::kChunks;
    dequantChunk(row[c / per], int(c % per), y);
}

// The same for a row of `cols` values: F32, F16 and BF16 rows may end inside chunk c (any cols is
// allowed for them), and the values past the end read as 0. Quantized rows are whole blocks.
template <typename B>
HEARTH_HD inline void dequantRowChunkBounded(const B* row, int64_t c, int64_t cols, float* y) {
    (void)cols; // unused for quantized rows
    if constexpr (kPlainChunk<B>) {
        const int64_t base = c * kChunk;
        if (base + kChunk > cols) {
            for (int j = 0; j < kChunk; ++j) {
                const int64_t i = base + j;
                if (i >= cols) y[j] = 0.0f;
                else if constexpr (std::is_same_v<B, F32Chunk>) y[j] = reinterpret_cast<const float*>(row)[i];
                else if constexpr (std::is_same_v<B, F16Chunk>) y[j] = fp16ToFloat(reinterpret_cast<const uint16_t*>(row)[i]);
                else y[j] = bf16ToFloat(reinterpret_cast<const uint16_t*>(row)[i]);
            }
            return;
        }
    }
    dequantRowChunk(row, c, y);
}

// Σ dequant(chunk c of b)[j] * x[j] over the chunk's 32 values.
template <typename B> HEARTH_HD inline float dotChunk(const B& b, int c, const float* x) {
    float w[kChunk];
    dequantChunk(b, c, w);
    float s = 0.0f;
    for (int j = 0; j < kChunk; ++j) s += w[j] * x[j];
    return s;
}

} // namespace hearth::cuda::math
