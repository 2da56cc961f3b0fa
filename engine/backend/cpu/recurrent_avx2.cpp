// The AVX2 + FMA level of the recurrent kernels (compiled with -mavx2 -mfma, called only after a
// run-time check): the bodies of recurrent_simd.h over 8-float registers.
#include "backend/cpu/recurrent_simd.h"

#include <immintrin.h>

namespace hearth::cpu::kernels {

namespace {

struct V8 {
    using T = __m256;
    static constexpr int W = 8;
    static T load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
    static T set1(float v) { return _mm256_set1_ps(v); }
    static T zero() { return _mm256_setzero_ps(); }
    static T add(T a, T b) { return _mm256_add_ps(a, b); }
    static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
    static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
    static float hsum(T v) {
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        s = _mm_add_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }
};

} // namespace

const RecurrentKernels& recurrentAvx2() {
    static const RecurrentKernels k = simd::table<V8>("avx2");
    return k;
}

} // namespace hearth::cpu::kernels
