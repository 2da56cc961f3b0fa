// Internal interface between the matMul driver and its per-instruction-set kernel files: the
// quantized activation formats, the job description and each level's table of entry points.
#pragma once

#include "hearth/quant.h"

#include <cstddef>
#include <cstdint>

namespace hearth::cpu {
class ThreadPool;
}

namespace hearth::cpu::kernels {

// One block of 32 activations quantized to 8 bits: x ≈ d * qs[i]; s = d * Σ qs (for offsets).
struct ActQ8x32 {
    float d;
    float s;
    int8_t qs[32];
};
static_assert(sizeof(ActQ8x32) == 40);

// One block of 256 activations quantized to 8 bits, with the sums of each 16 values and of
// each 32 (sums32[j] = bsums[2j] + bsums[2j + 1]: Q4_K's mins term takes them in pairs).
struct alignas(32) ActQ8x256 {
    int8_t qs[256];
    int16_t bsums[16];
    float d;
    int16_t sums32[8];
};
static_assert(sizeof(ActQ8x256) == 320);

// How a level wants the activations of a type: as floats (generic path) or quantized.
enum class ActKind { Float, Q8x32, Q8x256 };

// Everything one call needs; kernels compute y[j][r] for all j < n and a range of rows r.
struct Job {
    const uint8_t* w = nullptr;
    quant::Type type = quant::Type::F32;
    int64_t cols = 0;
    int64_t rows = 0;
    uint64_t rowBytes = 0;
    const float* x = nullptr; // n rows of cols floats
    int64_t n = 0;
    float* y = nullptr; // n rows of `rows` floats
    ActKind act = ActKind::Float;
    const uint8_t* acts = nullptr; // n rows of quantized activations (act != Float)
    uint64_t actRowBytes = 0;
};

struct IsaKernels {
    ActKind (*actKind)(quant::Type t);
    void (*rows)(const Job& job, int64_t r0, int64_t r1);
};

// A call on repacked weights (see repack.h): outputs y[j][r] for tokens j in [j0, j1) and the
// 16-row groups g in [g0, g1), from activations quantized per 32 (ActQ8x32; Q4_K, Q6_K:
// ActQ8x256).
struct PackedJob {
    const uint8_t* w = nullptr; // group g at w + g * groupBytes
    quant::Type type = quant::Type::F32;
    int64_t cols = 0;
    int64_t rows = 0;
    uint64_t groupBytes = 0;
    uint64_t payloadBytes = 0; // per block of a group (Q4_0/Q5_0/Q8_0: without its scales, see repack.h)
    const uint8_t* acts = nullptr;
    uint64_t actRowBytes = 0;
    float* y = nullptr;
    // > 0: the kernels prefetch the weights this many bytes ahead of the block they read, in the
    // first tile over each group of a panel of tokens (the one that streams it from memory).
    uint64_t prefetchBytes = 0;
    // 0: the prefetch covers each block read, prefetchBytes ahead. 1 or 2 (the 256-bit kernels,
    // which read a group in two passes, one per half): that pass prefetches half the group's
    // bytes, the first or second half of [group + prefetchBytes, + groupBytes), spread evenly
    // over its blocks, so that memory stays busy through both passes instead of idling through
    // the second one (which reads the group from cache).
    int prefetchPart = 0;
    // IQ4_XS at the AVX2 level from 4 tokens on: the job's activations already widened by
    // widenIQ4XSActsAvx2 (token 0 first), or null for the kernels to widen them per call.
    const int16_t* wideActs = nullptr;
    // The level's kernels: packedGroupsAvx512, packedGroupsAvxVnni or packedGroupsAvx2.
    void (*run)(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1) = nullptr;
};

// Tokens per pass of the float kernels (F32, F16 and BF16 weights) over their rows: as many
// activation rows as stay in a 384 KiB share of the L2 cache (a multiple of 4, 16 to 512), so that a
// long input (an image's patches) is not streamed from memory once per four weight rows.
inline int64_t floatTokenBlock(int64_t cols) {
    const int64_t fit = (384 * 1024) / (4 * (cols > 0 ? cols : 1));
    return (fit < 16 ? 16 : fit > 512 ? 512 : fit) & ~int64_t(3);
}

// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0 against ActQ8x256 with AVX2
// (matmul_iq_avx2.cpp), for the avx2 and avx512 levels (job.type one of those); only call when
// the CPU has AVX2.
void rowsIqGridAvx2(const Job& job, int64_t r0, int64_t r1);

// The kernels for repacked weights, per level: AVX-512 VNNI (16 rows per register), AVX-VNNI and
// AVX2 (8 rows per register: half a group); only call when the CPU has the level's instructions.
void packedGroupsAvx512(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1);
void packedGroupsAvxVnni(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1);
void packedGroupsAvx2(const PackedJob& job, int64_t g0, int64_t g1, int64_t j0, int64_t j1);
// Tokens [j0, j1) of an IQ4_XS job's activations (j0 a multiple of 8) as packedGroupsAvx2 reads
// them from PackedJob::wideActs, written into out, which holds the job's (n + 7) / 8 · 8 · cols
// int16 from token 0.
void widenIQ4XSActsAvx2(const PackedJob& job, int64_t j0, int64_t j1, int16_t* out);

// AVX-512 versions of the activation quantizers in matmul.cpp, bit for bit the same results
// (same scale, round to nearest even, clamp); only call when the CPU has AVX-512 F/BW.
void quantizeRow32Avx512(const float* x, ActQ8x32* out, int64_t cols);
void quantizeRow256Avx512(const float* x, ActQ8x256* out, int64_t cols);

// dst[i] = binary16 src[i] as a float, eight per F16C instruction; only call when the CPU has
// AVX2+FMA+F16C.
void f16RowAvx2(const uint16_t* src, float* dst, int64_t n);

const IsaKernels& scalarKernels();
const IsaKernels& avx2Kernels();   // only call when the CPU has AVX2+FMA+F16C
const IsaKernels& avx512Kernels(); // only call when the CPU has AVX-512 F/BW/VL/VNNI

// Scratch memory of the calling thread, 64-byte aligned, at least `bytes` long; valid until the
// next call on the same thread. Defined in matmul.cpp (generic code, safe from any level).
void* threadScratch(size_t bytes);

// Quantizes n rows of cols activations (cols a multiple of the block) into this thread's
// activation buffer, rows split over pool; sets *rowBytes. nullptr when out of memory.
// Valid until the next call on the same thread. Defined in matmul.cpp.
const uint8_t* quantizeActivations(ActKind kind, const float* x, int64_t n, int64_t cols,
                                   ThreadPool* pool, uint64_t* rowBytes);

// Dequantizes weight row r (any supported type) to cols floats, for the generic path.
// Defined in matmul.cpp; used by every level for types without a fast path.
bool dequantizeWeightRow(const Job& job, int64_t r, float* out);

} // namespace hearth::cpu::kernels
