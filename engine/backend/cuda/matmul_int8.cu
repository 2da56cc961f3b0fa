// Int8 prefill: activations quantized to int8 per 32 values (quantizeActivations), then
// y[n][rows] = x[n][cols] · Wᵀ with the weights unpacked to int8 in shared memory and every
// product summed four at a time by dp4a (int8_math.h). Each block computes a 64-row x 32-token
// tile, four chunks (128 values) per shared-memory step; each thread a 4 x 4 micro-tile.
#include "backend/cuda/int8_math.h"
#include "backend/cuda/kernel_common.cuh"

namespace hearth::cuda {

namespace {

constexpr int kTileT = 32;   // tokens per block tile
constexpr int kTileR = 64;   // weight rows (outputs) per block tile
constexpr int kStep = 4;     // chunks per shared-memory step
constexpr int kWords = math::kChunk / 4;
constexpr int kThreads = 128; // 16 row groups x 8 token groups; thread = rows g + 16i, tokens g' + 8j

// grid-stride over (token, chunk): one thread quantizes one chunk of 32 activations.
__global__ void quantizeActKernel(const float* __restrict__ x, int64_t count, math::ActChunk* __restrict__ out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
        math::quantizeActChunk(x + i * math::kChunk, out[i]);
}

// grid: (ceil(rows / 64), ceil(n / 32)).
template <typename B>
__global__ void __launch_bounds__(kThreads)
matMulInt8Kernel(const uint8_t* __restrict__ w, uint64_t rowBytes, int64_t rows, int64_t nChunks,
                 const math::ActChunk* __restrict__ xq, float* __restrict__ y, int64_t nTok) {
    __shared__ int32_t wq[kStep][kTileR][kWords + 1]; // +1: rows 9 words apart hit distinct banks
    __shared__ float4 ws[kStep][kTileR];              // d0, d1, m0, m1
    __shared__ int32_t xs[kStep][kTileT][kWords + 1];
    __shared__ float4 xsc[kStep][kTileT];             // d, sum0, sum1, -

    const int64_t t0 = int64_t(blockIdx.y) * kTileT, r0 = int64_t(blockIdx.x) * kTileR;
    const int rg = threadIdx.x % 16, tg = threadIdx.x / 16;
    float acc[4][4] = {};

    for (int64_t c0 = 0; c0 < nChunks; c0 += kStep) {
        for (int i = threadIdx.x; i < kStep * kTileR; i += kThreads) {
            const int s = i / kTileR, r = i % kTileR;
            const int64_t row = r0 + r, c = c0 + s;
            math::IntChunk ic;
            if (row < rows && c < nChunks) {
                math::intRowChunk(reinterpret_cast<const B*>(w + uint64_t(row) * rowBytes), c, ic);
            } else {
                math::clearWords(ic.q);
                math::setScales(ic, 0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int k = 0; k < kWords; ++k) wq[s][r][k] = ic.q[k];
            ws[s][r] = make_float4(ic.d[0], ic.d[1], ic.m[0], ic.m[1]);
        }
        for (int i = threadIdx.x; i < kStep * kTileT; i += kThreads) {
            const int s = i / kTileT, t = i % kTileT;
            const int64_t tok = t0 + t, c = c0 + s;
            if (tok < nTok && c < nChunks) {
                const math::ActChunk& a = xq[tok * nChunks + c];
#pragma unroll
                for (int k = 0; k < kWords; ++k) xs[s][t][k] = a.q[k];
                xsc[s][t] = make_float4(a.d, a.sum[0], a.sum[1], 0.0f);
            } else {
#pragma unroll
                for (int k = 0; k < kWords; ++k) xs[s][t][k] = 0;
                xsc[s][t] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
        }
        __syncthreads();
#pragma unroll
        for (int s = 0; s < kStep; ++s) {
            int32_t sum[2][4][4] = {};
#pragma unroll
            for (int k = 0; k < kWords; ++k) {
                int32_t a[4], b[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) a[i] = wq[s][rg + 16 * i][k];
#pragma unroll
                for (int j = 0; j < 4; ++j) b[j] = xs[s][tg + 8 * j][k];
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) sum[k / 4][i][j] = math::dp4a(a[i], b[j], sum[k / 4][i][j]);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float4 wsc = ws[s][rg + 16 * i];
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float4 x = xsc[s][tg + 8 * j];
                    acc[i][j] += math::intDotFinish(wsc.x, wsc.y, wsc.z, wsc.w, sum[0][i][j], sum[1][i][j], x.x,
                                                    x.y, x.z);
                }
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int64_t tok = t0 + tg + 8 * j;
        if (tok >= nTok) continue;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int64_t row = r0 + rg + 16 * i;
            if (row < rows) y[tok * rows + row] = acc[i][j];
        }
    }
}

} // namespace

Status quantizeActivations(const float* x, int64_t n, int64_t cols, math::ActChunk* out, StreamHandle stream) {
    if (!x || !out || n < 1 || cols < 1 || cols % math::kChunk != 0)
        return invalidArgument("cuda quantizeActivations: null pointer, empty input or cols (" +
                               std::to_string(cols) + ") not a multiple of 32");
    const int64_t count = n * (cols / math::kChunk);
    const unsigned grid = unsigned(std::min<int64_t>(detail::gridFor(count, 128), 65535));
    quantizeActKernel<<<grid, 128, 0, stream>>>(x, count, out);
    return detail::launchStatus("quantizeActKernel");
}

Status matMulInt8(const KernelMatrix& w, const math::ActChunk* xq, float* y, int64_t n, StreamHandle stream) {
    if (n < 1 || !xq || !y) return invalidArgument("cuda matMulInt8: empty batch or null vectors");
    if ((n + kTileT - 1) / kTileT > 65535) return invalidArgument("cuda matMulInt8: batch too large");
    if (!int8TypeSupported(w.type))
        return unsupported("cuda matMulInt8: weight type " + std::string(quant::typeName(w.type)) +
                           " has no int8 path (use matMul)");
    return detail::dispatchWeight(w, "cuda matMulInt8", [&](auto block) -> Status {
        using B = decltype(block);
        if constexpr (math::kPlainChunk<B> || math::kGridChunk<B>) {
            return unsupported("cuda matMulInt8: plain, grid, ternary and Q8_1/Q8_K weights have no int8 path");
        } else {
            const dim3 grid(detail::gridFor(w.rows, kTileR), detail::gridFor(n, kTileT));
            matMulInt8Kernel<B><<<grid, kThreads, 0, stream>>>(static_cast<const uint8_t*>(w.data), w.rowBytes,
                                                               w.rows, w.cols / math::kChunk, xq, y, n);
            return detail::launchStatus("matMulInt8Kernel");
        }
    });
}

} // namespace hearth::cuda
