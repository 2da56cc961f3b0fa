// Prefill matrix-matrix kernel: y[n][rows] = x[n][cols] · Wᵀ on tensor cores (WMMA 16x16x16,
// fp16 inputs, fp32 accumulation). Each step stages a 32-token x 32 tile of activations and a
// 64-row x 32 tile of weights, dequantized, in shared memory.
#include "backend/cuda/kernel_common.cuh"

#include <mma.h>

namespace hearth::cuda {

namespace {

constexpr int kTileT = 32;             // tokens per block tile
constexpr int kTileR = 64;             // weight rows (outputs) per block tile
constexpr int kTileK = math::kChunk;   // reduction step: one weight chunk
constexpr int kLdH = kTileK + 8;       // padded leading dim of the fp16 tiles (multiple of 8)
constexpr int kLdC = kTileR + 4;       // padded leading dim of the fp32 output tile (multiple of 4)
constexpr int kThreads = 128;          // 4 warps: 2 (tokens) x 2 (rows), each 16 x 32 outputs

// grid: (ceil(rows / 64), ceil(n / 32)).
template <typename B>
__global__ void __launch_bounds__(kThreads)
matMulKernel(const uint8_t* __restrict__ w, uint64_t rowBytes, int64_t rows, int64_t nChunks,
             const float* __restrict__ x, int64_t cols, float* __restrict__ y, int64_t nTok) {
    using namespace nvcuda;
    __shared__ __align__(32) __half xs[kTileT][kLdH]; // X tile [token][k]
    __shared__ __align__(32) __half ws[kTileR][kLdH]; // W tile [row][k] (= Wᵀ column-major)
    __shared__ __align__(32) float cs[kTileT][kLdC];  // Y tile [token][row]

    const int warp = threadIdx.x >> 5;
    const int wt = warp & 1, wr = warp >> 1;
    const int64_t t0 = int64_t(blockIdx.y) * kTileT, r0 = int64_t(blockIdx.x) * kTileR;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2];
    wmma::fill_fragment(acc[0], 0.0f);
    wmma::fill_fragment(acc[1], 0.0f);

    for (int64_t c = 0; c < nChunks; ++c) {
        for (int i = threadIdx.x; i < kTileT * kTileK; i += kThreads) {
            const int t = i / kTileK, k = i % kTileK;
            const int64_t col = c * kTileK + k;
            const float v = t0 + t < nTok && col < cols ? x[(t0 + t) * cols + col] : 0.0f;
            xs[t][k] = __float2half(v);
        }
        if (threadIdx.x < kTileR) {
            const int64_t r = r0 + threadIdx.x;
            float v[math::kChunk];
            if (r < rows) {
                detail::loadChunk(reinterpret_cast<const B*>(w + uint64_t(r) * rowBytes), c, cols, v);
            } else {
                for (float& e : v) e = 0.0f;
            }
            for (int k = 0; k < kTileK; ++k) ws[threadIdx.x][k] = __float2half(v[k]);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kTileK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
            wmma::load_matrix_sync(a, &xs[wt * 16][kk], kLdH);
#pragma unroll
            for (int f = 0; f < 2; ++f) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
                wmma::load_matrix_sync(b, &ws[wr * 32 + f * 16][kk], kLdH);
                wmma::mma_sync(acc[f], a, b, acc[f]);
            }
        }
        __syncthreads();
    }
    for (int f = 0; f < 2; ++f)
        wmma::store_matrix_sync(&cs[wt * 16][wr * 32 + f * 16], acc[f], kLdC, wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < kTileT * kTileR; i += kThreads) {
        const int t = i / kTileR, r = i % kTileR;
        if (t0 + t < nTok && r0 + r < rows) y[(t0 + t) * rows + r0 + r] = cs[t][r];
    }
}

} // namespace

Status matMul(const KernelMatrix& w, const float* x, float* y, int64_t n, StreamHandle stream) {
    if (n < 1 || !x || !y) return invalidArgument("cuda matMul: empty batch or null vectors");
    if ((n + kTileT - 1) / kTileT > 65535) return invalidArgument("cuda matMul: batch too large");
    return detail::dispatchWeight(w, "cuda matMul", [&](auto block) -> Status {
        using B = decltype(block);
        const dim3 grid(detail::gridFor(w.rows, kTileR), detail::gridFor(n, kTileT));
        matMulKernel<B><<<grid, kThreads, 0, stream>>>(static_cast<const uint8_t*>(w.data), w.rowBytes,
                                                       w.rows, detail::chunksOf(w.cols), x, w.cols, y, n);
        return detail::launchStatus("matMulKernel");
    });
}

} // namespace hearth::cuda
