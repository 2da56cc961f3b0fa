// The AVX-512 level of the recurrent kernels (compiled with -mavx512f and the AVX2 flags, called
// only after a run-time check): the bodies of recurrent_simd.h over 16-float registers, so that a
// 128-wide row of a delta-net state fits in eight of them.
#include "backend/cpu/recurrent_simd.h"

// GCC 12's AVX-512 header fills the unused lanes of its 512 → 256-bit extracts from a
// self-initialized variable, which -Wuninitialized reports wherever they are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace hearth::cpu::kernels {

namespace {

struct V16 {
    using T = __m512;
    static constexpr int W = 16;
    static T load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
    static T set1(float v) { return _mm512_set1_ps(v); }
    static T zero() { return _mm512_setzero_ps(); }
    static T add(T a, T b) { return _mm512_add_ps(a, b); }
    static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
    static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
    static float hsum(T v) {
        const __m256 lo = _mm512_castps512_ps256(v);
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
        const __m256 h = _mm256_add_ps(lo, hi);
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
};

} // namespace

const RecurrentKernels& recurrentAvx512() {
    static const RecurrentKernels k = simd::table<V16>("avx512");
    return k;
}

} // namespace hearth::cpu::kernels
