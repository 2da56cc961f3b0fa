// Paged K/V writes and paged attention (a whole batch of decode tokens and prefill chunks in one
// launch; causal or within the sequence, optionally with a sliding window, soft-capped scores and
// per-head sinks) with a flash-style online softmax: the warps of a block split a (token, head)'s
// keys, then merge their states.
#include "backend/cuda/kernel_common.cuh"

#include <algorithm>

namespace hearth::cuda {

namespace {

constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerLane = kMaxHeadDim / 32; // lane l holds dims l, l + 32, ...
constexpr int kAttnWarps = 4;

__device__ inline void storeKv(float* p, float v) { *p = v; }
__device__ inline void storeKv(uint16_t* p, float v) { *p = math::floatToFp16(v); }

// How the attention kernel reads one head's slice of a cache row, by format: the slice's bytes
// start at `row` (that head's first value); value d of it.
template <KvFormat F> struct KvRead;
template <> struct KvRead<KvFormat::F32> {
    static __device__ uint64_t headOffset(int kvh, int headDim) { return uint64_t(kvh) * headDim * 4; }
    static __device__ float at(const uint8_t* row, int d) { return reinterpret_cast<const float*>(row)[d]; }
};
template <> struct KvRead<KvFormat::F16> {
    static __device__ uint64_t headOffset(int kvh, int headDim) { return uint64_t(kvh) * headDim * 2; }
    static __device__ float at(const uint8_t* row, int d) {
        return math::fp16ToFloat(reinterpret_cast<const uint16_t*>(row)[d]);
    }
};
template <> struct KvRead<KvFormat::Q8_0> { // headDim a multiple of 32: the slice is whole blocks
    static __device__ uint64_t headOffset(int kvh, int headDim) { return uint64_t(kvh) * (headDim / 32) * 34; }
    static __device__ float at(const uint8_t* row, int d) {
        const auto* b = reinterpret_cast<const quant::BlockQ8_0*>(row) + d / 32;
        return math::fp16ToFloat(b->d) * float(b->qs[d % 32]);
    }
};

// One thread per (token, block of 32 values): rows[n][rowSize] quantized into cache[slots[t]].
__global__ void kvWriteQ8Kernel(uint8_t* cache, const float* __restrict__ rows, const int32_t* __restrict__ slots,
                                int64_t n, int64_t rowSize, int64_t nSlots) {
    const int64_t perRow = rowSize / 32;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * perRow; i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t t = i / perRow, b = i % perRow;
        const int64_t slot = slots[t];
        if (slot < 0 || slot >= nSlots) continue; // unmapped: the host validates slots
        quant::BlockQ8_0 q;
        math::quantizeQ8Block(rows + t * rowSize + b * 32, q);
        auto* dst = cache + uint64_t(slot) * uint64_t(perRow) * 34 + uint64_t(b) * 34;
        dst[0] = uint8_t(q.d & 0xff);
        dst[1] = uint8_t(q.d >> 8);
        for (int j = 0; j < 32; ++j) dst[2 + j] = uint8_t(q.qs[j]);
    }
}

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
template <KvFormat F>
__global__ void __launch_bounds__(kAttnWarps * 32)
attentionKernel(const float* __restrict__ q, float* __restrict__ out, const uint8_t* __restrict__ kc,
                const uint8_t* __restrict__ vc, uint64_t rowBytes, const int32_t* __restrict__ tables,
                const int32_t* __restrict__ info,
                int nHeads, int nKvHeads, int headDim, int blockSize, float scale, int window, float softcap,
                const float* __restrict__ sinks, bool causal, int64_t nTokens) {
    __shared__ float sMax[kAttnWarps], sSum[kAttnWarps];
    __shared__ float sAcc[kAttnWarps][kMaxHeadDim];

    const int h = blockIdx.x;
    const int64_t t = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h / (nHeads / nKvHeads);
    const uint64_t head = KvRead<F>::headOffset(kvh, headDim);
    const float* qh = q + (t * nHeads + h) * headDim;

    float qv[kDimsPerLane], acc[kDimsPerLane];
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
        const int d = lane + 32 * i;
        qv[i] = d < headDim ? qh[d] * scale : 0.0f;
        acc[i] = 0.0f;
    }

    math::OnlineSoftmax st;
    const int32_t offset = info[2 * t + 1];
    const int32_t* blockTable = tables + offset;
    int64_t last = info[2 * t];
    if (!causal) // the sequence (tokens of the same table) as far as the step reaches
        for (int64_t u = 0; u < nTokens; ++u)
            if (info[2 * u + 1] == offset && info[2 * u] > last) last = info[2 * u];
    // A window counts back from the token's own position (without the mask too).
    for (int64_t p = math::attentionFirst(info[2 * t], window) + warp; p <= last; p += kAttnWarps) {
        const int64_t slot = int64_t(blockTable[p / blockSize]) * blockSize + p % blockSize;
        const uint8_t* kr = kc + uint64_t(slot) * rowBytes + head;
        const uint8_t* vr = vc + uint64_t(slot) * rowBytes + head;
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) {
            const int d = lane + 32 * i;
            if (d < headDim) s += qv[i] * KvRead<F>::at(kr, d);
        }
        s = math::softcap(detail::warpSum(s), softcap);
        float scaleOld = 0.0f, weight = 0.0f;
        math::softmaxAdd(st, s, scaleOld, weight);
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) {
            const int d = lane + 32 * i;
            if (d < headDim) acc[i] = acc[i] * scaleOld + weight * KvRead<F>::at(vr, d);
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
    if (sinks) { // a score that takes part in the softmax but adds no value
        math::OnlineSoftmax sink;
        sink.max = sinks[h];
        sink.sum = 1.0f;
        float scaleA = 0.0f, scaleB = 0.0f;
        math::softmaxMerge(st, sink, scaleA, scaleB);
#pragma unroll
        for (int i = 0; i < kDimsPerLane; ++i) acc[i] *= scaleA;
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
    if (type == KvFormat::Q8_0) {
        if (rowSize % 32 != 0) return invalidArgument("cuda kvWrite: a Q8_0 row of " + std::to_string(rowSize) + " values");
        kvWriteQ8Kernel<<<unsigned(std::min<int64_t>((n * rowSize / 32 + 255) / 256, 65535)), 256, 0, stream>>>(
            static_cast<uint8_t*>(cache), rows, slots, n, rowSize, nSlots);
    } else if (type == KvFormat::F16) {
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
    if (kv.type == KvFormat::Q8_0 && kv.headDim % 32 != 0)
        return invalidArgument("cuda pagedAttention: a Q8_0 cache needs heads of a multiple of 32 values");
    const dim3 grid(unsigned(a.nHeads), unsigned(a.nTokens));
    const uint64_t rowBytes = kvRowBytes(kv.type, int64_t(kv.nKvHeads) * kv.headDim);
    const auto* k = static_cast<const uint8_t*>(kv.k);
    const auto* v = static_cast<const uint8_t*>(kv.v);
    auto launch = [&](auto kernel) {
        kernel<<<grid, kAttnWarps * 32, 0, stream>>>(a.q, a.out, k, v, rowBytes, a.tables, a.info, a.nHeads, kv.nKvHeads,
                                                     kv.headDim, kv.blockSize, a.scale, a.window, a.softcap, a.sinks,
                                                     a.causal, a.nTokens);
    };
    switch (kv.type) {
    case KvFormat::F32: launch(attentionKernel<KvFormat::F32>); break;
    case KvFormat::F16: launch(attentionKernel<KvFormat::F16>); break;
    case KvFormat::Q8_0: launch(attentionKernel<KvFormat::Q8_0>); break;
    }
    return detail::launchStatus("attentionKernel");
}

} // namespace hearth::cuda
