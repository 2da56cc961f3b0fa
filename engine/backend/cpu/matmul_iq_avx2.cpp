// AVX2 matMul kernels for the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
// IQ1_M) and the ternary TQ1_0 / TQ2_0 against 8-bit activations per 256 (ActQ8x256), used by the
// avx2 and avx512 levels: per 32 values the grid magnitudes (8-byte IQ2/IQ1 rows, 4-byte IQ3 rows)
// gather into one vector, the signs (stored bytes, or 7 stored bits plus parity; IQ1's and the
// ternary values are signed already) are applied to the activations, maddubs and a madd with the
// sub-block's odd integer scale sum in 32 bits; one float multiply per super-block.
#include "backend/cpu/matmul_kernels.h"
#include "quant/blocks_iq.h"

#include <array>
#include <cstring>
#include <immintrin.h>

namespace hearth::cpu::kernels {

namespace {

constexpr std::array<uint8_t, 128> buildSigns() {
    std::array<uint8_t, 128> s{};
    for (uint32_t i = 0; i < 128; ++i) s[i] = quant::grids::evenParitySigns(i);
    return s;
}
constexpr std::array<uint8_t, 128> kSigns = buildSigns();

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

inline uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint32_t load32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The four 7-bit sign indices of `aux` (bits 7l..7l+6), completed to sign bytes.
inline uint32_t paritySigns(uint32_t aux) {
    return uint32_t(kSigns[aux & 127]) | uint32_t(kSigns[(aux >> 7) & 127]) << 8 |
           uint32_t(kSigns[(aux >> 14) & 127]) << 16 | uint32_t(kSigns[(aux >> 21) & 127]) << 24;
}

// Four sign bytes (byte l for values 8l..8l+7) as ±1 bytes: byte k is -1 when bit k%8 of sign
// byte k/8 is set.
inline __m256i signVector(uint32_t s4) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int32_t(s4)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bits = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bits), bits);
    return _mm256_or_si256(neg, _mm256_set1_epi8(1));
}

// 16-bit multipliers for the 16 pair sums of a sub-block: `lo` for its first 16 values, `hi`
// for the last 16.
inline __m256i scales16(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16(int16_t(hi)), _mm_set1_epi16(int16_t(lo)));
}

inline __m256i grid8x4(const uint8_t* g, int i0, int i1, int i2, int i3) {
    return _mm256_set_epi64x(int64_t(load64(g + 8 * i3)), int64_t(load64(g + 8 * i2)),
                             int64_t(load64(g + 8 * i1)), int64_t(load64(g + 8 * i0)));
}

inline __m256i grid4x8(const uint8_t* g, const int* i) {
    return _mm256_set_epi32(int32_t(load32(g + 4 * i[7])), int32_t(load32(g + 4 * i[6])),
                            int32_t(load32(g + 4 * i[5])), int32_t(load32(g + 4 * i[4])),
                            int32_t(load32(g + 4 * i[3])), int32_t(load32(g + 4 * i[2])),
                            int32_t(load32(g + 4 * i[1])), int32_t(load32(g + 4 * i[0])));
}

// Each type: its block, its float scale d(), and for sub-block ib the 32 magnitudes |w|, a byte
// vector whose signs are w's (±1, or w itself) and the integer sub-block scales, so that the
// block decodes to d() * scale * w.
struct Iq2xxs {
    using Block = quant::BlockIQ2_XXS;
    static constexpr float kScale = 0.125f; // d * (0.5 + s) / 4 = d * (2s + 1) / 8
    static float d(const Block& b) { return _cvtsh_ss(b.d) * kScale; }
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        const uint8_t* q = reinterpret_cast<const uint8_t*>(b.qs) + 8 * ib;
        w = grid8x4(quant::grids::kIq2xxs.data(), q[0], q[1], q[2], q[3]);
        const uint32_t aux = load32(q + 4);
        sign = signVector(paritySigns(aux));
        scale = _mm256_set1_epi16(int16_t(2 * (aux >> 28) + 1));
    }
};

struct Iq2xs {
    using Block = quant::BlockIQ2_XS;
    static constexpr float kScale = 0.125f; // two 4-bit scales per 32, as IQ2_XXS's
    static float d(const Block& b) { return _cvtsh_ss(b.d) * kScale; }
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        const uint16_t* q = b.qs + 4 * ib;
        w = grid8x4(quant::grids::kIq2xs.data(), q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511);
        sign = signVector(uint32_t(kSigns[q[0] >> 9]) | uint32_t(kSigns[q[1] >> 9]) << 8 |
                          uint32_t(kSigns[q[2] >> 9]) << 16 | uint32_t(kSigns[q[3] >> 9]) << 24);
        scale = scales16(2 * (b.scales[ib] & 15) + 1, 2 * (b.scales[ib] >> 4) + 1);
    }
};

struct Iq2s {
    using Block = quant::BlockIQ2_S;
    static constexpr float kScale = 0.125f;
    static float d(const Block& b) { return _cvtsh_ss(b.d) * kScale; }
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        const uint8_t* q = b.qs + 4 * ib;
        const int h = b.qh[ib];
        w = grid8x4(quant::grids::kIq2s.data(), q[0] | (h & 3) << 8, q[1] | (h >> 2 & 3) << 8,
                    q[2] | (h >> 4 & 3) << 8, q[3] | (h >> 6 & 3) << 8);
        sign = signVector(load32(b.qs + 32 + 4 * ib)); // stored sign bytes
        scale = scales16(2 * (b.scales[ib] & 15) + 1, 2 * (b.scales[ib] >> 4) + 1);
    }
};

struct Iq3xxs {
    using Block = quant::BlockIQ3_XXS;
    static constexpr float kScale = 0.25f; // d * (0.5 + s) / 2 = d * (2s + 1) / 4
    static float d(const Block& b) { return _cvtsh_ss(b.d) * kScale; }
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        const uint8_t* q = b.qs + 8 * ib;
        const int idx[8] = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]};
        w = grid4x8(quant::grids::kIq3xxs.data(), idx);
        const uint32_t aux = load32(b.qs + 64 + 4 * ib);
        sign = signVector(paritySigns(aux));
        scale = _mm256_set1_epi16(int16_t(2 * (aux >> 28) + 1));
    }
};

struct Iq3s {
    using Block = quant::BlockIQ3_S;
    static constexpr float kScale = 1.0f; // d * (1 + 2s)
    static float d(const Block& b) { return _cvtsh_ss(b.d) * kScale; }
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        const uint8_t* q = b.qs + 8 * ib;
        const int h = b.qh[ib];
        int idx[8];
        for (int k = 0; k < 8; ++k) idx[k] = q[k] | (h >> k & 1) << 8;
        w = grid4x8(quant::grids::kIq3s.data(), idx);
        sign = signVector(load32(b.signs + 4 * ib));
        scale = _mm256_set1_epi16(int16_t(1 + 2 * ((b.scales[ib / 2] >> 4 * (ib % 2)) & 15)));
    }
};

// IQ1_S / IQ1_M: grid values g in {-1, 0, 1} plus a delta of ±1/8 per group, so 8·w = 8g ± 1.
inline __m256i iq1Values(int i0, int i1, int i2, int i3, __m256i delta) {
    const __m256i g =
        grid8x4(reinterpret_cast<const uint8_t*>(quant::grids::kIq1s.data()), i0, i1, i2, i3);
    const __m256i g2 = _mm256_add_epi8(g, g), g4 = _mm256_add_epi8(g2, g2);
    return _mm256_add_epi8(_mm256_add_epi8(g4, g4), delta);
}

struct Iq1s {
    using Block = quant::BlockIQ1_S;
    static float d(const Block& b) { return _cvtsh_ss(b.d) * 0.125f; } // d * (2s + 1) * (8w) / 8
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        const uint8_t* q = b.qs + 4 * ib;
        const int h = b.qh[ib];
        const __m256i delta = _mm256_set1_epi8(h & 0x8000 ? -1 : 1);
        sign = iq1Values(q[0] | (h & 7) << 8, q[1] | (h >> 3 & 7) << 8, q[2] | (h >> 6 & 7) << 8,
                         q[3] | (h >> 9 & 7) << 8, delta);
        w = _mm256_sign_epi8(sign, sign);
        scale = _mm256_set1_epi16(int16_t(2 * ((h >> 12) & 7) + 1));
    }
};

struct Iq1m {
    using Block = quant::BlockIQ1_M;
    static float d(const Block& b) { return _cvtsh_ss(quant::iq1mScaleBits(b)) * 0.125f; }
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        const uint8_t* q = b.qs + 4 * ib;
        const int n[4] = {b.qh[2 * ib] & 15, b.qh[2 * ib] >> 4, b.qh[2 * ib + 1] & 15,
                          b.qh[2 * ib + 1] >> 4};
        const auto deltaBytes = [](int nib) {
            return nib & 8 ? int64_t(-1) : int64_t(0x0101010101010101);
        };
        const __m256i delta = _mm256_set_epi64x(deltaBytes(n[3]), deltaBytes(n[2]),
                                                deltaBytes(n[1]), deltaBytes(n[0]));
        sign = iq1Values(q[0] | (n[0] & 7) << 8, q[1] | (n[1] & 7) << 8, q[2] | (n[2] & 7) << 8,
                         q[3] | (n[3] & 7) << 8, delta);
        w = _mm256_sign_epi8(sign, sign);
        uint16_t sc;
        std::memcpy(&sc, b.scales + 2 * (ib / 2), 2);
        const int shift = 6 * (ib % 2);
        scale = scales16(2 * ((sc >> shift) & 7) + 1, 2 * ((sc >> (shift + 3)) & 7) + 1);
    }
};

// TQ2_0: w = q - 1 from 2-bit q; values 128h + 32l + m are bits 2l..2l+1 of byte 32h + m.
struct Tq2 {
    using Block = quant::BlockTQ2_0;
    static float d(const Block& b) { return _cvtsh_ss(b.d); }
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        const __m256i bytes =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (ib / 4)));
        const __m256i q = _mm256_and_si256(_mm256_srl_epi16(bytes, _mm_cvtsi32_si128(2 * (ib % 4))),
                                           _mm256_set1_epi8(3));
        sign = _mm256_sub_epi8(q, _mm256_set1_epi8(1));
        w = _mm256_sign_epi8(sign, sign);
        scale = _mm256_set1_epi16(1);
    }
};

// TQ1_0: base-3 digits. Digit n of byte q is floor(3·x / 256) with x = q·3^n mod 256, i.e.
// (x >= 86) + (x >= 171); the value is the digit - 1. x·3 is two byte adds.
template <typename V> inline V times3(V v);
template <> inline __m256i times3(__m256i v) {
    return _mm256_add_epi8(_mm256_add_epi8(v, v), v);
}
template <> inline __m128i times3(__m128i v) {
    return _mm_add_epi8(_mm_add_epi8(v, v), v);
}

inline __m256i tritValues(__m256i x) {
    const __m256i ge1 = _mm256_cmpeq_epi8(_mm256_max_epu8(x, _mm256_set1_epi8(86)), x);
    const __m256i ge2 = _mm256_cmpeq_epi8(_mm256_max_epu8(x, _mm256_set1_epi8(char(171))), x);
    return _mm256_sub_epi8(_mm256_sub_epi8(_mm256_set1_epi8(-1), ge1), ge2); // -1 - (-1) ...
}

// Values 32n+m: digit n of qs[m]; 160+16n+m: digit n of qs[32+m]; 240+4n+j: digit n of qh[j].
struct Tq1 {
    using Block = quant::BlockTQ1_0;
    static float d(const Block& b) { return _cvtsh_ss(b.d); }
    static void sub(const Block& b, int ib, __m256i& w, __m256i& sign, __m256i& scale) {
        __m256i x;
        if (ib < 5) {
            x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
            for (int k = 0; k < ib; ++k) x = times3(x);
        } else {
            __m128i p[5];
            p[0] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 32));
            for (int k = 1; k < 5; ++k) p[k] = times3(p[k - 1]);
            if (ib == 5) {
                x = _mm256_set_m128i(p[1], p[0]);
            } else if (ib == 6) {
                x = _mm256_set_m128i(p[3], p[2]);
            } else { // dword n of the high half: qh[0..3] times 3^n
                const __m128i h0 = _mm_set1_epi32(int32_t(load32(b.qh)));
                const __m128i h1 = times3(h0), h2 = times3(h1), h3 = times3(h2);
                const __m128i h = _mm_blend_epi32(_mm_blend_epi32(h0, h1, 0x2),
                                                  _mm_blend_epi32(h2, h3, 0x8), 0xC);
                x = _mm256_set_m128i(h, p[4]);
            }
        }
        sign = tritValues(x);
        w = _mm256_sign_epi8(sign, sign);
        scale = _mm256_set1_epi16(1);
    }
};

template <typename T, int NA> void tile(const Job& job, int64_t r, int64_t j0) {
    const int64_t nb = job.cols / 256;
    const auto* wrow =
        reinterpret_cast<const typename T::Block*>(job.w + uint64_t(r) * job.rowBytes);
    const ActQ8x256* a[NA];
    for (int t = 0; t < NA; ++t)
        a[t] = reinterpret_cast<const ActQ8x256*>(job.acts + uint64_t(j0 + t) * job.actRowBytes);
    __m256 acc[NA];
    for (int t = 0; t < NA; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const typename T::Block& blk = wrow[b];
        __m256i sum[NA];
        for (int t = 0; t < NA; ++t) sum[t] = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            __m256i w, sign, scale;
            T::sub(blk, ib, w, sign, scale);
            for (int t = 0; t < NA; ++t) {
                const __m256i av =
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(a[t][b].qs + 32 * ib));
                const __m256i p = _mm256_maddubs_epi16(w, _mm256_sign_epi8(av, sign));
                sum[t] = _mm256_add_epi32(sum[t], _mm256_madd_epi16(p, scale));
            }
        }
        const float d = T::d(blk);
        for (int t = 0; t < NA; ++t)
            acc[t] =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[t]), _mm256_set1_ps(d * a[t][b].d), acc[t]);
    }
    for (int t = 0; t < NA; ++t) job.y[(j0 + t) * job.rows + r] = hsum(acc[t]);
}

template <typename T> void rows(const Job& job, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        int64_t j = 0;
        for (; j + 4 <= job.n; j += 4) tile<T, 4>(job, r, j);
        switch (job.n - j) {
        case 3:
            tile<T, 3>(job, r, j);
            break;
        case 2:
            tile<T, 2>(job, r, j);
            break;
        case 1:
            tile<T, 1>(job, r, j);
            break;
        default:
            break;
        }
    }
}

} // namespace

void rowsIqGridAvx2(const Job& job, int64_t r0, int64_t r1) {
    switch (job.type) {
    case quant::Type::IQ2_XXS:
        return rows<Iq2xxs>(job, r0, r1);
    case quant::Type::IQ2_XS:
        return rows<Iq2xs>(job, r0, r1);
    case quant::Type::IQ2_S:
        return rows<Iq2s>(job, r0, r1);
    case quant::Type::IQ3_XXS:
        return rows<Iq3xxs>(job, r0, r1);
    case quant::Type::IQ3_S:
        return rows<Iq3s>(job, r0, r1);
    case quant::Type::IQ1_S:
        return rows<Iq1s>(job, r0, r1);
    case quant::Type::IQ1_M:
        return rows<Iq1m>(job, r0, r1);
    case quant::Type::TQ2_0:
        return rows<Tq2>(job, r0, r1);
    case quant::Type::TQ1_0:
        return rows<Tq1>(job, r0, r1);
    default:
        return;
    }
}

} // namespace hearth::cpu::kernels
