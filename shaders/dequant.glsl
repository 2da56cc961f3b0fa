// Element-wise dequantization of one weight row, read from a buffer of 32-bit words byte by byte
// (no 8/16-bit storage features needed). Block layouts are those of engine/quant/blocks.h.
// The including shader declares `W_BINDING` and gets `float dq(uint rowBase, uint i)`: element i
// of the row whose first byte is at rowBase. The grid i-quants (IQ1_S/M, IQ2_XXS/XS/S, IQ3_XXS/S)
// read their grid table too, bound at the includer's `GRID_BINDING` (vk_iq_tables.h).
layout(std430, binding = W_BINDING) readonly buffer WeightWords { uint w[]; };

uint wByte(uint b) { return (w[b >> 2] >> ((b & 3u) * 8u)) & 0xffu; }
int wI8(uint b) { return int(wByte(b) << 24) >> 24; }
uint wU16(uint b) { return (w[b >> 2] >> ((b & 2u) * 8u)) & 0xffffu; } // b even
uint wU32(uint b) { return wU16(b) | (wU16(b + 2u) << 16); }          // b even
float wHalf(uint b) { return unpackHalf2x16(wU16(b)).x; }

// The N bytes at b (any alignment; N = 4 * WORDS) as little-endian words q[k] = bytes 4k..4k+3:
// WORDS + 1 word loads at most, none past the word holding the last byte. CPU implementations such
// as lavapipe turn every load whose address differs between invocations into a gather, so reading
// a chunk's bytes a word at a time rather than one by one saves most of its cost there.
#define W_BYTES_FN(NAME, WORDS)                                                                     \
    void NAME(uint b, out uint q[WORDS]) {                                                          \
        const uint i = b >> 2, sh = (b & 3u) * 8u, step = sh != 0u ? 1u : 0u;                      \
        uint cur = w[i];                                                                            \
        for (uint k = 0u; k < WORDS; ++k) {                                                         \
            const uint nxt = w[i + k + step];                                                       \
            q[k] = sh == 0u ? nxt : (cur >> sh) | ((nxt << (31u - sh)) << 1u);                     \
            cur = nxt;                                                                              \
        }                                                                                           \
    }
W_BYTES_FN(wBytes16, 4u)
W_BYTES_FN(wBytes32, 8u)
// Byte j of words q (as wBytes16/32 give them), unsigned and sign-extended.
#define Q_BYTE(q, j) (((q)[(j) >> 2] >> (8u * ((j) & 3u))) & 0xffu)
#define Q_I8(q, j) (int((q)[(j) >> 2] << (24u - 8u * ((j) & 3u))) >> 24)
// A chunk of 16 bytes of nibbles in Q4_0's order (words q as wBytes16 gives them): v[j] and
// v[j + 16] are VALUE(the low and the high nibble of byte j) times d.
#define NIBBLE_CHUNK(q, d, v, VALUE)                                                                \
    for (uint j = 0u; j < 16u; ++j) {                                                               \
        const uint byte_ = Q_BYTE(q, j);                                                            \
        v[j] = (d) * VALUE(byte_ & 0x0fu);                                                          \
        v[j + 16u] = (d) * VALUE(byte_ >> 4);                                                       \
    }

#if defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS)
// The 16 levels a nibble of IQ4_NL / IQ4_XS stands for (quant::iq4Level: -127, -104, -83, -65,
// -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113), without indexing a table per lane (a gather
// on CPU implementations such as lavapipe): the levels as int8, four to a word, the word chosen
// by two selects.
float iq4Value(uint n) {
    const uint word = (n & 8u) != 0u ? ((n & 4u) != 0u ? 0x71594535u : 0x26190d01u)
                                     : ((n & 4u) != 0u ? 0xf6eaddcfu : 0xbfad9881u);
    return float(int(word << (24u - 8u * (n & 3u))) >> 24);
}
#endif
#if defined(TYPE_MXFP4)
// The FP4 (E2M1) value of a nibble, doubled (quant::mxfp4Level: 0, 1, 2, 3, 4, 6, 8, 12, then the
// same negated; the block scale is halved), computed rather than looked up (a table indexed per
// lane costs a gather on CPU implementations such as lavapipe): magnitudes 2..7 are the floats
// 2^(m>>1) * (1 + (m&1)/2), 0 and 1 themselves; bit 3 is the sign (n = 8 gives -0.0, which equals 0.0).
float mxfp4Value(uint n) {
    const uint m = n & 7u;
    const uint bits = m < 2u ? floatBitsToUint(float(m)) : ((((m >> 1) + 127u) << 23) | ((m & 1u) << 22));
    return uintBitsToFloat(bits | ((n & 8u) << 28));
}
// 2^(e-128): half the E8M0 scale 2^(e-127) (quant::e8m0Half; e < 2 gives a subnormal float).
float e8m0Half(uint e) { return uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23)); }
#endif

#if defined(TYPE_IQ2_XXS) || defined(TYPE_IQ2_XS) || defined(TYPE_IQ2_S) || defined(TYPE_IQ3_XXS) || \
    defined(TYPE_IQ3_S) || defined(TYPE_IQ1_S) || defined(TYPE_IQ1_M)
// The type's grid (quant::grids, one byte per value: IQ2/IQ3 magnitudes, IQ1 signed -1/0/1).
layout(std430, binding = GRID_BINDING) readonly buffer GridWords { uint grid[]; };
uint gridByte(uint b) { return (grid[b >> 2] >> ((b & 3u) * 8u)) & 0xffu; }
int gridI8(uint b) { return int(gridByte(b) << 24) >> 24; }
// The eight sign bits of a 7-bit sign index: an eighth bit makes the count even
// (quant::grids::evenParitySigns).
uint paritySigns(uint s) {
    s &= 127u;
    return s | ((uint(bitCount(s)) & 1u) << 7);
}
// Grid magnitude m times dl, negated where bit j of signs is set (quant::signedGroup).
float signedValue(float dl, uint m, uint signs, uint j) {
    const float v = dl * float(m);
    return ((signs >> j) & 1u) != 0u ? -v : v;
}
#endif

#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
// The 8 six-bit (scale, min) pairs of a Q4_K/Q5_K super-block, packed in 12 bytes at s.
void k4ScaleMin(uint s, uint j, out float sc, out float m) {
    if (j < 4u) {
        sc = float(wByte(s + j) & 63u);
        m = float(wByte(s + j + 4u) & 63u);
    } else {
        sc = float((wByte(s + j + 4u) & 0x0fu) | ((wByte(s + j - 4u) >> 6) << 4));
        m = float((wByte(s + j + 4u) >> 4) | ((wByte(s + j) >> 6) << 4));
    }
}
#endif

float dq(uint rowBase, uint i) {
#if defined(TYPE_F32)
    return uintBitsToFloat(w[(rowBase >> 2) + i]);
#elif defined(TYPE_F16)
    return wHalf(rowBase + 2u * i);
#elif defined(TYPE_BF16)
    const uint b = rowBase + 2u * i;
    return uintBitsToFloat(((w[b >> 2] >> ((b & 2u) * 8u)) & 0xffffu) << 16);
#elif defined(TYPE_Q8_0)
    const uint b = rowBase + (i / 32u) * 34u;
    return wHalf(b) * float(wI8(b + 2u + i % 32u));
#elif defined(TYPE_Q8_1)
    // d at +0, s (the block's sum, unused here) at +2, qs[32] at +4.
    const uint b = rowBase + (i / 32u) * 36u;
    return wHalf(b) * float(wI8(b + 4u + i % 32u));
#elif defined(TYPE_Q8_K)
    // d (f32) at +0, qs[256] at +4, bsums[16] at +260.
    const uint b = rowBase + (i / 256u) * 292u;
    const uint d = wByte(b) | (wByte(b + 1u) << 8) | (wByte(b + 2u) << 16) | (wByte(b + 3u) << 24);
    return uintBitsToFloat(d) * float(wI8(b + 4u + i % 256u));
#elif defined(TYPE_Q4_0)
    const uint b = rowBase + (i / 32u) * 18u, j = i % 32u;
    const uint q = j < 16u ? (wByte(b + 2u + j) & 0x0fu) : (wByte(b + 2u + j - 16u) >> 4);
    return wHalf(b) * float(int(q) - 8);
#elif defined(TYPE_Q4_1)
    const uint b = rowBase + (i / 32u) * 20u, j = i % 32u;
    const uint q = j < 16u ? (wByte(b + 4u + j) & 0x0fu) : (wByte(b + 4u + j - 16u) >> 4);
    return wHalf(b) * float(q) + wHalf(b + 2u);
#elif defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
    // Element j's fifth bit is bit j of the little-endian qh word.
#if defined(TYPE_Q5_0)
    const uint b = rowBase + (i / 32u) * 22u, qh = b + 2u, qs = b + 6u;
#else
    const uint b = rowBase + (i / 32u) * 24u, qh = b + 4u, qs = b + 8u;
#endif
    const uint j = i % 32u;
    uint q = j < 16u ? (wByte(qs + j) & 0x0fu) : (wByte(qs + j - 16u) >> 4);
    q |= ((wByte(qh + j / 8u) >> (j % 8u)) & 1u) << 4;
#if defined(TYPE_Q5_0)
    return wHalf(b) * float(int(q) - 16);
#else
    return wHalf(b) * float(q) + wHalf(b + 2u);
#endif
#elif defined(TYPE_Q2_K)
    // scales[16] at +0, qs[64] at +16, d at +80, dmin at +82.
    const uint b = rowBase + (i / 256u) * 84u, e = i % 256u;
    const uint r = e % 128u, q = (wByte(b + 16u + (e / 128u) * 32u + r % 32u) >> (2u * (r / 32u))) & 3u;
    const uint sc = wByte(b + e / 16u);
    return wHalf(b + 80u) * float(sc & 0x0fu) * float(q) - wHalf(b + 82u) * float(sc >> 4);
#elif defined(TYPE_Q3_K)
    // hmask[32] at +0, qs[64] at +32, scales[12] at +96, d at +108.
    const uint b = rowBase + (i / 256u) * 110u, e = i % 256u;
    const uint r = e % 128u, low = (wByte(b + 32u + (e / 128u) * 32u + r % 32u) >> (2u * (r / 32u))) & 3u;
    const uint high = (wByte(b + e % 32u) >> (e / 32u)) & 1u;
    const uint j = e / 16u, s = b + 96u;
    const uint slo = j < 8u ? (wByte(s + j) & 0x0fu) : (wByte(s + j - 8u) >> 4);
    const uint shi = (wByte(s + 8u + j % 4u) >> (2u * (j / 4u))) & 3u;
    const int scale = int(slo | (shi << 4)) - 32;
    return wHalf(b + 108u) * float(scale) * float(int(low) - (high != 0u ? 0 : 4));
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
#if defined(TYPE_Q4_K)
    const uint b = rowBase + (i / 256u) * 144u, qs = b + 16u;
#else
    const uint b = rowBase + (i / 256u) * 176u, qh = b + 16u, qs = b + 48u;
#endif
    const uint e = i % 256u, c = e / 64u, hi = (e % 64u) / 32u, l = e % 32u;
    float sc, m;
    k4ScaleMin(b + 4u, 2u * c + hi, sc, m);
    const uint byte = wByte(qs + 32u * c + l);
    uint q = hi == 1u ? (byte >> 4) : (byte & 0x0fu);
#if defined(TYPE_Q5_K)
    q |= ((wByte(qh + l) >> (2u * c + hi)) & 1u) << 4;
#endif
    return wHalf(b) * sc * float(q) - wHalf(b + 2u) * m;
#elif defined(TYPE_Q6_K)
    // ql[128] at +0, qh[64] at +128, scales[16] (int8) at +192, d at +208.
    const uint b = rowBase + (i / 256u) * 210u;
    const uint e = i % 256u, h = e / 128u, k = (e % 128u) / 32u, l = e % 32u;
    const uint lo = wByte(b + 64u * h + l + 32u * (k & 1u));
    const uint nib = k >= 2u ? (lo >> 4) : (lo & 0x0fu);
    const uint hb = (wByte(b + 128u + 32u * h + l) >> (2u * k)) & 3u;
    const int q = int(nib | (hb << 4)) - 32;
    return wHalf(b + 208u) * float(wI8(b + 192u + 8u * h + l / 16u + 2u * k)) * float(q);
#elif defined(TYPE_IQ4_NL)
    // d at +0, qs[16] at +2 in Q4_0's nibble order.
    const uint b = rowBase + (i / 32u) * 18u, j = i % 32u;
    const uint q = j < 16u ? (wByte(b + 2u + j) & 0x0fu) : (wByte(b + 2u + j - 16u) >> 4);
    return wHalf(b) * iq4Value(q);
#elif defined(TYPE_IQ4_XS)
    // d at +0, scales_h (u16) at +2, scales_l[4] at +4, qs[128] at +8: 8 sub-blocks of 32, each
    // packed like an IQ4_NL block, with a 6-bit scale stored + 32.
    const uint b = rowBase + (i / 256u) * 136u, e = i % 256u, s = e / 32u, j = e % 32u;
    const uint lo = (wByte(b + 4u + s / 2u) >> (4u * (s % 2u))) & 0x0fu;
    const uint hi = ((wByte(b + 2u + s / 4u) >> (2u * (s % 4u))) & 3u);
    const uint qs = b + 8u + 16u * s;
    const uint q = j < 16u ? (wByte(qs + j) & 0x0fu) : (wByte(qs + j - 16u) >> 4);
    return wHalf(b) * float(int(lo | (hi << 4)) - 32) * iq4Value(q);
#elif defined(TYPE_MXFP4)
    // e at +0, qs[16] at +1 in Q4_0's nibble order.
    const uint b = rowBase + (i / 32u) * 17u, j = i % 32u;
    const uint q = j < 16u ? (wByte(b + 1u + j) & 0x0fu) : (wByte(b + 1u + j - 16u) >> 4);
    return e8m0Half(wByte(b)) * mxfp4Value(q);
#elif defined(TYPE_TQ1_0)
    // qs[48] at +0, qh[4] at +48, d at +52: ternary digits of base-3 bytes (quant::tq1Trit: digit n
    // of byte q is the top trit of (q · 3^n mod 256), (q' · 3) >> 8). Values 0..159: digit e / 32 of
    // qs[e % 32]; 160..239: digit (e - 160) / 16 of qs[32 + e % 16]; 240..255: digit (e - 240) / 4
    // of qh[e % 4].
    const uint b = rowBase + (i / 256u) * 54u, e = i % 256u;
    uint byte, n;
    if (e < 160u) {
        byte = wByte(b + e % 32u);
        n = e / 32u;
    } else if (e < 240u) {
        byte = wByte(b + 32u + (e - 160u) % 16u);
        n = (e - 160u) / 16u;
    } else {
        byte = wByte(b + 48u + (e - 240u) % 4u);
        n = (e - 240u) / 4u;
    }
    const uint pow3 = n == 0u ? 1u : n == 1u ? 3u : n == 2u ? 9u : n == 3u ? 27u : 81u;
    const uint trit = (((byte * pow3) & 0xffu) * 3u) >> 8;
    return wHalf(b + 52u) * float(int(trit) - 1);
#elif defined(TYPE_TQ2_0)
    // qs[64] at +0, d at +64: value 128h + 32l + m is bits 2l..2l+1 of qs[32h + m], minus 1.
    const uint b = rowBase + (i / 256u) * 66u, e = i % 256u;
    const uint h = e / 128u, l = (e % 128u) / 32u, m = e % 32u;
    const uint q = (wByte(b + 32u * h + m) >> (2u * l)) & 3u;
    return wHalf(b + 64u) * float(int(q) - 1);
#elif defined(TYPE_IQ2_XXS) || defined(TYPE_IQ2_XS) || defined(TYPE_IQ2_S) || defined(TYPE_IQ3_XXS) || \
    defined(TYPE_IQ3_S) || defined(TYPE_IQ1_S) || defined(TYPE_IQ1_M)
    // Super-blocks of 256 values (quant/blocks_iq.h): group l (8 values) of sub-block ib (32).
    const uint e = i % 256u, ib = e / 32u, l = (e % 32u) / 8u, j = e % 8u;
#if defined(TYPE_IQ2_XXS)
    // d at +0; per sub-block two u32 at +2 + 8ib: four 8-bit grid indices; four 7-bit sign
    // indices (bits 7l..7l+6) and a 4-bit scale s (bits 28-31). x = d(0.5 + s)/4 · grid.
    const uint b = rowBase + (i / 256u) * 66u, q = b + 2u + 8u * ib, aux = wU32(q + 4u);
    const float db = wHalf(b) * (0.5 + float(aux >> 28)) * 0.25;
    return signedValue(db, gridByte(8u * wByte(q + l) + j), paritySigns(aux >> (7u * l)), j);
#elif defined(TYPE_IQ2_XS)
    // d at +0, qs[32] (u16: 9-bit grid index, 7-bit sign index) at +2, scales[8] at +66 (two
    // 4-bit s per sub-block, one per 16 values).
    const uint b = rowBase + (i / 256u) * 74u, q = wU16(b + 2u + 8u * ib + 2u * l);
    const float db = wHalf(b) * (0.5 + float((wByte(b + 66u + ib) >> (4u * (l / 2u))) & 15u)) * 0.25;
    return signedValue(db, gridByte(8u * (q & 511u) + j), paritySigns(q >> 9), j);
#elif defined(TYPE_IQ2_S)
    // d at +0, qs[32] (index bits 0-7) at +2, sign bytes[32] at +34, qh[8] at +66 (bits 2l..2l+1:
    // index bits 8-9 of group l), scales[8] at +74 as IQ2_XS's.
    const uint b = rowBase + (i / 256u) * 82u;
    const uint index = wByte(b + 2u + 4u * ib + l) | (((wByte(b + 66u + ib) >> (2u * l)) & 3u) << 8);
    const float db = wHalf(b) * (0.5 + float((wByte(b + 74u + ib) >> (4u * (l / 2u))) & 15u)) * 0.25;
    return signedValue(db, gridByte(8u * index + j), wByte(b + 34u + 4u * ib + l), j);
#elif defined(TYPE_IQ3_XXS)
    // d at +0, qs[64] (8-bit indices of 4-value grid rows, two per group) at +2, per sub-block a
    // u32 at +66 + 4ib: four 7-bit sign indices and a 4-bit scale s. x = d(0.5 + s)/2 · grid.
    const uint b = rowBase + (i / 256u) * 98u, aux = wU32(b + 66u + 4u * ib);
    const float db = wHalf(b) * (0.5 + float(aux >> 28)) * 0.5;
    const uint index = wByte(b + 2u + 8u * ib + 2u * l + j / 4u);
    return signedValue(db, gridByte(4u * index + j % 4u), paritySigns(aux >> (7u * l)), j);
#elif defined(TYPE_IQ3_S)
    // d at +0, qs[64] (index bits 0-7) at +2, qh[8] at +66 (bit k: index bit 8 of row k of the
    // sub-block), sign bytes[32] at +74, scales[4] at +106 (4-bit s per sub-block). x = d(1 + 2s) · grid.
    const uint b = rowBase + (i / 256u) * 110u, k = 2u * l + j / 4u;
    const float db = wHalf(b) * float(1u + 2u * ((wByte(b + 106u + ib / 2u) >> (4u * (ib % 2u))) & 15u));
    const uint index = wByte(b + 2u + 8u * ib + k) | (((wByte(b + 66u + ib) >> k) & 1u) << 8);
    return signedValue(db, gridByte(4u * index + j % 4u), wByte(b + 74u + 4u * ib + l), j);
#elif defined(TYPE_IQ1_S)
    // d at +0, qs[32] (index bits 0-7) at +2, per sub-block a u16 qh at +34 + 2ib: bits 3l..3l+2
    // index bits 8-10, bits 12-14 a scale s, bit 15 the delta's sign. x = d(2s + 1) · (grid ± 1/8).
    const uint b = rowBase + (i / 256u) * 50u, qh = wU16(b + 34u + 2u * ib);
    const float dl = wHalf(b) * float(2u * ((qh >> 12) & 7u) + 1u);
    const float delta = (qh & 0x8000u) != 0u ? -0.125 : 0.125;
    const uint index = wByte(b + 2u + 4u * ib + l) | (((qh >> (3u * l)) & 7u) << 8);
    return dl * (float(gridI8(8u * index + j)) + delta);
#else // TYPE_IQ1_M
    // qs[32] (index bits 0-7) at +0, qh[16] at +32 (a nibble per group: index bits 8-10, bit 3 the
    // delta's sign), four u16 scale words at +48: 3-bit s at bits 6(ib % 2) + 3(l / 2), the fp16 d
    // in their top nibbles (quant::iq1mScaleBits). x = d(2s + 1) · (grid ± 1/8).
    const uint b = rowBase + (i / 256u) * 56u;
    const uint dBits = (wU16(b + 48u) >> 12) | ((wU16(b + 50u) >> 8) & 0xf0u) | ((wU16(b + 52u) >> 4) & 0xf00u) |
                       (wU16(b + 54u) & 0xf000u);
    const uint sc = wU16(b + 48u + 2u * (ib / 2u));
    const float dl = unpackHalf2x16(dBits).x * float(2u * ((sc >> (6u * (ib % 2u) + 3u * (l / 2u))) & 7u) + 1u);
    const uint nib = (wByte(b + 32u + 2u * ib + l / 2u) >> (4u * (l % 2u))) & 15u;
    const float delta = (nib & 8u) != 0u ? -0.125 : 0.125;
    const uint index = wByte(b + 4u * ib + l) | ((nib & 7u) << 8);
    return dl * (float(gridI8(8u * index + j)) + delta);
#endif
#else
#error "define one TYPE_*"
#endif
}

// Values [32c, 32c + 32) of the row at rowBase into v: what the kernels that walk a row in chunks
// of 32 read (quantized rows are whole blocks of 32 or 256 values). The common types read their
// block's scales once per chunk, with the float operations of dq() in its order; the others call
// dq() per value. F32/F16/BF16 rows (any length) have no chunk reader: DQ_CHUNK stays undefined.
#if defined(TYPE_Q8_0)
#define DQ_CHUNK
void dqChunk(uint rowBase, uint c, out float v[32]) {
    const uint b = rowBase + c * 34u;
    const float d = wHalf(b);
    uint q[8];
    wBytes32(b + 2u, q);
    for (uint j = 0u; j < 32u; ++j) v[j] = d * float(Q_I8(q, j));
}
#elif defined(TYPE_Q4_0)
#define DQ_CHUNK
#define Q4_0_VALUE(n) float(int(n) - 8)
void dqChunk(uint rowBase, uint c, out float v[32]) {
    const uint b = rowBase + c * 18u;
    const float d = wHalf(b);
    uint q[4];
    wBytes16(b + 2u, q);
    NIBBLE_CHUNK(q, d, v, Q4_0_VALUE)
}
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
#define DQ_CHUNK
void dqChunk(uint rowBase, uint c, out float v[32]) {
    const uint s = c % 8u, cc = s / 2u, hi = s % 2u;
#if defined(TYPE_Q4_K)
    const uint b = rowBase + (c / 8u) * 144u, qs = b + 16u;
#else
    const uint b = rowBase + (c / 8u) * 176u, qh = b + 16u, qs = b + 48u;
#endif
    float sc, m;
    k4ScaleMin(b + 4u, s, sc, m);
    const float dsc = wHalf(b) * sc, dm = wHalf(b + 2u) * m;
    uint ql[8];
    wBytes32(qs + 32u * cc, ql);
#if defined(TYPE_Q5_K)
    uint qhw[8];
    wBytes32(qh, qhw);
#endif
    for (uint l = 0u; l < 32u; ++l) {
        const uint byte = Q_BYTE(ql, l);
        uint q = hi == 1u ? (byte >> 4) : (byte & 0x0fu);
#if defined(TYPE_Q5_K)
        q |= ((Q_BYTE(qhw, l) >> s) & 1u) << 4;
#endif
        v[l] = dsc * float(q) - dm;
    }
}
#elif defined(TYPE_Q6_K)
#define DQ_CHUNK
void dqChunk(uint rowBase, uint c, out float v[32]) {
    const uint s = c % 8u, h = s / 4u, k = s % 4u;
    const uint b = rowBase + (c / 8u) * 210u;
    const float d = wHalf(b + 208u);
    const float dsc[2] = float[2](d * float(wI8(b + 192u + 8u * h + 2u * k)), d * float(wI8(b + 193u + 8u * h + 2u * k)));
    uint qlw[8], qhw[8];
    wBytes32(b + 64u * h + 32u * (k & 1u), qlw);
    wBytes32(b + 128u + 32u * h, qhw);
    for (uint l = 0u; l < 32u; ++l) {
        const uint lo = Q_BYTE(qlw, l);
        const uint nib = k >= 2u ? (lo >> 4) : (lo & 0x0fu);
        const uint hb = (Q_BYTE(qhw, l) >> (2u * k)) & 3u;
        v[l] = dsc[l / 16u] * float(int(nib | (hb << 4)) - 32);
    }
}
#elif defined(TYPE_IQ4_XS)
#define DQ_CHUNK
void dqChunk(uint rowBase, uint c, out float v[32]) {
    const uint s = c % 8u, b = rowBase + (c / 8u) * 136u;
    const uint lo = (wByte(b + 4u + s / 2u) >> (4u * (s % 2u))) & 0x0fu;
    const uint hi = (wByte(b + 2u + s / 4u) >> (2u * (s % 4u))) & 3u;
    const float dl = wHalf(b) * float(int(lo | (hi << 4)) - 32);
    uint q[4];
    wBytes16(b + 8u + 16u * s, q);
    NIBBLE_CHUNK(q, dl, v, iq4Value)
}
#elif defined(TYPE_IQ4_NL)
#define DQ_CHUNK
void dqChunk(uint rowBase, uint c, out float v[32]) {
    const uint b = rowBase + c * 18u;
    const float d = wHalf(b);
    uint q[4];
    wBytes16(b + 2u, q);
    NIBBLE_CHUNK(q, d, v, iq4Value)
}
#elif defined(TYPE_MXFP4)
#define DQ_CHUNK
void dqChunk(uint rowBase, uint c, out float v[32]) {
    const uint b = rowBase + c * 17u;
    const float d = e8m0Half(wByte(b));
    uint q[4];
    wBytes16(b + 1u, q);
    NIBBLE_CHUNK(q, d, v, mxfp4Value)
}
#elif !defined(TYPE_F32) && !defined(TYPE_F16) && !defined(TYPE_BF16)
#define DQ_CHUNK
void dqChunk(uint rowBase, uint c, out float v[32]) {
    for (uint j = 0u; j < 32u; ++j) v[j] = dq(rowBase, 32u * c + j);
}
#endif
