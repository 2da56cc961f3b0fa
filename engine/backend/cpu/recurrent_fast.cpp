// The drivers of the fast recurrent ops (recurrent_fast.h): slot checks, the runs of tokens,
// threading and the state copies around the per-level kernels (recurrent_kernels.h), plus the
// scalar level and the element-wise ops. Compiled for plain x86-64.
#include "backend/cpu/recurrent_fast.h"

#include "backend/cpu/activations.h"
#include "backend/cpu/fast_math.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/recurrent_simd.h"
#include "backend/cpu/target_clones.h"
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace hearth::cpu {

using graph::Node;
using graph::Op;
using graph::Tensor;

namespace kernels {
namespace {

// The portable level: the SIMD bodies over one float.
struct V1 {
    using T = float;
    static constexpr int W = 1;
    static T load(const float* p) { return *p; }
    static void store(float* p, T v) { *p = v; }
    static T set1(float v) { return v; }
    static T zero() { return 0.0f; }
    static T add(T a, T b) { return a + b; }
    static T sub(T a, T b) { return a - b; }
    static T mul(T a, T b) { return a * b; }
    static T fma(T a, T b, T c) { return a * b + c; }
    static float hsum(T v) { return v; }
};

} // namespace

const RecurrentKernels& recurrentScalar() {
    static const RecurrentKernels k = simd::table<V1>("scalar");
    return k;
}

} // namespace kernels

namespace {

// SsmConv channels per work item.
constexpr int64_t kConvChunk = 128;
// Sigmoid / Softplus values per work item.
constexpr int64_t kElementChunk = 1 << 13;

const kernels::RecurrentKernels& activeKernels() {
#if defined(__x86_64__)
    switch (activeIsaLevel()) {
    case Isa::Avx512: return kernels::recurrentAvx512();
    case Isa::AvxVnni:
    case Isa::Avx2: return kernels::recurrentAvx2();
    case Isa::Scalar: break;
    }
#endif
    return kernels::recurrentScalar();
}

// fn(begin, end) over [0, count) items of about `values` values each: on the pool when there is
// enough work, else inline.
template <typename Fn> void forItems(ThreadPool* pool, int64_t count, int64_t values, const Fn& fn) {
    if (!pool || count <= 1 || count * values < kParallelValues) fn(int64_t(0), count);
    else pool->parallelFor(count, fn);
}

template <typename V> inline void sigmoidLanes(const float* x, float* out, int64_t n) {
    mapLanes<V>(x, out, n, [](auto v) { return 1.0f / (1.0f + expClamped(-v)); });
}

HEARTH_ISA_DISPATCH3(void, sigmoid, (const float* x, float* out, int64_t n),
                     (x, out, n), sigmoidLanes<F16>, sigmoidLanes<F8>, sigmoidLanes<F4>)

// ln(1 + e^x) = max(x, 0) + ln(1 + u) with u = e^-|x| in (0, 1]; ln(1 + u) = 2 atanh(s) with
// s = u / (2 + u) <= 1/3, whose odd series is within 2e-9 relative after the s^15 term (and
// exact to float for small u, where ln(1 + u) rounded through 1 + u would not be). As the
// reference, x itself above 20. Written once for floats and vectors (T{} is zero).
template <typename V> inline void softplusLanes(const float* x, float* out, int64_t n) {
    mapLanes<V>(x, out, n, [](auto v) {
        using T = decltype(v);
        const T u = expClamped(-(v < 0.0f ? -v : v));
        const T s = u / (2.0f + u), z = s * s;
        T p = T{} + 1.0f / 15.0f;
        p = p * z + 1.0f / 13.0f;
        p = p * z + 1.0f / 11.0f;
        p = p * z + 1.0f / 9.0f;
        p = p * z + 1.0f / 7.0f;
        p = p * z + 1.0f / 5.0f;
        p = p * z + 1.0f / 3.0f;
        p = p * z + 1.0f;
        const T y = (v > 0.0f ? v : T{}) + 2.0f * s * p;
        return v > 20.0f ? v : y;
    });
}

HEARTH_ISA_DISPATCH3(void, softplus, (const float* x, float* out, int64_t n),
                     (x, out, n), softplusLanes<F16>, softplusLanes<F8>, softplusLanes<F4>)

} // namespace

bool RecurrentOps::covers(Op op) {
    return op == Op::Sigmoid || op == Op::Softplus || op == Op::RmsNormGated || op == Op::SsmConv ||
           op == Op::DeltaNet;
}

void RecurrentOps::plan(const HostTensors& h, const Node& n) {
    auto grow = [](auto& v, int64_t size) {
        if (int64_t(v.size()) < size) v.resize(size_t(size));
    };
    if (n.op == Op::SsmConv) {
        const int64_t C = h.t(n.src[0]).ne[0], K = h.t(n.src[1]).ne[0];
        grow(m_window, (K - 1) * C);
        grow(m_wT, K * C);
        m_runs.reserve(size_t(h.t(n.src[0]).ne[1]));
    } else if (n.op == Op::DeltaNet) {
        const Tensor& O = h.t(n.out);
        grow(m_qk, O.ne[2] * int64_t(n.k) * (2 * O.ne[0] + 1));
        grow(m_decay, O.ne[2] * O.ne[1]);
        m_runs.reserve(size_t(O.ne[2]));
    }
}

void RecurrentOps::splitRuns(const int32_t* info, int64_t n) {
    m_runs.clear();
    for (int64_t t = 0; t < n; ++t) {
        const int32_t write = info[3 * t + 1];
        if (m_runs.empty() || m_runs.back().write != write) m_runs.push_back({t, t + 1, info[3 * t], write});
        else m_runs.back().end = t + 1;
    }
}

Status RecurrentOps::run(const HostTensors& h, const Node& n, ThreadPool* pool) {
    const Tensor& out = h.t(n.out);
    const int64_t width = out.ne[0], rows = out.rows();
    switch (n.op) {
    case Op::Sigmoid:
    case Op::Softplus: {
        const float* x = h.f(n.src[0]);
        float* o = h.f(n.out);
        const int64_t total = out.elements(), chunks = (total + kElementChunk - 1) / kElementChunk;
        const bool sig = n.op == Op::Sigmoid;
        forItems(pool, chunks, kElementChunk, [&](int64_t b, int64_t e) {
            const int64_t first = b * kElementChunk, last = std::min(total, e * kElementChunk);
            if (sig) sigmoid(x + first, o + first, last - first);
            else softplus(x + first, o + first, last - first);
        });
        return Status::ok();
    }
    case Op::RmsNormGated: {
        const float *x = h.f(n.src[0]), *w = h.f(n.src[1]), *z = h.f(n.src[2]);
        float* o = h.f(n.out);
        forItems(pool, rows, width, [&](int64_t b, int64_t e) {
            for (int64_t r = b; r < e; ++r) {
                rmsNorm(x + r * width, w, o + r * width, width, n.eps);
                swiglu(z + r * width, o + r * width, o + r * width, width); // silu(z) · normed
            }
        });
        return Status::ok();
    }
    case Op::SsmConv: return ssmConv(h, n, pool);
    case Op::DeltaNet: return deltaNet(h, n, pool);
    default: break;
    }
    return internalError(std::string("recurrent ops: op ") + graph::opName(n.op));
}

Status RecurrentOps::ssmConv(const HostTensors& h, const Node& n, ThreadPool* pool) {
    const Tensor &X = h.t(n.src[0]), &St = h.t(n.src[2]);
    const int64_t C = X.ne[0], tokens = X.ne[1], K = h.t(n.src[1]).ne[0], row = (K - 1) * C;
    const int32_t* info = h.i(n.src[3]);
    HEARTH_RETURN_IF_ERROR(ref::checkStateSlots(graph::opName(n.op), info, tokens, St.ne[1]));
    plan(h, n); // sized at compile already; only a program compiled without it grows here
    splitRuns(info, tokens);
    const float* x = h.f(n.src[0]);
    const float* w = h.f(n.src[1]); // [C][K]
    float* state = h.f(n.src[2]);   // [slots][K-1][C]
    float* out = h.f(n.out);
    float* old = m_window.data();
    float* wT = m_wT.data();
    const kernels::RecurrentKernels& kern = activeKernels();
    const int64_t chunks = (C + kConvChunk - 1) / kConvChunk;
    // Each item owns channels [c0, c1) of the scratch, the state rows and the outputs.
    auto work = [&](int64_t b, int64_t e) {
        for (int64_t ch = b; ch < e; ++ch) {
            const int64_t c0 = ch * kConvChunk, c1 = std::min(C, c0 + kConvChunk);
            const size_t bytes = size_t(c1 - c0) * 4;
            for (int64_t k = 0; k < K; ++k)
                for (int64_t c = c0; c < c1; ++c) wT[k * C + c] = w[c * K + k];
            for (const ref::StateRun& r : m_runs) {
                for (int64_t i = 0; i < K - 1; ++i) {
                    if (r.read >= 0) std::memcpy(old + i * C + c0, state + r.read * row + i * C + c0, bytes);
                    else std::memset(old + i * C + c0, 0, bytes);
                }
                kern.conv({x, wT, old, out, C, K, r.begin, r.end, c0, c1});
                // The window after token t: inputs t - K + 2 .. t of the run, oldest first.
                auto store = [&](int32_t slot, int64_t t) {
                    for (int64_t i = 0; i < K - 1; ++i) {
                        const int64_t p = t - r.begin - K + 2 + i;
                        const float* src = p >= 0 ? x + (r.begin + p) * C : old + (K - 1 + p) * C;
                        std::memcpy(state + slot * row + i * C + c0, src + c0, bytes);
                    }
                };
                for (int64_t t = r.begin; t < r.end; ++t)
                    if (info[3 * t + 2] >= 0) store(info[3 * t + 2], t);
                store(r.write, r.end - 1);
            }
        }
    };
    forItems(pool, chunks, kConvChunk * tokens * K, work);
    return Status::ok();
}

Status RecurrentOps::deltaNet(const HostTensors& h, const Node& n, ThreadPool* pool) {
    const Tensor &O = h.t(n.out), &X = h.t(n.src[0]), &St = h.t(n.src[3]);
    const int64_t S = O.ne[0], Hv = O.ne[1], tokens = O.ne[2], Hk = n.k, width = X.ne[0];
    const int64_t head = S * S, row = Hv * head;
    const int32_t* info = h.i(n.src[4]);
    HEARTH_RETURN_IF_ERROR(ref::checkStateSlots(graph::opName(n.op), info, tokens, St.ne[1]));
    plan(h, n);
    splitRuns(info, tokens);
    const float* qkv = h.f(n.src[0]);
    const float* g = h.f(n.src[1]);    // [n][Hv]: log of the decay
    const float* beta = h.f(n.src[2]); // [n][Hv]
    float* state = h.f(n.src[3]);      // [slots][Hv][S][S]
    float* out = h.f(n.out);           // [n][Hv][S]
    float* qn = m_qk.data();           // [n][Hk][S]
    float* kn = qn + tokens * Hk * S;  // [n][Hk][S]
    float* kq = kn + tokens * Hk * S;  // [n][Hk]: k·q
    const kernels::RecurrentKernels& kern = activeKernels();

    // q and k of every token and k head, normalized once for all the v heads that read them.
    const float qScale = 1.0f / std::sqrt(float(S));
    forItems(pool, tokens * Hk, 2 * S * 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
            const int64_t t = i / Hk, hk = i % Hk;
            kern.l2Normalize(qkv + t * width + hk * S, qn + i * S, S, n.eps, qScale);
            kern.l2Normalize(qkv + t * width + (Hk + hk) * S, kn + i * S, S, n.eps, 1.0f);
            kq[i] = kern.dot(kn + i * S, qn + i * S, S);
        }
    });

    float* decay = m_decay.data(); // [n][Hv]
    for (int64_t i = 0; i < tokens * Hv; ++i) decay[i] = std::exp(g[i]);

    // Each (run, v head) advances its own S×S matrix, in place in the run's write slot: it
    // starts as a copy of the read slot's (zeros for -1), and snapshots copy it after their token.
    // Read slots are never another run's write or snapshot slot, so items do not interfere.
    auto work = [&](int64_t b, int64_t e) {
        for (int64_t item = b; item < e; ++item) {
            const ref::StateRun& r = m_runs[size_t(item / Hv)];
            const int64_t hv = item % Hv, hk = hv % Hk;
            float* M = state + int64_t(r.write) * row + hv * head;
            if (r.read < 0) std::memset(M, 0, size_t(head) * 4);
            else if (r.read != r.write) std::memcpy(M, state + int64_t(r.read) * row + hv * head, size_t(head) * 4);
            kernels::DeltaRun a;
            a.M = M;
            a.q = qn + (r.begin * Hk + hk) * S;
            a.k = kn + (r.begin * Hk + hk) * S;
            a.qkStride = Hk * S;
            a.v = qkv + r.begin * width + (2 * Hk + hv) * S;
            a.vStride = width;
            a.decay = decay + r.begin * Hv + hv;
            a.beta = beta + r.begin * Hv + hv;
            a.gStride = Hv;
            a.kq = kq + r.begin * Hk + hk;
            a.kqStride = Hk;
            a.out = out + (r.begin * Hv + hv) * S;
            a.outStride = Hv * S;
            a.snapSlots = info + 3 * r.begin + 2;
            a.snapBase = state + hv * head;
            a.slotStride = row;
            a.skipSlot = r.write;
            a.S = S;
            a.tokens = r.end - r.begin;
            kern.deltaRun(a);
        }
    };
    const int64_t items = int64_t(m_runs.size()) * Hv;
    if (pool && items > 1) pool->parallelFor(items, work);
    else work(0, items);
    return Status::ok();
}

} // namespace hearth::cpu
