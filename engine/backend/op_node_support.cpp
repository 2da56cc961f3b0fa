// Which step-graph nodes an op device runs (op_graph_device.h): the operand kinds, types and
// shapes every op device needs, then the device's own op, weight-type and size limits.
#include "backend/op_graph_device.h"

#include <algorithm>
#include <climits>

namespace hearth::backend {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;
using graph::TensorKind;

TensorId viewRoot(const graph::Graph& g, TensorId id, uint64_t& offset) {
    offset = 0;
    while (g.tensor(id).viewOf != graph::kNone) {
        offset += g.tensor(id).offset;
        id = g.tensor(id).viewOf;
    }
    return id;
}

bool kvTypeOf(quant::Type t, KvType& out) {
    if (t == quant::Type::F32) return out = KvType::F32, true;
    if (t == quant::Type::F16) return out = KvType::F16, true;
    if (t == quant::Type::Q8_0) return out = KvType::Q8_0, true;
    return false;
}

int64_t matMulChunk(const ops::OpLimits& limits, int64_t n, uint64_t xRow, uint64_t yRow) {
    const uint64_t bind = limits.maxBindRange, widest = std::max<uint64_t>({xRow, yRow, 1});
    const uint64_t most = limits.maxMatMulTokens > 0 ? uint64_t(limits.maxMatMulTokens) : UINT64_MAX;
    if ((bind == 0 || uint64_t(n) * widest <= bind) && uint64_t(n) <= most) return n;
    uint64_t c = std::min(bind == 0 ? uint64_t(n) : bind / widest, most);
    c -= c % std::max<uint64_t>(limits.offsetAlign, 1); // chunk starts then stay aligned whatever the row size
    return int64_t(c);
}

namespace {

struct Checker {
    const OpCapabilities& caps;
    const graph::Graph& g;
    ops::OpLimits limits;

    bool valid(TensorId id) const { return id >= 0 && size_t(id) < g.tensors().size(); }
    const Tensor& root(TensorId id) const {
        uint64_t offset = 0;
        return g.tensor(viewRoot(g, id, offset));
    }
    uint64_t offsetOf(TensorId id) const {
        uint64_t offset = 0;
        viewRoot(g, id, offset);
        return offset;
    }
    bool withinBinding(uint64_t bytes) const { return limits.maxBindRange == 0 || bytes <= limits.maxBindRange; }
    // An activation or input operand: F32 (or I32 for indices), contiguous, at the start of its
    // storage, and (unless `chunked`, cut by tokens) within one binding. Weights read whole (norm
    // weights, biases, frequency factors, sinks) are plain too, within one binding.
    bool plain(TensorId id, bool index = false, bool chunked = false) const {
        if (!valid(id)) return false;
        const Tensor& t = g.tensor(id);
        if (root(id).kind == TensorKind::KvCache) return false;
        if (t.type != (index ? quant::Type::I32 : quant::Type::F32) || !t.contiguous() || offsetOf(id) != 0) return false;
        return chunked || withinBinding(t.bytes());
    }
    bool optional(TensorId id, bool index = false) const { return id == graph::kNone || plain(id, index); }
    // A plain operand that is no weight (an op's input computed this step, or a step input).
    bool act(TensorId id, bool index = false, bool chunked = false) const {
        return plain(id, index, chunked) && root(id).kind != TensorKind::Weight;
    }
    // An optional F32 row of n values (norm weights and biases).
    bool optionalRow(TensorId id, int64_t n) const {
        return id == graph::kNone || (plain(id) && g.tensor(id).elements() == n);
    }
    // A weight row the device can bind (it binds matrices in row ranges).
    bool rowFits(uint64_t rowBytes) const {
        return limits.maxWeightRange == 0 || limits.maxWeightRange >= limits.offsetAlign + 4 + rowBytes;
    }
    bool weightMatrix(TensorId id, ops::Op op) const {
        if (!valid(id) || root(id).kind != TensorKind::Weight || offsetOf(id) != 0) return false;
        const Tensor& t = g.tensor(id);
        return t.contiguous() && t.ne[2] == 1 && t.ne[3] == 1 && t.ne[0] >= 1 && t.ne[1] >= 1 &&
               caps.supportsOp(op, t.type) && rowFits(t.nb[1]);
    }
    // Stacked expert matrices W [nExp][rows][cols]: whole experts, bound as one matrix of rows.
    bool expertWeights(TensorId id) const {
        if (!valid(id) || root(id).kind != TensorKind::Weight || offsetOf(id) != 0) return false;
        const Tensor& t = g.tensor(id);
        return t.ne[3] == 1 && t.ne[0] >= 1 && t.ne[1] >= 1 && t.ne[2] >= 1 && t.nb[2] == t.nb[1] * uint64_t(t.ne[1]) &&
               caps.supportsOp(ops::Op::MatMulId, t.type) && rowFits(t.nb[1]);
    }
    bool kvCache(TensorId id, KvType& type) const {
        return valid(id) && g.tensor(id).kind == TensorKind::KvCache && g.tensor(id).viewOf == graph::kNone &&
               kvTypeOf(g.tensor(id).type, type);
    }

    bool operands(const Node& n) const;
};

bool sameShape(const Tensor& a, const Tensor& b) { return a.ne == b.ne; }

// The kinds, types and shapes of node n's operands (caps.supportsOp for its weight type).
bool Checker::operands(const Node& n) const {
    auto src = [&](int i) { return n.src[size_t(i)]; };
    auto t = [&](int i) -> const Tensor& { return g.tensor(src(i)); };
    const bool sorts = n.op == Op::TopK || n.op == Op::ArgSort;
    if (n.op != Op::KvWrite && !act(n.out, sorts, n.op == Op::MatMul)) return false;
    const Tensor& out = g.tensor(n.out);
    switch (n.op) {
    case Op::GetRows: {
        if (!act(src(1), true) || t(1).elements() < 1 || t(1).elements() > INT32_MAX) return false;
        if (out.ne[0] != t(0).ne[0] || out.rows() != t(1).elements()) return false;
        // A weight table, or a gather of F32 activation rows.
        return root(src(0)).kind == TensorKind::Weight ? weightMatrix(src(0), ops::Op::GetRows)
                                                       : act(src(0), false, true) && rowFits(t(0).nb[1]);
    }
    case Op::MatMul:
        return weightMatrix(src(0), ops::Op::MatMul) && act(src(1), false, true) && t(1).ne[0] == t(0).ne[0] &&
               out.ne[0] == t(0).ne[1] && out.rows() == t(1).rows() &&
               matMulChunk(limits, t(1).rows(), t(1).nb[1], out.nb[1]) > 0;
    case Op::MatMulId: {
        if (!expertWeights(src(0)) || !act(src(1)) || !act(src(2), true)) return false;
        const Tensor &W = t(0), &X = t(1), &I = t(2);
        const int64_t k = I.ne[0], tokens = I.ne[1];
        return I.ne[2] == 1 && I.ne[3] == 1 && k >= 1 && k <= INT32_MAX && tokens >= 1 && X.ne[0] == W.ne[0] &&
               (X.ne[1] == 1 || X.ne[1] == k) && X.ne[2] == tokens && X.ne[3] == 1 && out.ne[0] == W.ne[1] &&
               out.ne[1] == k && out.ne[2] == tokens && out.ne[3] == 1;
    }
    case Op::RmsNorm:
        return act(src(0)) && optionalRow(src(1), t(0).ne[0]) && sameShape(out, t(0)) && t(0).rows() <= INT32_MAX;
    case Op::RmsNormGated:
        return act(src(0)) && plain(src(1)) && t(1).elements() == t(0).ne[0] && act(src(2)) && sameShape(t(2), t(0)) &&
               sameShape(out, t(0)) && t(0).rows() <= INT32_MAX;
    case Op::LayerNorm:
        return act(src(0)) && optionalRow(src(1), t(0).ne[0]) && optionalRow(src(2), t(0).ne[0]) &&
               sameShape(out, t(0)) && t(0).rows() <= INT32_MAX && n.eps > 0.0f;
    case Op::Softmax: return act(src(0)) && sameShape(out, t(0)) && t(0).rows() <= INT32_MAX;
    case Op::TopK:
    case Op::ArgSort: {
        const int64_t width = t(0).ne[0], k = n.op == Op::TopK ? n.k : width;
        return act(src(0)) && width >= 1 && k >= 1 && k <= width && out.ne[0] == k && out.rows() == t(0).rows() &&
               t(0).rows() <= INT32_MAX;
    }
    case Op::Gather:
        return act(src(0)) && act(src(1), true) && t(1).rows() == t(0).rows() && t(1).ne[0] <= INT32_MAX &&
               out.ne[0] == t(1).ne[0] && out.rows() == t(1).rows();
    case Op::WeightedSum: {
        const Tensor &Y = t(0), &Wt = t(1);
        return act(src(0)) && plain(src(1)) && Y.ne[3] == 1 && Wt.ne[0] == Y.ne[1] && Wt.rows() == Y.ne[2] &&
               Y.ne[1] <= INT32_MAX && out.ne[0] == Y.ne[0] && out.rows() == Y.ne[2];
    }
    case Op::Rope: {
        const graph::RopeParams& p = n.rope;
        return act(src(0)) && act(src(1), true) && optional(src(2)) && t(0).ne[3] == 1 &&
               t(1).elements() == t(0).ne[2] && p.nRot >= 2 && p.nRot % 2 == 0 && p.nRot <= t(0).ne[0] &&
               t(0).ne[0] % 2 == 0 && sameShape(out, t(0)) && t(0).ne[1] <= INT32_MAX;
    }
    case Op::KvWrite: {
        KvType type;
        return kvCache(src(0), type) && n.out == src(0) && act(src(1)) && act(src(2), true) &&
               t(1).elements() == t(0).ne[0] * t(2).elements() && t(2).elements() >= 1;
    }
    case Op::Attention: {
        const graph::AttentionParams& p = n.attn;
        KvType kType, vType;
        if (!act(src(0)) || !kvCache(src(1), kType) || !kvCache(src(2), vType) || kType != vType ||
            !act(src(3), true) || !act(src(4), true))
            return false;
        const Tensor &q = t(0), &k = t(1), &v = t(2);
        const int64_t D = q.ne[0], nHead = q.ne[1], tokens = q.ne[2];
        const bool sinks = src(5) == graph::kNone || (plain(src(5)) && t(5).elements() == nHead);
        return sinks && p.nHeadKv > 0 && nHead % p.nHeadKv == 0 && out.ne[0] == D && out.ne[1] == nHead &&
               out.ne[2] == tokens && q.ne[3] == 1 && k.ne[0] == p.nHeadKv * D && v.ne[0] == k.ne[0] && tokens >= 1 &&
               t(3).ne[0] == 2 && t(3).ne[1] == tokens && p.window >= 0 && p.softcap >= 0.0f && p.blockSize >= 1;
    }
    case Op::Add:
    case Op::Mul: {
        // b the same size, or repeated over a (one row of a broadcast to every row).
        const int64_t count = t(0).elements(), bLen = t(1).elements();
        return act(src(0)) && plain(src(1)) && sameShape(out, t(0)) && bLen >= 1 && count % bLen == 0;
    }
    case Op::SsmConv: {
        const Tensor &X = t(0), &W = t(1), &S = t(2), &I = t(3);
        return act(src(0)) && plain(src(1)) && valid(src(2)) && S.kind == TensorKind::State && S.viewOf == graph::kNone &&
               S.type == quant::Type::F32 && S.contiguous() && withinBinding(S.bytes()) && act(src(3), true) &&
               W.ne[0] >= 2 && W.ne[1] == X.ne[0] && S.ne[0] == (W.ne[0] - 1) * X.ne[0] && I.ne[0] == 3 &&
               I.ne[1] == X.ne[1] && sameShape(out, X);
    }
    case Op::DeltaNet: {
        const Tensor &S = t(3), &I = t(4);
        const int64_t headSize = out.ne[0], Hv = out.ne[1], tokens = out.ne[2], Hk = n.k;
        return act(src(0)) && act(src(1)) && act(src(2)) && valid(src(3)) && S.kind == TensorKind::State &&
               S.viewOf == graph::kNone && S.type == quant::Type::F32 && S.contiguous() && withinBinding(S.bytes()) &&
               act(src(4), true) && headSize >= 1 && Hk >= 1 && Hv % Hk == 0 &&
               t(0).ne[0] == (2 * Hk + Hv) * headSize && t(0).rows() == tokens && S.ne[0] == Hv * headSize * headSize &&
               I.ne[0] == 3 && I.ne[1] == tokens && Hv <= INT32_MAX / headSize;
    }
    case Op::Copy: {
        // F32 rows of one stride (a column slice, rows at an offset, a reshape) of an activation.
        const Tensor& X = t(0);
        if (!valid(src(0))) return false;
        const Tensor& r = root(src(0));
        const uint64_t offset = offsetOf(src(0));
        return (r.kind == TensorKind::Activation || r.kind == TensorKind::Input) && X.type == quant::Type::F32 &&
               r.type == quant::Type::F32 && X.nb[0] == 4 && X.nb[1] % 4 == 0 && offset % 4 == 0 &&
               X.nb[2] == X.nb[1] * uint64_t(X.ne[1]) && X.nb[3] == X.nb[2] * uint64_t(X.ne[2]) &&
               withinBinding(r.bytes()) && out.elements() == X.elements();
    }
    case Op::Concat: {
        if (!act(src(0)) || !act(src(1)) || n.dim < 0 || n.dim >= graph::kMaxDims) return false;
        for (size_t d = 0; d < graph::kMaxDims; ++d)
            if (out.ne[d] != (int(d) == n.dim ? t(0).ne[d] + t(1).ne[d] : t(0).ne[d]) ||
                (int(d) != n.dim && t(1).ne[d] != t(0).ne[d]))
                return false;
        return true;
    }
    case Op::Scale:
    case Op::Silu:
    case Op::Gelu:
    case Op::Softcap:
    case Op::Sigmoid:
    case Op::Softplus: return act(src(0)) && sameShape(out, t(0)) && (n.op != Op::Softcap || n.cap > 0.0f);
    case Op::SwiGlu:
    case Op::GeGlu:
    case Op::SwiGluOai: return act(src(0)) && act(src(1)) && sameShape(t(0), t(1)) && sameShape(out, t(0));
    default: return false;
    }
}

// The op-device op that runs a graph op (F32 ops: no weight type).
bool opOf(Op op, ops::Op& out) {
    switch (op) {
    case Op::GetRows: return out = ops::Op::GetRows, true;
    case Op::MatMul: return out = ops::Op::MatMul, true;
    case Op::MatMulId: return out = ops::Op::MatMulId, true;
    case Op::RmsNorm: return out = ops::Op::RmsNorm, true;
    case Op::Rope: return out = ops::Op::Rope, true;
    case Op::Add: return out = ops::Op::Add, true;
    case Op::Mul: return out = ops::Op::Mul, true;
    case Op::Scale: return out = ops::Op::Scale, true;
    case Op::Silu: return out = ops::Op::Silu, true;
    case Op::Sigmoid: return out = ops::Op::Sigmoid, true;
    case Op::Softplus: return out = ops::Op::Softplus, true;
    case Op::Gelu: return out = ops::Op::Gelu, true;
    case Op::Softcap: return out = ops::Op::Softcap, true;
    case Op::SwiGlu: return out = ops::Op::Swiglu, true;
    case Op::GeGlu: return out = ops::Op::Geglu, true;
    case Op::KvWrite: return out = ops::Op::KvWrite, true;
    case Op::Attention: return out = ops::Op::Attention, true;
    case Op::Gather: return out = ops::Op::Gather, true;
    case Op::WeightedSum: return out = ops::Op::WeightedSum, true;
    case Op::Softmax: return out = ops::Op::Softmax, true;
    case Op::TopK:
    case Op::ArgSort: return out = ops::Op::TopK, true;
    case Op::SwiGluOai: return out = ops::Op::SwigluOai, true;
    case Op::Copy: return out = ops::Op::Copy, true;
    case Op::LayerNorm: return out = ops::Op::LayerNorm, true;
    case Op::Concat: return out = ops::Op::Concat, true;
    case Op::RmsNormGated: return out = ops::Op::RmsNormGated, true;
    case Op::SsmConv: return out = ops::Op::SsmConv, true;
    case Op::DeltaNet: return out = ops::Op::DeltaNet, true;
    default: return false;
    }
}

} // namespace

bool opDeviceRunsNode(const OpCapabilities& caps, const graph::Graph& g, const Node& n) {
    ops::Op op;
    if (!opOf(n.op, op)) return false;
    // The weight-reading ops ask about their weight's type in operands(); the rest are F32 ops.
    const bool weighted = n.op == Op::GetRows || n.op == Op::MatMul || n.op == Op::MatMulId;
    if (!weighted && !caps.supportsOp(op)) return false;
    const Checker c{caps, g, caps.limits()};
    return c.operands(n) && caps.nodeFits(g, n);
}

} // namespace hearth::backend
