// Paged K/V writes and causal paged attention (a whole batch of decode tokens and prefill chunks in
// one launch, optionally with a sliding window and soft-capped scores) with a flash-style online
// softmax: the warps of a block split a (token, head)'s keys, then merge their states.
#include "backend/cuda/kernel_common.cuh"

#include <algorithm>

namespace hearth::cuda {

namespace {

constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerLane = kMaxHeadDim / 32; // lane l holds dims l, l + 32, ...
constexpr int kAttnWarps = 4;

__device__ inline float loadKv(const float* p) { return *p; }
__device__ inline float loadKv(const uint16_t* p) { return math::fp16ToFloat(*p); }
__device__ inline void storeKv(float* p, float v) { *p = v; }
__device__ inline void storeKv(uint16_t* p, float v) { *p = math::floatToFp16(v); }

// grid-stride over n * rowSize values: rows[n][rowSize] -> cache[slots[t]][rowSize].
template <typename T>
__global__ void kvWriteKernel(T* cache, const float* __restrict__ rows, const int32_t* __restrict__ slots, int64_t n,
                              int64_t rowSize, int64_t nSlots) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * rowSize;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t t = i / rowSize, e = i % rowSize;
        const int64_t slot = slots[t];
        if (slot < 0 || slot >= nSlots) continue; // unmapped: the host validates slots
        storeKv(cache + slot * rowSize + e, rows[i]);
    }
}

// grid: (nHeads, nTokens), kAttnWarps warps. Warp w takes key positions first + w, first + w + 4,
// ... up to the token's own position (first: 0, or the start of a sliding window); scores are
// soft-capped when softcap > 0; each lane keeps its dims of q (pre-scaled) and of the weighted V sum.
// Every argument but the per-token arrays is fixed for a batch shape, so a captured decode graph
// replays it unchanged.
template <typename T>
__global__ void __launch_bounds__(kAttnWarps * 32)
attentionKernel(const float* __restrict__ q, float* __restrict__ out, const T* __restrict__ kc,
                const T* __restrict__ vc, const int32_t* __restrict__ tables, const int32_t* __restrict__ info,
                int nHeads, int nKvHeads, int headDim, int blockSize, float scale, int window, float softcap) {
    __shared__ float sMax[kAttnWarps], sSum[kAttnWarps];
    __shared__ float sAcc[kAttnWarps][kMaxHeadDim];

    const int h = blockIdx.x;
    const int64_t t = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h / (nHeads / nKvHeads);
    const int64_t rowSize = int64_t(nKvHeads) * headDim;
    const float* qh = q + (t * nHeads + h) * headDim;

    float qv[kDimsPerLane], acc[kDimsPerLane];
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
        const int d = lane + 32 * i;
        qv[i] = d < headDim ? qh[d] * scale : 0.0f;
        acc[i] = 0.0f;
    }

    math::OnlineSoftmax st;
    const int32_t* blockTable = tables + info[2 * t + 1];
    const int64_t last = info[2 * t];
    for (int64_t p = math::attentionFirst(last, window) + warp; p <= last; p += kAttnWarps) {
        const int64_t slot = int64_t(blockTable[p / blockSize]) * blockSize + p % blockSize;
        const T* kr = kc + slot * rowSize + int64_t(kvh) * headDim;
        const T* vr = vc + slot * rowSize + int64_t(kvh) * headDim;
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) {
            const int d = lane + 32 * i;
            if (d < headDim) s += qv[i] * loadKv(kr + d);
        }
        s = math::softcap(detail::warpSum(s), softcap);
        float scaleOld = 0.0f, weight = 0.0f;
        math::softmaxAdd(st, s, scaleOld, weight);
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) {
            const int d = lane + 32 * i;
            if (d < headDim) acc[i] = acc[i] * scaleOld + weight * loadKv(vr + d);
        }
    }

    if (lane == 0) {
        sMax[warp] = st.max;
        sSum[warp] = st.sum;
    }
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
        const int d = lane + 32 * i;
        if (d < headDim) sAcc[warp][d] = acc[i];
    }
    __syncthreads();
    if (warp != 0) return;
    for (int w = 1; w < kAttnWarps; ++w) {
        math::OnlineSoftmax other;
        other.max = sMax[w];
        other.sum = sSum[w];
        float scaleA = 0.0f, scaleB = 0.0f;
        math::softmaxMerge(st, other, scaleA, scaleB);
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) {
            const int d = lane + 32 * i;
            if (d < headDim) acc[i] = acc[i] * scaleA + sAcc[w][d] * scaleB;
        }
    }
    float* oh = out + (t * nHeads + h) * headDim;
    const float inv = st.sum > 0.0f ? 1.0f / st.sum : 0.0f;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
        const int d = lane + 32 * i;
        if (d < headDim) oh[d] = acc[i] * inv;
    }
}

Status checkView(const PagedKvView& kv, const char* op) {
    if (!kv.k || !kv.v || kv.numBlocks <= 0 || kv.blockSize <= 0 || kv.nKvHeads <= 0 || kv.headDim <= 0)
        return invalidArgument(std::string(op) + ": K/V view without memory or with a bad shape");
    return Status::ok();
}

} // namespace

Status kvWrite(void* cache, KvFormat type, int64_t nSlots, int64_t rowSize, const float* rows, const int32_t* slots,
               int64_t n, StreamHandle stream) {
    if (!cache || !rows || !slots || n <= 0 || rowSize <= 0 || nSlots <= 0)
        return invalidArgument("cuda kvWrite: null pointer, no tokens or an empty cache");
    const int64_t total = n * rowSize;
    const unsigned grid = unsigned(std::min<int64_t>((total + 255) / 256, 65535));
    if (type == KvFormat::F16) {
        kvWriteKernel<uint16_t><<<grid, 256, 0, stream>>>(static_cast<uint16_t*>(cache), rows, slots, n, rowSize, nSlots);
    } else {
        kvWriteKernel<float><<<grid, 256, 0, stream>>>(static_cast<float*>(cache), rows, slots, n, rowSize, nSlots);
    }
    return detail::launchStatus("kvWriteKernel");
}

Status pagedAttention(const PagedKvView& kv, const AttentionArgs& a, StreamHandle stream) {
    HEARTH_RETURN_IF_ERROR(checkView(kv, "cuda pagedAttention"));
    if (!a.q || !a.out || !a.tables || !a.info || a.nTokens <= 0 || a.nHeads <= 0 || a.nHeads % kv.nKvHeads != 0 ||
        kv.headDim > kMaxHeadDim || a.nTokens > 65535 || a.window < 0 || a.softcap < 0.0f)
        return invalidArgument("cuda pagedAttention: null pointer, bad shape, nHeads not a multiple of "
                               "nKvHeads, headDim > 256, more than 65535 tokens or a negative window/softcap");
    const dim3 grid(unsigned(a.nHeads), unsigned(a.nTokens));
    if (kv.type == KvFormat::F16) {
        attentionKernel<uint16_t><<<grid, kAttnWarps * 32, 0, stream>>>(
            a.q, a.out, static_cast<const uint16_t*>(kv.k), static_cast<const uint16_t*>(kv.v), a.tables,
            a.info, a.nHeads, kv.nKvHeads, kv.headDim, kv.blockSize, a.scale, a.window, a.softcap);
    } else {
        attentionKernel<float><<<grid, kAttnWarps * 32, 0, stream>>>(
            a.q, a.out, static_cast<const float*>(kv.k), static_cast<const float*>(kv.v), a.tables,
            a.info, a.nHeads, kv.nKvHeads, kv.headDim, kv.blockSize, a.scale, a.window, a.softcap);
    }
    return detail::launchStatus("attentionKernel");
}

} // namespace hearth::cuda
