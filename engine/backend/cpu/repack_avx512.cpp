// The AVX-512 VNNI kernels over repacked Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4/Q4_K/Q5_K/Q6_K/IQ4_XS weights (layout in repack.h): a tile
// of 16 weight rows × up to 8 tokens (Q4_K, Q5_K and IQ4_XS: 4 tokens × 16 or 32 rows), one vpdpbusd per 4-column chunk
// (unsigned weights × signed 8-bit activations, 16 rows in the 16 lanes), the weights' offset
// (Q4_K: its mins) removed with the activation sums.
// GCC 12 reports false -Wuninitialized in its AVX-512 headers (bug 105593); silenced here.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "backend/cpu/matmul_kernels.h"
#include "quant/blocks.h"

#include <cstring>
#include <immintrin.h>

namespace hearth::cpu::kernels {

namespace {

// Software prefetch of [p, p + bytes) into L1, one request per cache line. Decode streams every
// weight once per step with little arithmetic per byte; without it one core keeps too few
// cache misses in flight to approach the memory bandwidth (measured: 1-thread decode of a Q4_K_M
// model 15 -> 27 tok/s).
[[gnu::always_inline]] inline void prefetchLines(const uint8_t* p, uint64_t bytes) {
    for (uint64_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
}

// acc + vpdpbusd(w, the 4 signed bytes at p in every lane), the broadcast folded into the
// instruction's memory operand: GCC 12 issues a separate vpbroadcastd for _mm512_set1_epi32 there.
// Measured on Q6_K's wide tile (its weights used by 8 tokens): 6% faster; where one broadcast
// feeds two vpdpbusd (tileQ4KPair) the separate broadcast is faster.
inline __m512i dpbusdBroadcast(__m512i acc, __m512i w, const int8_t* p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
    return acc;
}

inline __m512i broadcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

// y[j0 + t][16g .. 16g + 15] = acc[t], leaving out the last group's padding rows.
// The activation rows of tokens j0 .. j0 + NT - 1 of a job.
template <typename Act, int NT> inline void tokenRows(const PackedJob& job, int64_t j0, const Act* (&a)[NT]) {
    for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const Act*>(job.acts + uint64_t(j0 + t) * job.actRowBytes);
}

template <int NT> inline void storeTile(const PackedJob& job, int64_t g, int64_t j0, const __m512* acc) {
    const int64_t r0 = g * 16, left = job.rows - r0;
    const __mmask16 m = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
    for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(job.y + (j0 + t) * job.rows + r0, m, acc[t]);
}

// The legacy types' repacked payloads (repack.h).
enum class Legacy { Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4 };

// The IQ4 levels + 128 (MXFP4's doubled ones + 12: a small offset cancels less precision) as
// unsigned bytes, in each 128-bit lane: vpshufb maps a nibble to its level.
constexpr int kMxfp4Offset = 12;
inline __m512i levelTable(bool mxfp4) {
    alignas(16) uint8_t t[16];
    for (int i = 0; i < 16; ++i)
        t[i] = uint8_t(mxfp4 ? quant::mxfp4Level(i) + kMxfp4Offset : quant::iq4Level(i) + 128);
    return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}
inline __m512i iq4LevelTable() { return levelTable(false); }

// The 16 rows' scales of a block: fp16, or (MXFP4) E8M0 exponents e as quant::e8m0Half's
// 2^(e - 128): the float with exponent field e - 1, or for e < 2 the subnormal 2^21 << e bits.
template <Legacy kType> inline __m512 rowScales(const uint8_t* sc) {
    if constexpr (kType == Legacy::MXFP4) {
        const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
        const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
        const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
        const __mmask16 small = _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2));
        return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, tiny));
    } else {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc)));
    }
}

// y[j0 + t][16g .. 16g + 15] for t < NT. Q8_0: payload of 8 byte chunks (q + 128); Q4_0: 4 chunks
// of nibble pairs (q + 8 in the low nibble for columns 4k.., in the high one for 16 + 4k..);
// Q5_0: those nibbles (of q + 16) with the fifth bits added from 8 byte masks.
// Blocks come in pairs: two payloads, then their two scale rows (repack.h), one stream.
template <int NT, Legacy kType> void tile(const PackedJob& job, int64_t g, int64_t j0) {
    constexpr bool kQ8 = kType == Legacy::Q8_0;
    const int64_t nb = job.cols / 32;
    const uint64_t pb = job.payloadBytes, unitBytes = 2 * pb + 64;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x32* a[NT];
    __m512 acc[NT];
    tokenRows(job, j0, a);
    for (__m512& v : acc) v = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    constexpr bool kLevels = kType == Legacy::IQ4_NL || kType == Legacy::MXFP4;
    const __m512i levels = kLevels ? levelTable(kType == Legacy::MXFP4) : _mm512_setzero_si512();
    const float offset = kType == Legacy::MXFP4 ? float(kMxfp4Offset)
                         : kQ8 || kLevels       ? 128.0f
                         : kType == Legacy::Q5_0 ? 16.0f
                                                 : 8.0f;
    auto block = [&](const uint8_t* p, const uint8_t* sc, int64_t b) {
        const __m512 ws = rowScales<kType>(sc);
        __m512i w[8]; // w[k]: columns 4k..4k+3 of the block, 16 rows × 4 unsigned bytes
        if constexpr (kQ8) {
            for (int k = 0; k < 8; ++k) w[k] = _mm512_loadu_si512(p + 64 * k);
        } else {
            for (int k = 0; k < 4; ++k) {
                const __m512i raw = _mm512_loadu_si512(p + 64 * k);
                w[k] = _mm512_and_si512(raw, low4);
                w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
            }
            if constexpr (kLevels)
                for (int v = 0; v < 8; ++v) w[v] = _mm512_shuffle_epi8(levels, w[v]);
            if constexpr (kType == Legacy::Q5_0) {
                const __m512i fifth = _mm512_set1_epi8(0x10);
                for (int v = 0; v < 8; ++v) {
                    uint64_t bits;
                    std::memcpy(&bits, p + 256 + 8 * v, 8);
                    w[v] = _mm512_mask_add_epi8(w[v], _cvtu64_mask64(bits), w[v], fifth);
                }
            }
        }
        for (int t = 0; t < NT; ++t) {
            const ActQ8x32& ab = a[t][b];
            __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], broadcast4(ab.qs));
            __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], broadcast4(ab.qs + 4));
            s0 = _mm512_dpbusd_epi32(s0, w[2], broadcast4(ab.qs + 8));
            s1 = _mm512_dpbusd_epi32(s1, w[3], broadcast4(ab.qs + 12));
            s0 = _mm512_dpbusd_epi32(s0, w[4], broadcast4(ab.qs + 16));
            s1 = _mm512_dpbusd_epi32(s1, w[5], broadcast4(ab.qs + 20));
            s0 = _mm512_dpbusd_epi32(s0, w[6], broadcast4(ab.qs + 24));
            s1 = _mm512_dpbusd_epi32(s1, w[7], broadcast4(ab.qs + 28));
            // Σ w·a = d_a Σ u·q - offset · d_a Σ q, with u = q_w + offset.
            const __m512 f = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)),
                                             _mm512_set1_ps(ab.d), _mm512_set1_ps(offset * ab.s));
            acc[t] = _mm512_fmadd_ps(ws, f, acc[t]);
        }
    };
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t* unit = grp + uint64_t(b / 2) * unitBytes;
        if (job.prefetchBytes) prefetchLines(unit + job.prefetchBytes, unitBytes);
        block(unit, unit + 2 * pb, b);
        block(unit + pb, unit + 2 * pb + 32, b + 1);
    }
    if (b < nb) { // an odd last block: its payload, then its scales
        const uint8_t* unit = grp + uint64_t(b / 2) * unitBytes;
        block(unit, unit + pb, b);
    }
    storeTile<NT>(job, g, j0, acc);
}

template <Legacy kType> void groups(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0,
                                    int64_t j1) {
    // Panels of tokens keep their activations in L2 while the groups' weights stream past.
    constexpr int64_t kPanel = 64;
    if (j1 - j0 < 8) { // decode: one tile per group (its own loop measured faster there)
        for (int64_t g = g0; g < g1; ++g) {
            switch (j1 - j0) {
            case 7: tile<7, kType>(job, g, j0); break;
            case 6: tile<6, kType>(job, g, j0); break;
            case 5: tile<5, kType>(job, g, j0); break;
            case 4: tile<4, kType>(job, g, j0); break;
            case 3: tile<3, kType>(job, g, j0); break;
            case 2: tile<2, kType>(job, g, j0); break;
            case 1: tile<1, kType>(job, g, j0); break;
            default: break;
            }
        }
        return;
    }
    PackedJob again = job; // the tiles after a group's first find its weights in cache
    again.prefetchBytes = 0;
    for (int64_t p0 = j0; p0 < j1; p0 += kPanel) {
        const int64_t p1 = p0 + kPanel < j1 ? p0 + kPanel : j1;
        for (int64_t g = g0; g < g1; ++g) {
            int64_t j = p0;
            const PackedJob* jb = &job;
            for (; j + 8 <= p1; j += 8, jb = &again) tile<8, kType>(*jb, g, j);
            switch (p1 - j) {
            case 7: tile<7, kType>(*jb, g, j); break;
            case 6: tile<6, kType>(*jb, g, j); break;
            case 5: tile<5, kType>(*jb, g, j); break;
            case 4: tile<4, kType>(*jb, g, j); break;
            case 3: tile<3, kType>(*jb, g, j); break;
            case 2: tile<2, kType>(*jb, g, j); break;
            case 1: tile<1, kType>(*jb, g, j); break;
            default: break;
            }
        }
    }
}

// ---- Q4_K: super-blocks of 256 against ActQ8x256 -------------------------------------------

constexpr uint64_t kQ4KPayload = 2048, kQ4KBlockBytes = 2368, kQ5KBlockBytes = 2880; // see repack.h

// Q5_K: w with 16 added where the fifth-bit bytes hb have bit `bit` set (sub-block log2(bit)).
inline __m512i addFifthBit(__m512i w, __m512i hb, int bit) {
    return _mm512_mask_add_epi8(w, _mm512_test_epi8_mask(hb, _mm512_set1_epi8(char(bit))), w, _mm512_set1_epi8(16));
}

// y[j0 + t][16g .. 16g + 15] for t < NT. Per sub-block of 32 the integer dot products of the 16
// rows are scaled by their 6-bit scales in int32 (|Σ| < 2^25 per super-block), then by d·d_a in
// float; the mins term dmin·d_a·Σ m_j·(Σ q_a over sub-block j) comes from vpdpwssd on byte pairs.
// kQ5: Q5_K, the same with each weight's fifth bit added (0..31; |Σ| < 2^26).
template <int NT, bool kQ5> void tileQ4K(const PackedJob& job, int64_t g, int64_t j0) {
    constexpr uint64_t kBlock = kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes;
    const int64_t nb = job.cols / 256;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x256* a[NT];
    __m512 acc[NT];
    tokenRows(job, j0, a);
    for (__m512& v : acc) v = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + uint64_t(b) * kBlock;
        if (job.prefetchBytes) prefetchLines(blk + job.prefetchBytes, kBlock);
        const uint8_t* scales = blk + kQ4KPayload + 64;
        const uint8_t* mins = scales + 128;
        __m512i isum[NT];
        for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
        for (int c = 0; c < 4; ++c) {
            __m512i slo[NT], shi[NT];
            for (int t = 0; t < NT; ++t) slo[t] = shi[t] = _mm512_setzero_si512();
            for (int k = 0; k < 8; ++k) {
                const __m512i raw = _mm512_loadu_si512(blk + 64 * (8 * c + k));
                __m512i lo = _mm512_and_si512(raw, low4);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
                if constexpr (kQ5) {
                    const __m512i hb = _mm512_loadu_si512(blk + kQ4KBlockBytes + 64 * k);
                    lo = addFifthBit(lo, hb, 1 << (2 * c));
                    hi = addFifthBit(hi, hb, 2 << (2 * c));
                }
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q = a[t][b].qs + 64 * c + 4 * k;
                    slo[t] = _mm512_dpbusd_epi32(slo[t], lo, broadcast4(q));
                    shi[t] = _mm512_dpbusd_epi32(shi[t], hi, broadcast4(q + 32));
                }
            }
            const __m512i sc0 = _mm512_cvtepu8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * (2 * c))));
            const __m512i sc1 = _mm512_cvtepu8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * (2 * c + 1))));
            for (int t = 0; t < NT; ++t)
                isum[t] = _mm512_add_epi32(isum[t],
                                           _mm512_add_epi32(_mm512_mullo_epi32(slo[t], sc0),
                                                            _mm512_mullo_epi32(shi[t], sc1)));
        }
        const __m512 wd = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ4KPayload)));
        const __m512 wdm = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ4KPayload + 32)));
        for (int t = 0; t < NT; ++t) {
            const ActQ8x256& ab = a[t][b];
            __m512i msum = _mm512_setzero_si512();
            for (int p = 0; p < 4; ++p) {
                // Sums of the activations over sub-blocks 2p and 2p + 1, as an int16 pair.
                const int32_t s0 = int32_t(ab.bsums[4 * p]) + ab.bsums[4 * p + 1];
                const int32_t s1 = int32_t(ab.bsums[4 * p + 2]) + ab.bsums[4 * p + 3];
                const int32_t pair = int32_t(uint32_t(uint16_t(int16_t(s0))) |
                                             uint32_t(uint16_t(int16_t(s1))) << 16);
                const __m512i m = _mm512_cvtepu8_epi16(
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(mins + 32 * p)));
                msum = _mm512_dpwssd_epi32(msum, m, _mm512_set1_epi32(pair));
            }
            const __m512 da = _mm512_set1_ps(ab.d);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(wd, da), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(wdm, da), acc[t]);
        }
    }
    storeTile<NT>(job, g, j0, acc);
}

// tileQ4K over groups g and g + 1 at once: each activation broadcast feeds both groups' vpdpbusd.
// The low and high nibbles of a chunk pair take turns in one set of accumulators per group, so
// s, isum and acc of both groups fit the 32 registers. Bitwise tileQ4K's results.
template <int NT, bool kQ5> void tileQ4KPair(const PackedJob& job, int64_t g, int64_t j0) {
    constexpr uint64_t kBlock = kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes;
    const int64_t nb = job.cols / 256;
    const uint8_t* grp[2] = {job.w + uint64_t(g) * job.groupBytes, job.w + uint64_t(g + 1) * job.groupBytes};
    const ActQ8x256* a[NT];
    __m512 acc[2][NT];
    tokenRows(job, j0, a);
    for (auto& group : acc)
        for (__m512& v : group) v = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk[2] = {grp[0] + uint64_t(b) * kBlock, grp[1] + uint64_t(b) * kBlock};
        if (job.prefetchBytes)
            for (int r = 0; r < 2; ++r) prefetchLines(blk[r] + job.prefetchBytes, kBlock);
        __m512i isum[2][NT];
        for (int t = 0; t < NT; ++t) isum[0][t] = isum[1][t] = _mm512_setzero_si512();
        for (int h = 0; h < 8; ++h) { // sub-block h: chunk pair c = h / 2, low (even h) or high nibbles
            const int c = h / 2, half = 32 * (h % 2);
            __m512i s[2][NT];
            for (int t = 0; t < NT; ++t) s[0][t] = s[1][t] = _mm512_setzero_si512();
            for (int k = 0; k < 8; ++k) {
                __m512i w[2];
                for (int r = 0; r < 2; ++r) {
                    const __m512i raw = _mm512_loadu_si512(blk[r] + 64 * (8 * c + k));
                    w[r] = h % 2 ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4) : _mm512_and_si512(raw, low4);
                    if constexpr (kQ5) w[r] = addFifthBit(w[r], _mm512_loadu_si512(blk[r] + kQ4KBlockBytes + 64 * k), 1 << h);
                }
                for (int t = 0; t < NT; ++t) {
                    const __m512i q = broadcast4(a[t][b].qs + 64 * c + half + 4 * k);
                    s[0][t] = _mm512_dpbusd_epi32(s[0][t], w[0], q);
                    s[1][t] = _mm512_dpbusd_epi32(s[1][t], w[1], q);
                }
            }
            for (int r = 0; r < 2; ++r) {
                const __m512i sc = _mm512_cvtepu8_epi32(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[r] + kQ4KPayload + 64 + 16 * h)));
                for (int t = 0; t < NT; ++t) isum[r][t] = _mm512_add_epi32(isum[r][t], _mm512_mullo_epi32(s[r][t], sc));
            }
        }
        for (int r = 0; r < 2; ++r) {
            const uint8_t* mins = blk[r] + kQ4KPayload + 64 + 128;
            const __m512 wd = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[r] + kQ4KPayload)));
            const __m512 wdm = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[r] + kQ4KPayload + 32)));
            for (int t = 0; t < NT; ++t) {
                const ActQ8x256& ab = a[t][b];
                __m512i msum = _mm512_setzero_si512();
                for (int p = 0; p < 4; ++p) {
                    int32_t pair; // sub-blocks 2p and 2p + 1's sums, an int16 pair
                    std::memcpy(&pair, ab.sums32 + 2 * p, 4);
                    const __m512i m = _mm512_cvtepu8_epi16(
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(mins + 32 * p)));
                    msum = _mm512_dpwssd_epi32(msum, m, _mm512_set1_epi32(pair));
                }
                const __m512 da = _mm512_set1_ps(ab.d);
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][t]), _mm512_mul_ps(wd, da), acc[r][t]);
                acc[r][t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(wdm, da), acc[r][t]);
            }
        }
    }
    storeTile<NT>(job, g, j0, acc[0]);
    storeTile<NT>(job, g + 1, j0, acc[1]);
}

// ---- IQ4_XS: super-blocks of 256 against ActQ8x256 -----------------------------------------

constexpr uint64_t kIQ4XSBlockBytes = 2240; // see repack.h

// y[j0 + t][16g .. 16g + 15] for t < NT. As Q4_K, with each nibble mapped to its level + 128 by
// vpshufb: per sub-block of 32, Σ u·q_a by vpdpbusd minus 128·Σ q_a, times the rows' signed
// scales in int32 (|Σ| < 2^29 per super-block), then d·d_a in float.
template <int NT> void tileIQ4XS(const PackedJob& job, int64_t g, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x256* a[NT];
    __m512 acc[NT];
    tokenRows(job, j0, a);
    for (__m512& v : acc) v = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i levels = iq4LevelTable();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + uint64_t(b) * kIQ4XSBlockBytes;
        if (job.prefetchBytes) prefetchLines(blk + job.prefetchBytes, kIQ4XSBlockBytes);
        const int8_t* scales = reinterpret_cast<const int8_t*>(blk + kQ4KPayload + 32);
        __m512i isum[NT];
        for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
        for (int c = 0; c < 4; ++c) {
            __m512i slo[NT], shi[NT];
            for (int t = 0; t < NT; ++t) slo[t] = shi[t] = _mm512_setzero_si512();
            for (int k = 0; k < 8; ++k) {
                const __m512i raw = _mm512_loadu_si512(blk + 64 * (8 * c + k));
                const __m512i lo = _mm512_shuffle_epi8(levels, _mm512_and_si512(raw, low4));
                const __m512i hi = _mm512_shuffle_epi8(levels, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q = a[t][b].qs + 64 * c + 4 * k;
                    slo[t] = _mm512_dpbusd_epi32(slo[t], lo, broadcast4(q));
                    shi[t] = _mm512_dpbusd_epi32(shi[t], hi, broadcast4(q + 32));
                }
            }
            const __m512i sc0 = _mm512_cvtepi8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * (2 * c))));
            const __m512i sc1 = _mm512_cvtepi8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * (2 * c + 1))));
            for (int t = 0; t < NT; ++t) {
                const int16_t* bs = a[t][b].bsums + 4 * c; // sub-blocks 2c and 2c + 1, two sums each
                const __m512i lo = _mm512_sub_epi32(slo[t], _mm512_set1_epi32(128 * (int32_t(bs[0]) + bs[1])));
                const __m512i hi = _mm512_sub_epi32(shi[t], _mm512_set1_epi32(128 * (int32_t(bs[2]) + bs[3])));
                isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(lo, sc0),
                                                                     _mm512_mullo_epi32(hi, sc1)));
            }
        }
        const __m512 wd = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ4KPayload)));
        for (int t = 0; t < NT; ++t)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]),
                                     _mm512_mul_ps(wd, _mm512_set1_ps(a[t][b].d)), acc[t]);
    }
    storeTile<NT>(job, g, j0, acc);
}

// tileIQ4XS over groups g and g + 1 at once, as tileQ4KPair. Bitwise tileIQ4XS's results.
template <int NT> void tileIQ4XSPair(const PackedJob& job, int64_t g, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const uint8_t* grp[2] = {job.w + uint64_t(g) * job.groupBytes, job.w + uint64_t(g + 1) * job.groupBytes};
    const ActQ8x256* a[NT];
    __m512 acc[2][NT];
    tokenRows(job, j0, a);
    for (auto& group : acc)
        for (__m512& v : group) v = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i levels = iq4LevelTable();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk[2] = {grp[0] + uint64_t(b) * kIQ4XSBlockBytes, grp[1] + uint64_t(b) * kIQ4XSBlockBytes};
        if (job.prefetchBytes)
            for (int r = 0; r < 2; ++r) prefetchLines(blk[r] + job.prefetchBytes, kIQ4XSBlockBytes);
        __m512i isum[2][NT];
        for (int t = 0; t < NT; ++t) isum[0][t] = isum[1][t] = _mm512_setzero_si512();
        for (int h = 0; h < 8; ++h) { // sub-block h: chunk pair c = h / 2, low (even h) or high nibbles
            const int c = h / 2, half = 32 * (h % 2);
            __m512i s[2][NT];
            for (int t = 0; t < NT; ++t) s[0][t] = s[1][t] = _mm512_setzero_si512();
            for (int k = 0; k < 8; ++k) {
                __m512i w[2];
                for (int r = 0; r < 2; ++r) {
                    const __m512i raw = _mm512_loadu_si512(blk[r] + 64 * (8 * c + k));
                    w[r] = _mm512_shuffle_epi8(levels, h % 2 ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4)
                                                             : _mm512_and_si512(raw, low4));
                }
                for (int t = 0; t < NT; ++t) {
                    const __m512i q = broadcast4(a[t][b].qs + 64 * c + half + 4 * k);
                    s[0][t] = _mm512_dpbusd_epi32(s[0][t], w[0], q);
                    s[1][t] = _mm512_dpbusd_epi32(s[1][t], w[1], q);
                }
            }
            for (int r = 0; r < 2; ++r) {
                const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128(
                    reinterpret_cast<const __m128i*>(blk[r] + kQ4KPayload + 32 + 16 * h)));
                for (int t = 0; t < NT; ++t) {
                    const int16_t* bs = a[t][b].bsums + 2 * h;
                    const __m512i v = _mm512_sub_epi32(s[r][t], _mm512_set1_epi32(128 * (int32_t(bs[0]) + bs[1])));
                    isum[r][t] = _mm512_add_epi32(isum[r][t], _mm512_mullo_epi32(v, sc));
                }
            }
        }
        for (int r = 0; r < 2; ++r) {
            const __m512 wd = _mm512_cvtph_ps(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[r] + kQ4KPayload)));
            for (int t = 0; t < NT; ++t)
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][t]),
                                            _mm512_mul_ps(wd, _mm512_set1_ps(a[t][b].d)), acc[r][t]);
        }
    }
    storeTile<NT>(job, g, j0, acc[0]);
    storeTile<NT>(job, g + 1, j0, acc[1]);
}

// ---- Q6_K: super-blocks of 256 against ActQ8x256 -------------------------------------------

constexpr uint64_t kQ6KBlockBytes = 3360; // see repack.h

// Bits 2p..2p+1 of each byte of hb moved to bits 4..5 (epi16 shifts: what crosses into the
// neighbouring byte lands outside 0x30 and is masked off).
template <int P> inline __m512i highBits(__m512i hb) {
    const __m512i m = _mm512_set1_epi8(0x30);
    if constexpr (P == 0) return _mm512_and_si512(_mm512_slli_epi16(hb, 4), m);
    else if constexpr (P == 1) return _mm512_and_si512(_mm512_slli_epi16(hb, 2), m);
    else if constexpr (P == 2) return _mm512_and_si512(hb, m);
    else return _mm512_and_si512(_mm512_srli_epi16(hb, 2), m);
}

// y[j0 + t][16g .. 16g + 15] for t < NT. Per sub-block j of 16 columns: Σ u·q_a by vpdpbusd,
// minus 32·Σ q_a (u = q + 32), times the rows' 8-bit scales in int32 (|Σ| < 2^29 per
// super-block), then d·d_a in float. Sub-blocks j and j + 8 share their nibble vectors.
template <int NT> void tileQ6K(const PackedJob& job, int64_t g, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x256* a[NT];
    __m512 acc[NT];
    tokenRows(job, j0, a);
    for (__m512& v : acc) v = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + uint64_t(b) * kQ6KBlockBytes;
        if (job.prefetchBytes) prefetchLines(blk + job.prefetchBytes, kQ6KBlockBytes);
        const uint8_t* hbits = blk + 2048;
        const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 3072);
        __m512i isum[NT];
        for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            // Chunks c = 4j + e (sub-block j) and c + 32 (sub-block j + 8).
            __m512i slo[NT], shi[NT];
            for (int t = 0; t < NT; ++t) slo[t] = shi[t] = _mm512_setzero_si512();
            for (int e = 0; e < 4; ++e) {
                const int c = 4 * j + e;
                const __m512i raw = _mm512_loadu_si512(blk + 64 * c);
                const __m512i hb = _mm512_loadu_si512(hbits + 64 * (c % 16));
                const __m512i lo = _mm512_or_si512(_mm512_and_si512(raw, low4),
                                                   c < 16 ? highBits<0>(hb) : highBits<1>(hb));
                const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(raw, 4), low4),
                                                   c < 16 ? highBits<2>(hb) : highBits<3>(hb));
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q = a[t][b].qs + 4 * c;
                    slo[t] = _mm512_dpbusd_epi32(slo[t], lo, broadcast4(q));
                    shi[t] = _mm512_dpbusd_epi32(shi[t], hi, broadcast4(q + 128));
                }
            }
            const __m512i sc0 = _mm512_cvtepi8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * j)));
            const __m512i sc1 = _mm512_cvtepi8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * (j + 8))));
            for (int t = 0; t < NT; ++t) {
                const __m512i lo = _mm512_sub_epi32(slo[t], _mm512_set1_epi32(32 * a[t][b].bsums[j]));
                const __m512i hi = _mm512_sub_epi32(shi[t], _mm512_set1_epi32(32 * a[t][b].bsums[j + 8]));
                isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(lo, sc0),
                                                                     _mm512_mullo_epi32(hi, sc1)));
            }
        }
        const __m512 wd = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 3328)));
        for (int t = 0; t < NT; ++t)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]),
                                     _mm512_mul_ps(wd, _mm512_set1_ps(a[t][b].d)), acc[t]);
    }
    storeTile<NT>(job, g, j0, acc);
}

// tileQ6K for 5..8 tokens: each chunk's 6-bit values are put together once for twice as many
// tokens (Q6_K's unpacking, 9 operations per chunk, is most of its cost beyond the vpdpbusd).
// Sub-blocks j and j + 8 take turns in one set of NT accumulators, as in tileQ4KWide.
template <int NT> void tileQ6KWide(const PackedJob& job, int64_t g, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x256* a[NT];
    __m512 acc[NT];
    tokenRows(job, j0, a);
    for (__m512& v : acc) v = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + uint64_t(b) * kQ6KBlockBytes;
        if (job.prefetchBytes) prefetchLines(blk + job.prefetchBytes, kQ6KBlockBytes);
        const uint8_t* hbits = blk + 2048;
        const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 3072);
        // The offset term 32·Σ_h sc_h·Σ q_a over sub-block h, by vpdpwssd on sub-block pairs:
        // pairs[p] holds each row's (sc_2p, sc_2p+1) as int16, bsums 2p and 2p + 1 lie side by side.
        __m512i pairs[8];
        for (int p = 0; p < 8; ++p) {
            const __m512i s0 = _mm512_cvtepi8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 32 * p)));
            const __m512i s1 = _mm512_cvtepi8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 32 * p + 16)));
            pairs[p] = _mm512_or_si512(_mm512_and_si512(s0, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(s1, 16));
        }
        __m512i isum[NT];
        for (int t = 0; t < NT; ++t) {
            __m512i off = _mm512_setzero_si512();
            for (int p = 0; p < 8; ++p) {
                int32_t pair;
                std::memcpy(&pair, a[t][b].bsums + 2 * p, 4);
                off = _mm512_dpwssd_epi32(off, pairs[p], _mm512_set1_epi32(pair));
            }
            isum[t] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(off, 5));
        }
        for (int h = 0; h < 16; ++h) { // sub-block h: chunks 4h..4h+3 (low nibbles for h < 8)
            const int j = h % 8;
            __m512i s[NT];
            for (int t = 0; t < NT; ++t) s[t] = _mm512_setzero_si512();
            for (int e = 0; e < 4; ++e) {
                const int c = 4 * j + e;
                const __m512i raw = _mm512_loadu_si512(blk + 64 * c);
                const __m512i hb = _mm512_loadu_si512(hbits + 64 * (c % 16));
                const __m512i w = h < 8 ? _mm512_or_si512(_mm512_and_si512(raw, low4),
                                                          c < 16 ? highBits<0>(hb) : highBits<1>(hb))
                                        : _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(raw, 4), low4),
                                                          c < 16 ? highBits<2>(hb) : highBits<3>(hb));
                for (int t = 0; t < NT; ++t)
                    s[t] = dpbusdBroadcast(s[t], w, a[t][b].qs + 4 * c + (h < 8 ? 0 : 128));
            }
            const __m512i sc = _mm512_cvtepi8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 * h)));
            for (int t = 0; t < NT; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(s[t], sc));
        }
        const __m512 wd = _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 3328)));
        for (int t = 0; t < NT; ++t)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]),
                                     _mm512_mul_ps(wd, _mm512_set1_ps(a[t][b].d)), acc[t]);
    }
    storeTile<NT>(job, g, j0, acc);
}

// The K types' tiles over groups [g0, g1) and tokens [j0, j1), in panels of 64 tokens whose
// activations stay in L2 while the weights stream past (64 tokens of 6144 columns: 480 KiB;
// pp64 +1.5% and pp128 +1% against panels of 32, 128 no better, Zen 5 with 1 MiB L2). Tiles of
// 4 tokens at most (their registers), or with Tile::kWide 8 (Q6_K's wide tile: 7-9% faster per
// token than two of 4, Zen 5; a wide Q4_K tile measured no faster, its unpacking being only 3
// operations per chunk), or with Tile::kPairs two groups at once (Q4_K: 12-13% faster per token
// at n = 16-32 than one; IQ4_XS 9%; three groups measured 3% faster alone, 3-6% slower in pp8
// and pp16).
template <class Tile> void superGroups(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1) {
    constexpr int64_t kPanel = 64;
    PackedJob again = job; // the tiles after a group's first find its weights in cache
    again.prefetchBytes = 0;
    for (int64_t p0 = j0; p0 < j1; p0 += kPanel) {
        const int64_t p1 = p0 + kPanel < j1 ? p0 + kPanel : j1;
        for (int64_t g = g0; g < g1; ++g) {
            int64_t j = p0;
            const PackedJob* jb = &job;
            if constexpr (Tile::kPairs) {
                // Groups g and g + 1 together; not at decode (a panel of 1-3 tokens), where the
                // weight stream bounds the speed and one token over two groups runs slower.
                if (g + 1 < g1 && p1 - p0 >= 4) {
                    for (; j + 4 <= p1; j += 4, jb = &again) Tile::template pair<4>(*jb, g, j);
                    switch (p1 - j) {
                    case 3: Tile::template pair<3>(*jb, g, j); break;
                    case 2: Tile::template pair<2>(*jb, g, j); break;
                    case 1:
                        Tile::template run<1>(*jb, g, j);
                        Tile::template run<1>(*jb, g + 1, j);
                        break;
                    default: break;
                    }
                    ++g;
                    continue;
                }
            }
            if constexpr (Tile::kWide) {
                for (; j + 8 <= p1; j += 8, jb = &again) Tile::template run<8>(*jb, g, j);
                switch (p1 - j) {
                case 7: Tile::template run<7>(*jb, g, j); continue;
                case 6: Tile::template run<6>(*jb, g, j); continue;
                case 5: Tile::template run<5>(*jb, g, j); continue;
                default: break;
                }
            }
            for (; j + 4 <= p1; j += 4, jb = &again) Tile::template run<4>(*jb, g, j);
            switch (p1 - j) {
            case 3: Tile::template run<3>(*jb, g, j); break;
            case 2: Tile::template run<2>(*jb, g, j); break;
            case 1: Tile::template run<1>(*jb, g, j); break;
            default: break;
            }
        }
    }
}
template <bool kQ5> struct Q4KTile {
    static constexpr bool kWide = false, kPairs = true;
    template <int NT> static void run(const PackedJob& j, int64_t g, int64_t t) { tileQ4K<NT, kQ5>(j, g, t); }
    template <int NT> static void pair(const PackedJob& j, int64_t g, int64_t t) { tileQ4KPair<NT, kQ5>(j, g, t); }
};
struct Q6KTile {
    static constexpr bool kWide = true, kPairs = false;
    template <int NT> static void run(const PackedJob& j, int64_t g, int64_t t) {
        if constexpr (NT > 4) tileQ6KWide<NT>(j, g, t);
        else tileQ6K<NT>(j, g, t);
    }
};
struct IQ4XSTile {
    static constexpr bool kWide = false, kPairs = true;
    template <int NT> static void run(const PackedJob& j, int64_t g, int64_t t) { tileIQ4XS<NT>(j, g, t); }
    template <int NT> static void pair(const PackedJob& j, int64_t g, int64_t t) { tileIQ4XSPair<NT>(j, g, t); }
};

} // namespace

void packedGroupsAvx512(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1) {
    if (job.type == quant::Type::Q8_0) groups<Legacy::Q8_0>(job, g0, g1, j0, j1);
    else if (job.type == quant::Type::Q5_0) groups<Legacy::Q5_0>(job, g0, g1, j0, j1);
    else if (job.type == quant::Type::Q4_K) superGroups<Q4KTile<false>>(job, g0, g1, j0, j1);
    else if (job.type == quant::Type::Q5_K) superGroups<Q4KTile<true>>(job, g0, g1, j0, j1);
    else if (job.type == quant::Type::Q6_K) superGroups<Q6KTile>(job, g0, g1, j0, j1);
    else if (job.type == quant::Type::IQ4_XS) superGroups<IQ4XSTile>(job, g0, g1, j0, j1);
    else if (job.type == quant::Type::IQ4_NL) groups<Legacy::IQ4_NL>(job, g0, g1, j0, j1);
    else if (job.type == quant::Type::MXFP4) groups<Legacy::MXFP4>(job, g0, g1, j0, j1);
    else groups<Legacy::Q4_0>(job, g0, g1, j0, j1);
}

} // namespace hearth::cpu::kernels
