// The AVX-512 matMul level (compiled with AVX-512 F/BW/VL/VNNI, called only after a run-time
// check): 512-bit integer dot products (VNNI) for the quantized types, 512-bit FMA otherwise.
// GCC 12's AVX-512 headers self-initialize "undefined" vectors, which -Wuninitialized reports at
// every inlined cast/convert (GCC bug 105593, fixed in 12.3/13); silence that false positive here.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "backend/cpu/matmul_decode.h"
#include "backend/cpu/matmul_kernels.h"

#include <immintrin.h>

namespace hearth::cpu::kernels {

namespace {

using quant::Type;

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline __m256 fold(__m512 v) {
    return _mm256_add_ps(_mm512_castps512_ps256(v),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// ---- Float path: F32, F16 and any type dequantized to a float row --------------------------

inline void dot4(const float* const* w, int nr, const float* x, int64_t cols, float* out) {
    __m512 acc[4][2];
    for (int i = 0; i < 4; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 32 <= cols; c += 32) {
        const __m512 x0 = _mm512_loadu_ps(x + c), x1 = _mm512_loadu_ps(x + c + 16);
        for (int i = 0; i < 4; ++i) {
            if (i >= nr) break;
            acc[i][0] = _mm512_fmadd_ps(_mm512_loadu_ps(w[i] + c), x0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(_mm512_loadu_ps(w[i] + c + 16), x1, acc[i][1]);
        }
    }
    for (; c < cols; c += 16) {
        const int64_t left = cols - c;
        const __mmask16 m = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, x + c);
        for (int i = 0; i < nr; ++i)
            acc[i][0] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w[i] + c), x0, acc[i][0]);
    }
    for (int i = 0; i < nr; ++i) out[i] = hsum(fold(_mm512_add_ps(acc[i][0], acc[i][1])));
}

void f16Row(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(
                                      reinterpret_cast<const __m256i*>(src + i))));
    for (; i < n; ++i) dst[i] = fp16(src[i]);
}

// dot4's sums before their reduction: v[i] = acc[i][0] + acc[i][1] for rows i < NR and NT
// tokens x[t] (v[4t + i]), each lane summed exactly as dot4 sums it. The row count is a template
// argument so that the accumulators stay in registers.
template <int NT, int NR>
__attribute__((always_inline)) inline void sums4(const float* const* w, const float* const* x, int64_t cols, __m512* v) {
    __m512 acc[NT][NR][2];
    for (int t = 0; t < NT; ++t)
        for (int i = 0; i < NR; ++i) acc[t][i][0] = acc[t][i][1] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 32 <= cols; c += 32) {
        __m512 x0[NT], x1[NT];
        for (int t = 0; t < NT; ++t) {
            x0[t] = _mm512_loadu_ps(x[t] + c);
            x1[t] = _mm512_loadu_ps(x[t] + c + 16);
        }
        for (int i = 0; i < NR; ++i) {
            const __m512 w0 = _mm512_loadu_ps(w[i] + c), w1 = _mm512_loadu_ps(w[i] + c + 16);
            for (int t = 0; t < NT; ++t) {
                acc[t][i][0] = _mm512_fmadd_ps(w0, x0[t], acc[t][i][0]);
                acc[t][i][1] = _mm512_fmadd_ps(w1, x1[t], acc[t][i][1]);
            }
        }
    }
    for (; c < cols; c += 16) {
        const int64_t left = cols - c;
        const __mmask16 m = left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
        for (int i = 0; i < NR; ++i) {
            const __m512 w0 = _mm512_maskz_loadu_ps(m, w[i] + c);
            for (int t = 0; t < NT; ++t) acc[t][i][0] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, x[t] + c), acc[t][i][0]);
        }
    }
    for (int t = 0; t < NT; ++t)
        for (int i = 0; i < 4; ++i) v[4 * t + i] = i < NR ? _mm512_add_ps(acc[t][i][0], acc[t][i][1]) : _mm512_setzero_ps();
}

template <int NR>
__attribute__((always_inline)) inline void sums4x4(const float* const* w, const float* const* x, int64_t cols, __m512* v) {
    sums4<2, NR>(w, x, cols, v);
    sums4<2, NR>(w, x + 2, cols, v + 8);
}

// hsum(fold(v[k])) of 16 vectors at once, the same additions in the same tree (lanes l and l + 8,
// then l and l + 4, l and l + 2, l and l + 1), so each result equals dot4's bit for bit. With
// v[4t + i] the sums of row i and token t, it stores rows i < nr of token t at y + t·stride
// (from a register: the outputs are not written and read back at another width).
inline void reduce16(const __m512* v, float* y, int64_t stride, int nr) {
    __m512 s[8], t[4], u[2];
    for (int k = 0; k < 8; ++k) // [fold(v[2k]), fold(v[2k + 1])]
        s[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xee));
    for (int k = 0; k < 4; ++k) // 128-bit lane q: the 4 partial sums of vector 4k + q
        t[k] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * k], s[2 * k + 1], 0x88),
                             _mm512_shuffle_f32x4(s[2 * k], s[2 * k + 1], 0xdd));
    for (int k = 0; k < 2; ++k) // lane q: (l0 + l2, l1 + l3) of vector 8k + q, then of 8k + 4 + q
        u[k] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * k], t[2 * k + 1], 0x44),
                             _mm512_shuffle_ps(t[2 * k], t[2 * k + 1], 0xee));
    // Lane 4q + e of r holds vector 4e + q, that is row q of token e; reordered token by token.
    const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], 0x88), _mm512_shuffle_ps(u[0], u[1], 0xdd));
    const __m512 byToken =
        _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
    const __mmask8 m = __mmask8((1u << nr) - 1u);
    _mm_mask_storeu_ps(y, m, _mm512_extractf32x4_ps(byToken, 0));
    _mm_mask_storeu_ps(y + stride, m, _mm512_extractf32x4_ps(byToken, 1));
    _mm_mask_storeu_ps(y + 2 * stride, m, _mm512_extractf32x4_ps(byToken, 2));
    _mm_mask_storeu_ps(y + 3 * stride, m, _mm512_extractf32x4_ps(byToken, 3));
}

// Tokens [j0, j1) of rows [r0, r1).
void rowsFloatTokens(const Job& job, int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
    const int64_t cols = job.cols;
    float* buf = static_cast<float*>(threadScratch(size_t(4 * cols) * sizeof(float)));
    for (int64_t r = r0; r < r1; r += 4) {
        const int nr = int(imin(4, r1 - r));
        const float* wr[4] = {};
        for (int i = 0; i < nr; ++i) {
            const uint8_t* src = job.w + uint64_t(r + i) * job.rowBytes;
            if (job.type == Type::F32) {
                wr[i] = reinterpret_cast<const float*>(src);
                continue;
            }
            if (job.type == Type::F16)
                f16Row(reinterpret_cast<const uint16_t*>(src), buf + i * cols, cols);
            else dequantizeWeightRow(job, r + i, buf + i * cols);
            wr[i] = buf + i * cols;
        }
        int64_t j = j0;
        // Four tokens at a time: the weights are loaded once for two tokens and the 16 sums
        // reduced together; every output is bit for bit dot4's.
        for (; j + 4 <= j1; j += 4) {
            __m512 v[16];
            const float* x[4] = {job.x + j * cols, job.x + (j + 1) * cols, job.x + (j + 2) * cols, job.x + (j + 3) * cols};
            switch (nr) {
            case 4: sums4x4<4>(wr, x, cols, v); break;
            case 3: sums4x4<3>(wr, x, cols, v); break;
            case 2: sums4x4<2>(wr, x, cols, v); break;
            default: sums4x4<1>(wr, x, cols, v); break;
            }
            reduce16(v, job.y + j * job.rows + r, job.rows, nr);
        }
        for (; j < j1; ++j) dot4(wr, nr, job.x + j * cols, cols, job.y + j * job.rows + r);
    }
}

void rowsFloat(const Job& job, int64_t r0, int64_t r1) {
    const int64_t tb = floatTokenBlock(job.cols);
    for (int64_t j0 = 0; j0 < job.n; j0 += tb) rowsFloatTokens(job, r0, r1, j0, imin(job.n, j0 + tb));
}

// ---- Legacy types: blocks of 32 against ActQ8x32, VNNI byte dot products -------------------

template <typename Dec, int NA> void legacyTile(const Job& job, int64_t r, int64_t j0) {
    const int64_t nb = job.cols / 32;
    const uint8_t* wrow = job.w + uint64_t(r) * job.rowBytes;
    const ActQ8x32* a[NA];
    for (int t = 0; t < NA; ++t)
        a[t] = reinterpret_cast<const ActQ8x32*>(job.acts + uint64_t(j0 + t) * job.actRowBytes);
    __m256 acc[NA];
    float off[NA];
    for (int t = 0; t < NA; ++t) {
        acc[t] = _mm256_setzero_ps();
        off[t] = 0.0f;
    }
    for (int64_t b = 0; b < nb; ++b) {
        const LBlock lb = Dec::decode(wrow + uint64_t(b) * Dec::kBytes);
        const __m256i qa = Dec::kSigned ? _mm256_sign_epi8(lb.q, lb.q) : lb.q;
        for (int t = 0; t < NA; ++t) {
            __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t][b].qs));
            if (Dec::kSigned) av = _mm256_sign_epi8(av, lb.q);
            const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), qa, av);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(lb.d * a[t][b].d),
                                     acc[t]);
            if (!Dec::kSigned) off[t] += lb.c * a[t][b].s;
        }
    }
    for (int t = 0; t < NA; ++t) job.y[(j0 + t) * job.rows + r] = hsum(acc[t]) + off[t];
}

// ---- K types: super-blocks of 256 against ActQ8x256 ---------------------------------------

template <typename Dec, int NA> void kTile(const Job& job, int64_t r, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const uint8_t* wrow = job.w + uint64_t(r) * job.rowBytes;
    const ActQ8x256* a[NA];
    for (int t = 0; t < NA; ++t)
        a[t] = reinterpret_cast<const ActQ8x256*>(job.acts + uint64_t(j0 + t) * job.actRowBytes);
    __m512 acc[NA];
    __m256 accOff[NA];
    for (int t = 0; t < NA; ++t) {
        acc[t] = _mm512_setzero_ps();
        accOff[t] = _mm256_setzero_ps();
    }
    // For a 64-value chunk k, 16-bit lane l (values 2l, 2l+1) takes scale 4k + l/8.
    __m512i pick[4];
    for (int k = 0; k < 4; ++k) {
        alignas(64) int16_t idx[32];
        for (int l = 0; l < 32; ++l) idx[l] = int16_t(4 * k + l / 8);
        pick[k] = _mm512_load_si512(idx);
    }
    KBlock kb;
    for (int64_t b = 0; b < nb; ++b) {
        Dec::decode(wrow + uint64_t(b) * Dec::kBytes, kb);
        const __m512i sc =
            _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(kb.sc)));
        __m512i scv[4];
        for (int k = 0; k < 4; ++k) scv[k] = _mm512_permutexvar_epi16(pick[k], sc);
        const __m256i mn = _mm256_load_si256(reinterpret_cast<const __m256i*>(kb.mn));
        for (int t = 0; t < NA; ++t) {
            const ActQ8x256& ab = a[t][b];
            __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
            for (int k = 0; k < 4; k += 2) {
                const __m512i p0 = _mm512_maddubs_epi16(_mm512_load_si512(kb.q + 64 * k),
                                                        _mm512_load_si512(ab.qs + 64 * k));
                const __m512i p1 = _mm512_maddubs_epi16(_mm512_load_si512(kb.q + 64 * k + 64),
                                                        _mm512_load_si512(ab.qs + 64 * k + 64));
                s0 = _mm512_dpwssd_epi32(s0, p0, scv[k]);
                s1 = _mm512_dpwssd_epi32(s1, p1, scv[k + 1]);
            }
            const __m256i offi = _mm256_madd_epi16(
                _mm256_load_si256(reinterpret_cast<const __m256i*>(ab.bsums)), mn);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)),
                                     _mm512_set1_ps(kb.d * ab.d), acc[t]);
            accOff[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(offi), _mm256_set1_ps(kb.dm * ab.d),
                                        accOff[t]);
        }
    }
    for (int t = 0; t < NA; ++t)
        job.y[(j0 + t) * job.rows + r] = hsum(_mm256_sub_ps(fold(acc[t]), accOff[t]));
}

// ---- IQ4_XS: super-blocks of 256 against ActQ8x256 ----------------------------------------

// As the AVX2 kernel, 256 bits wide, with dpwssd fusing the scale multiply and the 32-bit sum
// (for one token on the AVX-512 EPYC it was measured on, faster than a 512-bit version with
// mask-negated activations and a two-source permute: 571 vs 639 us on a 2048x8192 matrix):
// |w| times the activations with w's sign (maddubs) per 32-value sub-block, weighted by its
// 6-bit scale; one float multiply by d * d_act per super-block.
template <typename, int NA> void iq4xsTile(const Job& job, int64_t r, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const auto* wrow =
        reinterpret_cast<const quant::BlockIQ4_XS*>(job.w + uint64_t(r) * job.rowBytes);
    const ActQ8x256* a[NA];
    for (int t = 0; t < NA; ++t)
        a[t] = reinterpret_cast<const ActQ8x256*>(job.acts + uint64_t(j0 + t) * job.actRowBytes);
    __m256 acc[NA];
    for (int t = 0; t < NA; ++t) acc[t] = _mm256_setzero_ps();
    const __m256i table = levelTable<quant::iq4Level>();
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    // Byte shuffles broadcasting 16-bit scale j to every lane.
    __m256i pick[8];
    for (int j = 0; j < 8; ++j) pick[j] = _mm256_set1_epi16(int16_t((2 * j + 1) << 8 | (2 * j)));
    for (int64_t b = 0; b < nb; ++b) {
        const quant::BlockIQ4_XS& blk = wrow[b];
        const __m256i scales = _mm256_broadcastsi128_si256(_mm256_cvtepi32_epi16(iq4xsScales(blk)));
        __m256i sum[NA];
        for (int t = 0; t < NA; ++t) sum[t] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j += 2) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 16 * j));
            const __m256i lo = _mm256_and_si256(v, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            const __m256i w[2] = {
                _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x20)),
                _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x31))};
            for (int i = 0; i < 2; ++i) {
                const __m256i wAbs = _mm256_sign_epi8(w[i], w[i]);
                const __m256i sc = _mm256_shuffle_epi8(scales, pick[j + i]);
                for (int t = 0; t < NA; ++t) {
                    const __m256i av = _mm256_load_si256(
                        reinterpret_cast<const __m256i*>(a[t][b].qs + 32 * (j + i)));
                    sum[t] = _mm256_dpwssd_epi32(
                        sum[t], _mm256_maddubs_epi16(wAbs, _mm256_sign_epi8(av, w[i])), sc);
                }
            }
        }
        const float d = fp16(blk.d);
        for (int t = 0; t < NA; ++t)
            acc[t] =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[t]), _mm256_set1_ps(d * a[t][b].d), acc[t]);
    }
    for (int t = 0; t < NA; ++t) job.y[(j0 + t) * job.rows + r] = hsum(acc[t]);
}

template <template <typename, int> class Tile, typename Dec>
void rowsTiled(const Job& job, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        int64_t j = 0;
        // Wide tiles decode each weight block once for 8 activation rows (prefill, batches).
        for (; j + 8 <= job.n; j += 8) Tile<Dec, 8>::run(job, r, j);
        for (; j + 4 <= job.n; j += 4) Tile<Dec, 4>::run(job, r, j);
        switch (job.n - j) {
        case 3: Tile<Dec, 3>::run(job, r, j); break;
        case 2: Tile<Dec, 2>::run(job, r, j); break;
        case 1: Tile<Dec, 1>::run(job, r, j); break;
        default: break;
        }
    }
}

template <typename Dec, int NA> struct LegacyTile {
    static void run(const Job& job, int64_t r, int64_t j) { legacyTile<Dec, NA>(job, r, j); }
};
template <typename Dec, int NA> struct KTile {
    static void run(const Job& job, int64_t r, int64_t j) { kTile<Dec, NA>(job, r, j); }
};
template <typename Dec, int NA> struct Iq4XsTile {
    static void run(const Job& job, int64_t r, int64_t j) { iq4xsTile<Dec, NA>(job, r, j); }
};

ActKind actKindAvx512(Type t) {
    switch (t) {
    case Type::Q4_0: case Type::Q4_1: case Type::Q5_0: case Type::Q5_1: case Type::Q8_0:
    case Type::IQ4_NL: case Type::MXFP4:
        return ActKind::Q8x32;
    case Type::Q2_K: case Type::Q3_K: case Type::Q4_K: case Type::Q5_K: case Type::Q6_K:
    case Type::IQ4_XS: case Type::IQ2_XXS: case Type::IQ2_XS: case Type::IQ2_S:
    case Type::IQ3_XXS: case Type::IQ3_S: case Type::IQ1_S: case Type::IQ1_M: case Type::TQ1_0:
    case Type::TQ2_0:
        return ActKind::Q8x256;
    default: return ActKind::Float;
    }
}

void rowsAvx512(const Job& job, int64_t r0, int64_t r1) {
    switch (job.act == ActKind::Float ? Type::F32 : job.type) {
    case Type::Q4_0: return rowsTiled<LegacyTile, DecQ4_0>(job, r0, r1);
    case Type::Q4_1: return rowsTiled<LegacyTile, DecQ4_1>(job, r0, r1);
    case Type::Q5_0: return rowsTiled<LegacyTile, DecQ5_0>(job, r0, r1);
    case Type::Q5_1: return rowsTiled<LegacyTile, DecQ5_1>(job, r0, r1);
    case Type::Q8_0: return rowsTiled<LegacyTile, DecQ8_0>(job, r0, r1);
    case Type::Q2_K: return rowsTiled<KTile, DecQ2K>(job, r0, r1);
    case Type::Q3_K: return rowsTiled<KTile, DecQ3K>(job, r0, r1);
    case Type::Q4_K: return rowsTiled<KTile, DecQ4K>(job, r0, r1);
    case Type::Q5_K: return rowsTiled<KTile, DecQ5K>(job, r0, r1);
    case Type::Q6_K: return rowsTiled<KTile, DecQ6K>(job, r0, r1);
    case Type::IQ4_NL: return rowsTiled<LegacyTile, DecIQ4NL>(job, r0, r1);
    case Type::MXFP4: return rowsTiled<LegacyTile, DecMXFP4>(job, r0, r1);
    case Type::IQ4_XS: return rowsTiled<Iq4XsTile, void>(job, r0, r1);
    case Type::IQ2_XXS: case Type::IQ2_XS: case Type::IQ2_S: case Type::IQ3_XXS:
    case Type::IQ3_S: case Type::IQ1_S: case Type::IQ1_M: case Type::TQ1_0: case Type::TQ2_0:
        return rowsIqGridAvx2(job, r0, r1);
    default: return rowsFloat(job, r0, r1);
    }
}

// Quantizes 16·k floats with the scale id (x·id rounded to nearest even, clamped to ±127) into
// q; returns the int32 lane sums of the values.
inline __m512i quantize16(const float* x, __m512 id, int8_t* q) {
    __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), id));
    v = _mm512_max_epi32(_mm512_min_epi32(v, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(v));
    return v;
}

inline float absMax(const float* x, int64_t n) {
    __m512 m = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
    return _mm512_reduce_max_ps(m);
}

} // namespace

void quantizeRow32Avx512(const float* x, ActQ8x32* out, int64_t cols) {
    for (int64_t b = 0; b < cols / 32; ++b, x += 32) {
        const float amax = absMax(x, 32);
        const float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
        const __m512 idv = _mm512_set1_ps(id);
        const __m512i s = _mm512_add_epi32(quantize16(x, idv, out[b].qs),
                                           quantize16(x + 16, idv, out[b].qs + 16));
        out[b].d = d;
        out[b].s = d * float(_mm512_reduce_add_epi32(s));
    }
}

void quantizeRow256Avx512(const float* x, ActQ8x256* out, int64_t cols) {
    for (int64_t b = 0; b < cols / 256; ++b, x += 256) {
        const float amax = absMax(x, 256);
        const __m512 idv = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        for (int g = 0; g < 16; ++g)
            out[b].bsums[g] =
                int16_t(_mm512_reduce_add_epi32(quantize16(x + 16 * g, idv, out[b].qs + 16 * g)));
        for (int j = 0; j < 8; ++j) out[b].sums32[j] = int16_t(out[b].bsums[2 * j] + out[b].bsums[2 * j + 1]);
        out[b].d = amax / 127.0f;
    }
}

const IsaKernels& avx512Kernels() {
    static const IsaKernels k{&actKindAvx512, &rowsAvx512};
    return k;
}

} // namespace hearth::cpu::kernels
