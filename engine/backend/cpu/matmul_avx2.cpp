// The AVX2 matMul level (compiled with -mavx2 -mfma -mf16c, called only after a run-time check):
// 8-bit integer dot products against quantized activations for the quantized types (table
// formats through a byte shuffle), FMA float dot products for F32/F16 and for the generic
// dequantize-a-row path.
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

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// ---- Float path: F32, F16 and any type dequantized to a float row --------------------------

// s plus the columns [c, cols) that the vector loops leave, one at a time (dot4 and the 4-token
// form end their sums with this same code).
inline float tailDot(float s, const float* w, const float* x, int64_t c, int64_t cols) {
    for (; c < cols; ++c) s += w[c] * x[c];
    return s;
}

// Dot products of nr (<= 4) weight rows with one activation row.
inline void dot4(const float* const* w, int nr, const float* x, int64_t cols, float* out) {
    __m256 acc[4][2];
    for (int i = 0; i < 4; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
        const __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
        for (int i = 0; i < 4; ++i) {
            if (i >= nr) break;
            acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(w[i] + c), x0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(_mm256_loadu_ps(w[i] + c + 8), x1, acc[i][1]);
        }
    }
    for (; c + 8 <= cols; c += 8) {
        const __m256 x0 = _mm256_loadu_ps(x + c);
        for (int i = 0; i < nr; ++i)
            acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(w[i] + c), x0, acc[i][0]);
    }
    for (int i = 0; i < nr; ++i) out[i] = tailDot(hsum(_mm256_add_ps(acc[i][0], acc[i][1])), w[i], x, c, cols);
}

// dot4's sums before their reduction for rows w[0], w[1] and tokens x[0], x[1]:
// v[2t + i] = acc[i][0] + acc[i][1], each lane summed exactly as dot4 sums it.
inline void sums2x2(const float* const* w, const float* const* x, int64_t cols, __m256* v) {
    __m256 acc[2][2][2];
    for (auto& t : acc)
        for (auto& i : t) i[0] = i[1] = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 16 <= cols; c += 16) {
        const __m256 x00 = _mm256_loadu_ps(x[0] + c), x01 = _mm256_loadu_ps(x[0] + c + 8);
        const __m256 x10 = _mm256_loadu_ps(x[1] + c), x11 = _mm256_loadu_ps(x[1] + c + 8);
        for (int i = 0; i < 2; ++i) {
            const __m256 w0 = _mm256_loadu_ps(w[i] + c), w1 = _mm256_loadu_ps(w[i] + c + 8);
            acc[0][i][0] = _mm256_fmadd_ps(w0, x00, acc[0][i][0]);
            acc[0][i][1] = _mm256_fmadd_ps(w1, x01, acc[0][i][1]);
            acc[1][i][0] = _mm256_fmadd_ps(w0, x10, acc[1][i][0]);
            acc[1][i][1] = _mm256_fmadd_ps(w1, x11, acc[1][i][1]);
        }
    }
    for (; c + 8 <= cols; c += 8)
        for (int i = 0; i < 2; ++i) {
            const __m256 w0 = _mm256_loadu_ps(w[i] + c);
            for (int t = 0; t < 2; ++t) acc[t][i][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[t] + c), acc[t][i][0]);
        }
    for (int t = 0; t < 2; ++t)
        for (int i = 0; i < 2; ++i) v[2 * t + i] = _mm256_add_ps(acc[t][i][0], acc[t][i][1]);
}

// hsum of 8 vectors at once, the same additions in the same tree (lanes l and l + 4, then l and
// l + 2, then l and l + 1), so each result equals hsum's bit for bit. Lane 4q + e of the result
// holds hsum(v[2e + q]).
inline __m256 reduce8(const __m256* v) {
    __m256 t[4], u[2];
    for (int k = 0; k < 4; ++k) // 128-bit lane q: the 4 partial sums of vector 2k + q
        t[k] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x20),
                             _mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x31));
    for (int k = 0; k < 2; ++k) // lane q: (l0 + l2, l1 + l3) of vector 4k + q, then of 4k + 2 + q
        u[k] = _mm256_add_ps(_mm256_shuffle_ps(t[2 * k], t[2 * k + 1], 0x44),
                             _mm256_shuffle_ps(t[2 * k], t[2 * k + 1], 0xee));
    return _mm256_add_ps(_mm256_shuffle_ps(u[0], u[1], 0x88), _mm256_shuffle_ps(u[0], u[1], 0xdd));
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
            if (job.type == Type::F16) f16RowAvx2(reinterpret_cast<const uint16_t*>(src), buf + i * cols, cols);
            else dequantizeWeightRow(job, r + i, buf + i * cols);
            wr[i] = buf + i * cols;
        }
        int64_t j = j0;
        // Four rows by two tokens at a time: each weight loaded once for both tokens and the 8
        // sums reduced together; every output is bit for bit dot4's.
        if (nr == 4)
            for (; j + 2 <= j1; j += 2) {
                const float* x[2] = {job.x + j * cols, job.x + (j + 1) * cols};
                __m256 v[8];
                sums2x2(wr, x, cols, v);         // rows 0, 1: v[2t + i]
                sums2x2(wr + 2, x, cols, v + 4); // rows 2, 3: v[4 + 2t + i]
                // Rows 0..3 of token 0, then of token 1 (see reduce8's lanes).
                const __m256 s = _mm256_permutevar8x32_ps(reduce8(v), _mm256_setr_epi32(0, 4, 2, 6, 1, 5, 3, 7));
                float* y0 = job.y + j * job.rows + r;
                float* y1 = y0 + job.rows;
                if (cols % 8 == 0) { // stored from the register: not written and read back at another width
                    _mm_storeu_ps(y0, _mm256_castps256_ps128(s));
                    _mm_storeu_ps(y1, _mm256_extractf128_ps(s, 1));
                    continue;
                }
                alignas(32) float sum[8];
                _mm256_store_ps(sum, s);
                for (int i = 0; i < 4; ++i) {
                    y0[i] = tailDot(sum[i], wr[i], x[0], cols / 8 * 8, cols);
                    y1[i] = tailDot(sum[4 + i], wr[i], x[1], cols / 8 * 8, cols);
                }
            }
        for (; j < j1; ++j) dot4(wr, nr, job.x + j * cols, cols, job.y + j * job.rows + r);
    }
}

void rowsFloat(const Job& job, int64_t r0, int64_t r1) {
    const int64_t tb = floatTokenBlock(job.cols);
    for (int64_t j0 = 0; j0 < job.n; j0 += tb) rowsFloatTokens(job, r0, r1, j0, imin(job.n, j0 + tb));
}

// ---- Legacy types: blocks of 32 against ActQ8x32 ------------------------------------------

// One weight row against NA activation rows starting at j0.
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
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
        const LBlock lb = Dec::decode(wrow + uint64_t(b) * Dec::kBytes);
        const __m256i qa = Dec::kSigned ? _mm256_sign_epi8(lb.q, lb.q) : lb.q;
        for (int t = 0; t < NA; ++t) {
            __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t][b].qs));
            if (Dec::kSigned) av = _mm256_sign_epi8(av, lb.q);
            const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(qa, av), ones);
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
    __m256 acc[NA];
    for (int t = 0; t < NA; ++t) acc[t] = _mm256_setzero_ps();
    // Shuffle masks giving, for a 32-value chunk, scale 2k in the low lane and 2k+1 in the high.
    __m256i pick[4];
    for (int k = 0; k < 4; ++k)
        pick[k] = _mm256_set_m128i(_mm_set1_epi16(int16_t((4 * k + 3) << 8 | (4 * k + 2))),
                                   _mm_set1_epi16(int16_t((4 * k + 1) << 8 | (4 * k))));
    KBlock kb;
    for (int64_t b = 0; b < nb; ++b) {
        Dec::decode(wrow + uint64_t(b) * Dec::kBytes, kb);
        const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(kb.sc));
        const __m256i lo = _mm256_permute2x128_si256(sc, sc, 0x00);
        const __m256i hi = _mm256_permute2x128_si256(sc, sc, 0x11);
        __m256i scv[8];
        for (int k = 0; k < 4; ++k) {
            scv[k] = _mm256_shuffle_epi8(lo, pick[k]);
            scv[k + 4] = _mm256_shuffle_epi8(hi, pick[k]);
        }
        const __m256i mn = _mm256_load_si256(reinterpret_cast<const __m256i*>(kb.mn));
        for (int t = 0; t < NA; ++t) {
            const ActQ8x256& ab = a[t][b];
            __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
            for (int k = 0; k < 8; k += 2) {
                const __m256i p0 = _mm256_maddubs_epi16(
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(kb.q + 32 * k)),
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(ab.qs + 32 * k)));
                const __m256i p1 = _mm256_maddubs_epi16(
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(kb.q + 32 * k + 32)),
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(ab.qs + 32 * k + 32)));
                s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(p0, scv[k]));
                s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(p1, scv[k + 1]));
            }
            const __m256i offi = _mm256_madd_epi16(
                _mm256_load_si256(reinterpret_cast<const __m256i*>(ab.bsums)), mn);
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s0, s1)),
                                     _mm256_set1_ps(kb.d * ab.d), acc[t]);
            acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(offi), _mm256_set1_ps(kb.dm * ab.d), acc[t]);
        }
    }
    for (int t = 0; t < NA; ++t) job.y[(j0 + t) * job.rows + r] = hsum(acc[t]);
}

// ---- IQ4_XS: super-blocks of 256 against ActQ8x256 ----------------------------------------

// Each 32-value sub-block: |w| times the activations with w's sign (maddubs), weighted by the
// sub-block's 6-bit scale (madd), summed in 32 bits over the super-block; one float multiply
// by d * d_act per super-block. 32 quant bytes (two sub-blocks, one per 128-bit lane) load at a
// time; a lane permute puts each one's low and high nibbles in element order.
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
        const __m256i s32 = iq4xsScales(blk);
        const __m128i s16 =
            _mm_packs_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
        const __m256i scales = _mm256_broadcastsi128_si256(s16);
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
                    const __m256i p = _mm256_maddubs_epi16(wAbs, _mm256_sign_epi8(av, w[i]));
                    sum[t] = _mm256_add_epi32(sum[t], _mm256_madd_epi16(p, sc));
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

// Rows [r0, r1) against all activation rows, four at a time.
template <template <typename, int> class Tile, typename Dec>
void rowsTiled(const Job& job, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        int64_t j = 0;
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

ActKind actKindAvx2(Type t) {
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

void rowsAvx2(const Job& job, int64_t r0, int64_t r1) {
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

} // namespace

void f16RowAvx2(const uint16_t* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(
                                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    for (; i < n; ++i) dst[i] = fp16(src[i]);
}


const IsaKernels& avx2Kernels() {
    static const IsaKernels k{&actKindAvx2, &rowsAvx2};
    return k;
}

} // namespace hearth::cpu::kernels
