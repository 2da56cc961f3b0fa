// The mixture-of-experts kernels: routed expert products (matMulId), top-k / argsort of router
// rows, gathers of the chosen experts' logits, and the weighted sum that mixes their outputs. The
// routing stays on the device: expert ids are read by the kernels, never by the host.
#include "backend/cuda/kernel_common.cuh"

namespace hearth::cuda {

namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kThreads = 256;

// grid: (ceil(rows / 4), tokens * k); warp = one output row of one (token, slot) pair, reading
// its expert's row of W and the pair's activation row.
template <typename B>
__global__ void matMulIdKernel(const uint8_t* __restrict__ w, uint64_t rowBytes, uint64_t expertBytes,
                               int64_t nExperts, int64_t rows, int64_t nChunks, const float* __restrict__ x,
                               int64_t cols, bool shared, const int32_t* __restrict__ ids, int k,
                               float* __restrict__ y) {
    const int lane = threadIdx.x & 31;
    const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
    if (row >= rows) return;
    const int64_t pair = blockIdx.y; // token * k + slot
    const int32_t expert = ids[pair];
    float* out = y + pair * rows + row;
    if (expert < 0 || expert >= nExperts) {
        if (lane == 0) *out = 0.0f;
        return;
    }
    const int64_t token = pair / k, slot = pair % k;
    const float* xr = x + (shared ? token : token * k + slot) * cols;
    const B* wr = reinterpret_cast<const B*>(w + uint64_t(expert) * expertBytes + uint64_t(row) * rowBytes);
    float acc = 0.0f;
    for (int64_t c = lane; c < nChunks; c += 32) {
        float wv[math::kChunk];
        detail::loadChunk(wr, c, cols, wv);
        const int64_t base = c * math::kChunk;
        for (int j = 0; j < math::kChunk && base + j < cols; ++j) acc += wv[j] * xr[base + j];
    }
    acc = detail::warpSum(acc);
    if (lane == 0) *out = acc;
}

// grid: nRows blocks; the row in shared memory, each thread ranks its values by counting those
// that sort before them (larger, or equal at a lower index), then scatters the first k.
__global__ void topKKernel(const float* __restrict__ x, int64_t n, int k, int32_t* __restrict__ out) {
    extern __shared__ float row[];
    const float* xr = x + int64_t(blockIdx.x) * n;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) row[i] = xr[i];
    __syncthreads();
    int32_t* o = out + int64_t(blockIdx.x) * k;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = row[i];
        int64_t rank = 0;
        for (int64_t j = 0; j < n; ++j) {
            const float u = row[j];
            rank += (u > v || (u == v && j < i)) ? 1 : 0;
        }
        if (rank < k) o[rank] = int32_t(i);
    }
}

__global__ void gatherKernel(const float* __restrict__ x, int64_t n, const int32_t* __restrict__ ids, int k,
                             int64_t total, float* __restrict__ out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
        const int32_t id = ids[i];
        out[i] = id >= 0 && id < n ? x[(i / k) * n + id] : 0.0f;
    }
}

__global__ void weightedSumKernel(const float* __restrict__ y, const float* __restrict__ w, int k, int64_t J,
                                  int64_t total, float* __restrict__ out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t t = i / J, j = i % J;
        float acc = 0.0f;
        for (int e = 0; e < k; ++e) acc += w[t * k + e] * y[(t * k + e) * J + j];
        out[i] = acc;
    }
}

unsigned elementGrid(int64_t n) {
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    return unsigned(blocks < 65535 ? blocks : 65535);
}

} // namespace

Status matMulId(const DeviceExperts& w, const float* x, bool shared, const int32_t* ids, int64_t tokens, int k,
                float* y, StreamHandle stream) {
    if (!x || !ids || !y || tokens < 1 || k < 1 || w.nExperts < 1 || tokens * k > 65535)
        return invalidArgument("cuda matMulId: null pointer, or tokens * k outside [1, 65535]");
    return detail::dispatchWeight(w.matrix, "cuda matMulId", [&](auto block) -> Status {
        using B = decltype(block);
        const dim3 grid(detail::gridFor(w.matrix.rows, kWarpsPerBlock), unsigned(tokens * k));
        matMulIdKernel<B><<<grid, kWarpsPerBlock * 32, 0, stream>>>(
            static_cast<const uint8_t*>(w.matrix.data), w.matrix.rowBytes, w.expertBytes, w.nExperts, w.matrix.rows,
            detail::chunksOf(w.matrix.cols), x, w.matrix.cols, shared, ids, k, y);
        return detail::launchStatus("matMulIdKernel");
    });
}

Status topK(const float* x, int64_t nRows, int64_t n, int k, int32_t* out, StreamHandle stream) {
    if (!x || !out || nRows < 1 || nRows > 0x7fffffff || n < 1 || n > kMaxSortWidth || k < 1 || k > n)
        return invalidArgument("cuda topK: null pointer or bad shape (width 1.." + std::to_string(kMaxSortWidth) +
                               ", 1 <= k <= width)");
    topKKernel<<<unsigned(nRows), kThreads, size_t(n) * sizeof(float), stream>>>(x, n, k, out);
    return detail::launchStatus("topKKernel");
}

Status gather(const float* x, int64_t n, const int32_t* ids, int64_t nRows, int k, float* out, StreamHandle stream) {
    if (!x || !ids || !out || n < 1 || nRows < 1 || k < 1) return invalidArgument("cuda gather: null pointer or empty");
    gatherKernel<<<elementGrid(nRows * k), kThreads, 0, stream>>>(x, n, ids, k, nRows * k, out);
    return detail::launchStatus("gatherKernel");
}

Status weightedSum(const float* y, const float* w, int64_t tokens, int k, int64_t J, float* out,
                   StreamHandle stream) {
    if (!y || !w || !out || tokens < 1 || k < 1 || J < 1)
        return invalidArgument("cuda weightedSum: null pointer or empty");
    weightedSumKernel<<<elementGrid(tokens * J), kThreads, 0, stream>>>(y, w, k, J, tokens * J, out);
    return detail::launchStatus("weightedSumKernel");
}

} // namespace hearth::cuda
