// Block decoders shared by the SIMD kernel files: each turns one weight block into unsigned 8-bit
// values plus scales and offsets (K types: 16 scales per 256; legacy types: one per 32).
// Everything here has internal linkage so that each file's copy is compiled for that file's
// instruction set only; include it only from files built with AVX2, FMA and F16C enabled.
#pragma once

#include "quant/blocks.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <immintrin.h>

#if !defined(__AVX2__) || !defined(__F16C__) || !defined(__FMA__)
#error "matmul_decode.h needs -mavx2 -mfma -mf16c"
#endif

namespace hearth::cpu::kernels {
namespace {

// A decoded super-block of 256 weights: w[i] = d * sc[i/16] * q[i] - dm * mn[i/16].
struct alignas(64) KBlock {
    uint8_t q[256];
    int16_t sc[16];
    int16_t mn[16];
    float d;
    float dm;
};

inline float fp16(uint16_t h) { return _cvtsh_ss(h); }

// Q4_K/Q5_K: the 8 six-bit scales and mins packed in 12 bytes, unpacked with 32-bit masks.
inline void unpackK4Scales(const uint8_t* s, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t w[3];
    std::memcpy(w, s, 12);
    const uint32_t lo6 = 0x3f3f3f3fu, lo4 = 0x0f0f0f0fu, lo2 = 0x03030303u;
    const uint32_t out[4] = {w[0] & lo6, w[1] & lo6, (w[2] & lo4) | ((w[0] >> 6) & lo2) << 4,
                             ((w[2] >> 4) & lo4) | ((w[1] >> 6) & lo2) << 4};
    std::memcpy(sc, &out[0], 4);
    std::memcpy(mn, &out[1], 4);
    std::memcpy(sc + 4, &out[2], 4);
    std::memcpy(mn + 4, &out[3], 4);
}

// Spreads 8 per-32 values to the 16 per-16 slots.
inline void spread8(const uint8_t in[8], int16_t out[16]) {
    for (int i = 0; i < 16; ++i) out[i] = int16_t(in[i / 2]);
}

inline void decodeScalarQ5K(const uint8_t* src, KBlock& kb) {
    const auto& b = *reinterpret_cast<const quant::BlockQ5_K*>(src);
    uint8_t sc[8], mn[8];
    unpackK4Scales(b.scales, sc, mn);
    spread8(sc, kb.sc);
    spread8(mn, kb.mn);
    for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
            kb.q[64 * c + l] = uint8_t((b.qs[32 * c + l] & 0x0f) | ((b.qh[l] >> (2 * c)) & 1) << 4);
            kb.q[64 * c + 32 + l] =
                uint8_t((b.qs[32 * c + l] >> 4) | ((b.qh[l] >> (2 * c + 1)) & 1) << 4);
        }
    }
    kb.d = fp16(b.d);
    kb.dm = fp16(b.dmin);
}

// Q3_K: q = low 2 bits + 4 * high bit in 0..7, w = d * sc * (q - 4).
inline void decodeScalarQ3K(const uint8_t* src, KBlock& kb) {
    const auto& b = *reinterpret_cast<const quant::BlockQ3_K*>(src);
    for (int j = 0; j < 16; ++j) {
        const int lo = j < 8 ? (b.scales[j] & 0x0f) : (b.scales[j - 8] >> 4);
        const int hi = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
        const int s = (lo | hi << 4) - 32;
        kb.sc[j] = int16_t(s);
        kb.mn[j] = int16_t(4 * s);
    }
    for (int e = 0; e < 256; ++e) {
        const int half = e / 128, r = e % 128, shift = 2 * (r / 32), l = r % 32;
        const int low = (b.qs[half * 32 + l] >> shift) & 3;
        const int high = (b.hmask[e % 32] >> (e / 32)) & 1;
        kb.q[e] = uint8_t(low + 4 * high);
    }
    kb.d = kb.dm = fp16(b.d);
}

// Q2_K: w = d * (sc & 15) * q - dmin * (sc >> 4).
inline void decodeScalarQ2K(const uint8_t* src, KBlock& kb) {
    const auto& b = *reinterpret_cast<const quant::BlockQ2_K*>(src);
    for (int j = 0; j < 16; ++j) {
        kb.sc[j] = int16_t(b.scales[j] & 0x0f);
        kb.mn[j] = int16_t(b.scales[j] >> 4);
    }
    for (int e = 0; e < 256; ++e) {
        const int half = e / 128, r = e % 128, shift = 2 * (r / 32), l = r % 32;
        kb.q[e] = uint8_t((b.qs[half * 32 + l] >> shift) & 3);
    }
    kb.d = fp16(b.d);
    kb.dm = fp16(b.dmin);
}

// ---- SIMD decoders (AVX2 and up) ------------------------------------------------------------

// A decoded legacy block: w = d * q + c, q unsigned bytes (signed bytes for Q8_0).
struct LBlock {
    __m256i q;
    float d, c;
};

inline __m256i nibbles(const uint8_t* qs) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i m = _mm256_set1_epi8(0x0f);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), m);
}

// Byte i = 0x10 where bit i of the 32-bit qh is set.
inline __m256i fifthBits(const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    const __m256i v = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(bits)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i sel = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, sel), sel),
                            _mm256_set1_epi8(0x10));
}

struct DecQ4_0 {
    static constexpr size_t kBytes = sizeof(quant::BlockQ4_0);
    static constexpr bool kSigned = false;
    static LBlock decode(const uint8_t* p) {
        const auto& b = *reinterpret_cast<const quant::BlockQ4_0*>(p);
        const float d = fp16(b.d);
        return {nibbles(b.qs), d, -8.0f * d};
    }
};
struct DecQ4_1 {
    static constexpr size_t kBytes = sizeof(quant::BlockQ4_1);
    static constexpr bool kSigned = false;
    static LBlock decode(const uint8_t* p) {
        const auto& b = *reinterpret_cast<const quant::BlockQ4_1*>(p);
        return {nibbles(b.qs), fp16(b.d), fp16(b.m)};
    }
};
struct DecQ5_0 {
    static constexpr size_t kBytes = sizeof(quant::BlockQ5_0);
    static constexpr bool kSigned = false;
    static LBlock decode(const uint8_t* p) {
        const auto& b = *reinterpret_cast<const quant::BlockQ5_0*>(p);
        const float d = fp16(b.d);
        return {_mm256_or_si256(nibbles(b.qs), fifthBits(b.qh)), d, -16.0f * d};
    }
};
struct DecQ5_1 {
    static constexpr size_t kBytes = sizeof(quant::BlockQ5_1);
    static constexpr bool kSigned = false;
    static LBlock decode(const uint8_t* p) {
        const auto& b = *reinterpret_cast<const quant::BlockQ5_1*>(p);
        return {_mm256_or_si256(nibbles(b.qs), fifthBits(b.qh)), fp16(b.d), fp16(b.m)};
    }
};
struct DecQ8_0 {
    static constexpr size_t kBytes = sizeof(quant::BlockQ8_0);
    static constexpr bool kSigned = true;
    static LBlock decode(const uint8_t* p) {
        const auto& b = *reinterpret_cast<const quant::BlockQ8_0*>(p);
        return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)), fp16(b.d), 0.0f};
    }
};

// The 16 levels of a 4-bit table format as signed bytes, in both 128-bit lanes, so that
// _mm256_shuffle_epi8(table, nibbles) looks them up.
template <int8_t (*Level)(int)>
inline constexpr std::array<int8_t, 16> kLevelBytes = [] {
    std::array<int8_t, 16> t{};
    for (int i = 0; i < 16; ++i) t[size_t(i)] = Level(i);
    return t;
}();
template <int8_t (*Level)(int)> inline __m256i levelTable() {
    return _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kLevelBytes<Level>.data())));
}

// IQ4_NL and MXFP4: signed table values (kSigned: the kernels pair |q| with sign-adjusted
// activations), w = d * q.
struct DecIQ4NL {
    static constexpr size_t kBytes = sizeof(quant::BlockIQ4_NL);
    static constexpr bool kSigned = true;
    static LBlock decode(const uint8_t* p) {
        const auto& b = *reinterpret_cast<const quant::BlockIQ4_NL*>(p);
        return {_mm256_shuffle_epi8(levelTable<quant::iq4Level>(), nibbles(b.qs)), fp16(b.d), 0.0f};
    }
};
struct DecMXFP4 {
    static constexpr size_t kBytes = sizeof(quant::BlockMXFP4);
    static constexpr bool kSigned = true;
    static LBlock decode(const uint8_t* p) {
        const auto& b = *reinterpret_cast<const quant::BlockMXFP4*>(p);
        return {_mm256_shuffle_epi8(levelTable<quant::mxfp4Level>(), nibbles(b.qs)),
                quant::e8m0Half(b.e), 0.0f};
    }
};

// The 8 signed 6-bit scales of an IQ4_XS super-block as 32-bit lanes: scale j's low 4 bits are
// bits 4j..4j+3 of the little-endian scalesL word, its high 2 bits bits 2j..2j+1 of scalesH.
inline __m256i iq4xsScales(const quant::BlockIQ4_XS& b) {
    uint32_t lo;
    std::memcpy(&lo, b.scalesL, 4);
    const __m256i l =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(int(lo)),
                                           _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                         _mm256_set1_epi32(0x0f));
    const __m256i h =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(b.scalesH),
                                           _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                         _mm256_set1_epi32(3));
    return _mm256_sub_epi32(_mm256_or_si256(l, _mm256_slli_epi32(h, 4)), _mm256_set1_epi32(32));
}

struct DecQ4K {
    static constexpr size_t kBytes = sizeof(quant::BlockQ4_K);
    static void decode(const uint8_t* p, KBlock& kb) {
        const auto& b = *reinterpret_cast<const quant::BlockQ4_K*>(p);
        uint8_t sc[8], mn[8];
        unpackK4Scales(b.scales, sc, mn);
        const __m128i s8 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
        const __m128i m8 = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(kb.sc),
                           _mm256_set_m128i(_mm_unpackhi_epi16(s8, s8), _mm_unpacklo_epi16(s8, s8)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(kb.mn),
                           _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8)));
        const __m256i m4 = _mm256_set1_epi8(0x0f);
        for (int c = 0; c < 4; ++c) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c));
            _mm256_store_si256(reinterpret_cast<__m256i*>(kb.q + 64 * c), _mm256_and_si256(v, m4));
            _mm256_store_si256(reinterpret_cast<__m256i*>(kb.q + 64 * c + 32),
                               _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        }
        kb.d = fp16(b.d);
        kb.dm = fp16(b.dmin);
    }
};

struct DecQ6K {
    static constexpr size_t kBytes = sizeof(quant::BlockQ6_K);
    static void decode(const uint8_t* p, KBlock& kb) {
        const auto& b = *reinterpret_cast<const quant::BlockQ6_K*>(p);
        const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
        for (int h = 0; h < 2; ++h) {
            const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
            const __m256i l1 =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
            const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
            __m256i* out = reinterpret_cast<__m256i*>(kb.q + 128 * h);
            _mm256_store_si256(out + 0, _mm256_or_si256(_mm256_and_si256(l0, m4),
                                                        _mm256_and_si256(_mm256_slli_epi16(hb, 4), m2)));
            _mm256_store_si256(out + 1, _mm256_or_si256(_mm256_and_si256(l1, m4),
                                                        _mm256_and_si256(_mm256_slli_epi16(hb, 2), m2)));
            _mm256_store_si256(out + 2, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                                        _mm256_and_si256(hb, m2)));
            _mm256_store_si256(out + 3, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                                        _mm256_and_si256(_mm256_srli_epi16(hb, 2), m2)));
        }
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(kb.sc), sc);
        _mm256_store_si256(reinterpret_cast<__m256i*>(kb.mn), _mm256_slli_epi16(sc, 5));
        kb.d = kb.dm = fp16(b.d);
    }
};

struct DecQ5K {
    static constexpr size_t kBytes = sizeof(quant::BlockQ5_K);
    static void decode(const uint8_t* p, KBlock& kb) { decodeScalarQ5K(p, kb); }
};
struct DecQ3K {
    static constexpr size_t kBytes = sizeof(quant::BlockQ3_K);
    static void decode(const uint8_t* p, KBlock& kb) { decodeScalarQ3K(p, kb); }
};
struct DecQ2K {
    static constexpr size_t kBytes = sizeof(quant::BlockQ2_K);
    static void decode(const uint8_t* p, KBlock& kb) { decodeScalarQ2K(p, kb); }
};

} // namespace
} // namespace hearth::cpu::kernels
