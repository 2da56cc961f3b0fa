// The 256-bit kernels over repacked Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4/Q4_K/Q5_K/Q6_K/IQ4_XS weights (layout
// in repack.h), one source for two levels: repack_avx2.cpp includes it compiled for AVX2
// (vpmaddubsw products summed in 16 bits while they cannot overflow, then vpmaddwd), and
// repack_avxvnni.cpp compiled with -mavxvnni (vpdpbusd on ymm registers, as the AVX-512 kernels).
// A tile is half a group, 8 rows (the lower or upper 32 bytes of each 64-byte chunk: one ymm
// register holds 8 rows × 4 columns), by up to 4 tokens: 16 ymm registers hold a block's
// unpacked weights and the tile's accumulators. Shared pieces in repack_avx2_simd.h, IQ4_XS in
// repack_avx2_iq4xs.h. Everything here has internal linkage, so the two compilations never mix.
#pragma once

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/repack_avx2_iq4xs.h"
#include "backend/cpu/repack_avx2_simd.h"
#include "quant/blocks.h"

#include <cstring>
#include <immintrin.h>
#include <utility>

namespace hearth::cpu::kernels {

namespace {

// ---- Legacy types: blocks of 32 against ActQ8x32 ----------------------------------------------

enum class Legacy { Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4 };

// Without VNNI, Q8_0 and IQ4_NL take their weights as signed bytes (|w| <= 128) with each sign
// moved onto the activation (vpsignb): their unsigned forms (q + 128) would saturate vpmaddubsw.
template <Legacy T> constexpr bool kSignedWeights = !kVnni && (T == Legacy::Q8_0 || T == Legacy::IQ4_NL);

// How many chunks' vpmaddubsw products (2·max w·127 per 16-bit sum) add up in 16 bits without VNNI.
template <Legacy T> constexpr int kChunksIn16 = T == Legacy::Q4_0 ? 8 : T == Legacy::Q5_0 || T == Legacy::MXFP4 ? 4 : 1;

// The offset u - q of the unsigned weights u the dot products see.
constexpr int kMxfp4Offset = 12;
template <Legacy T> constexpr float kOffset = T == Legacy::MXFP4    ? float(kMxfp4Offset)
                                              : kSignedWeights<T>   ? 0.0f
                                              : T == Legacy::Q4_0   ? 8.0f
                                              : T == Legacy::Q5_0   ? 16.0f
                                                                    : 128.0f;

// The nibble -> weight table in both 128-bit lanes: IQ4_NL's levels (+ 128 with VNNI), MXFP4's
// doubled levels + 12.
template <Legacy T> inline __m256i levelTable() {
    alignas(16) uint8_t t[16];
    for (int i = 0; i < 16; ++i)
        t[i] = T == Legacy::MXFP4 ? uint8_t(quant::mxfp4Level(i) + kMxfp4Offset)
                                  : uint8_t(quant::iq4Level(i) + (kSignedWeights<T> ? 0 : 128));
    return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// The 8 rows' scales of a block: fp16, or (MXFP4) E8M0 exponents e as 2^(e - 128) (see
// repack_avx512.cpp's rowScales).
template <Legacy T> inline __m256 rowScales(const uint8_t* sc, int half) {
    if constexpr (T == Legacy::MXFP4) {
        const __m256i e = bytesU32(sc + 8 * half);
        const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
        const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
        const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
        return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, small));
    } else {
        return halfs8(sc + 16 * half);
    }
}

// Q5_0's fifth bits for one nibble vector of 8 rows: the 32 mask bits at p (bit j: byte j) as
// 0x10 in the bytes whose bit is set.
inline __m256i fifthBits(const uint8_t* p) {
    int32_t m;
    std::memcpy(&m, p, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(m), _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                               3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
}

// y for tokens j0 .. j0 + NT - 1 and the 8 rows of group g's half: Σ w·a = d_a Σ u·q - offset·s_a
// per block (u = q_w + offset), times the rows' scales.
template <int NT, Legacy T, int NH = 1> void tile(const PackedJob& job, int64_t g, int half0, int64_t j0) {
    const int64_t nb = job.cols / 32;
    const uint64_t pb = job.payloadBytes, unitBytes = 2 * pb + 64;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x32* a[NT];
    __m256 accs[NH][NT];
    tokenRows(job, j0, a);
    for (auto& r : accs)
        for (__m256& v : r) v = _mm256_setzero_ps();
    // The half the lambdas below work on (the tile's halves in turn, per unit of two blocks).
    int half = half0;
    uint64_t at = 32 * uint64_t(half);
    __m256* acc = accs[0];
    const auto toHalf = [&](int hh) {
        half = half0 + hh;
        at = 32 * uint64_t(half);
        acc = accs[hh];
    };
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    constexpr bool kLevels = T == Legacy::IQ4_NL || T == Legacy::MXFP4;
    const __m256i levels = kLevels ? levelTable<T>() : _mm256_setzero_si256();
    // Chunk k's weights (columns 4k..4k+3) of the 8 rows, as the dot products take them.
    auto weights = [&](const uint8_t* p, int k) {
        if constexpr (T == Legacy::Q8_0) {
            const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * k + at));
            return kSignedWeights<T> ? _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80))) : w;
        } else {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * (k % 4) + at));
            __m256i w = _mm256_and_si256(k < 4 ? raw : _mm256_srli_epi16(raw, 4), low4);
            if constexpr (kLevels) w = _mm256_shuffle_epi8(levels, w);
            if constexpr (T == Legacy::Q5_0) w = _mm256_or_si256(w, fifthBits(p + 256 + 8 * k + 4 * half));
            return w;
        }
    };
    // Chunks outer, tokens inner: one chunk's weights live at a time, beside NT sums.
    auto block = [&](const uint8_t* p, const uint8_t* sc, int64_t b) {
        __m256i s[NT];
        for (__m256i& v : s) v = _mm256_setzero_si256();
        if constexpr (kSignedWeights<T>) {
            for (int k = 0; k < 8; ++k) {
                const __m256i w = weights(p, k), wAbs = _mm256_sign_epi8(w, w);
                for (int t = 0; t < NT; ++t) {
                    const __m256i p16 = _mm256_maddubs_epi16(wAbs, _mm256_sign_epi8(bcast4(a[t][b].qs + 4 * k), w));
                    s[t] = keep(_mm256_add_epi32(s[t], _mm256_madd_epi16(p16, _mm256_set1_epi16(1))));
                }
            }
        } else if constexpr (kVnni) {
            for (int k = 0; k < 8; ++k) {
                const __m256i w = weights(p, k);
                for (int t = 0; t < NT; ++t) s[t] = dot4(s[t], w, bcast4(a[t][b].qs + 4 * k));
            }
        } else {
            for (int k0 = 0; k0 < 8; k0 += kChunksIn16<T>) {
                __m256i p16[NT];
                for (__m256i& v : p16) v = _mm256_setzero_si256();
                for (int k = k0; k < k0 + kChunksIn16<T>; ++k) {
                    const __m256i w = weights(p, k);
                    for (int t = 0; t < NT; ++t)
                        p16[t] = keep(_mm256_add_epi16(p16[t], _mm256_maddubs_epi16(w, bcast4(a[t][b].qs + 4 * k))));
                }
                for (int t = 0; t < NT; ++t) s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(p16[t], _mm256_set1_epi16(1)));
            }
        }
        const __m256 ws = rowScales<T>(sc, half);
        for (int t = 0; t < NT; ++t) {
            const ActQ8x32& ab = a[t][b];
            __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(s[t]), _mm256_set1_ps(ab.d));
            if constexpr (kOffset<T> != 0.0f) f = _mm256_sub_ps(f, _mm256_set1_ps(kOffset<T> * ab.s));
            acc[t] = _mm256_fmadd_ps(ws, f, acc[t]);
        }
    };
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t* unit = grp + uint64_t(b / 2) * unitBytes;
        prefetchFor(job, grp, unit, unitBytes);
        for (int hh = 0; hh < NH; ++hh) {
            toHalf(hh);
            block(unit, unit + 2 * pb, b);
            block(unit + pb, unit + 2 * pb + 32, b + 1);
        }
    }
    if (b < nb) { // an odd last block: its payload, then its scales
        const uint8_t* unit = grp + uint64_t(b / 2) * unitBytes;
        for (int hh = 0; hh < NH; ++hh) {
            toHalf(hh);
            block(unit, unit + pb, b);
        }
    }
    for (int hh = 0; hh < NH; ++hh) storeHalf<NT>(job, g, half0 + hh, j0, accs[hh]);
}

// Tokens per tile: 5 where the registers hold them (bench_matmul rows, 2 threads, Zen 5 at the
// avx2 and avxvnni levels: 5 tokens as one tile took 0.7-0.9x the time of 4 + 1 for Q4_0, Q8_0,
// Q4_K, Q6_K, MXFP4 and IQ4_XS, and no longer at 8 or 16; 64 tokens in cache, one thread, were
// as fast or faster); Q5_0, and IQ4_NL without VNNI, spill or gain nothing at 5.
template <Legacy T> struct LegacyTile {
    static constexpr int kTokens = T == Legacy::Q5_0 || (T == Legacy::IQ4_NL && !kVnni) ? 4 : 5;
    template <int NT, int NH = 1> static void run(const PackedJob& j, int64_t g, int half, int64_t t) { tile<NT, T, NH>(j, g, half, t); }
};

// ---- Q4_K and Q5_K: super-blocks of 256 against ActQ8x256 -------------------------------------

// Bit SB of each byte of hb moved to bit 4, the rest cleared (Q5_K's fifth bit of sub-block SB).
template <int SB> inline __m256i fifthBit(__m256i hb) {
    const __m256i m = _mm256_set1_epi8(0x10);
    if constexpr (SB < 4) return _mm256_and_si256(_mm256_slli_epi16(hb, 4 - SB), m);
    else if constexpr (SB == 4) return _mm256_and_si256(hb, m);
    else return _mm256_and_si256(_mm256_srli_epi16(hb, SB - 4), m);
}

// Per sub-block of 32 the rows' integer dot products times their 6-bit scales (VNNI: vpmulld, two
// sub-blocks at a time; AVX2: vpmaddwd of the 16-bit sums by the scale pair), summed over the super-block; then
// d·d_a·Σ minus dmin·d_a·Σ_j m_j·(Σ q_a over sub-block j), the latter by vpmaddwd on min pairs.
// kQ5: Q5_K, the same with each weight's fifth bit added (weights 0..31: without VNNI, 16-bit
// sums of 4 chunks at most, 4 · 2 · 31 · 127 < 2^15).
template <int NT, bool kQ5, int NH = 1> void tileQ4K(const PackedJob& job, int64_t g, int half0, int64_t j0) {
    constexpr uint64_t kBlock = kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes;
    constexpr int kIn16 = kQ5 ? 4 : 8; // chunks whose vpmaddubsw sums add up in 16 bits
    const int64_t nb = job.cols / 256;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x256* a[NT];
    __m256 accs[NH][NT];
    tokenRows(job, j0, a);
    for (auto& r : accs)
        for (__m256& v : r) v = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + uint64_t(b) * kBlock;
        prefetchFor(job, grp, blk, kBlock);
        const uint8_t* scales = blk + kQ4KPayload + 64;
        const uint8_t* mins = scales + 128;
        // isum[h][t]: half half0 + h, token t, Σ over sub-blocks of scale × integer dot product.
        __m256i isum[NH][NT];
        for (auto& r : isum)
            for (__m256i& v : r) v = _mm256_setzero_si256();
        // Sub-block sb: chunks 8c..8c+7 with c = sb / 2, low nibbles (even sb) or high.
        const auto subBlock = [&]<int sb>() {
            constexpr int c = sb / 2, hi = sb % 2;
            for (int hh = 0; hh < NH; ++hh) {
                const uint64_t at = 32 * uint64_t(half0 + hh);
                const __m256i sc = bytesU32(scales + 16 * sb + 8 * (half0 + hh));
                __m256i s[NT]; // 16-bit sums of up to kIn16 chunks
                for (__m256i& v : s) v = _mm256_setzero_si256();
                for (int k = 0; k < 8; ++k) {
                    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * (8 * c + k) + at));
                    __m256i w = _mm256_and_si256(hi ? _mm256_srli_epi16(raw, 4) : raw, low4);
                    if constexpr (kQ5)
                        w = _mm256_or_si256(w, fifthBit<sb>(_mm256_loadu_si256(
                                                   reinterpret_cast<const __m256i*>(blk + kQ4KBlockBytes + 64 * k + at))));
                    for (int t = 0; t < NT; ++t) {
                        const __m256i q = bcast4(a[t][b].qs + 64 * c + 32 * hi + 4 * k);
                        s[t] = keep(_mm256_add_epi16(s[t], _mm256_maddubs_epi16(w, q)));
                    }
                    if (k % kIn16 == kIn16 - 1)
                        for (int t = 0; t < NT; ++t) {
                            isum[hh][t] = _mm256_add_epi32(isum[hh][t], _mm256_madd_epi16(s[t], pairOf(sc)));
                            s[t] = _mm256_setzero_si256();
                        }
                }
            }
        };
        // VNNI: sub-blocks 2c and 2c + 1 side by side (one load, both nibbles), for halves
        // h0 .. h0 + nh - 1 chunk by chunk, so that each activation broadcast feeds every half's
        // vpdpbusd. A lone half of one token alternates its chunks between two chains per nibble,
        // so that the instruction's latency does not bound the issue rate.
        const auto subBlockPair = [&]<int c, int h0, int nh>() {
            constexpr int kChains = NT * nh == 1 && !kQ5 ? 2 : 1;
            __m256i slo[nh][kChains][NT], shi[nh][kChains][NT];
            for (int hh = 0; hh < nh; ++hh)
                for (int r = 0; r < kChains; ++r)
                    for (int t = 0; t < NT; ++t) slo[hh][r][t] = shi[hh][r][t] = _mm256_setzero_si256();
            for (int k = 0; k < 8; ++k) {
                __m256i lo[nh], hi[nh];
                for (int hh = 0; hh < nh; ++hh) {
                    const uint64_t at = 32 * uint64_t(half0 + h0 + hh);
                    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * (8 * c + k) + at));
                    lo[hh] = _mm256_and_si256(raw, low4);
                    hi[hh] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
                    if constexpr (kQ5) {
                        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kQ4KBlockBytes + 64 * k + at));
                        lo[hh] = _mm256_or_si256(lo[hh], fifthBit<2 * c>(hb));
                        hi[hh] = _mm256_or_si256(hi[hh], fifthBit<2 * c + 1>(hb));
                    }
                }
                const int chain = k % kChains;
                for (int t = 0; t < NT; ++t) {
                    const int8_t* q = a[t][b].qs + 64 * c + 4 * k;
                    const __m256i qlo = bcast4(q), qhi = bcast4(q + 32);
                    for (int hh = 0; hh < nh; ++hh) {
                        slo[hh][chain][t] = keep(dot4(slo[hh][chain][t], lo[hh], qlo));
                        shi[hh][chain][t] = keep(dot4(shi[hh][chain][t], hi[hh], qhi));
                    }
                }
            }
            for (int hh = 0; hh < nh; ++hh) {
                const uint64_t off = 8 * uint64_t(half0 + h0 + hh);
                const __m256i sc0 = bytesU32(scales + 16 * (2 * c) + off);
                const __m256i sc1 = bytesU32(scales + 16 * (2 * c + 1) + off);
                for (int t = 0; t < NT; ++t) {
                    __m256i l = slo[hh][0][t], h = shi[hh][0][t];
                    if constexpr (kChains == 2) {
                        l = _mm256_add_epi32(l, slo[hh][1][t]);
                        h = _mm256_add_epi32(h, shi[hh][1][t]);
                    }
                    isum[h0 + hh][t] = _mm256_add_epi32(isum[h0 + hh][t], _mm256_add_epi32(_mm256_mullo_epi32(l, sc0), _mm256_mullo_epi32(h, sc1)));
                }
            }
        };
        // Q5_K's halves one after the other: side by side their fifth bits took more registers
        // than there are (bench_matmul levels, one token: 15-20% slower).
        const auto pairsOfHalves = [&]<int c>() {
            if constexpr (!kQ5 || NH == 1) {
                subBlockPair.template operator()<c, 0, NH>();
            } else {
                subBlockPair.template operator()<c, 0, 1>();
                subBlockPair.template operator()<c, 1, 1>();
            }
        };
        if constexpr (kVnni)
            [&]<int... c>(std::integer_sequence<int, c...>) {
                (pairsOfHalves.template operator()<c>(), ...);
            }(std::make_integer_sequence<int, 4>{});
        else
            [&]<int... sb>(std::integer_sequence<int, sb...>) {
                (subBlock.template operator()<sb>(), ...);
            }(std::make_integer_sequence<int, 8>{});
        for (int hh = 0; hh < NH; ++hh) {
            const int half = half0 + hh;
            const __m256 wd = halfs8(blk + kQ4KPayload + 16 * half);
            const __m256 wdm = halfs8(blk + kQ4KPayload + 32 + 16 * half);
            for (int t = 0; t < NT; ++t) {
                const ActQ8x256& ab = a[t][b];
                __m256i msum = _mm256_setzero_si256();
                for (int p = 0; p < 4; ++p) { // rows' (m_2p, m_2p+1) by the sums over sub-blocks 2p, 2p + 1
                    int32_t pair;
                    std::memcpy(&pair, ab.sums32 + 2 * p, 4);
                    const __m256i m = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mins + 32 * p + 16 * half)));
                    msum = _mm256_add_epi32(msum, _mm256_madd_epi16(m, _mm256_set1_epi32(pair)));
                }
                const __m256 da = _mm256_set1_ps(ab.d);
                accs[hh][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[hh][t]), _mm256_mul_ps(wd, da), accs[hh][t]);
                accs[hh][t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(wdm, da), accs[hh][t]);
            }
        }
    }
    for (int hh = 0; hh < NH; ++hh) storeHalf<NT>(job, g, half0 + hh, j0, accs[hh]);
}

template <bool kQ5> struct Q4KTile {
    static constexpr int kTokens = kQ5 ? (kVnni ? 4 : 3) : 5;
    template <int NT, int NH = 1> static void run(const PackedJob& j, int64_t g, int half, int64_t t) { tileQ4K<NT, kQ5, NH>(j, g, half, t); }
};

// ---- Q6_K: super-blocks of 256 against ActQ8x256 ----------------------------------------------

// Bits 2p..2p+1 of each byte of hb moved to bits 4..5 (repack_avx512.cpp's highBits).
template <int P> inline __m256i highBits(__m256i hb) {
    const __m256i m = _mm256_set1_epi8(0x30);
    if constexpr (P == 0) return _mm256_and_si256(_mm256_slli_epi16(hb, 4), m);
    else if constexpr (P == 1) return _mm256_and_si256(_mm256_slli_epi16(hb, 2), m);
    else if constexpr (P == 2) return _mm256_and_si256(hb, m);
    else return _mm256_and_si256(_mm256_srli_epi16(hb, 2), m);
}

// Sub-block h of 16 columns: chunk c = 4(h % 8) + e's u = q + 32 (low nibbles for h < 8, the
// high ones, chunk c + 32, otherwise) against the activations; Σ u·q_a times the rows' 8-bit
// scales (VNNI: vpmulld; AVX2: vpmaddwd of two chunks' 16-bit sums, 2 · 2 · 63 · 127 < 2^15),
// minus 32·Σ_h sc_h·Σ q_a over h (vpmaddwd on scale pairs), then d·d_a in float.
template <int NT, int NH = 1> void tileQ6K(const PackedJob& job, int64_t g, int half0, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x256* a[NT];
    __m256 accs[NH][NT];
    tokenRows(job, j0, a);
    for (auto& r : accs)
        for (__m256& v : r) v = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + uint64_t(b) * kQ6KBlockBytes;
        prefetchFor(job, grp, blk, kQ6KBlockBytes);
        const uint8_t* hbits = blk + 2048;
        const uint8_t* scales = blk + 3072;
        // isum[h][t] (half half0 + h, token t) starts at -32·Σ_h sc_h·(Σ q_a over sub-block h):
        // vpmaddwd of the rows' scale pairs (sc_2p, sc_2p+1) by the activation sums of sub-blocks
        // 2p and 2p + 1.
        __m256i isum[NH][NT];
        for (int hh = 0; hh < NH; ++hh) {
            const int half = half0 + hh;
            for (__m256i& v : isum[hh]) v = _mm256_setzero_si256();
            for (int p = 0; p < 8; ++p) {
                const __m256i pair = _mm256_or_si256(_mm256_and_si256(bytesI32(scales + 32 * p + 8 * half), _mm256_set1_epi32(0xffff)),
                                                     _mm256_slli_epi32(bytesI32(scales + 32 * p + 16 + 8 * half), 16));
                for (int t = 0; t < NT; ++t) {
                    int32_t sums;
                    std::memcpy(&sums, a[t][b].bsums + 2 * p, 4);
                    isum[hh][t] = _mm256_add_epi32(isum[hh][t], _mm256_madd_epi16(pair, _mm256_set1_epi32(sums)));
                }
            }
            for (__m256i& v : isum[hh]) v = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(v, 5));
        }
        // Chunk c's 6-bit weights of the 8 rows at byte offset `at` of each 64-byte line: low
        // nibbles and high-bit pairs P (kHigh: the high nibbles and pairs P + 2), all chosen at
        // compile time (chunks c < 16 take their high bits' pairs 0 and 2, the others 1 and 3).
        const auto weights6 = [&]<int c, bool kHigh>(uint64_t at) {
            const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * c + at));
            const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hbits + 64 * (c % 16) + at));
            if constexpr (kHigh)
                return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low4), highBits<(c < 16 ? 2 : 3)>(hb));
            else
                return _mm256_or_si256(_mm256_and_si256(raw, low4), highBits<(c < 16 ? 0 : 1)>(hb));
        };
        if constexpr (kVnni) {
            // Sub-blocks j and j + 8 (a load's low and high nibbles, one load of the high bits)
            // side by side, and the halves chunk by chunk: two vpdpbusd chains per token and
            // half, so that the chain's latency does not bound the issue rate, and each
            // activation broadcast feeds both halves.
            const auto pairOfSubBlocks = [&]<int j>() {
                __m256i slo[NH][NT], shi[NH][NT];
                for (int hh = 0; hh < NH; ++hh)
                    for (int t = 0; t < NT; ++t) slo[hh][t] = shi[hh][t] = _mm256_setzero_si256();
                const auto chunk = [&]<int c>() {
                    __m256i lo[NH], hi[NH];
                    for (int hh = 0; hh < NH; ++hh) {
                        const uint64_t at = 32 * uint64_t(half0 + hh);
                        lo[hh] = weights6.template operator()<c, false>(at);
                        hi[hh] = weights6.template operator()<c, true>(at);
                    }
                    for (int t = 0; t < NT; ++t) {
                        const int8_t* q = a[t][b].qs + 4 * c;
                        const __m256i qlo = bcast4(q), qhi = bcast4(q + 128);
                        for (int hh = 0; hh < NH; ++hh) {
                            slo[hh][t] = keep(dot4(slo[hh][t], lo[hh], qlo));
                            shi[hh][t] = keep(dot4(shi[hh][t], hi[hh], qhi));
                        }
                    }
                };
                chunk.template operator()<4 * j>();
                chunk.template operator()<4 * j + 1>();
                chunk.template operator()<4 * j + 2>();
                chunk.template operator()<4 * j + 3>();
                for (int hh = 0; hh < NH; ++hh) {
                    const uint64_t off = 8 * uint64_t(half0 + hh);
                    const __m256i sc0 = bytesI32(scales + 16 * j + off);
                    const __m256i sc1 = bytesI32(scales + 16 * (j + 8) + off);
                    for (int t = 0; t < NT; ++t)
                        isum[hh][t] = _mm256_add_epi32(isum[hh][t], _mm256_add_epi32(_mm256_mullo_epi32(slo[hh][t], sc0),
                                                                                     _mm256_mullo_epi32(shi[hh][t], sc1)));
                }
            };
            [&]<int... j>(std::integer_sequence<int, j...>) {
                (pairOfSubBlocks.template operator()<j>(), ...);
            }(std::make_integer_sequence<int, 8>{});
        } else {
            for (int hh = 0; hh < NH; ++hh) {
                const int half = half0 + hh;
                const uint64_t at = 32 * uint64_t(half);
                // Sub-block h of 16 columns: chunks 4(h % 8) .. + 3, their low nibbles for h < 8.
                const auto subBlock = [&]<int h>() {
                    constexpr int j = h % 8;
                    const __m256i sc = pairOf(bytesI32(scales + 16 * h + 8 * half));
                    // Two chunks' 16-bit sums at a time, then scaled into isum.
                    const auto twoChunks = [&]<int c>() {
                        const __m256i w0 = weights6.template operator()<c, (h >= 8)>(at);
                        const __m256i w1 = weights6.template operator()<c + 1, (h >= 8)>(at);
                        for (int t = 0; t < NT; ++t) {
                            const int8_t* q = a[t][b].qs + 4 * c + (h < 8 ? 0 : 128);
                            const __m256i s = keep(_mm256_add_epi16(_mm256_maddubs_epi16(w0, bcast4(q)), _mm256_maddubs_epi16(w1, bcast4(q + 4))));
                            isum[hh][t] = _mm256_add_epi32(isum[hh][t], _mm256_madd_epi16(s, sc));
                        }
                    };
                    twoChunks.template operator()<4 * j>();
                    twoChunks.template operator()<4 * j + 2>();
                };
                [&]<int... h>(std::integer_sequence<int, h...>) {
                    (subBlock.template operator()<h>(), ...);
                }(std::make_integer_sequence<int, 16>{});
            }
        }
        for (int hh = 0; hh < NH; ++hh) {
            const __m256 wd = halfs8(blk + 3328 + 16 * (half0 + hh));
            for (int t = 0; t < NT; ++t)
                accs[hh][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[hh][t]), _mm256_mul_ps(wd, _mm256_set1_ps(a[t][b].d)), accs[hh][t]);
        }
    }
    for (int hh = 0; hh < NH; ++hh) storeHalf<NT>(job, g, half0 + hh, j0, accs[hh]);
}

struct Q6KTile {
    static constexpr int kTokens = kVnni ? 4 : 5; // with VNNI, 5 took prompts (64 tokens) 8% longer
    template <int NT, int NH = 1> static void run(const PackedJob& j, int64_t g, int half, int64_t t) { tileQ6K<NT, NH>(j, g, half, t); }
};

// Up to how many tokens a tile takes both halves of a group in one pass (Tile::run<NT, 2>): a
// pass over one half reads half of each 64-byte line, and the second half's pass (from cache)
// leaves memory idle, which a decode step, bound by memory, cannot afford.
constexpr int64_t kOnePassTokens = 2;

// Tiles over groups [g0, g1) (each as its two halves; a last half of padding rows is skipped)
// and tokens [j0, j1), in panels of 64 tokens whose activations stay in L2 while the weights
// stream past. Only each half's first tile prefetches: the first streams the group from memory,
// and both prefetch half of what lies ahead (PackedJob::prefetchPart).
template <class Tile> void tiles(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1) {
    constexpr int64_t kPanel = 64;
    PackedJob again = job, first = job, second = job;
    again.prefetchBytes = 0;
    first.prefetchPart = 1;
    second.prefetchPart = 2;
    for (int64_t p0 = j0; p0 < j1; p0 += kPanel) {
        const int64_t p1 = p0 + kPanel < j1 ? p0 + kPanel : j1;
        for (int64_t g = g0; g < g1; ++g) {
            const bool twoHalves = 16 * g + 8 < job.rows;
            if (twoHalves && p1 - p0 <= kOnePassTokens) { // decode: the group read once, its halves side by side
                if (p1 - p0 == 2) Tile::template run<2, 2>(job, g, 0, p0);
                else Tile::template run<1, 2>(job, g, 0, p0);
                continue;
            }
            for (int half = 0; half < 2; ++half) {
                if (half == 1 && !twoHalves) break;
                const PackedJob* jb = !twoHalves ? &job : half == 0 ? &first : &second;
                int64_t j = p0;
                constexpr int kNT = Tile::kTokens;
                for (; j + kNT <= p1; j += kNT, jb = &again) Tile::template run<kNT>(*jb, g, half, j);
                switch (p1 - j) {
                case 4:
                    if constexpr (kNT > 4) Tile::template run<4>(*jb, g, half, j);
                    break;
                case 3:
                    if constexpr (kNT > 3) Tile::template run<3>(*jb, g, half, j);
                    break;
                case 2: Tile::template run<2>(*jb, g, half, j); break;
                case 1: Tile::template run<1>(*jb, g, half, j); break;
                default: break;
                }
            }
        }
    }
}

void packedGroups256(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1) {
    switch (job.type) {
    case quant::Type::Q8_0: return tiles<LegacyTile<Legacy::Q8_0>>(job, g0, g1, j0, j1);
    case quant::Type::Q5_0: return tiles<LegacyTile<Legacy::Q5_0>>(job, g0, g1, j0, j1);
    case quant::Type::IQ4_NL: return tiles<LegacyTile<Legacy::IQ4_NL>>(job, g0, g1, j0, j1);
    case quant::Type::MXFP4: return tiles<LegacyTile<Legacy::MXFP4>>(job, g0, g1, j0, j1);
    case quant::Type::Q4_K: return tiles<Q4KTile<false>>(job, g0, g1, j0, j1);
    case quant::Type::Q5_K: return tiles<Q4KTile<true>>(job, g0, g1, j0, j1);
    case quant::Type::Q6_K: return tiles<Q6KTile>(job, g0, g1, j0, j1);
    case quant::Type::IQ4_XS:
        if constexpr (!kVnni)
            if (j1 - j0 >= kIQ4XSWideFrom) return tilesIQ4XSWide(job, g0, g1, j0, j1);
        return tiles<IQ4XSTile>(job, g0, g1, j0, j1);
    default: return tiles<LegacyTile<Legacy::Q4_0>>(job, g0, g1, j0, j1);
    }
}

} // namespace

} // namespace hearth::cpu::kernels
