// Internal interface between the matMul driver and its per-instruction-set kernel files: the
// quantized activation formats, the job description and each level's table of entry points.
#pragma once

#include "hearth/quant.h"

#include <cstddef>
#include <cstdint>

namespace hearth::cpu::kernels {

// One block of 32 activations quantized to 8 bits: x ≈ d * qs[i]; s = d * Σ qs (for offsets).
struct ActQ8x32 {
    float d;
    float s;
    int8_t qs[32];
};
static_assert(sizeof(ActQ8x32) == 40);

// One block of 256 activations quantized to 8 bits, with the sums of each 16 values.
struct alignas(32) ActQ8x256 {
    int8_t qs[256];
    int16_t bsums[16];
    float d;
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

const IsaKernels& scalarKernels();
const IsaKernels& avx2Kernels();   // only call when the CPU has AVX2+FMA+F16C
const IsaKernels& avx512Kernels(); // only call when the CPU has AVX-512 F/BW/VL/VNNI

// Scratch memory of the calling thread, 64-byte aligned, at least `bytes` long; valid until the
// next call on the same thread. Defined in matmul.cpp (generic code, safe from any level).
void* threadScratch(size_t bytes);

// Dequantizes weight row r (any supported type) to cols floats, for the generic path.
// Defined in matmul.cpp; used by every level for types without a fast path.
bool dequantizeWeightRow(const Job& job, int64_t r, float* out);

} // namespace hearth::cpu::kernels
