// Decode matrix-vector kernels: y[n][rows] = x[n][cols] · Wᵀ for n <= 8, one warp per output
// row, each lane dequantizing 32-value chunks into registers and a shuffle reduction at the end.
#include "backend/cuda/kernel_common.cuh"

namespace hearth::cuda {

namespace {

constexpr int kWarpsPerBlock = 4;

// grid: ceil(rows / 4) blocks of 4 warps; warp = one row of W, all n batch columns at once.
// vec4: every chunk is whole and x is 16-byte aligned, so x is read as float4; otherwise scalar
// reads stop at cols (only plain F32/F16/BF16 rows end inside a chunk).
template <typename B>
__global__ void matVecKernel(const uint8_t* __restrict__ w, uint64_t rowBytes, int64_t rows,
                             int64_t nChunks, const float* __restrict__ x, int64_t cols,
                             float* __restrict__ y, int n, bool vec4) {
    const int lane = threadIdx.x & 31;
    const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
    if (row >= rows) return;
    const B* wr = reinterpret_cast<const B*>(w + uint64_t(row) * rowBytes);
    float acc[kMatVecMaxBatch] = {};
    for (int64_t c = lane; c < nChunks; c += 32) {
        float wv[math::kChunk]; // W[row][32c .. 32c+31], zeros past cols
        detail::loadChunk(wr, c, cols, wv);
        const int64_t base = c * math::kChunk;
#pragma unroll
        for (int k = 0; k < kMatVecMaxBatch; ++k) {
            if (k >= n) break;
            float s = 0.0f;
            if (vec4) {
                const float4* xk = reinterpret_cast<const float4*>(x + k * cols + base);
#pragma unroll
                for (int j = 0; j < math::kChunk / 4; ++j) {
                    const float4 v = xk[j];
                    s += wv[4 * j] * v.x + wv[4 * j + 1] * v.y + wv[4 * j + 2] * v.z + wv[4 * j + 3] * v.w;
                }
            } else {
                const float* xk = x + k * cols;
                for (int j = 0; j < math::kChunk && base + j < cols; ++j) s += wv[j] * xk[base + j];
            }
            acc[k] += s;
        }
    }
#pragma unroll
    for (int k = 0; k < kMatVecMaxBatch; ++k) {
        if (k >= n) break;
        const float s = detail::warpSum(acc[k]);
        if (lane == 0) y[k * rows + row] = s;
    }
}

} // namespace

namespace {

// The quantized types with no int8 view (math::kGridChunk): the grid i-quants, TQ, Q8_1/Q8_K.
bool fp16PathOnly(quant::Type type) {
    switch (type) {
    case quant::Type::IQ2_XXS:
    case quant::Type::IQ2_XS:
    case quant::Type::IQ2_S:
    case quant::Type::IQ3_XXS:
    case quant::Type::IQ3_S:
    case quant::Type::IQ1_S:
    case quant::Type::IQ1_M:
    case quant::Type::TQ1_0:
    case quant::Type::TQ2_0:
    case quant::Type::Q8_1:
    case quant::Type::Q8_K: return true;
    default: return false;
    }
}

// The quantized types with an int8 view (int8_math.h's intChunk).
bool int8View(quant::Type type) {
    switch (type) {
    case quant::Type::Q4_0:
    case quant::Type::Q4_1:
    case quant::Type::Q5_0:
    case quant::Type::Q5_1:
    case quant::Type::Q8_0:
    case quant::Type::Q2_K:
    case quant::Type::Q3_K:
    case quant::Type::Q4_K:
    case quant::Type::Q5_K:
    case quant::Type::Q6_K:
    case quant::Type::IQ4_NL:
    case quant::Type::IQ4_XS:
    case quant::Type::MXFP4: return true;
    default: return false;
    }
}

} // namespace

bool weightTypeSupported(quant::Type type) {
    const bool plain = type == quant::Type::F32 || type == quant::Type::F16 || type == quant::Type::BF16;
    return plain || int8View(type) || fp16PathOnly(type);
}

bool int8TypeSupported(quant::Type type) { return int8View(type); }

Status matVec(const KernelMatrix& w, const float* x, float* y, int n, StreamHandle stream) {
    if (n < 1 || n > kMatVecMaxBatch || !x || !y)
        return invalidArgument("cuda matVec: batch " + std::to_string(n) + " outside [1, 8] or null vectors");
    return detail::dispatchWeight(w, "cuda matVec", [&](auto block) -> Status {
        using B = decltype(block);
        const bool vec4 = w.cols % math::kChunk == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
        const unsigned grid = detail::gridFor(w.rows, kWarpsPerBlock);
        matVecKernel<B><<<grid, kWarpsPerBlock * 32, 0, stream>>>(static_cast<const uint8_t*>(w.data), w.rowBytes,
                                                                   w.rows, detail::chunksOf(w.cols), x, w.cols, y,
                                                                   n, vec4);
        return detail::launchStatus("matVecKernel");
    });
}

} // namespace hearth::cuda
