// Helpers shared by the .cu files: launch checking, warp/block reductions, and the dispatch from
// a weight's quant::Type to the chunk type its kernels are instantiated with.
#pragma once

#include "backend/cuda/cuda_math.h"
#include "backend/cuda/cuda_kernels.h"

#include <cuda_runtime.h>

#include <string>

namespace hearth::cuda::detail {

// The Status of the last launch (configuration errors show up here, not as exceptions).
inline Status launchStatus(const char* kernel) {
    return cudaStatus(cudaGetLastError(), (std::string("launch ") + kernel).c_str());
}

__device__ inline float warpSum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ inline float warpMax(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the whole thread block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
__device__ inline float blockSum(float v) {
    __shared__ float partial[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nWarps = blockDim.x >> 5;
    v = warpSum(v);
    __syncthreads(); // partial may still be read by a previous call
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = lane < nWarps ? partial[lane] : 0.0f;
    return warpSum(v);
}

__device__ inline float blockMax(float v) {
    __shared__ float partial[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nWarps = blockDim.x >> 5;
    v = warpMax(v);
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = lane < nWarps ? partial[lane] : -INFINITY;
    return warpMax(v);
}

// Chunk c of one weight row of `cols` values, zero past the end (math::dequantRowChunkBounded,
// host-tested).
template <typename B> __device__ inline void loadChunk(const B* row, int64_t c, int64_t cols, float* y) {
    math::dequantRowChunkBounded(row, c, cols, y);
}

// Chunks of 32 values covering a row of `cols` values (the last may be partial for plain types).
inline int64_t chunksOf(int64_t cols) { return (cols + math::kChunk - 1) / math::kChunk; }

// Checks a weight's shape (F32/F16/BF16: any cols; legacy quants, IQ4_NL, MXFP4: a multiple of
// 32; K-quants, Q8_K, IQ4_XS, the grid i-quants, TQ: of 256) and calls fn(B{}) with the chunk type of its quant type.
template <typename Fn> Status dispatchWeight(const KernelMatrix& w, const char* op, Fn&& fn) {
    const bool plainOrLegacy = w.type == quant::Type::F32 || w.type == quant::Type::F16 || w.type == quant::Type::BF16 ||
                               w.type == quant::Type::Q4_0 || w.type == quant::Type::Q4_1 ||
                               w.type == quant::Type::Q5_0 || w.type == quant::Type::Q5_1 ||
                               w.type == quant::Type::Q8_0 || w.type == quant::Type::Q8_1 ||
                               w.type == quant::Type::IQ4_NL || w.type == quant::Type::MXFP4;
    const bool kQuant = !plainOrLegacy; // super-blocks of 256: the K-quants, IQ4_XS, the grid types, TQ
    const bool plain = w.type == quant::Type::F32 || w.type == quant::Type::F16 || w.type == quant::Type::BF16;
    const int64_t multiple = kQuant ? quant::kQKK : plain ? 1 : math::kChunk;
    if (!w.data || w.cols <= 0 || w.rows <= 0 || w.cols % multiple != 0)
        return invalidArgument(std::string(op) + ": weight needs data and cols a positive multiple of " +
                               std::to_string(multiple) + " (cols " + std::to_string(w.cols) + ")");
    switch (w.type) {
    case quant::Type::F32: return fn(math::F32Chunk{});
    case quant::Type::F16: return fn(math::F16Chunk{});
    case quant::Type::BF16: return fn(math::BF16Chunk{});
    case quant::Type::Q4_0: return fn(quant::BlockQ4_0{});
    case quant::Type::Q4_1: return fn(quant::BlockQ4_1{});
    case quant::Type::Q5_0: return fn(quant::BlockQ5_0{});
    case quant::Type::Q5_1: return fn(quant::BlockQ5_1{});
    case quant::Type::Q8_0: return fn(quant::BlockQ8_0{});
    case quant::Type::Q2_K: return fn(quant::BlockQ2_K{});
    case quant::Type::Q3_K: return fn(quant::BlockQ3_K{});
    case quant::Type::Q4_K: return fn(quant::BlockQ4_K{});
    case quant::Type::Q5_K: return fn(quant::BlockQ5_K{});
    case quant::Type::Q6_K: return fn(quant::BlockQ6_K{});
    case quant::Type::IQ4_NL: return fn(quant::BlockIQ4_NL{});
    case quant::Type::IQ4_XS: return fn(quant::BlockIQ4_XS{});
    case quant::Type::MXFP4: return fn(quant::BlockMXFP4{});
    case quant::Type::IQ2_XXS: return fn(quant::BlockIQ2_XXS{});
    case quant::Type::IQ2_XS: return fn(quant::BlockIQ2_XS{});
    case quant::Type::IQ2_S: return fn(quant::BlockIQ2_S{});
    case quant::Type::IQ3_XXS: return fn(quant::BlockIQ3_XXS{});
    case quant::Type::IQ3_S: return fn(quant::BlockIQ3_S{});
    case quant::Type::IQ1_S: return fn(quant::BlockIQ1_S{});
    case quant::Type::IQ1_M: return fn(quant::BlockIQ1_M{});
    case quant::Type::TQ1_0: return fn(quant::BlockTQ1_0{});
    case quant::Type::TQ2_0: return fn(quant::BlockTQ2_0{});
    case quant::Type::Q8_1: return fn(quant::BlockQ8_1{});
    case quant::Type::Q8_K: return fn(quant::BlockQ8_K{});
    default: break;
    }
    return unsupported(std::string(op) + ": weight type " + std::to_string(unsigned(w.type)) +
                       " has no CUDA kernel");
}

inline unsigned gridFor(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

// Blocks of `threads` for a grid-stride loop over n values, at most 65535 of them.
inline unsigned strideGrid(int64_t n, int threads) {
    const int64_t blocks = (n + threads - 1) / threads;
    return unsigned(blocks < 65535 ? blocks : 65535);
}

} // namespace hearth::cuda::detail
