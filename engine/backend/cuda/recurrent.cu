// The hybrid models' recurrent ops on the device: the causal short convolution over a rolling
// window and the gated delta rule, with their states read, snapshotted and stored in the State pool
// as the step's StateInfo says (graph/graph.h, Op::SsmConv). Tokens are walked in order; the
// parallel work is across channels (convolution) and across the rows of each head's matrix (delta
// rule: every row of M evolves on its own given the token's q and k).
#include "backend/cuda/kernel_common.cuh"

namespace hearth::cuda {

namespace {

constexpr int kThreads = 256;

// Whether token t starts a run (its write slot differs from the previous token's).
__device__ inline bool runStarts(const int32_t* info, int64_t t) { return t == 0 || info[3 * t + 1] != info[3 * t - 2]; }
// Whether token t ends its run.
__device__ inline bool runEnds(const int32_t* info, int64_t t, int64_t n) {
    return t + 1 == n || info[3 * t + 4] != info[3 * t + 1];
}

// One thread per channel c: window[k] holds input k of the last K (oldest first), the first K - 1
// from the state row [K-1][C] at a run's start.
__global__ void ssmConvKernel(const float* __restrict__ x, const float* __restrict__ w, float* state,
                              const int32_t* __restrict__ info, float* __restrict__ out, int64_t n, int64_t C, int K) {
    const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const int64_t row = int64_t(K - 1) * C;
    float window[kMaxConvKernel];
    for (int64_t t = 0; t < n; ++t) {
        if (runStarts(info, t)) {
            const int32_t read = info[3 * t];
            for (int k = 0; k < K - 1; ++k) window[k] = read >= 0 ? state[int64_t(read) * row + k * C + c] : 0.0f;
        }
        window[K - 1] = x[t * C + c];
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += w[c * K + k] * window[k];
        out[t * C + c] = acc;
        for (int k = 0; k + 1 < K; ++k) window[k] = window[k + 1]; // drop the oldest
        const int32_t snap = info[3 * t + 2];
        if (snap >= 0)
            for (int k = 0; k < K - 1; ++k) state[int64_t(snap) * row + k * C + c] = window[k];
        if (runEnds(info, t, n)) {
            const int32_t write = info[3 * t + 1];
            for (int k = 0; k < K - 1; ++k) state[int64_t(write) * row + k * C + c] = window[k];
        }
    }
}

constexpr int kMaxPerLane = kMaxDeltaHead / 32;

// One warp per row i of value head h's matrix M [S v][S k]: lane l holds columns l, l + 32, ...
// Per token: q and k of head h % Hk L2-normalized (q also by 1/sqrt(S)), r ← e^g·r,
// r += beta·(v[i] − r·k)·k, out[t][h][i] = r·q.
__global__ void deltaNetKernel(const float* __restrict__ qkv, const float* __restrict__ g,
                               const float* __restrict__ beta, float* state, const int32_t* __restrict__ info,
                               float* __restrict__ out, int64_t n, int Hk, int Hv, int S, float eps) {
    const int lane = threadIdx.x & 31;
    const int64_t rowId = int64_t(blockIdx.x) * (blockDim.x / 32) + (threadIdx.x >> 5); // h * S + i
    if (rowId >= int64_t(Hv) * S) return;
    const int h = int(rowId / S), i = int(rowId % S), hk = h % Hk, per = S / 32;
    const int64_t width = int64_t(2 * Hk + Hv) * S, stateRow = int64_t(Hv) * S * S;
    const int64_t mOffset = int64_t(h) * S * S + int64_t(i) * S; // this row inside a slot's state
    const float qScale = rsqrtf(float(S));
    float r[kMaxPerLane];
    for (int64_t t = 0; t < n; ++t) {
        if (runStarts(info, t)) {
            const int32_t read = info[3 * t];
            for (int j = 0; j < per; ++j) r[j] = read >= 0 ? state[int64_t(read) * stateRow + mOffset + lane + 32 * j] : 0.0f;
        }
        const float* xq = qkv + t * width + int64_t(hk) * S;
        const float* xk = qkv + t * width + int64_t(Hk + hk) * S;
        float qv[kMaxPerLane], kv[kMaxPerLane];
        float qq = 0.0f, kk = 0.0f;
        for (int j = 0; j < per; ++j) {
            qv[j] = xq[lane + 32 * j];
            kv[j] = xk[lane + 32 * j];
            qq += qv[j] * qv[j];
            kk += kv[j] * kv[j];
        }
        const float qInv = qScale * rsqrtf(detail::warpSum(qq) + eps), kInv = rsqrtf(detail::warpSum(kk) + eps);
        const float decay = expf(g[t * Hv + h]);
        float mk = 0.0f;
        for (int j = 0; j < per; ++j) {
            kv[j] *= kInv;
            r[j] *= decay;
            mk += r[j] * kv[j];
        }
        const float v = qkv[t * width + int64_t(2 * Hk + h) * S + i];
        const float d = (v - detail::warpSum(mk)) * beta[t * Hv + h];
        float o = 0.0f;
        for (int j = 0; j < per; ++j) {
            r[j] += d * kv[j];
            o += r[j] * qv[j] * qInv;
        }
        o = detail::warpSum(o);
        if (lane == 0) out[(t * Hv + h) * S + i] = o;
        const int32_t snap = info[3 * t + 2];
        if (snap >= 0)
            for (int j = 0; j < per; ++j) state[int64_t(snap) * stateRow + mOffset + lane + 32 * j] = r[j];
        if (runEnds(info, t, n)) {
            const int32_t write = info[3 * t + 1];
            for (int j = 0; j < per; ++j) state[int64_t(write) * stateRow + mOffset + lane + 32 * j] = r[j];
        }
    }
}

} // namespace

Status ssmConv(const float* x, const float* w, float* state, const int32_t* info, float* out, int64_t n, int64_t C,
               int K, StreamHandle stream) {
    if (!x || !w || !state || !info || !out || n < 1 || C < 1 || K < 2 || K > kMaxConvKernel)
        return invalidArgument("cuda ssmConv: null pointer, no tokens or a kernel outside [2, " +
                               std::to_string(kMaxConvKernel) + "]");
    ssmConvKernel<<<detail::gridFor(C, kThreads), kThreads, 0, stream>>>(x, w, state, info, out, n, C, K);
    return detail::launchStatus("ssmConvKernel");
}

Status deltaNet(const float* qkv, const float* g, const float* beta, float* state, const int32_t* info, float* out,
                int64_t n, int Hk, int Hv, int S, float eps, StreamHandle stream) {
    if (!qkv || !g || !beta || !state || !info || !out || n < 1 || Hk < 1 || Hv < 1 || Hv % Hk != 0 || S < 32 ||
        S > kMaxDeltaHead || S % 32 != 0)
        return invalidArgument("cuda deltaNet: null pointer, no tokens, bad heads or a head size not a multiple of "
                               "32 up to " + std::to_string(kMaxDeltaHead));
    const int64_t rows = int64_t(Hv) * S;
    constexpr int kWarps = 4;
    deltaNetKernel<<<detail::gridFor(rows, kWarps), kWarps * 32, 0, stream>>>(qkv, g, beta, state, info, out, n, Hk, Hv,
                                                                               S, eps);
    return detail::launchStatus("deltaNetKernel");
}

} // namespace hearth::cuda
