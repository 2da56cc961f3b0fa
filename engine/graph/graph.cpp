// Building a step's graph: each op checks its operands' kinds, types and shapes, and gives its
// output tensor a shape; the first mistake is kept as the graph's status.
#include "graph/graph.h"

#include <sstream>

namespace hearth::graph {

using quant::Type;

const char* stepInputName(StepInput which) {
    switch (which) {
    case StepInput::TokenIds: return "token_ids";
    case StepInput::Positions: return "positions";
    case StepInput::KvSlots: return "kv_slots";
    case StepInput::AttnInfo: return "attn_info";
    case StepInput::BlockTables: return "block_tables";
    case StepInput::WantedRows: return "wanted_rows";
    case StepInput::StateInfo: return "state_info";
    case StepInput::HiddenRows: return "hidden_rows";
    case StepInput::HiddenIn: return "hidden_in";
    case StepInput::EmbedRows: return "embed_rows";
    case StepInput::EmbedIndex: return "embed_index";
    case StepInput::GridX: return "grid_x";
    case StepInput::GridY: return "grid_y";
    case StepInput::RopeT: return "rope_t";
    case StepInput::RopeH: return "rope_h";
    case StepInput::RopeW: return "rope_w";
    }
    return "?";
}

const char* opName(Op op) {
    switch (op) {
    case Op::GetRows: return "get_rows";
    case Op::MatMul: return "mat_mul";
    case Op::MatMulId: return "mat_mul_id";
    case Op::RmsNorm: return "rms_norm";
    case Op::LayerNorm: return "layer_norm";
    case Op::Rope: return "rope";
    case Op::KvWrite: return "kv_write";
    case Op::Attention: return "attention";
    case Op::Add: return "add";
    case Op::Mul: return "mul";
    case Op::Scale: return "scale";
    case Op::Silu: return "silu";
    case Op::Gelu: return "gelu";
    case Op::SwiGlu: return "swiglu";
    case Op::GeGlu: return "geglu";
    case Op::Softmax: return "softmax";
    case Op::Softcap: return "softcap";
    case Op::TopK: return "top_k";
    case Op::ArgSort: return "argsort";
    case Op::Concat: return "concat";
    case Op::Copy: return "copy";
    case Op::Gather: return "gather";
    case Op::WeightedSum: return "weighted_sum";
    case Op::SwiGluOai: return "swiglu_oai";
    case Op::Sigmoid: return "sigmoid";
    case Op::Softplus: return "softplus";
    case Op::RmsNormGated: return "rms_norm_gated";
    case Op::SsmConv: return "ssm_conv";
    case Op::DeltaNet: return "delta_net";
    }
    return "?";
}

void setContiguousStrides(Tensor& t) {
    const quant::TypeInfo* info = quant::typeInfo(t.type);
    const uint64_t blockElems = info ? info->blockElems : 1, blockBytes = info ? info->blockBytes : 4;
    t.nb[0] = blockBytes;
    t.nb[1] = uint64_t(t.ne[0]) / blockElems * blockBytes;
    for (int d = 2; d < kMaxDims; ++d) t.nb[size_t(d)] = t.nb[size_t(d - 1)] * uint64_t(t.ne[size_t(d - 1)]);
}

uint64_t Tensor::bytes() const { return nb[3] * uint64_t(ne[3]); }

bool Tensor::contiguous() const {
    const quant::TypeInfo* info = quant::typeInfo(type);
    const uint64_t blockElems = info ? info->blockElems : 1, blockBytes = info ? info->blockBytes : 4;
    uint64_t expected = uint64_t(ne[0]) / blockElems * blockBytes; // nb[1] of a contiguous tensor
    for (int d = 1; d < kMaxDims; ++d) {
        if (ne[size_t(d)] > 1 && nb[size_t(d)] != expected) return false;
        expected *= uint64_t(ne[size_t(d)]);
    }
    return true;
}

TensorId Graph::root(TensorId id) const {
    while (id >= 0 && m_tensors[size_t(id)].viewOf != kNone) id = m_tensors[size_t(id)].viewOf;
    return id;
}

bool Graph::fail(const std::string& message) {
    if (m_status.isOk()) m_status = invalidArgument("graph: " + message);
    return false;
}

TensorId Graph::push(Tensor t) {
    m_tensors.push_back(std::move(t));
    return TensorId(m_tensors.size() - 1);
}

TensorId Graph::newActivation(Type type, std::array<int64_t, kMaxDims> ne, const std::string& name) {
    Tensor t;
    t.kind = TensorKind::Activation;
    t.type = type;
    t.ne = ne;
    t.layer = m_layer;
    t.name = name;
    setContiguousStrides(t);
    return push(std::move(t));
}

TensorId Graph::emit(Node node, Type type, std::array<int64_t, kMaxDims> ne) {
    node.layer = m_layer;
    node.experts = m_experts;
    node.out = newActivation(type, ne, opName(node.op));
    m_nodes.push_back(node);
    return node.out;
}

TensorId Graph::addNode(const Node& node) {
    if (!m_status.isOk()) return kNone;
    if (!valid(node.out)) return fail(std::string(opName(node.op)) + ": no output tensor"), kNone;
    m_nodes.push_back(node);
    m_nodes.back().layer = m_layer;
    m_nodes.back().experts = m_experts;
    return node.out;
}

TensorId Graph::weight(int32_t index) {
    if (!m_status.isOk()) return kNone;
    if (!m_weights || index < 0 || size_t(index) >= m_weights->size())
        return fail("weight " + std::to_string(index) + " is not bound"), kNone;
    const Weight& w = (*m_weights)[size_t(index)];
    Tensor t;
    t.kind = TensorKind::Weight;
    t.type = w.type;
    t.ne = w.ne;
    t.weight = index;
    t.layer = w.layer;
    t.name = w.name;
    setContiguousStrides(t);
    t.nb[1] = w.rowBytes;
    for (int d = 2; d < kMaxDims; ++d) t.nb[size_t(d)] = t.nb[size_t(d - 1)] * uint64_t(t.ne[size_t(d - 1)]);
    return push(std::move(t));
}

TensorId Graph::input(StepInput which, int64_t n, int64_t n1, Type type) {
    if (!m_status.isOk()) return kNone;
    for (size_t i = 0; i < m_tensors.size(); ++i)
        if (m_tensors[i].kind == TensorKind::Input && m_tensors[i].input == which) return TensorId(i);
    Tensor t;
    t.kind = TensorKind::Input;
    t.type = type;
    t.input = which;
    t.ne = {n, n1, 1, 1};
    t.name = stepInputName(which);
    setContiguousStrides(t);
    return push(std::move(t));
}

TensorId Graph::kvCache(int32_t layer, bool value, Type type, int64_t slots, int64_t rowSize) {
    if (!m_status.isOk()) return kNone;
    for (size_t i = 0; i < m_tensors.size(); ++i) {
        const Tensor& t = m_tensors[i];
        if (t.kind == TensorKind::KvCache && t.layer == layer && t.value == value) return TensorId(i);
    }
    Tensor t;
    t.kind = TensorKind::KvCache;
    t.type = type;
    t.ne = {rowSize, slots, 1, 1};
    t.layer = layer;
    t.value = value;
    t.name = std::string(value ? "v_cache." : "k_cache.") + std::to_string(layer);
    setContiguousStrides(t);
    return push(std::move(t));
}

TensorId Graph::state(int32_t layer, bool value, int64_t slots, int64_t rowSize) {
    if (!m_status.isOk()) return kNone;
    for (size_t i = 0; i < m_tensors.size(); ++i) {
        const Tensor& t = m_tensors[i];
        if (t.kind == TensorKind::State && t.layer == layer && t.value == value) return TensorId(i);
    }
    if (slots < 1 || rowSize < 1) return fail("state pool of layer " + std::to_string(layer) + " is empty"), kNone;
    Tensor t;
    t.kind = TensorKind::State;
    t.type = Type::F32;
    t.ne = {rowSize, slots, 1, 1};
    t.layer = layer;
    t.value = value;
    t.name = std::string(value ? "ssm_state." : "conv_state.") + std::to_string(layer);
    setContiguousStrides(t);
    return push(std::move(t));
}

TensorId Graph::reshape(TensorId x, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    if (!m_status.isOk()) return kNone;
    if (!valid(x)) return fail("reshape of a missing tensor"), kNone;
    const Tensor src = m_tensors[size_t(x)];
    if (!src.contiguous() || src.kind == TensorKind::Weight) return fail("reshape of " + src.name), kNone;
    if (ne0 * ne1 * ne2 * ne3 != src.elements())
        return fail("reshape of " + src.name + " to " + std::to_string(ne0 * ne1 * ne2 * ne3) + " elements"), kNone;
    Tensor t = src;
    t.kind = TensorKind::Activation;
    t.ne = {ne0, ne1, ne2, ne3};
    t.viewOf = x;
    t.offset = 0;
    setContiguousStrides(t);
    return push(std::move(t));
}

TensorId Graph::rows(TensorId x, int64_t first, int64_t count) {
    if (!m_status.isOk()) return kNone;
    if (!valid(x)) return fail("rows of a missing tensor"), kNone;
    const Tensor src = m_tensors[size_t(x)];
    if (!src.contiguous() || first < 0 || count < 0 || first + count > src.rows())
        return fail("rows [" + std::to_string(first) + ", +" + std::to_string(count) + ") of " + src.name), kNone;
    Tensor t = src;
    t.kind = src.kind == TensorKind::Weight ? TensorKind::Weight : TensorKind::Activation;
    t.ne = {src.ne[0], count, 1, 1};
    t.viewOf = x;
    t.offset = uint64_t(first) * src.nb[1];
    setContiguousStrides(t);
    return push(std::move(t));
}

TensorId Graph::columns(TensorId x, int64_t first, int64_t count) {
    if (!m_status.isOk()) return kNone;
    if (!valid(x)) return fail("columns of a missing tensor"), kNone;
    const Tensor src = m_tensors[size_t(x)];
    if (src.type != Type::F32 || !src.contiguous() || first < 0 || count < 1 || first + count > src.ne[0])
        return fail("columns [" + std::to_string(first) + ", +" + std::to_string(count) + ") of " + src.name), kNone;
    Tensor t = src;
    t.kind = TensorKind::Activation;
    t.ne = {count, src.rows(), 1, 1};
    t.nb = {4, src.nb[1], src.nb[1] * uint64_t(src.rows()), src.nb[1] * uint64_t(src.rows())};
    t.viewOf = x;
    t.offset = uint64_t(first) * 4;
    return push(std::move(t));
}

namespace {

bool isFloatAct(const Tensor& t) { return t.type == Type::F32 && t.kind != TensorKind::Weight; }
bool isIndex(const Tensor& t) { return t.type == Type::I32; }

std::string shapeOf(const Tensor& t) {
    std::string s = t.name + "[";
    for (int d = 0; d < kMaxDims; ++d) s += (d ? "," : "") + std::to_string(t.ne[size_t(d)]);
    return s + "]";
}

} // namespace

#define HEARTH_GRAPH_CHECK(cond, what)                                                                       \
    do {                                                                                                    \
        if (!(cond)) return fail(what), kNone;                                                              \
    } while (0)

TensorId Graph::getRows(TensorId table, TensorId ids) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(table) && valid(ids), "get_rows of a missing tensor");
    const Tensor &T = m_tensors[size_t(table)], &I = m_tensors[size_t(ids)];
    HEARTH_GRAPH_CHECK(isIndex(I) && I.contiguous() && T.contiguous() && T.ne[2] == 1 && T.ne[3] == 1,
                       "get_rows(" + shapeOf(T) + ", " + shapeOf(I) + ")");
    Node n;
    n.op = Op::GetRows;
    n.src = {table, ids, kNone, kNone, kNone, kNone};
    return emit(n, Type::F32, {T.ne[0], I.elements(), 1, 1});
}

TensorId Graph::matMul(TensorId w, TensorId x) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(w) && valid(x), "mat_mul of a missing tensor");
    const Tensor &W = m_tensors[size_t(w)], &X = m_tensors[size_t(x)];
    HEARTH_GRAPH_CHECK(W.ne[2] == 1 && W.ne[3] == 1 && isFloatAct(X) && X.contiguous() && X.ne[0] == W.ne[0],
                       "mat_mul(" + shapeOf(W) + ", " + shapeOf(X) + ")");
    Node n;
    n.op = Op::MatMul;
    n.src = {w, x, kNone, kNone, kNone, kNone};
    return emit(n, Type::F32, {W.ne[1], X.ne[1], X.ne[2], X.ne[3]});
}

TensorId Graph::matMulId(TensorId w, TensorId x, TensorId ids) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(w) && valid(x) && valid(ids), "mat_mul_id of a missing tensor");
    const Tensor &W = m_tensors[size_t(w)], &X = m_tensors[size_t(x)], &I = m_tensors[size_t(ids)];
    // W [nExp][rows][cols]; x [t][1 or k][cols]; ids [t][k] -> out [t][k][rows]
    const bool ok = W.ne[3] == 1 && isFloatAct(X) && X.contiguous() && X.ne[0] == W.ne[0] && isIndex(I) &&
                    I.contiguous() && X.ne[2] == I.ne[1] && (X.ne[1] == 1 || X.ne[1] == I.ne[0]) && X.ne[3] == 1;
    HEARTH_GRAPH_CHECK(ok, "mat_mul_id(" + shapeOf(W) + ", " + shapeOf(X) + ", " + shapeOf(I) + ")");
    Node n;
    n.op = Op::MatMulId;
    n.src = {w, x, ids, kNone, kNone, kNone};
    return emit(n, Type::F32, {W.ne[1], I.ne[0], I.ne[1], 1});
}

TensorId Graph::rmsNorm(TensorId x, TensorId w, float eps) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x) && (w == kNone || valid(w)), "rms_norm of a missing tensor");
    const Tensor& X = m_tensors[size_t(x)];
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous() && eps > 0.0f, "rms_norm(" + shapeOf(X) + ")");
    if (w != kNone) {
        const Tensor& Wt = m_tensors[size_t(w)];
        HEARTH_GRAPH_CHECK(Wt.type == Type::F32 && Wt.elements() == X.ne[0],
                           "rms_norm weight " + shapeOf(Wt) + " for " + shapeOf(X));
    }
    Node n;
    n.op = Op::RmsNorm;
    n.src = {x, w, kNone, kNone, kNone, kNone};
    n.eps = eps;
    return emit(n, Type::F32, X.ne);
}

TensorId Graph::layerNorm(TensorId x, TensorId w, TensorId b, float eps) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x) && (w == kNone || valid(w)) && (b == kNone || valid(b)),
                       "layer_norm of a missing tensor");
    const Tensor& X = m_tensors[size_t(x)];
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous() && eps > 0.0f, "layer_norm(" + shapeOf(X) + ")");
    for (TensorId v : {w, b})
        if (v != kNone)
            HEARTH_GRAPH_CHECK(m_tensors[size_t(v)].type == Type::F32 && m_tensors[size_t(v)].elements() == X.ne[0],
                               "layer_norm vector for " + shapeOf(X));
    Node n;
    n.op = Op::LayerNorm;
    n.src = {x, w, b, kNone, kNone, kNone};
    n.eps = eps;
    return emit(n, Type::F32, X.ne);
}

TensorId Graph::rope(TensorId x, TensorId positions, TensorId freqFactors, const RopeParams& p) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x) && valid(positions) && (freqFactors == kNone || valid(freqFactors)),
                       "rope of a missing tensor");
    const Tensor &X = m_tensors[size_t(x)], &P = m_tensors[size_t(positions)];
    // x [n][heads][d]
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous() && X.ne[3] == 1 && isIndex(P) && P.elements() == X.ne[2] &&
                           p.nRot >= 2 && p.nRot % 2 == 0 && p.nRot <= X.ne[0] && p.freqBase > 0.0f,
                       "rope(" + shapeOf(X) + ", " + shapeOf(P) + ", nRot " + std::to_string(p.nRot) + ")");
    if (freqFactors != kNone)
        HEARTH_GRAPH_CHECK(m_tensors[size_t(freqFactors)].type == Type::F32 &&
                               m_tensors[size_t(freqFactors)].elements() >= p.nRot / 2,
                           "rope frequency factors for nRot " + std::to_string(p.nRot));
    if (p.tempScale != 0.0f)
        HEARTH_GRAPH_CHECK(p.tempLength > 0 && p.nRot == X.ne[0],
                           "rope attention temperature needs a positive length and the whole head rotated");
    Node n;
    n.op = Op::Rope;
    n.src = {x, positions, freqFactors, kNone, kNone, kNone};
    n.rope = p;
    return emit(n, Type::F32, X.ne);
}

TensorId Graph::kvWrite(TensorId cache, TensorId rowsIn, TensorId slots) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(cache) && valid(rowsIn) && valid(slots), "kv_write of a missing tensor");
    const Tensor &C = m_tensors[size_t(cache)], &R = m_tensors[size_t(rowsIn)], &S = m_tensors[size_t(slots)];
    HEARTH_GRAPH_CHECK(C.kind == TensorKind::KvCache && isFloatAct(R) && R.contiguous() && isIndex(S) &&
                           R.elements() == C.ne[0] * S.elements(),
                       "kv_write(" + shapeOf(C) + ", " + shapeOf(R) + ", " + shapeOf(S) + ")");
    Node n;
    n.op = Op::KvWrite;
    n.src = {cache, rowsIn, slots, kNone, kNone, kNone};
    n.layer = m_layer;
    n.experts = m_experts;
    n.out = cache;
    m_nodes.push_back(n);
    return cache;
}

TensorId Graph::attention(TensorId q, TensorId kCache, TensorId vCache, TensorId info, TensorId tables,
                          TensorId sinks, int64_t headDimV, const AttentionParams& p) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(q) && valid(kCache) && valid(vCache) && valid(info) && valid(tables) &&
                           (sinks == kNone || valid(sinks)),
                       "attention of a missing tensor");
    const Tensor &Q = m_tensors[size_t(q)], &K = m_tensors[size_t(kCache)], &V = m_tensors[size_t(vCache)],
                 &I = m_tensors[size_t(info)];
    // q [n][nHead][Dk]; K [slots][nHeadKv * Dk]; V [slots][nHeadKv * Dv]; info [n][2]
    const int64_t nHead = Q.ne[1], Dk = Q.ne[0];
    const bool ok = isFloatAct(Q) && Q.contiguous() && Q.ne[3] == 1 && K.kind == TensorKind::KvCache &&
                    V.kind == TensorKind::KvCache && p.nHeadKv > 0 && nHead % p.nHeadKv == 0 &&
                    K.ne[0] == p.nHeadKv * Dk && V.ne[0] == p.nHeadKv * headDimV && isIndex(I) &&
                    I.ne[0] == 2 && I.ne[1] == Q.ne[2] && p.blockSize > 0 && p.window >= 0 && p.softcap >= 0.0f;
    HEARTH_GRAPH_CHECK(ok, "attention(" + shapeOf(Q) + ", " + shapeOf(K) + ", " + shapeOf(V) + ", " + shapeOf(I) +
                               ", kv heads " + std::to_string(p.nHeadKv) + ")");
    if (sinks != kNone)
        HEARTH_GRAPH_CHECK(m_tensors[size_t(sinks)].type == Type::F32 && m_tensors[size_t(sinks)].elements() == nHead,
                           "attention sinks must be F32 [" + std::to_string(nHead) + "]");
    Node n;
    n.op = Op::Attention;
    n.src = {q, kCache, vCache, info, tables, sinks};
    n.attn = p;
    return emit(n, Type::F32, {headDimV, nHead, Q.ne[2], 1});
}

namespace {

bool broadcastable(const Tensor& a, const Tensor& b) {
    return b.type == Type::F32 && (b.elements() == a.elements() || b.elements() == a.ne[0]);
}

} // namespace

TensorId Graph::broadcastOp(Op op, TensorId a, TensorId b) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(a) && valid(b), std::string(opName(op)) + " of a missing tensor");
    const Tensor &A = m_tensors[size_t(a)], &B = m_tensors[size_t(b)];
    HEARTH_GRAPH_CHECK(isFloatAct(A) && A.contiguous() && B.contiguous() && broadcastable(A, B),
                       std::string(opName(op)) + "(" + shapeOf(A) + ", " + shapeOf(B) + ")");
    Node n;
    n.op = op;
    n.src = {a, b, kNone, kNone, kNone, kNone};
    return emit(n, Type::F32, A.ne);
}

TensorId Graph::add(TensorId a, TensorId b) { return broadcastOp(Op::Add, a, b); }
TensorId Graph::mul(TensorId a, TensorId b) { return broadcastOp(Op::Mul, a, b); }

namespace {

Node unary(Op op, TensorId x) {
    Node n;
    n.op = op;
    n.src[0] = x;
    return n;
}

} // namespace

#define HEARTH_GRAPH_UNARY(method, opValue, extra)                                                            \
    TensorId Graph::method {                                                                                \
        if (!m_status.isOk()) return kNone;                                                                 \
        HEARTH_GRAPH_CHECK(valid(x), std::string(opName(opValue)) + " of a missing tensor");                 \
        const Tensor& X = m_tensors[size_t(x)];                                                             \
        HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous(), std::string(opName(opValue)) + "(" + shapeOf(X) + ")"); \
        Node n = unary(opValue, x);                                                                         \
        extra;                                                                                              \
        return emit(n, Type::F32, X.ne);                                                                    \
    }

HEARTH_GRAPH_UNARY(scale(TensorId x, float s), Op::Scale, n.scale = s)
HEARTH_GRAPH_UNARY(silu(TensorId x), Op::Silu, (void)0)
HEARTH_GRAPH_UNARY(gelu(TensorId x), Op::Gelu, (void)0)
HEARTH_GRAPH_UNARY(softmax(TensorId x, float s), Op::Softmax, n.scale = s)
HEARTH_GRAPH_UNARY(sigmoid(TensorId x), Op::Sigmoid, (void)0)
HEARTH_GRAPH_UNARY(softplus(TensorId x), Op::Softplus, (void)0)

TensorId Graph::rmsNormGated(TensorId x, TensorId w, TensorId z, float eps) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x) && valid(w) && valid(z), "rms_norm_gated of a missing tensor");
    const Tensor &X = m_tensors[size_t(x)], &W = m_tensors[size_t(w)], &Z = m_tensors[size_t(z)];
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous() && isFloatAct(Z) && Z.contiguous() && Z.ne == X.ne &&
                           W.type == Type::F32 && W.elements() == X.ne[0] && eps > 0.0f,
                       "rms_norm_gated(" + shapeOf(X) + ", " + shapeOf(W) + ", " + shapeOf(Z) + ")");
    Node n;
    n.op = Op::RmsNormGated;
    n.src = {x, w, z, kNone, kNone, kNone};
    n.eps = eps;
    return emit(n, Type::F32, X.ne);
}

TensorId Graph::ssmConv(TensorId x, TensorId w, TensorId state, TensorId info) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x) && valid(w) && valid(state) && valid(info), "ssm_conv of a missing tensor");
    const Tensor &X = m_tensors[size_t(x)], &W = m_tensors[size_t(w)], &S = m_tensors[size_t(state)],
                 &I = m_tensors[size_t(info)];
    // x [n][C]; w [C][K]; state [slots][(K-1)·C]; info [n][3]
    const int64_t C = X.ne[0], K = W.ne[0];
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous() && X.ne[2] == 1 && X.ne[3] == 1 && W.type == Type::F32 &&
                           W.contiguous() && W.ne[1] == C && W.ne[2] == 1 && K >= 2 && S.kind == TensorKind::State &&
                           S.ne[0] == (K - 1) * C && isIndex(I) && I.ne[0] == 3 && I.ne[1] == X.ne[1],
                       "ssm_conv(" + shapeOf(X) + ", " + shapeOf(W) + ", " + shapeOf(S) + ", " + shapeOf(I) + ")");
    Node n;
    n.op = Op::SsmConv;
    n.src = {x, w, state, info, kNone, kNone};
    return emit(n, Type::F32, X.ne);
}

TensorId Graph::deltaNet(TensorId qkv, TensorId g, TensorId beta, TensorId state, TensorId info, int32_t nHeadK,
                         int64_t headSize, float eps) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(qkv) && valid(g) && valid(beta) && valid(state) && valid(info),
                       "delta_net of a missing tensor");
    const Tensor &X = m_tensors[size_t(qkv)], &G = m_tensors[size_t(g)], &B = m_tensors[size_t(beta)],
                 &S = m_tensors[size_t(state)], &I = m_tensors[size_t(info)];
    const int64_t n = X.rows(), Sz = headSize, Hk = nHeadK;
    const int64_t Hv = Hk > 0 && Sz > 0 ? (X.ne[0] - 2 * Hk * Sz) / Sz : 0;
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous() && Hk > 0 && Sz > 0 && Hv > 0 && Hv % Hk == 0 &&
                           X.ne[0] == (2 * Hk + Hv) * Sz && isFloatAct(G) && G.contiguous() && G.ne[0] == Hv &&
                           G.rows() == n && isFloatAct(B) && B.contiguous() && B.ne[0] == Hv && B.rows() == n &&
                           S.kind == TensorKind::State && S.ne[0] == Hv * Sz * Sz && isIndex(I) && I.ne[0] == 3 &&
                           I.ne[1] == n && eps > 0.0f,
                       "delta_net(" + shapeOf(X) + ", " + shapeOf(G) + ", " + shapeOf(B) + ", " + shapeOf(S) +
                           ", k heads " + std::to_string(Hk) + ", head " + std::to_string(Sz) + ")");
    Node nd;
    nd.op = Op::DeltaNet;
    nd.src = {qkv, g, beta, state, info, kNone};
    nd.k = nHeadK;
    nd.eps = eps;
    return emit(nd, Type::F32, {Sz, Hv, n, 1});
}

TensorId Graph::softcap(TensorId x, float c) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x) && c > 0.0f, "softcap of a missing tensor or by a cap <= 0");
    const Tensor& X = m_tensors[size_t(x)];
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous(), "softcap(" + shapeOf(X) + ")");
    Node n = unary(Op::Softcap, x);
    n.cap = c;
    return emit(n, Type::F32, X.ne);
}

TensorId Graph::gated(Op op, TensorId gate, TensorId up) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(gate) && valid(up), std::string(opName(op)) + " of a missing tensor");
    const Tensor &G = m_tensors[size_t(gate)], &U = m_tensors[size_t(up)];
    HEARTH_GRAPH_CHECK(isFloatAct(G) && isFloatAct(U) && G.contiguous() && U.contiguous() && G.ne == U.ne,
                       std::string(opName(op)) + "(" + shapeOf(G) + ", " + shapeOf(U) + ")");
    Node n;
    n.op = op;
    n.src = {gate, up, kNone, kNone, kNone, kNone};
    return emit(n, Type::F32, G.ne);
}

TensorId Graph::swiGlu(TensorId gate, TensorId up) { return gated(Op::SwiGlu, gate, up); }
TensorId Graph::geGlu(TensorId gate, TensorId up) { return gated(Op::GeGlu, gate, up); }

TensorId Graph::swiGluOai(TensorId gate, TensorId up, float alpha, float limit) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(alpha > 0.0f && limit > 0.0f, "swiglu_oai needs a positive alpha and limit");
    const TensorId out = gated(Op::SwiGluOai, gate, up);
    if (out != kNone) {
        m_nodes.back().scale = alpha;
        m_nodes.back().cap = limit;
    }
    return out;
}

TensorId Graph::topK(TensorId x, int32_t k) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x), "top_k of a missing tensor");
    const Tensor& X = m_tensors[size_t(x)];
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous() && k >= 1 && k <= X.ne[0],
                       "top_k(" + shapeOf(X) + ", " + std::to_string(k) + ")");
    Node n = unary(Op::TopK, x);
    n.k = k;
    return emit(n, Type::I32, {k, X.ne[1], X.ne[2], X.ne[3]});
}

TensorId Graph::argSort(TensorId x) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x), "argsort of a missing tensor");
    const Tensor& X = m_tensors[size_t(x)];
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous(), "argsort(" + shapeOf(X) + ")");
    return emit(unary(Op::ArgSort, x), Type::I32, X.ne);
}

TensorId Graph::concat(TensorId a, TensorId b, int32_t dim) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(a) && valid(b), "concat of a missing tensor");
    const Tensor &A = m_tensors[size_t(a)], &B = m_tensors[size_t(b)];
    bool ok = dim >= 0 && dim < kMaxDims && isFloatAct(A) && isFloatAct(B) && A.contiguous() && B.contiguous();
    for (int d = 0; ok && d < kMaxDims; ++d)
        if (d != dim && A.ne[size_t(d)] != B.ne[size_t(d)]) ok = false;
    HEARTH_GRAPH_CHECK(ok, "concat(" + shapeOf(A) + ", " + shapeOf(B) + ", dim " + std::to_string(dim) + ")");
    Node n;
    n.op = Op::Concat;
    n.src = {a, b, kNone, kNone, kNone, kNone};
    n.dim = dim;
    std::array<int64_t, kMaxDims> ne = A.ne;
    ne[size_t(dim)] += B.ne[size_t(dim)];
    return emit(n, Type::F32, ne);
}

TensorId Graph::copy(TensorId x) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x), "copy of a missing tensor");
    const Tensor& X = m_tensors[size_t(x)];
    HEARTH_GRAPH_CHECK(isFloatAct(X), "copy(" + shapeOf(X) + ")");
    return emit(unary(Op::Copy, x), Type::F32, X.ne);
}

TensorId Graph::gather(TensorId x, TensorId ids) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(x) && valid(ids), "gather of a missing tensor");
    const Tensor &X = m_tensors[size_t(x)], &I = m_tensors[size_t(ids)];
    HEARTH_GRAPH_CHECK(isFloatAct(X) && X.contiguous() && isIndex(I) && I.contiguous() && I.rows() == X.rows(),
                       "gather(" + shapeOf(X) + ", " + shapeOf(I) + ")");
    Node n;
    n.op = Op::Gather;
    n.src = {x, ids, kNone, kNone, kNone, kNone};
    return emit(n, Type::F32, I.ne);
}

TensorId Graph::weightedSum(TensorId y, TensorId w) {
    if (!m_status.isOk()) return kNone;
    HEARTH_GRAPH_CHECK(valid(y) && valid(w), "weighted_sum of a missing tensor");
    const Tensor &Y = m_tensors[size_t(y)], &W = m_tensors[size_t(w)];
    // y [t][k][J], w [t][k] -> [t][J]
    HEARTH_GRAPH_CHECK(isFloatAct(Y) && isFloatAct(W) && Y.contiguous() && W.contiguous() && Y.ne[3] == 1 &&
                           W.ne[0] == Y.ne[1] && W.rows() == Y.ne[2],
                       "weighted_sum(" + shapeOf(Y) + ", " + shapeOf(W) + ")");
    Node n;
    n.op = Op::WeightedSum;
    n.src = {y, w, kNone, kNone, kNone, kNone};
    return emit(n, Type::F32, {Y.ne[0], Y.ne[2], 1, 1});
}

std::string Graph::describe() const {
    std::ostringstream os;
    for (size_t i = 0; i < m_nodes.size(); ++i) {
        const Node& n = m_nodes[i];
        os << i << " L" << n.layer << (n.experts ? " experts " : " ") << opName(n.op) << " -> "
           << shapeOf(m_tensors[size_t(n.out)]);
        for (TensorId s : n.src)
            if (s != kNone) os << ' ' << shapeOf(m_tensors[size_t(s)]);
        os << '\n';
    }
    return os.str();
}

} // namespace hearth::graph
