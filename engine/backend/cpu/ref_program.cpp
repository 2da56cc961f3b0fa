// The scalar reference implementation of every op of the graph: plain loops over the shapes the
// graph builder allows, double accumulation where sums are long, K/V read back as stored. Slow
// and obviously right; `hearth-cli selftest` and the forward tests hold every device to it.
#include "backend/cpu/cpu_device.h"
#include "backend/cpu/recurrent_ops.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/rope_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace hearth::cpu {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;

namespace {

// A 2-D view of a weight or F32 tensor as a matrix for ref::matVec / getRow.
ref::Matrix matrixOf(const HostTensors& h, TensorId id, int64_t plane = 0) {
    const Tensor& t = h.t(id);
    ref::Matrix m;
    m.data = h.ptr[size_t(id)] + uint64_t(plane) * t.nb[2];
    m.type = t.type;
    m.cols = t.ne[0];
    m.rows = t.ne[1];
    m.rowBytes = t.nb[1];
    return m;
}

Status getRows(const HostTensors& h, const Node& n) {
    const Tensor& T = h.t(n.src[0]);
    const int32_t* ids = h.i(n.src[1]);
    const int64_t count = h.t(n.src[1]).elements(), cols = T.ne[0];
    float* out = h.f(n.out);
    const bool byRead = T.kind == graph::TensorKind::Weight && h.weights && h.weights->reader &&
                        T.weight >= 0 && size_t(T.weight) < h.weights->readRows.size() &&
                        h.weights->readRows[size_t(T.weight)];
    std::vector<uint8_t> raw(byRead ? size_t(T.nb[1]) : 0);
    for (int64_t i = 0; i < count; ++i) {
        const int32_t id = ids[i];
        if (id < 0 || id >= T.ne[1])
            return outOfRange("get_rows: row " + std::to_string(id) + " outside [0, " + std::to_string(T.ne[1]) + ")");
        const uint8_t* row = h.ptr[size_t(n.src[0])] + uint64_t(id) * T.nb[1];
        if (byRead) {
            HEARTH_RETURN_IF_ERROR(h.weights->reader->read(row, raw.size(), raw.data()));
            row = raw.data();
        }
        HEARTH_RETURN_IF_ERROR(quant::dequantizeRow(T.type, row, out + i * cols, cols));
    }
    return Status::ok();
}

// The name of the weight a matmul reads (through views), or "" for a computed matrix.
std::string_view weightNameOf(const HostTensors& h, graph::TensorId id) {
    const Tensor& w = h.t(h.graph->root(id));
    return w.kind == graph::TensorKind::Weight ? std::string_view(h.graph->weights()[size_t(w.weight)].name)
                                               : std::string_view();
}

Status matMul(const HostTensors& h, const Node& n) {
    const ref::Matrix w = matrixOf(h, n.src[0]);
    const Tensor& X = h.t(n.src[1]);
    const float* x = h.f(n.src[1]);
    if (ActivationObserver* o = h.weights->observer; o && !weightNameOf(h, n.src[0]).empty())
        o->onMatMul(weightNameOf(h, n.src[0]), x, X.rows(), w.cols);
    float* y = h.f(n.out);
    for (int64_t r = 0; r < X.rows(); ++r) HEARTH_RETURN_IF_ERROR(ref::matVec(w, x + r * w.cols, y + r * w.rows));
    return Status::ok();
}

Status matMulId(const HostTensors& h, const Node& n) {
    const Tensor &W = h.t(n.src[0]), &X = h.t(n.src[1]), &I = h.t(n.src[2]);
    const int64_t tokens = I.ne[1], k = I.ne[0], cols = W.ne[0], rows = W.ne[1];
    const float* x = h.f(n.src[1]);
    const int32_t* ids = h.i(n.src[2]);
    float* y = h.f(n.out);
    for (int64_t p = 0; p < tokens * k; ++p)
        if (ids[p] < 0 || ids[p] >= W.ne[2])
            return outOfRange("mat_mul_id: expert " + std::to_string(ids[p]) + " outside [0, " +
                              std::to_string(W.ne[2]) + ")");
    if (ActivationObserver* o = h.weights->observer; o && !weightNameOf(h, n.src[0]).empty())
        o->onMatMulId(weightNameOf(h, n.src[0]), x, X.ne[1] == 1, ids, tokens, k, cols, W.ne[2]);
    for (int64_t t = 0; t < tokens; ++t)
        for (int64_t e = 0; e < k; ++e) {
            const int32_t expert = ids[t * k + e];
            if (expert < 0 || expert >= W.ne[2])
                return outOfRange("mat_mul_id: expert " + std::to_string(expert) + " outside [0, " +
                                  std::to_string(W.ne[2]) + ")");
            const float* xr = x + (t * X.ne[1] + (X.ne[1] == 1 ? 0 : e)) * cols;
            HEARTH_RETURN_IF_ERROR(ref::matVec(matrixOf(h, n.src[0], expert), xr, y + (t * k + e) * rows));
        }
    return Status::ok();
}

// Paged attention, one query token and head at a time, K/V read back as stored: causal (each
// token up to its own position) or, for encoders, up to its sequence's furthest position in the step.
Status attention(const HostTensors& h, const Node& n) {
    const Tensor &Q = h.t(n.src[0]), &out = h.t(n.out), &tables = h.t(n.src[4]);
    const graph::AttentionParams& p = n.attn;
    const int64_t D = Q.ne[0], nHead = Q.ne[1], tokens = Q.ne[2], Dv = out.ne[0];
    const int64_t group = nHead / p.nHeadKv, kRow = h.t(n.src[1]).ne[0], vRow = h.t(n.src[2]).ne[0];
    const PagedKvStore &kStore = h.kvStore(n.src[1]), &vStore = h.kvStore(n.src[2]);
    const int kLayer = h.kvLayer(n.src[1]), vLayer = h.kvLayer(n.src[2]);
    const int32_t* info = h.i(n.src[3]);
    const int32_t* table = h.i(n.src[4]);
    const float* sinks = n.src[5] != graph::kNone ? h.f(n.src[5]) : nullptr;
    const float* q = h.f(n.src[0]);
    float* o = h.f(n.out);
    std::vector<float> kRows, vRows;
    std::vector<double> scores;
    for (int64_t t = 0; t < tokens; ++t) {
        int32_t pos = info[2 * t];
        const int32_t own = pos;
        const int32_t offset = info[2 * t + 1];
        if (!p.causal) // the sequence (tokens of the same block table) as far as the step reaches
            for (int64_t u = 0; u < tokens; ++u)
                if (info[2 * u + 1] == offset) pos = std::max(pos, info[2 * u]);
        // A window counts back from the token's own position (without the mask too).
        const int64_t first = p.window > 0 ? std::max<int64_t>(0, int64_t(own) - p.window + 1) : 0;
        const int64_t count = int64_t(pos) - first + 1;
        kRows.resize(size_t(count * kRow));
        vRows.resize(size_t(count * vRow));
        for (int64_t j = 0; j < count; ++j) {
            const int64_t at = first + j, b = at / p.blockSize;
            if (offset < 0 || offset + b >= tables.ne[0]) return invalidArgument("attention: position outside its block table");
            const int32_t block = table[offset + b];
            const int64_t slot = int64_t(block) * p.blockSize + at % p.blockSize;
            if (block < 0 || block >= h.kv->spec().numBlocks) return invalidArgument("attention: block id outside the pool");
            kStore.readKey(kLayer, slot, &kRows[size_t(j * kRow)]);
            vStore.readValue(vLayer, slot, &vRows[size_t(j * vRow)]);
        }
        scores.resize(size_t(count));
        for (int64_t hd = 0; hd < nHead; ++hd) {
            const int64_t kvh = hd / group;
            const float* qh = q + (t * nHead + hd) * D;
            double maxv = sinks ? double(sinks[hd]) : -INFINITY;
            for (int64_t j = 0; j < count; ++j) {
                const float* kp = &kRows[size_t(j * kRow + kvh * D)];
                double dot = 0.0;
                for (int64_t d = 0; d < D; ++d) dot += double(qh[d]) * double(kp[d]);
                double s = double(float(dot) * p.scale);
                if (p.softcap > 0.0f) s = double(p.softcap) * std::tanh(s / double(p.softcap));
                scores[size_t(j)] = s;
                maxv = std::max(maxv, s);
            }
            double sum = sinks ? std::exp(double(sinks[hd]) - maxv) : 0.0;
            for (int64_t j = 0; j < count; ++j) sum += (scores[size_t(j)] = std::exp(scores[size_t(j)] - maxv));
            float* oh = o + (t * nHead + hd) * Dv;
            for (int64_t d = 0; d < Dv; ++d) {
                double acc = 0.0;
                for (int64_t j = 0; j < count; ++j) acc += scores[size_t(j)] * double(vRows[size_t(j * vRow + kvh * Dv + d)]);
                oh[d] = float(acc / sum);
            }
        }
    }
    return Status::ok();
}

Status kvWrite(const HostTensors& h, const Node& n) {
    const Tensor& C = h.t(n.src[0]);
    PagedKvStore& kv = h.kvStore(n.src[0]);
    const int layer = h.kvLayer(n.src[0]);
    const float* rows = h.f(n.src[1]);
    const int32_t* slots = h.i(n.src[2]);
    const int64_t count = h.t(n.src[2]).elements(), row = C.ne[0];
    const int64_t maxSlot = int64_t(kv.numBlocks()) * kv.blockSize();
    for (int64_t i = 0; i < count; ++i) {
        if (slots[i] < 0 || slots[i] >= maxSlot) return invalidArgument("kv_write: slot outside the pool");
        if (C.value) kv.writeValue(layer, slots[i], rows + i * row);
        else kv.writeKey(layer, slots[i], rows + i * row);
    }
    return Status::ok();
}

// Element (i0, i1, i2, i3) of a possibly strided F32 tensor.
float at(const HostTensors& h, TensorId id, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const Tensor& t = h.t(id);
    const uint8_t* p = h.ptr[size_t(id)] + uint64_t(i0) * t.nb[0] + uint64_t(i1) * t.nb[1] + uint64_t(i2) * t.nb[2] +
                       uint64_t(i3) * t.nb[3];
    float v;
    std::memcpy(&v, p, 4);
    return v;
}

} // namespace

Status runReferenceNode(const HostTensors& h, const Node& n) {
    const Tensor& out = h.t(n.out);
    const int64_t count = out.elements(), width = out.ne[0], rows = out.rows();
    auto src = [&](int i) { return h.f(n.src[size_t(i)]); };
    auto binary = [&](auto f) {
        const float *a = src(0), *b = src(1);
        const int64_t bn = h.t(n.src[1]).elements();
        float* o = h.f(n.out);
        for (int64_t i = 0; i < count; ++i) o[i] = f(a[i], b[bn == count ? i : i % bn]);
        return Status::ok();
    };
    auto unary = [&](auto f) {
        const float* x = src(0);
        float* o = h.f(n.out);
        for (int64_t i = 0; i < count; ++i) o[i] = f(x[i]);
        return Status::ok();
    };
    switch (n.op) {
    case Op::GetRows: return getRows(h, n);
    case Op::MatMul: return matMul(h, n);
    case Op::MatMulId: return matMulId(h, n);
    case Op::RmsNorm:
        for (int64_t r = 0; r < rows; ++r) {
            const float* x = src(0) + r * width;
            float* o = h.f(n.out) + r * width;
            if (n.src[1] != graph::kNone) {
                ref::rmsNorm(x, src(1), o, width, n.eps);
                continue;
            }
            double ss = 0.0;
            for (int64_t i = 0; i < width; ++i) ss += double(x[i]) * double(x[i]);
            const float scale = float(1.0 / std::sqrt(ss / double(width) + double(n.eps)));
            for (int64_t i = 0; i < width; ++i) o[i] = x[i] * scale;
        }
        return Status::ok();
    case Op::LayerNorm:
        for (int64_t r = 0; r < rows; ++r)
            ref::layerNorm(src(0) + r * width, n.src[1] != graph::kNone ? src(1) : nullptr,
                           n.src[2] != graph::kNone ? src(2) : nullptr, h.f(n.out) + r * width, width, n.eps);
        return Status::ok();
    case Op::Rope: {
        const int64_t D = out.ne[0], heads = out.ne[1], tokens = out.ne[2], half = n.rope.nRot / 2;
        const int32_t* pos = h.i(n.src[1]);
        const float* factors = n.src[2] != graph::kNone ? src(2) : nullptr;
        std::vector<double> cs(size_t(2 * half));
        if (h.f(n.out) != src(0)) std::memcpy(h.f(n.out), src(0), size_t(count) * 4);
        for (int64_t t = 0; t < tokens; ++t) {
            ropeAngles(n.rope, pos[t], factors, cs.data());
            for (int64_t hd = 0; hd < heads; ++hd) ropeRotate(h.f(n.out) + (t * heads + hd) * D, half, n.rope.neox, cs.data());
        }
        return Status::ok();
    }
    case Op::KvWrite: return kvWrite(h, n);
    case Op::Attention: return attention(h, n);
    case Op::Add: return binary([](float a, float b) { return a + b; });
    case Op::Mul: return binary([](float a, float b) { return a * b; });
    case Op::Scale: return unary([s = n.scale](float v) { return v * s; });
    case Op::Silu: return unary([](float v) { return v / (1.0f + std::exp(-v)); });
    case Op::Gelu: return unary([](float v) { return ref::gelu(v); });
    case Op::SwiGlu: ref::swiglu(src(0), src(1), h.f(n.out), count); return Status::ok();
    case Op::GeGlu: ref::geglu(src(0), src(1), h.f(n.out), count); return Status::ok();
    case Op::SwiGluOai: {
        const float *g = src(0), *u = src(1);
        float* o = h.f(n.out);
        for (int64_t i = 0; i < count; ++i) {
            const double x = std::min(g[i], n.cap), y = std::clamp(u[i], -n.cap, n.cap);
            o[i] = float(x / (1.0 + std::exp(-double(n.scale) * x)) * (y + 1.0));
        }
        return Status::ok();
    }
    case Op::Softmax:
        for (int64_t r = 0; r < rows; ++r) {
            float* o = h.f(n.out) + r * width;
            for (int64_t i = 0; i < width; ++i) o[i] = src(0)[r * width + i] * n.scale;
            ref::softmax(o, width);
        }
        return Status::ok();
    case Op::Softcap: return unary([c = double(n.cap)](float v) { return float(c * std::tanh(double(v) / c)); });
    case Op::TopK:
    case Op::ArgSort: {
        const Tensor& X = h.t(n.src[0]);
        const int64_t w = X.ne[0], keep = n.op == Op::TopK ? n.k : w;
        std::vector<int32_t> order(static_cast<size_t>(w));
        for (int64_t r = 0; r < X.rows(); ++r) {
            const float* x = src(0) + r * w;
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
            std::copy(order.begin(), order.begin() + keep, h.i(n.out) + r * keep);
        }
        return Status::ok();
    }
    case Op::Concat: {
        const Tensor& A = h.t(n.src[0]);
        float* o = h.f(n.out);
        int64_t i = 0;
        for (int64_t i3 = 0; i3 < out.ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < out.ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < out.ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < out.ne[0]; ++i0) {
                        std::array<int64_t, 4> idx{i0, i1, i2, i3};
                        const bool inA = idx[size_t(n.dim)] < A.ne[size_t(n.dim)];
                        if (!inA) idx[size_t(n.dim)] -= A.ne[size_t(n.dim)];
                        o[i++] = at(h, n.src[inA ? 0 : 1], idx[0], idx[1], idx[2], idx[3]);
                    }
        return Status::ok();
    }
    case Op::Copy: {
        float* o = h.f(n.out);
        int64_t i = 0;
        for (int64_t i3 = 0; i3 < out.ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < out.ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < out.ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < out.ne[0]; ++i0) o[i++] = at(h, n.src[0], i0, i1, i2, i3);
        return Status::ok();
    }
    case Op::Gather: {
        const Tensor &X = h.t(n.src[0]), &I = h.t(n.src[1]);
        const int64_t k = I.ne[0];
        const int32_t* ids = h.i(n.src[1]);
        float* o = h.f(n.out);
        for (int64_t r = 0; r < I.rows(); ++r)
            for (int64_t e = 0; e < k; ++e) {
                const int32_t id = ids[r * k + e];
                if (id < 0 || id >= X.ne[0])
                    return outOfRange("gather: index " + std::to_string(id) + " outside [0, " + std::to_string(X.ne[0]) + ")");
                o[r * k + e] = src(0)[r * X.ne[0] + id];
            }
        return Status::ok();
    }
    case Op::WeightedSum: {
        const Tensor& Y = h.t(n.src[0]);
        const int64_t J = Y.ne[0], k = Y.ne[1];
        const float *y = src(0), *w = src(1);
        float* o = h.f(n.out);
        for (int64_t t = 0; t < Y.ne[2]; ++t)
            for (int64_t j = 0; j < J; ++j) {
                double acc = 0.0;
                for (int64_t e = 0; e < k; ++e) acc += double(w[t * k + e]) * double(y[(t * k + e) * J + j]);
                o[t * J + j] = float(acc);
            }
        return Status::ok();
    }
    case Op::Sigmoid: return unary([](float v) { return float(1.0 / (1.0 + std::exp(-double(v)))); });
    case Op::Softplus: return unary([](float v) { return float(v > 20.0f ? double(v) : std::log1p(std::exp(double(v)))); });
    case Op::RmsNormGated: {
        const float *x = src(0), *w = src(1), *z = src(2);
        float* o = h.f(n.out);
        for (int64_t r = 0; r < rows; ++r) {
            ref::rmsNorm(x + r * width, w, o + r * width, width, n.eps);
            for (int64_t i = 0; i < width; ++i) {
                const double zv = z[r * width + i];
                o[r * width + i] = float(double(o[r * width + i]) * zv / (1.0 + std::exp(-zv)));
            }
        }
        return Status::ok();
    }
    case Op::SsmConv:
    case Op::DeltaNet: {
        const bool conv = n.op == Op::SsmConv;
        const Tensor& S = h.t(n.src[conv ? 2 : 3]);
        const Tensor& I = h.t(n.src[conv ? 3 : 4]);
        const int32_t* info = h.i(n.src[conv ? 3 : 4]);
        HEARTH_RETURN_IF_ERROR(ref::checkStateSlots(graph::opName(n.op), info, I.ne[1], S.ne[1]));
        if (conv) {
            const Tensor& X = h.t(n.src[0]);
            ref::ssmConv(src(0), src(1), h.f(n.src[2]), info, h.f(n.out), X.ne[1], X.ne[0], h.t(n.src[1]).ne[0]);
        } else {
            const int64_t Sz = out.ne[0], Hv = out.ne[1];
            ref::deltaNet(src(0), src(1), src(2), h.f(n.src[3]), info, h.f(n.out), out.ne[2], n.k, Hv, Sz, n.eps);
        }
        return Status::ok();
    }
    }
    return internalError(std::string("reference: op ") + graph::opName(n.op));
}

namespace {

class ReferenceProgram final : public backend::Program {
public:
    ReferenceProgram(HostTensors h, std::vector<int> nodes, std::shared_ptr<const CpuWeights> w)
        : m_h(std::move(h)), m_nodes(std::move(nodes)), m_weights(std::move(w)) {}
    Status run() override {
        for (int index : m_nodes) {
            const Node& n = m_h.graph->nodes()[size_t(index)];
            const Status s = runReferenceNode(m_h, n);
            if (!s.isOk()) return s.withContext(std::string("node ") + std::to_string(index) + " (" + graph::opName(n.op) + ")");
        }
        return Status::ok();
    }

private:
    HostTensors m_h;
    std::vector<int> m_nodes;
    std::shared_ptr<const CpuWeights> m_weights;
};

} // namespace

Result<std::unique_ptr<backend::Program>> compileReference(const backend::ProgramSpec& spec,
                                                           std::shared_ptr<const CpuWeights> weights) {
    HostTensors h;
    HEARTH_RETURN_IF_ERROR(h.resolve(spec, *weights));
    return std::unique_ptr<backend::Program>(new ReferenceProgram(std::move(h), spec.nodes, std::move(weights)));
}

} // namespace hearth::cpu
