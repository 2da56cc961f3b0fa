// The 256-bit kernels' shared pieces (repack_avx2_kernels.h): the level's dot product (vpdpbusd with
// AVX-VNNI, vpmaddubsw and vpmaddwd without), broadcasts, the weight prefetch, stores of a tile's
// outputs. Internal linkage: each level's file compiles its own copy.
#pragma once

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/repack.h"

#include <cstring>
#include <immintrin.h>

namespace hearth::cpu::kernels {

namespace {

#if defined(__AVXVNNI__)
constexpr bool kVnni = true;
#else
constexpr bool kVnni = false;
#endif

// Software prefetch of [p, p + bytes) into L1 (see repack_avx512.cpp: decode streams every weight
// once per step; one core keeps too few misses in flight without it). Always inlined, as is
// prefetchFor: called, GCC took these for functions without effects and removed the calls
// (test cpu_kernel_prefetch).
[[gnu::always_inline]] inline void prefetchLines(const uint8_t* p, uint64_t bytes) {
    for (uint64_t o = 0; o < bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
}

// The prefetch for the bytes [at, at + bytes) of group grp, read by this pass (see
// PackedJob::prefetchPart): the same span prefetchBytes ahead, or half of it in this pass's half.
[[gnu::always_inline]] inline void prefetchFor(const PackedJob& job, const uint8_t* grp, const uint8_t* at, uint64_t bytes) {
    if (!job.prefetchBytes) return;
    if (job.prefetchPart == 0) return prefetchLines(at + job.prefetchBytes, bytes);
    const uint64_t from = uint64_t(at - grp) / 2 + (job.prefetchPart == 2 ? job.groupBytes / 2 : 0);
    prefetchLines(grp + job.prefetchBytes + (from & ~uint64_t(63)), (bytes / 2 + 63) & ~uint64_t(63));
}

// The 4 signed bytes at p in every 32-bit lane.
inline __m256i bcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// acc + Σ over each lane's 4 bytes of w (unsigned) × a (signed). Without VNNI only for w <= 127
// (vpmaddubsw's pair sums must not saturate).
inline __m256i dot4(__m256i acc, __m256i w, __m256i a) {
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, w, a);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1)));
#endif
}

// v, unchanged, but opaque to the optimiser: GCC reassociates a chain of integer adds over the
// chunks into a tree of all the tokens' products, which spills most of them to the stack; one of
// these after each add keeps the chain (and the registers) as written.
inline __m256i keep(__m256i v) {
    __asm__("" : "+x"(v));
    return v;
}

// Each lane's 8-bit value as an int16 pair (v, v): vpmaddwd by it scales a pair sum by v.
inline __m256i pairOf(__m256i v32) { return _mm256_or_si256(_mm256_and_si256(v32, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v32, 16)); }

template <typename Act, int NT> inline void tokenRows(const PackedJob& job, int64_t j0, const Act* (&a)[NT]) {
    for (int t = 0; t < NT; ++t) a[t] = reinterpret_cast<const Act*>(job.acts + uint64_t(j0 + t) * job.actRowBytes);
}

// y[j0 + t][16g + 8half .. + 7] = acc[t], leaving out the last group's padding rows.
template <int NT> inline void storeHalf(const PackedJob& job, int64_t g, int half, int64_t j0, const __m256* acc) {
    const int64_t r0 = g * 16 + 8 * half, left = job.rows - r0;
    if (left >= 8) {
        for (int t = 0; t < NT; ++t) _mm256_storeu_ps(job.y + (j0 + t) * job.rows + r0, acc[t]);
        return;
    }
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(left)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int t = 0; t < NT; ++t) _mm256_maskstore_ps(job.y + (j0 + t) * job.rows + r0, m, acc[t]);
}

// 8 rows' fp16 scales at p as floats.
inline __m256 halfs8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// 8 bytes at p, each widened to a 32-bit lane (signed or unsigned).
inline __m256i bytesU32(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
inline __m256i bytesI32(const uint8_t* p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }

} // namespace

} // namespace hearth::cpu::kernels
