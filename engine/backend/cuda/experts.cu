// The mixture-of-experts kernels: routed expert products (matMulId), top-k / argsort of router
// rows, gathers of the chosen experts' logits, and the weighted sum that mixes their outputs. The
// routing stays on the device: expert ids are read by the kernels, never by the host.
#include "backend/cuda/kernel_common.cuh"

#include <algorithm>

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
                               float* __restrict__ y, int64_t firstPair) {
    const int lane = threadIdx.x & 31;
    const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
    if (row >= rows) return;
    const int64_t pair = firstPair + blockIdx.y; // token * k + slot
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

// ---- grouped by expert (prefill) ---------------------------------------------------------------
// The (token, slot) pairs are sorted by expert on the device (a count, a scan, a scatter), cut into
// tiles of up to kGroupTile pairs of one expert, and one warp per (output row, tile) reads the
// expert's row once for the whole tile.

constexpr int kGroupTile = 8;

// Scratch layout (int32): counts[nExperts], cursor[nExperts], sorted[pairs], tiles[3 * maxTiles]
// (expert, first index into sorted, count), tileCount[1].
struct GroupScratch {
    int32_t *counts, *cursor, *sorted, *tiles, *tileCount;
};
GroupScratch groupScratch(void* base, int64_t nExperts, int64_t pairs) {
    auto* p = static_cast<int32_t*>(base);
    const int64_t maxTiles = pairs / kGroupTile + nExperts;
    return {p, p + nExperts, p + 2 * nExperts, p + 2 * nExperts + pairs, p + 2 * nExperts + pairs + 3 * maxTiles};
}

__global__ void groupCountKernel(const int32_t* __restrict__ ids, int64_t pairs, int64_t nExperts, int32_t* counts) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs; i += int64_t(gridDim.x) * blockDim.x) {
        const int32_t e = ids[i];
        if (e >= 0 && e < nExperts) atomicAdd(&counts[e], 1);
    }
}

// One thread: each expert's start (into cursor) and its tiles, in expert order.
__global__ void groupPlanKernel(const int32_t* __restrict__ counts, int64_t nExperts, int32_t* cursor, int32_t* tiles,
                                int32_t* tileCount) {
    int32_t start = 0, n = 0;
    for (int64_t e = 0; e < nExperts; ++e) {
        cursor[e] = start;
        for (int32_t j = 0; j < counts[e]; j += kGroupTile) {
            tiles[3 * n] = int32_t(e);
            tiles[3 * n + 1] = start + j;
            tiles[3 * n + 2] = min(kGroupTile, counts[e] - j);
            ++n;
        }
        start += counts[e];
    }
    *tileCount = n;
}

// Pairs into their expert's run (the order within a run does not matter: each pair's output row
// is its own).
__global__ void groupScatterKernel(const int32_t* __restrict__ ids, int64_t pairs, int64_t nExperts, int32_t* cursor,
                                   int32_t* sorted) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs; i += int64_t(gridDim.x) * blockDim.x) {
        const int32_t e = ids[i];
        if (e >= 0 && e < nExperts) sorted[atomicAdd(&cursor[e], 1)] = int32_t(i);
    }
}

// Pairs whose id is outside the experts get zero rows (as matMulIdKernel gives them).
__global__ void groupZeroKernel(const int32_t* __restrict__ ids, int64_t pairs, int64_t nExperts, int64_t rows,
                                float* __restrict__ y) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs * rows; i += int64_t(gridDim.x) * blockDim.x) {
        const int32_t e = ids[i / rows];
        if (e < 0 || e >= nExperts) y[i] = 0.0f;
    }
}

// grid: (ceil(rows / 4), maxTiles); warp = one output row of one tile's pairs.
template <typename B>
__global__ void groupMatVecKernel(const uint8_t* __restrict__ w, uint64_t rowBytes, uint64_t expertBytes, int64_t rows,
                                  int64_t nChunks, const float* __restrict__ x, int64_t cols, bool shared, int k,
                                  const int32_t* __restrict__ sorted, const int32_t* __restrict__ tiles,
                                  const int32_t* __restrict__ tileCount, float* __restrict__ y) {
    const int tile = blockIdx.y;
    if (tile >= *tileCount) return;
    const int lane = threadIdx.x & 31;
    const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
    if (row >= rows) return;
    const int32_t expert = tiles[3 * tile], first = tiles[3 * tile + 1], count = tiles[3 * tile + 2];
    const B* wr = reinterpret_cast<const B*>(w + uint64_t(expert) * expertBytes + uint64_t(row) * rowBytes);
    const float* xr[kGroupTile];
    int32_t pair[kGroupTile];
#pragma unroll
    for (int j = 0; j < kGroupTile; ++j) {
        pair[j] = j < count ? sorted[first + j] : -1;
        const int64_t p = pair[j] < 0 ? 0 : pair[j];
        xr[j] = x + (shared ? p / k : p) * cols;
    }
    float acc[kGroupTile] = {};
    for (int64_t c = lane; c < nChunks; c += 32) {
        float wv[math::kChunk];
        detail::loadChunk(wr, c, cols, wv);
        const int64_t base = c * math::kChunk;
#pragma unroll
        for (int j = 0; j < kGroupTile; ++j) {
            if (j >= count) break;
            float s = 0.0f;
            for (int l = 0; l < math::kChunk && base + l < cols; ++l) s += wv[l] * xr[j][base + l];
            acc[j] += s;
        }
    }
#pragma unroll
    for (int j = 0; j < kGroupTile; ++j) {
        if (j >= count) break;
        const float v = detail::warpSum(acc[j]);
        if (lane == 0) y[int64_t(pair[j]) * rows + row] = v;
    }
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

unsigned elementGrid(int64_t n) { return detail::strideGrid(n, kThreads); }

} // namespace

Status matMulId(const KernelExperts& w, const float* x, bool shared, const int32_t* ids, int64_t tokens, int k,
                float* y, StreamHandle stream) {
    if (!x || !ids || !y || tokens < 1 || k < 1 || w.nExperts < 1)
        return invalidArgument("cuda matMulId: null pointer, no tokens or no experts");
    return detail::dispatchWeight(w.matrix, "cuda matMulId", [&](auto block) -> Status {
        using B = decltype(block);
        const int64_t pairs = tokens * k;
        for (int64_t first = 0; first < pairs; first += 65535) { // grid.y's limit
            const dim3 grid(detail::gridFor(w.matrix.rows, kWarpsPerBlock), unsigned(std::min<int64_t>(65535, pairs - first)));
            matMulIdKernel<B><<<grid, kWarpsPerBlock * 32, 0, stream>>>(
                static_cast<const uint8_t*>(w.matrix.data), w.matrix.rowBytes, w.expertBytes, w.nExperts, w.matrix.rows,
                detail::chunksOf(w.matrix.cols), x, w.matrix.cols, shared, ids, k, y, first);
            HEARTH_RETURN_IF_ERROR(detail::launchStatus("matMulIdKernel"));
        }
        return Status::ok();
    });
}

uint64_t matMulIdGroupedScratchBytes(int64_t nExperts, int64_t tokens, int k) {
    const int64_t pairs = tokens * k;
    return uint64_t(2 * nExperts + pairs + 3 * (pairs / kGroupTile + nExperts) + 1) * sizeof(int32_t);
}

Status matMulIdGrouped(const KernelExperts& w, const float* x, bool shared, const int32_t* ids, int64_t tokens, int k,
                       float* y, void* scratch, StreamHandle stream) {
    const int64_t pairs = tokens * k;
    const int64_t maxTiles = pairs / kGroupTile + w.nExperts;
    if (!x || !ids || !y || !scratch || tokens < 1 || k < 1 || w.nExperts < 1 || maxTiles > 65535)
        return invalidArgument("cuda matMulIdGrouped: null pointer, no tokens or experts, or more than 65535 tiles");
    const GroupScratch g = groupScratch(scratch, w.nExperts, pairs);
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaMemsetAsync(g.counts, 0, size_t(w.nExperts) * sizeof(int32_t), stream),
                                      "cudaMemsetAsync"));
    const unsigned pairGrid = elementGrid(pairs);
    groupCountKernel<<<pairGrid, kThreads, 0, stream>>>(ids, pairs, w.nExperts, g.counts);
    groupPlanKernel<<<1, 1, 0, stream>>>(g.counts, w.nExperts, g.cursor, g.tiles, g.tileCount);
    groupScatterKernel<<<pairGrid, kThreads, 0, stream>>>(ids, pairs, w.nExperts, g.cursor, g.sorted);
    groupZeroKernel<<<elementGrid(pairs * w.matrix.rows), kThreads, 0, stream>>>(ids, pairs, w.nExperts, w.matrix.rows, y);
    HEARTH_RETURN_IF_ERROR(detail::launchStatus("matMulIdGrouped routing"));
    return detail::dispatchWeight(w.matrix, "cuda matMulIdGrouped", [&](auto block) -> Status {
        using B = decltype(block);
        const dim3 grid(detail::gridFor(w.matrix.rows, kWarpsPerBlock), unsigned(maxTiles));
        groupMatVecKernel<B><<<grid, kWarpsPerBlock * 32, 0, stream>>>(
            static_cast<const uint8_t*>(w.matrix.data), w.matrix.rowBytes, w.expertBytes, w.matrix.rows,
            detail::chunksOf(w.matrix.cols), x, w.matrix.cols, shared, k, g.sorted, g.tiles, g.tileCount, y);
        return detail::launchStatus("groupMatVecKernel");
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
