// The 256-bit IQ4_XS kernels (repack_avx2_kernels.h): the tile on signed levels (vpsignb and
// vpmaddubsw without VNNI, levels + 128 with it), and without VNNI the prompts' form on levels
// times scales widened to 16 bits. Internal linkage: each level's file compiles its own copy.
#pragma once

#include "backend/cpu/repack_avx2_simd.h"
#include "quant/blocks.h"

#include <cstring>
#include <immintrin.h>
#include <vector>

namespace hearth::cpu::kernels {

namespace {

// ---- IQ4_XS: super-blocks of 256 against ActQ8x256 --------------------------------------------

// As Q4_K with the nibbles looked up in IQ4's levels and signed 6-bit scales, no mins. VNNI: the
// levels + 128, the offset removed with the activation sums; AVX2: signed levels, their signs
// moved onto the activations.
template <int NT, int NH = 1> void tileIQ4XS(const PackedJob& job, int64_t g, int half0, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x256* a[NT];
    __m256 accs[NH][NT];
    tokenRows(job, j0, a);
    for (auto& r : accs)
        for (__m256& v : r) v = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    alignas(16) int8_t table[16];
    for (int i = 0; i < 16; ++i) table[i] = int8_t(quant::iq4Level(i) + (kVnni ? 128 : 0));
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + uint64_t(b) * kIQ4XSBlockBytes;
        prefetchFor(job, grp, blk, kIQ4XSBlockBytes);
        for (int hh = 0; hh < NH; ++hh) { // the tile's halves, one pass over the blocks
            const int half = half0 + hh;
            const uint64_t at = 32 * uint64_t(half);
            __m256* acc = accs[hh];
            __m256i isum[NT];
            for (__m256i& v : isum) v = _mm256_setzero_si256();
            if constexpr (kVnni) {
                // isum starts at -128·Σ_sb sc_sb·(Σ q_a over sub-block sb), the levels' offset: vpmaddwd
                // of the rows' scale pairs (sc_2p, sc_2p+1) by the activations' sums32 pairs.
                for (int p = 0; p < 4; ++p) {
                    const uint8_t* sc = blk + kQ4KPayload + 32 + 8 * half;
                    const __m256i pair = _mm256_or_si256(_mm256_and_si256(bytesI32(sc + 32 * p), _mm256_set1_epi32(0xffff)),
                                                         _mm256_slli_epi32(bytesI32(sc + 32 * p + 16), 16));
                    for (int t = 0; t < NT; ++t) {
                        int32_t sums;
                        std::memcpy(&sums, a[t][b].sums32 + 2 * p, 4);
                        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(pair, _mm256_set1_epi32(sums)));
                    }
                }
                for (__m256i& v : isum) v = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(v, 7));
                // Sub-blocks 2c and 2c + 1 (a chunk's low and high nibbles) side by side: two chains
                // of vpdpbusd per token, so that its latency does not bound the issue rate.
                for (int c = 0; c < 4; ++c) {
                    __m256i slo[NT], shi[NT];
                    for (int t = 0; t < NT; ++t) slo[t] = shi[t] = _mm256_setzero_si256();
                    for (int k = 0; k < 8; ++k) {
                        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * (8 * c + k) + at));
                        const __m256i lo = _mm256_shuffle_epi8(levels, _mm256_and_si256(raw, low4));
                        const __m256i hi = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
                        for (int t = 0; t < NT; ++t) {
                            const int8_t* q = a[t][b].qs + 64 * c + 4 * k;
                            slo[t] = dot4(slo[t], lo, bcast4(q));
                            shi[t] = dot4(shi[t], hi, bcast4(q + 32));
                        }
                    }
                    const __m256i sc0 = bytesI32(blk + kQ4KPayload + 32 + 16 * (2 * c) + 8 * half);
                    const __m256i sc1 = bytesI32(blk + kQ4KPayload + 32 + 16 * (2 * c + 1) + 8 * half);
                    for (int t = 0; t < NT; ++t)
                        isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_mullo_epi32(slo[t], sc0), _mm256_mullo_epi32(shi[t], sc1)));
                }
            } else {
                for (int sb = 0; sb < 8; ++sb) {
                    const int c = sb / 2, hi = sb % 2;
                    const __m256i sc16 = pairOf(bytesI32(blk + kQ4KPayload + 32 + 16 * sb + 8 * half));
                    for (int k = 0; k < 8; ++k) {
                        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * (8 * c + k) + at));
                        const __m256i w = _mm256_shuffle_epi8(levels, _mm256_and_si256(hi ? _mm256_srli_epi16(raw, 4) : raw, low4));
                        const __m256i wAbs = _mm256_sign_epi8(w, w);
                        for (int t = 0; t < NT; ++t) {
                            const __m256i q = _mm256_sign_epi8(bcast4(a[t][b].qs + 64 * c + 32 * hi + 4 * k), w);
                            isum[t] = keep(_mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(wAbs, q), sc16)));
                        }
                    }
                }
            }
            const __m256 wd = halfs8(blk + kQ4KPayload + 16 * half);
            for (int t = 0; t < NT; ++t)
                acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(wd, _mm256_set1_ps(a[t][b].d)), acc[t]);
        }
    }
    for (int hh = 0; hh < NH; ++hh) storeHalf<NT>(job, g, half0 + hh, j0, accs[hh]);
}

struct IQ4XSTile {
    static constexpr int kTokens = 5;
    template <int NT, int NH = 1> static void run(const PackedJob& j, int64_t g, int half, int64_t t) { tileIQ4XS<NT, NH>(j, g, half, t); }
};

// Without VNNI, prompts (kIQ4XSWideFrom tokens or more) take IQ4_XS another way: a half-group's levels times
// their sub-block scales as 16-bit integers (|level · scale| <= 127 · 32), written once per panel
// of tokens into a buffer, against the activations widened to 16 bits, so that 32 products of a
// token are two vpmaddwd and two adds (the signed form above needs vpsignb, vpmaddubsw and
// vpmaddwd, three multiplier-port instructions). Sums are exact in 32 bits (256 · 4064 · 127 <
// 2^31) and equal the form above's, so both give the same bits. In each 4-column group the
// columns are stored as (0, 2, 1, 3): a 32-bit lane of the even 16-bit halves pairs columns 0
// and 2 of a row, the odd halves 1 and 3.
struct WideIQ4XS {
    std::vector<int16_t> acts;    // tiles of 8 tokens interleaved by 4-column groups (widenActs)
    std::vector<int16_t> weights; // [block][column group m][even 8 rows × 2, odd 8 rows × 2]
};

inline WideIQ4XS& wideIQ4XSBuffers() {
    thread_local WideIQ4XS b;
    return b;
}

// The activations of tokens [j0, j0 + n) as 16-bit integers in the order above, interleaved by
// tiles of 8 tokens: token t's column group mg (columns 4mg..4mg + 3) at
// out[(t / 8) · 8 · cols + 32 · mg + 4 · (t % 8)], so that a tile reads one 64-byte line per
// column group.
inline void widenActs(const PackedJob& job, int64_t j0, int64_t n, int16_t* out) {
    const int64_t nb = job.cols / 256;
    const __m256i order = _mm256_setr_epi8(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15,
                                           0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15);
    for (int64_t t = 0; t < n; ++t) {
        const ActQ8x256* a = reinterpret_cast<const ActQ8x256*>(job.acts + uint64_t(j0 + t) * job.actRowBytes);
        int16_t* o = out + (t / 8) * 8 * job.cols + 4 * (t % 8);
        for (int64_t b = 0; b < nb; ++b)
            for (int i = 0; i < 256; i += 32) {
                const __m256i q = _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].qs + i)), order);
                const __m256i lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q));
                const __m256i hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1));
                int16_t* d = o + 8 * (256 * b + i);
                _mm_storel_epi64(reinterpret_cast<__m128i*>(d), _mm256_castsi256_si128(lo));
                _mm_storeh_pd(reinterpret_cast<double*>(d + 32), _mm_castsi128_pd(_mm256_castsi256_si128(lo)));
                _mm_storel_epi64(reinterpret_cast<__m128i*>(d + 64), _mm256_extracti128_si256(lo, 1));
                _mm_storeh_pd(reinterpret_cast<double*>(d + 96), _mm_castsi128_pd(_mm256_extracti128_si256(lo, 1)));
                _mm_storel_epi64(reinterpret_cast<__m128i*>(d + 128), _mm256_castsi256_si128(hi));
                _mm_storeh_pd(reinterpret_cast<double*>(d + 160), _mm_castsi128_pd(_mm256_castsi256_si128(hi)));
                _mm_storel_epi64(reinterpret_cast<__m128i*>(d + 192), _mm256_extracti128_si256(hi, 1));
                _mm_storeh_pd(reinterpret_cast<double*>(d + 224), _mm_castsi128_pd(_mm256_extracti128_si256(hi, 1)));
            }
    }
}

// Half `half` of group g: each block's 64 column groups m (columns 4m.. of the super-block; the
// packed chunk 8c + k holds m = 16c + k in its low nibbles and 16c + 8 + k in its high ones) as
// two registers, the even and odd columns' 16-bit products level · scale.
inline void widenWeights(const PackedJob& job, int64_t g, int half, int16_t* out) {
    const int64_t nb = job.cols / 256;
    const uint64_t at = 32 * uint64_t(half);
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    alignas(16) int8_t table[16];
    for (int i = 0; i < 16; ++i) table[i] = int8_t(quant::iq4Level(i));
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = grp + uint64_t(b) * kIQ4XSBlockBytes;
        prefetchFor(job, grp, blk, kIQ4XSBlockBytes);
        int16_t* ob = out + b * 64 * 32;
        for (int c = 0; c < 4; ++c) {
            const __m256i sc0 = pairOf(bytesI32(blk + kQ4KPayload + 32 + 16 * (2 * c) + 8 * half));
            const __m256i sc1 = pairOf(bytesI32(blk + kQ4KPayload + 32 + 16 * (2 * c + 1) + 8 * half));
            for (int k = 0; k < 8; ++k) {
                const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * (8 * c + k) + at));
                const __m256i lo = _mm256_shuffle_epi8(levels, _mm256_and_si256(raw, low4));
                const __m256i hi = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
                int16_t* o0 = ob + (16 * c + k) * 32;
                int16_t* o1 = ob + (16 * c + 8 + k) * 32;
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(o0), _mm256_mullo_epi16(_mm256_srai_epi16(_mm256_slli_epi16(lo, 8), 8), sc0));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(o0 + 16), _mm256_mullo_epi16(_mm256_srai_epi16(lo, 8), sc0));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(o1), _mm256_mullo_epi16(_mm256_srai_epi16(_mm256_slli_epi16(hi, 8), 8), sc1));
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(o1 + 16), _mm256_mullo_epi16(_mm256_srai_epi16(hi, 8), sc1));
            }
        }
    }
}

// The 32-bit lane at p (two 16-bit values) in every lane.
inline __m256i bcastPair(const int16_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// Half `half` of group g by NT tokens from j0, on the widened weights and the tokens' widened
// activations (acts: the tile's 8-token interleave, of which the first NT are used).
template <int NT> void tileIQ4XSWide(const PackedJob& job, int64_t g, int half, const int16_t* wide, const int16_t* acts,
                                     int64_t j0) {
    const int64_t nb = job.cols / 256;
    const uint8_t* grp = job.w + uint64_t(g) * job.groupBytes;
    const ActQ8x256* a[NT];
    __m256 acc[NT];
    tokenRows(job, j0, a);
    for (__m256& v : acc) v = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const int16_t* wb = wide + b * 64 * 32;
        const int16_t* ab = acts + 8 * 256 * b;
        __m256i isum[NT];
        for (__m256i& v : isum) v = _mm256_setzero_si256();
        for (int m = 0; m < 64; ++m) {
            const __m256i even = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 32 * m));
            const __m256i odd = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 32 * m + 16));
            for (int t = 0; t < NT; ++t) {
                const int16_t* q = ab + 32 * m + 4 * t;
                isum[t] = keep(_mm256_add_epi32(isum[t], _mm256_madd_epi16(even, bcastPair(q))));
                isum[t] = keep(_mm256_add_epi32(isum[t], _mm256_madd_epi16(odd, bcastPair(q + 2))));
            }
        }
        const __m256 wd = halfs8(grp + uint64_t(b) * kIQ4XSBlockBytes + kQ4KPayload + 16 * half);
        for (int t = 0; t < NT; ++t)
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(wd, _mm256_set1_ps(a[t][b].d)), acc[t]);
    }
    storeHalf<NT>(job, g, half, j0, acc);
}

// Tiles of tileIQ4XSWide over groups [g0, g1) and tokens [j0, j1) (at least 4), in panels of 64
// tokens: each half-group is widened once per panel (its first widening streams it from memory,
// with the prefetch), then 8 tokens at a time (8 accumulators, two weight registers). The
// activations come widened in job.wideActs (j0 then a multiple of 8), or are widened here.
inline void tilesIQ4XSWide(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1) {
    constexpr int64_t kPanel = 64;
    constexpr int kNT = 8;
    WideIQ4XS& buf = wideIQ4XSBuffers();
    const int64_t span = j1 - j0 < kPanel ? j1 - j0 : kPanel;
    const int64_t tiled = (span + kNT - 1) / kNT * kNT;
    if (!job.wideActs && buf.acts.size() < uint64_t(tiled * job.cols)) buf.acts.resize(uint64_t(tiled * job.cols));
    if (buf.weights.size() < uint64_t(job.cols * 8)) buf.weights.resize(uint64_t(job.cols * 8));
    PackedJob again = job;
    again.prefetchBytes = 0;
    for (int64_t p0 = j0; p0 < j1; p0 += kPanel) {
        const int64_t p1 = p0 + kPanel < j1 ? p0 + kPanel : j1;
        const int16_t* panel = job.wideActs ? job.wideActs + p0 * job.cols : buf.acts.data();
        if (!job.wideActs) widenActs(job, p0, p1 - p0, buf.acts.data());
        for (int64_t g = g0; g < g1; ++g)
            for (int half = 0; half < 2; ++half) {
                if (half == 1 && 16 * g + 8 >= job.rows) break;
                widenWeights(p0 == j0 ? job : again, g, half, buf.weights.data());
                int64_t j = p0;
                for (; j + kNT <= p1; j += kNT) tileIQ4XSWide<kNT>(job, g, half, buf.weights.data(), panel + (j - p0) * job.cols, j);
                const int16_t* w = buf.weights.data();
                const int16_t* q = panel + (j - p0) * job.cols;
                switch (p1 - j) {
                case 7: tileIQ4XSWide<7>(job, g, half, w, q, j); break;
                case 6: tileIQ4XSWide<6>(job, g, half, w, q, j); break;
                case 5: tileIQ4XSWide<5>(job, g, half, w, q, j); break;
                case 4: tileIQ4XSWide<4>(job, g, half, w, q, j); break;
                case 3: tileIQ4XSWide<3>(job, g, half, w, q, j); break;
                case 2: tileIQ4XSWide<2>(job, g, half, w, q, j); break;
                case 1: tileIQ4XSWide<1>(job, g, half, w, q, j); break;
                default: break;
                }
            }
    }
}

} // namespace

} // namespace hearth::cpu::kernels
