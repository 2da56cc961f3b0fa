// Row and element-wise kernels: RMSNorm (also gated), layer norm, RoPE, SwiGLU, GeGLU, gpt-oss's gated unit,
// SiLU/GELU/sigmoid/softplus, add, mul, scale, soft-capping, softmax, strided copies and concat,
// row gathers and embedding get-rows.
#include "backend/cuda/kernel_common.cuh"

namespace hearth::cuda {

namespace {

constexpr int kThreads = 256;

// grid: nRows blocks; block sums the row's squares, then scales.
__global__ void rmsNormKernel(const float* x, const float* __restrict__ weight, float* out, int64_t n,
                              float eps) {
    const float* xr = x + int64_t(blockIdx.x) * n;
    float* yr = out + int64_t(blockIdx.x) * n;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    const float scale = math::rmsScale(detail::blockSum(ss), n, eps);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = xr[i] * scale * (weight ? weight[i] : 1.0f);
}

// grid: nRows blocks; rmsNormKernel times silu of the gate row z.
__global__ void rmsNormGatedKernel(const float* x, const float* __restrict__ weight, const float* __restrict__ z,
                                   float* out, int64_t n, float eps) {
    const float* xr = x + int64_t(blockIdx.x) * n;
    const float* zr = z + int64_t(blockIdx.x) * n;
    float* yr = out + int64_t(blockIdx.x) * n;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    const float scale = math::rmsScale(detail::blockSum(ss), n, eps);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = xr[i] * scale * weight[i] * math::silu(zr[i]);
}

// grid: nRows blocks; the mean, then the variance about it, then the normalized row.
__global__ void layerNormKernel(const float* x, const float* __restrict__ weight, const float* __restrict__ bias,
                                float* out, int64_t n, float eps) {
    const float* xr = x + int64_t(blockIdx.x) * n;
    float* yr = out + int64_t(blockIdx.x) * n;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += xr[i];
    const float mean = detail::blockSum(s) / float(n);
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) ss += (xr[i] - mean) * (xr[i] - mean);
    const float inv = rsqrtf(detail::blockSum(ss) / float(n) + eps);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        float v = (xr[i] - mean) * inv;
        if (weight) v *= weight[i];
        if (bias) v += bias[i];
        yr[i] = v;
    }
}

// One thread per (token, head, pair): x[nTokens][nHeads][headDim].
__global__ void ropeKernel(float* x, const int32_t* __restrict__ positions, int64_t nTokens, RopeParams p) {
    const int nHeads = p.nHeads, headDim = p.headDim, nRot = p.nRot;
    const int half = nRot / 2;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= nTokens * nHeads * half) return;
    const int i = int(idx % half);
    const int64_t head = idx / half; // token * nHeads + h
    const int64_t token = head / nHeads;
    float* xh = x + head * headDim;
    int a = 0, b = 0;
    math::ropePair(i, nRot, p.neox, a, b);
    const float ff = p.freqFactors ? p.freqFactors[i] : 1.0f;
    const int64_t pos = positions[token];
    const float theta = math::ropeThetaYarn(pos, i, nRot, p.freqBase, ff, p.freqScale, p.extFactor, p.yarnLow, p.yarnHigh);
    math::ropeRotate(xh[a], xh[b], theta, p.magnitude * math::ropeTemperature(pos, p.tempScale, p.tempLength));
}

__global__ void swigluKernel(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = math::swiglu(gate[i], up[i]);
}

__global__ void gegluKernel(const float* gate, const float* up, float* out, int64_t n) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = math::geglu(gate[i], up[i]);
}

__global__ void swigluOaiKernel(const float* gate, const float* up, float* out, int64_t n, float alpha,
                                float limit) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = math::swigluOai(gate[i], up[i], alpha, limit);
}

template <UnaryOp Op> __global__ void unaryKernel(const float* x, float* out, int64_t n) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const float v = x[i];
        if constexpr (Op == UnaryOp::Silu) out[i] = math::silu(v);
        else if constexpr (Op == UnaryOp::Gelu) out[i] = math::gelu(v);
        else if constexpr (Op == UnaryOp::Sigmoid) out[i] = math::sigmoid(v);
        else out[i] = math::softplus(v);
    }
}

__global__ void mulKernel(const float* a, const float* b, float* out, int64_t n, int64_t bn) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = a[i] * b[bn == n ? i : i % bn];
}

__global__ void scaleKernel(const float* x, float* out, int64_t n, float s) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = x[i] * s;
}

__global__ void softcapKernel(const float* x, float* out, int64_t n, float cap) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = math::softcap(x[i], cap);
}

__global__ void addKernel(const float* a, const float* b, float* out, int64_t n) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = a[i] + b[i];
}

__global__ void addRowsKernel(float* x, const float* __restrict__ bias, int64_t n, int64_t dim) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        x[i] += bias[i % dim];
}

// grid-stride over nRows * dim values: out[i][e] = x[rows[i]][e].
__global__ void gatherRowsKernel(const float* __restrict__ x, const int32_t* __restrict__ rows, int64_t n,
                                 int64_t dim, float* __restrict__ out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = x[int64_t(rows[i / dim]) * dim + i % dim];
}

// grid: nRows blocks; max, then sum of exponentials, then normalize.
__global__ void softmaxKernel(float* x, int64_t n) {
    float* xr = x + int64_t(blockIdx.x) * n;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, xr[i]);
    m = detail::blockMax(m);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += expf(xr[i] - m);
    const float inv = 1.0f / detail::blockSum(s);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) xr[i] = expf(xr[i] - m) * inv;
}

// grid: nRows blocks; as softmaxKernel with the row first multiplied by scale, out of place.
__global__ void softmaxScaledKernel(const float* x, float* out, int64_t n, float scale) {
    const float* xr = x + int64_t(blockIdx.x) * n;
    float* yr = out + int64_t(blockIdx.x) * n;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, xr[i] * scale);
    m = detail::blockMax(m);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += expf(xr[i] * scale - m);
    const float inv = 1.0f / detail::blockSum(s);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = expf(xr[i] * scale - m) * inv;
}

// grid-stride over out's n values (contiguous, shape outNe): from a, or from b past a's extent
// along dim (dim < 0: a only).
__global__ void concatKernel(StridedF32 a, StridedF32 b, int dim, int64_t ne0, int64_t ne1, int64_t ne2, int64_t n,
                             float* __restrict__ out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        int64_t idx[4] = {i % ne0, (i / ne0) % ne1, (i / (ne0 * ne1)) % ne2, i / (ne0 * ne1 * ne2)};
        const StridedF32* src = &a;
        if (dim >= 0 && idx[dim] >= a.ne[dim]) {
            idx[dim] -= a.ne[dim];
            src = &b;
        }
        const uint8_t* p = static_cast<const uint8_t*>(src->data) + idx[0] * src->nb[0] + idx[1] * src->nb[1] +
                           idx[2] * src->nb[2] + idx[3] * src->nb[3];
        out[i] = *reinterpret_cast<const float*>(p);
    }
}

// grid: nIds blocks; each thread dequantizes 32-value chunks of the row.
template <typename B>
__global__ void getRowsKernel(const uint8_t* __restrict__ table, uint64_t rowBytes, int64_t rows,
                              int64_t cols, const int32_t* __restrict__ ids, float* out) {
    const int32_t id = ids[blockIdx.x];
    float* yr = out + int64_t(blockIdx.x) * cols;
    const int64_t nChunks = (cols + math::kChunk - 1) / math::kChunk;
    for (int64_t c = threadIdx.x; c < nChunks; c += blockDim.x) {
        float v[math::kChunk];
        if (id >= 0 && id < rows) {
            detail::loadChunk(reinterpret_cast<const B*>(table + uint64_t(id) * rowBytes), c, cols, v);
        } else {
            for (float& e : v) e = 0.0f;
        }
        for (int j = 0; j < math::kChunk && c * math::kChunk + j < cols; ++j) yr[c * math::kChunk + j] = v[j];
    }
}

unsigned elementGrid(int64_t n) { return detail::strideGrid(n, kThreads); }

} // namespace

Status rmsNorm(const float* x, const float* weight, float* out, int64_t nRows, int64_t n, float eps,
               StreamHandle stream) {
    if (!x || !out || nRows <= 0 || n <= 0 || nRows > 0x7fffffff)
        return invalidArgument("cuda rmsNorm: null pointer or bad shape");
    rmsNormKernel<<<unsigned(nRows), kThreads, 0, stream>>>(x, weight, out, n, eps);
    return detail::launchStatus("rmsNormKernel");
}

Status rmsNormGated(const float* x, const float* weight, const float* z, float* out, int64_t nRows, int64_t n,
                    float eps, StreamHandle stream) {
    if (!x || !weight || !z || !out || nRows <= 0 || n <= 0 || nRows > 0x7fffffff)
        return invalidArgument("cuda rmsNormGated: null pointer or bad shape");
    rmsNormGatedKernel<<<unsigned(nRows), kThreads, 0, stream>>>(x, weight, z, out, n, eps);
    return detail::launchStatus("rmsNormGatedKernel");
}

Status layerNorm(const float* x, const float* weight, const float* bias, float* out, int64_t nRows, int64_t n,
                 float eps, StreamHandle stream) {
    if (!x || !out || nRows <= 0 || n <= 0 || nRows > 0x7fffffff)
        return invalidArgument("cuda layerNorm: null pointer or bad shape");
    layerNormKernel<<<unsigned(nRows), kThreads, 0, stream>>>(x, weight, bias, out, n, eps);
    return detail::launchStatus("layerNormKernel");
}

Status unary(UnaryOp op, const float* x, float* out, int64_t n, StreamHandle stream) {
    if (!x || !out || n <= 0) return invalidArgument("cuda unary: null pointer or empty");
    const unsigned grid = elementGrid(n);
    switch (op) {
    case UnaryOp::Silu: unaryKernel<UnaryOp::Silu><<<grid, kThreads, 0, stream>>>(x, out, n); break;
    case UnaryOp::Gelu: unaryKernel<UnaryOp::Gelu><<<grid, kThreads, 0, stream>>>(x, out, n); break;
    case UnaryOp::Sigmoid: unaryKernel<UnaryOp::Sigmoid><<<grid, kThreads, 0, stream>>>(x, out, n); break;
    case UnaryOp::Softplus: unaryKernel<UnaryOp::Softplus><<<grid, kThreads, 0, stream>>>(x, out, n); break;
    }
    return detail::launchStatus("unaryKernel");
}

Status swigluOai(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit,
                 StreamHandle stream) {
    if (!gate || !up || !out || n <= 0) return invalidArgument("cuda swigluOai: null pointer or empty");
    swigluOaiKernel<<<elementGrid(n), kThreads, 0, stream>>>(gate, up, out, n, alpha, limit);
    return detail::launchStatus("swigluOaiKernel");
}

Status mul(const float* a, const float* b, float* out, int64_t n, int64_t bn, StreamHandle stream) {
    if (!a || !b || !out || n <= 0 || bn <= 0 || n % bn != 0)
        return invalidArgument("cuda mul: null pointer, empty, or b's size not dividing a's");
    mulKernel<<<elementGrid(n), kThreads, 0, stream>>>(a, b, out, n, bn);
    return detail::launchStatus("mulKernel");
}

Status rope(float* x, const int32_t* positions, int64_t nTokens, const RopeParams& p, StreamHandle stream) {
    if (!x || !positions || nTokens <= 0 || p.nHeads <= 0 || p.headDim <= 0 || p.nRot <= 0 ||
        p.nRot > p.headDim || p.nRot % 2 != 0)
        return invalidArgument("cuda rope: null pointer or bad shape (nRot must be even and <= headDim)");
    const int64_t threads = nTokens * p.nHeads * (p.nRot / 2);
    ropeKernel<<<detail::gridFor(threads, kThreads), kThreads, 0, stream>>>(x, positions, nTokens, p);
    return detail::launchStatus("ropeKernel");
}

Status swiglu(const float* gate, const float* up, float* out, int64_t n, StreamHandle stream) {
    if (!gate || !up || !out || n <= 0) return invalidArgument("cuda swiglu: null pointer or empty");
    swigluKernel<<<elementGrid(n), kThreads, 0, stream>>>(gate, up, out, n);
    return detail::launchStatus("swigluKernel");
}

Status geglu(const float* gate, const float* up, float* out, int64_t n, StreamHandle stream) {
    if (!gate || !up || !out || n <= 0) return invalidArgument("cuda geglu: null pointer or empty");
    gegluKernel<<<elementGrid(n), kThreads, 0, stream>>>(gate, up, out, n);
    return detail::launchStatus("gegluKernel");
}

Status scale(const float* x, float s, float* out, int64_t n, StreamHandle stream) {
    if (!x || !out || n <= 0) return invalidArgument("cuda scale: null pointer or empty");
    scaleKernel<<<elementGrid(n), kThreads, 0, stream>>>(x, out, n, s);
    return detail::launchStatus("scaleKernel");
}

Status softcap(const float* x, float cap, float* out, int64_t n, StreamHandle stream) {
    if (!x || !out || n <= 0 || !(cap > 0.0f)) return invalidArgument("cuda softcap: null pointer, empty or cap <= 0");
    softcapKernel<<<elementGrid(n), kThreads, 0, stream>>>(x, out, n, cap);
    return detail::launchStatus("softcapKernel");
}

Status add(const float* a, const float* b, float* out, int64_t n, StreamHandle stream) {
    if (!a || !b || !out || n <= 0) return invalidArgument("cuda add: null pointer or empty");
    addKernel<<<elementGrid(n), kThreads, 0, stream>>>(a, b, out, n);
    return detail::launchStatus("addKernel");
}

Status addRows(float* x, const float* bias, int64_t nRows, int64_t dim, StreamHandle stream) {
    if (!x || !bias || nRows <= 0 || dim <= 0) return invalidArgument("cuda addRows: null pointer or empty");
    addRowsKernel<<<elementGrid(nRows * dim), kThreads, 0, stream>>>(x, bias, nRows * dim, dim);
    return detail::launchStatus("addRowsKernel");
}

Status gatherRows(const float* x, const int32_t* rows, int64_t nRows, int64_t dim, float* out,
                  StreamHandle stream) {
    if (!x || !rows || !out || nRows <= 0 || dim <= 0) return invalidArgument("cuda gatherRows: null pointer or empty");
    gatherRowsKernel<<<elementGrid(nRows * dim), kThreads, 0, stream>>>(x, rows, nRows * dim, dim, out);
    return detail::launchStatus("gatherRowsKernel");
}

Status softmax(float* x, int64_t nRows, int64_t n, StreamHandle stream) {
    if (!x || nRows <= 0 || n <= 0 || nRows > 0x7fffffff)
        return invalidArgument("cuda softmax: null pointer or bad shape");
    softmaxKernel<<<unsigned(nRows), kThreads, 0, stream>>>(x, n);
    return detail::launchStatus("softmaxKernel");
}

Status copyStrided(const StridedF32& a, float* out, StreamHandle stream) {
    const int64_t n = a.ne[0] * a.ne[1] * a.ne[2] * a.ne[3];
    if (!a.data || !out || n <= 0) return invalidArgument("cuda copyStrided: null pointer or empty");
    concatKernel<<<elementGrid(n), kThreads, 0, stream>>>(a, a, -1, a.ne[0], a.ne[1], a.ne[2], n, out);
    return detail::launchStatus("concatKernel");
}

Status concat(const StridedF32& a, const StridedF32& b, int dim, float* out, StreamHandle stream) {
    if (!a.data || !b.data || !out || dim < 0 || dim > 3) return invalidArgument("cuda concat: null pointer or bad dim");
    int64_t ne[4];
    for (int d = 0; d < 4; ++d) {
        if (d != dim && a.ne[d] != b.ne[d]) return invalidArgument("cuda concat: shapes differ off the joined dim");
        ne[d] = d == dim ? a.ne[d] + b.ne[d] : a.ne[d];
    }
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    if (n <= 0) return invalidArgument("cuda concat: empty");
    concatKernel<<<elementGrid(n), kThreads, 0, stream>>>(a, b, dim, ne[0], ne[1], ne[2], n, out);
    return detail::launchStatus("concatKernel");
}

Status softmaxScaled(const float* x, float* out, int64_t nRows, int64_t n, float scale, StreamHandle stream) {
    if (!x || !out || nRows <= 0 || n <= 0 || nRows > 0x7fffffff)
        return invalidArgument("cuda softmaxScaled: null pointer or bad shape");
    softmaxScaledKernel<<<unsigned(nRows), kThreads, 0, stream>>>(x, out, n, scale);
    return detail::launchStatus("softmaxScaledKernel");
}

Status getRows(const KernelMatrix& table, const int32_t* ids, int64_t nIds, float* out, StreamHandle stream) {
    if (!ids || !out || nIds <= 0 || nIds > 0x7fffffff)
        return invalidArgument("cuda getRows: null pointer or bad count");
    return detail::dispatchWeight(table, "cuda getRows", [&](auto block) -> Status {
        using B = decltype(block);
        getRowsKernel<B><<<unsigned(nIds), 128, 0, stream>>>(static_cast<const uint8_t*>(table.data),
                                                             table.rowBytes, table.rows, table.cols, ids, out);
        return detail::launchStatus("getRowsKernel");
    });
}

} // namespace hearth::cuda
