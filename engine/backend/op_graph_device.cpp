// The graph device over an op device (op_graph_device.h): weights uploaded once per index, K/V
// pools of F32/F16/Q8_0 rows per layer, and programs whose nodes are translated into op calls
// recorded once into a list that every run() submits.
#include "backend/op_graph_device.h"

#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <vector>

namespace hearth::backend {

namespace {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;
using graph::TensorKind;

// Per pooled layer a K and a V cache of numBlocks * blockSize rows of that layer's sizes.
class OpKvPool final : public KvPool {
public:
    OpKvPool(const KvPoolSpec& spec, OpDevice& ops) : m_spec(spec), m_ops(&ops) {}

    Status init() {
        const uint64_t rows = uint64_t(m_spec.numBlocks) * uint64_t(m_spec.blockSize);
        for (size_t i = 0; i < m_spec.layers.size(); ++i) {
            const KvLayerShape shape = m_spec.shapeAt(i); // per layer: gemma4's differ
            const uint64_t kRow = kvRowBytes(shape.kRow, m_spec.type), vRow = kvRowBytes(shape.vRow, m_spec.type);
            m_kBlock.push_back(uint64_t(m_spec.blockSize) * kRow);
            m_vBlock.push_back(uint64_t(m_spec.blockSize) * vRow);
            HEARTH_ASSIGN_OR_RETURN(auto k, m_ops->allocate(rows * kRow, false));
            HEARTH_ASSIGN_OR_RETURN(auto v, m_ops->allocate(rows * vRow, false));
            m_bytes += k->size() + v->size();
            m_k.push_back(std::move(k));
            m_v.push_back(std::move(v));
        }
        return Status::ok();
    }
    const KvPoolSpec& spec() const override { return m_spec; }
    uint64_t bytes() const override { return m_bytes; }
    Status copyBlock(int32_t src, int32_t dst) override {
        if (src < 0 || dst < 0 || src >= m_spec.numBlocks || dst >= m_spec.numBlocks)
            return outOfRange("block id outside the " + m_ops->info().id + " K/V pool");
        if (src == dst) return Status::ok();
        for (size_t i = 0; i < m_k.size(); ++i) {
            const uint64_t kb = m_kBlock[i], vb = m_vBlock[i];
            Status s = m_ops->copy(*m_k[i], uint64_t(src) * kb, *m_k[i], uint64_t(dst) * kb, kb);
            if (s.isOk()) s = m_ops->copy(*m_v[i], uint64_t(src) * vb, *m_v[i], uint64_t(dst) * vb, vb);
            if (!s.isOk()) {
                m_ops->discard();
                return s;
            }
        }
        return m_ops->run();
    }
    // The K (or V) pool of model layer `layer`, or nullptr.
    Buffer* cache(int32_t layer, bool value) const {
        const int i = m_spec.indexOf(layer);
        if (i < 0) return nullptr;
        return value ? m_v[size_t(i)].get() : m_k[size_t(i)].get();
    }
    const OpDevice* owner() const { return m_ops; }

private:
    KvPoolSpec m_spec;
    OpDevice* m_ops;
    std::vector<std::unique_ptr<Buffer>> m_k, m_v;
    std::vector<uint64_t> m_kBlock, m_vBlock; // bytes of one block, per layer
    uint64_t m_bytes = 0;
};

class OpProgram final : public Program {
public:
    OpProgram(OpDevice& ops, std::vector<std::unique_ptr<Buffer>> views) : m_ops(&ops), m_views(std::move(views)) {}
    void setList(std::unique_ptr<OpList> list) { m_list = std::move(list); }
    Status run() override { return m_list ? m_ops->submit(*m_list) : Status::ok(); }

private:
    OpDevice* m_ops;
    std::vector<std::unique_ptr<Buffer>> m_views; // the tensors' ranges and scratch the list binds
    std::unique_ptr<OpList> m_list;               // declared last: released before the views
};

} // namespace

ops::ConcatShape concatShape(const graph::Graph& g, const Node& n) {
    const Tensor &A = g.tensor(n.src[0]), &B = g.tensor(n.src[1]);
    ops::ConcatShape s;
    if (n.dim < 0 || n.dim >= graph::kMaxDims) return s;
    const size_t dim = size_t(n.dim);
    int64_t inner = 1, outer = 1;
    for (size_t d = 0; d < dim; ++d) inner *= A.ne[d];
    for (size_t d = dim + 1; d < size_t(graph::kMaxDims); ++d) outer *= A.ne[d];
    s.outer = outer;
    s.aBlock = A.ne[dim] * inner;
    s.bBlock = B.ne[dim] * inner;
    return s;
}

namespace {

class OpGraphDevice final : public Device {
public:
    OpGraphDevice(std::unique_ptr<OpDevice> ops, const std::string& id) : m_ops(std::move(ops)) {
        m_info = m_ops->info();
        m_info.id = id;
        m_info.host = false;
        m_limits = m_ops->limits();
    }

    const DeviceInfo& info() const override { return m_info; }
    bool supportsOp(const graph::Graph& g, const Node& node) const override {
        return opDeviceRunsNode(*m_ops, g, node);
    }
    Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes) override { return m_ops->allocate(bytes, false); }
    Result<uint64_t> loadWeights(const std::vector<graph::Weight>& all, std::span<const WeightUse> used) override;
    Result<std::unique_ptr<KvPool>> createKvPool(const KvPoolSpec& spec) override;
    int maxKvBlocks(const KvPoolSpec& spec) const override;
    Result<std::unique_ptr<Program>> compile(const ProgramSpec& spec) override;

private:
    // What one compile resolves: per tensor id the buffer (or view) ops bind for it.
    struct Compiling {
        const ProgramSpec* spec = nullptr;
        const OpKvPool* kv = nullptr;
        std::map<TensorId, const Buffer*> buffers;
        std::vector<std::unique_ptr<Buffer>> views; // and scratch buffers
        Buffer* scratch = nullptr;                  // mat_mul_id's routing table (in views)
    };
    Result<const Buffer*> bufferOf(Compiling& c, TensorId id) const;
    // A view of `bytes` bytes at `from` within the storage of activation or input `id`.
    Result<const Buffer*> viewOf(Compiling& c, TensorId id, uint64_t from, uint64_t bytes) const;
    Status recordNode(Compiling& c, const Node& n);
    Status recordMatMul(Compiling& c, const Node& n);

    std::unique_ptr<OpDevice> m_ops;
    DeviceInfo m_info;
    ops::OpLimits m_limits;
    std::vector<std::unique_ptr<Buffer>> m_weights; // per weight index; null where not used here
};

Result<uint64_t> OpGraphDevice::loadWeights(const std::vector<graph::Weight>& all, std::span<const WeightUse> used) {
    m_weights.resize(all.size());
    uint64_t bytes = 0;
    for (const WeightUse& u : used) {
        if (u.index < 0 || size_t(u.index) >= all.size()) return invalidArgument("weight index out of range");
        if (m_weights[size_t(u.index)]) continue; // each weight once, however it is read
        const graph::Weight& w = all[size_t(u.index)];
        if ((u.matMul && !m_ops->supportsOp(ops::Op::MatMul, w.type)) || (u.rows && !m_ops->supportsOp(ops::Op::GetRows, w.type)))
            return unsupported("weight '" + w.name + "' has type " + std::string(quant::typeName(w.type)) + ", which " +
                               m_info.id + " has no kernel for");
        if (!w.data) return invalidArgument("weight '" + w.name + "' has no data");
        auto buffer = m_ops->allocate(w.bytes(), false);
        if (!buffer) return buffer.status().withContext("uploading '" + w.name + "'");
        HEARTH_RETURN_IF_ERROR((*buffer)->write(0, w.data, w.bytes()));
        bytes += w.bytes();
        m_weights[size_t(u.index)] = std::move(buffer).value();
    }
    HEARTH_RETURN_IF_ERROR(m_ops->run()); // the uploads done before the file's pages are released
    return bytes;
}

int OpGraphDevice::maxKvBlocks(const KvPoolSpec& spec) const {
    if (spec.blockSize < 1) return 0;
    uint64_t widest = 0, slotBytes = 0; // the widest row; per slot, every layer's K and V rows
    for (size_t l = 0; l < std::max<size_t>(spec.layers.size(), 1); ++l) {
        const KvLayerShape shape = spec.shapeAt(l);
        if (!m_ops->kvShapeFits(shape, spec.type)) return 0;
        const uint64_t k = kvRowBytes(shape.kRow, spec.type), v = kvRowBytes(shape.vRow, spec.type);
        widest = std::max({widest, k, v});
        slotBytes += k + v;
    }
    uint64_t most = uint64_t(INT32_MAX) / uint64_t(spec.blockSize); // slots are int32
    // One layer's K or V pool is one binding (allocations round up to 16 bytes).
    if (const uint64_t bind = m_limits.maxBindRange; bind > 0)
        most = std::min(most, (bind > 16 ? bind - 16 : 0) / std::max<uint64_t>(1, uint64_t(spec.blockSize) * widest));
    if (const uint64_t memory = m_ops->availableMemory(); memory > 0)
        most = std::min(most, memory / std::max<uint64_t>(1, uint64_t(spec.blockSize) * slotBytes));
    return int(std::min<uint64_t>(most, INT32_MAX));
}

Result<std::unique_ptr<KvPool>> OpGraphDevice::createKvPool(const KvPoolSpec& spec) {
    if (spec.numBlocks < 1 || spec.blockSize < 1) return invalidArgument(m_info.id + " K/V pool: blocks needed");
    for (size_t l = 0; l < spec.layers.size(); ++l) {
        const KvLayerShape shape = spec.shapeAt(l);
        if (shape.kRow < 1 || shape.vRow < 1) return invalidArgument(m_info.id + " K/V pool: a layer without K/V rows");
        if (!m_ops->kvShapeFits(shape, spec.type))
            return unsupported(std::string("the ") + m_info.id + " K/V cache cannot hold " + kvTypeName(spec.type) +
                               " rows of " + std::to_string(shape.kRow) + " / " + std::to_string(shape.vRow) +
                               " values in heads of " + std::to_string(shape.headDim));
    }
    if (const int most = maxKvBlocks(spec); spec.numBlocks > most)
        return unsupported("a K/V cache of " + std::to_string(spec.numBlocks) + " blocks per layer does not fit " +
                           m_info.id + " (at most " + std::to_string(most) + " blocks)");
    auto pool = std::make_unique<OpKvPool>(spec, *m_ops);
    HEARTH_RETURN_IF_ERROR(pool->init());
    return std::unique_ptr<KvPool>(std::move(pool));
}

Result<const Buffer*> OpGraphDevice::viewOf(Compiling& c, TensorId id, uint64_t from, uint64_t bytes) const {
    const graph::Graph& g = *c.spec->graph;
    uint64_t offset = 0;
    const TensorId r = viewRoot(g, id, offset);
    if (size_t(r) >= c.spec->bindings.size() || !c.spec->bindings[size_t(r)].buffer)
        return internalError("tensor '" + g.tensor(id).name + "' has no storage on " + m_info.id);
    const Binding& b = c.spec->bindings[size_t(r)];
    const uint64_t start = b.offset + offset + from;
    if (start > b.buffer->size() || bytes > b.buffer->size() - start)
        return internalError("tensor '" + g.tensor(id).name + "' runs past its buffer");
    if (start % std::max<uint64_t>(m_limits.offsetAlign, 1) != 0)
        return unsupported("tensor '" + g.tensor(id).name + "' starts at an unaligned offset");
    auto view = m_ops->view(*b.buffer, start, bytes);
    if (!view) return view.status().withContext("tensor '" + g.tensor(id).name + "'");
    c.views.push_back(std::move(view).value());
    return c.views.back().get();
}

Result<const Buffer*> OpGraphDevice::bufferOf(Compiling& c, TensorId id) const {
    if (auto it = c.buffers.find(id); it != c.buffers.end()) return it->second;
    const graph::Graph& g = *c.spec->graph;
    uint64_t offset = 0;
    const Tensor& root = g.tensor(viewRoot(g, id, offset));
    const Buffer* buffer = nullptr;
    switch (root.kind) {
    case TensorKind::Weight:
        if (size_t(root.weight) >= m_weights.size() || !m_weights[size_t(root.weight)])
            return internalError("weight '" + root.name + "' is not loaded on " + m_info.id);
        if (offset != 0) return unsupported("a view inside weight '" + root.name + "'");
        buffer = m_weights[size_t(root.weight)].get();
        break;
    case TensorKind::KvCache:
        buffer = c.kv ? c.kv->cache(root.layer, root.value) : nullptr;
        if (!buffer) return internalError(m_info.id + " holds no K/V pool for layer " + std::to_string(root.layer));
        break;
    case TensorKind::Input:
    case TensorKind::State:
    case TensorKind::Activation: {
        HEARTH_ASSIGN_OR_RETURN(buffer, viewOf(c, id, 0, g.tensor(id).bytes()));
        break;
    }
    }
    c.buffers[id] = buffer;
    return buffer;
}

Status OpGraphDevice::recordMatMul(Compiling& c, const Node& n) {
    const graph::Graph& g = *c.spec->graph;
    const Tensor &W = g.tensor(n.src[0]), &X = g.tensor(n.src[1]), &Y = g.tensor(n.out);
    HEARTH_ASSIGN_OR_RETURN(const Buffer* wb, bufferOf(c, n.src[0]));
    const ops::DeviceMatrix w{wb, W.type, W.ne[0], W.ne[1], W.nb[1]};
    const int64_t rows = X.rows();
    const int64_t chunk = matMulChunk(m_limits, rows, X.nb[1], Y.nb[1]);
    if (chunk < 1) return unsupported("mat_mul: one row of its operands exceeds the binding limit");
    if (chunk >= rows) {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, bufferOf(c, n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* y, bufferOf(c, n.out));
        return m_ops->matMul(w, *x, rows, const_cast<Buffer&>(*y));
    }
    // Activations wider than one binding: token rows in chunks, each bound as views of its own.
    for (int64_t t0 = 0; t0 < rows; t0 += chunk) {
        const int64_t count = std::min(chunk, rows - t0);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, viewOf(c, n.src[1], uint64_t(t0) * X.nb[1], uint64_t(count) * X.nb[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* y, viewOf(c, n.out, uint64_t(t0) * Y.nb[1], uint64_t(count) * Y.nb[1]));
        HEARTH_RETURN_IF_ERROR(m_ops->matMul(w, *x, count, const_cast<Buffer&>(*y)));
    }
    return Status::ok();
}

Status OpGraphDevice::recordNode(Compiling& c, const Node& n) {
    const graph::Graph& g = *c.spec->graph;
    const Tensor& out = g.tensor(n.out);
    auto buf = [&](TensorId id) { return bufferOf(c, id); };
    auto optional = [&](TensorId id) -> Result<const Buffer*> {
        if (id == graph::kNone) return static_cast<const Buffer*>(nullptr);
        return bufferOf(c, id);
    };
    HEARTH_ASSIGN_OR_RETURN(const Buffer* o, buf(n.out));
    Buffer& dst = const_cast<Buffer&>(*o);
    switch (n.op) {
    case Op::GetRows: {
        const Tensor& T = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* table, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* ids, buf(n.src[1]));
        const ops::DeviceMatrix m{table, T.type, T.ne[0], T.ne[1], T.nb[1]};
        return m_ops->getRows(m, *ids, g.tensor(n.src[1]).elements(), dst);
    }
    case Op::MatMul: return recordMatMul(c, n);
    case Op::MatMulId: {
        const Tensor &W = g.tensor(n.src[0]), &X = g.tensor(n.src[1]), &I = g.tensor(n.src[2]);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* w, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* ids, buf(n.src[2]));
        const ops::DeviceExperts e{{w, W.type, W.ne[0], W.ne[1] * W.ne[2], W.nb[1]}, W.ne[1]};
        // The routing scratch of the many-token kernel, one per program (the nodes run in order):
        // kept with the views, replaced by a larger one when a node needs more.
        Buffer* scratch = nullptr;
        if (const uint64_t bytes = m_ops->matMulIdScratchBytes(W.ne[2], I.ne[0], I.ne[1]); bytes > 0) {
            if (!c.scratch || c.scratch->size() < bytes) {
                HEARTH_ASSIGN_OR_RETURN(auto b, m_ops->allocate(bytes, false));
                c.scratch = b.get();
                c.views.push_back(std::move(b));
            }
            scratch = c.scratch;
        }
        return m_ops->matMulId(e, *x, X.ne[1], *ids, I.ne[0], I.ne[1], dst, scratch);
    }
    case Op::Copy: {
        const Tensor& X = g.tensor(n.src[0]);
        uint64_t offset = 0;
        const TensorId root = viewRoot(g, n.src[0], offset);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(root)); // the whole source, the view's offset in floats
        return m_ops->copyRows(*x, offset / 4, X.rows(), X.ne[0], int64_t(X.nb[1] / 4), dst);
    }
    case Op::Gather: {
        const Tensor& I = g.tensor(n.src[1]);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* ids, buf(n.src[1]));
        return m_ops->gather(*x, *ids, I.rows(), g.tensor(n.src[0]).ne[0], I.ne[0], dst);
    }
    case Op::WeightedSum: {
        const Tensor& Y = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* y, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* w, buf(n.src[1]));
        return m_ops->weightedSum(*y, *w, Y.ne[2], Y.ne[1], Y.ne[0], dst);
    }
    case Op::Softmax: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        return m_ops->softmax(*x, out.rows(), out.ne[0], n.scale, dst);
    }
    case Op::TopK:
    case Op::ArgSort: {
        const Tensor& X = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        return m_ops->topK(*x, X.rows(), X.ne[0], n.op == Op::TopK ? n.k : X.ne[0], dst);
    }
    case Op::SwiGluOai: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* gate, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* up, buf(n.src[1]));
        return m_ops->swigluOai(*gate, *up, out.elements(), n.scale, n.cap, dst);
    }
    case Op::RmsNorm: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* w, optional(n.src[1]));
        return m_ops->rmsNorm(*x, w, out.rows(), out.ne[0], n.eps, dst);
    }
    case Op::Rope: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* pos, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* factors, optional(n.src[2]));
        ops::RopeParams p;
        p.n = out.ne[2];
        p.nHeads = int(out.ne[1]);
        p.headDim = int(out.ne[0]);
        p.nRot = n.rope.nRot;
        p.freqBase = n.rope.freqBase;
        p.neox = n.rope.neox;
        p.nFreqFactors = factors ? int(std::min<int64_t>(g.tensor(n.src[2]).elements(), n.rope.nRot / 2)) : 0;
        p.freqScale = n.rope.freqScale;
        p.extFactor = n.rope.extFactor;
        p.attnFactor = n.rope.attnFactor;
        p.betaFast = n.rope.betaFast;
        p.betaSlow = n.rope.betaSlow;
        p.nCtxOrig = n.rope.nCtxOrig;
        p.tempScale = n.rope.tempScale;
        p.tempLength = n.rope.tempLength;
        return m_ops->rope(*x, *pos, factors, p, dst);
    }
    case Op::KvWrite: {
        const Tensor& C = g.tensor(n.src[0]);
        KvType type;
        if (!kvTypeOf(C.type, type)) return unsupported("K/V cache type " + std::string(quant::typeName(C.type)));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* rows, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* slots, buf(n.src[2]));
        const int index = c.kv->spec().indexOf(C.layer);
        const KvLayerShape shape = c.kv->spec().shapeAt(size_t(std::max(0, index)));
        if (index < 0 || type != c.kv->spec().type || C.ne[0] != (C.value ? shape.vRow : shape.kRow) ||
            C.ne[1] > int64_t(c.kv->spec().numBlocks) * c.kv->spec().blockSize)
            return internalError("kv_write: the graph's cache does not match the " + m_info.id + " K/V pool");
        return m_ops->kvWrite(*rows, *slots, g.tensor(n.src[2]).elements(), C.ne[0], type, dst);
    }
    case Op::Attention: {
        const Tensor& Q = g.tensor(n.src[0]);
        KvType type;
        if (!kvTypeOf(g.tensor(n.src[1]).type, type)) return unsupported("attention over a K/V cache of another type");
        HEARTH_ASSIGN_OR_RETURN(const Buffer* q, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* k, buf(n.src[1])); // fails without a pool here
        HEARTH_ASSIGN_OR_RETURN(const Buffer* v, buf(n.src[2]));
        if (n.attn.blockSize != c.kv->spec().blockSize || type != c.kv->spec().type)
            return internalError("attention: block size differs from the " + m_info.id + " K/V pool's");
        HEARTH_ASSIGN_OR_RETURN(const Buffer* info, buf(n.src[3]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* tables, buf(n.src[4]));
        ops::AttentionParams p;
        p.n = Q.ne[2];
        p.nHead = int(Q.ne[1]);
        p.nHeadKv = n.attn.nHeadKv;
        p.headDim = int(Q.ne[0]);
        p.blockSize = n.attn.blockSize;
        p.scale = n.attn.scale;
        p.kvType = type;
        p.window = n.attn.window;
        p.softcap = n.attn.softcap;
        p.causal = n.attn.causal;
        HEARTH_ASSIGN_OR_RETURN(const Buffer* sinks, optional(n.src[5]));
        return m_ops->attention(*q, *k, *v, *info, *tables, sinks, p, dst);
    }
    case Op::Add:
    case Op::Mul:
    case Op::SwiGlu:
    case Op::GeGlu: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* a, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* b, buf(n.src[1]));
        const ops::Binary op = n.op == Op::Add   ? ops::Binary::Add
                               : n.op == Op::Mul ? ops::Binary::Mul
                               : n.op == Op::SwiGlu ? ops::Binary::Swiglu
                                                    : ops::Binary::Geglu;
        return m_ops->binary(op, *a, *b, out.elements(), g.tensor(n.src[1]).elements(), dst);
    }
    case Op::Scale:
    case Op::Silu:
    case Op::Gelu:
    case Op::Softcap:
    case Op::Sigmoid:
    case Op::Softplus: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        const ops::Unary op = n.op == Op::Scale     ? ops::Unary::Scale
                              : n.op == Op::Silu    ? ops::Unary::Silu
                              : n.op == Op::Gelu    ? ops::Unary::Gelu
                              : n.op == Op::Sigmoid ? ops::Unary::Sigmoid
                              : n.op == Op::Softplus ? ops::Unary::Softplus
                                                     : ops::Unary::Softcap;
        return m_ops->unary(op, *x, out.elements(), n.op == Op::Softcap ? n.cap : n.scale, dst);
    }
    case Op::LayerNorm: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* w, optional(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* b, optional(n.src[2]));
        return m_ops->layerNorm(*x, w, b, out.rows(), out.ne[0], n.eps, dst);
    }
    case Op::Concat: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* a, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* b, buf(n.src[1]));
        return m_ops->concat(*a, *b, concatShape(g, n), dst);
    }
    case Op::RmsNormGated: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* w, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* z, buf(n.src[2]));
        return m_ops->rmsNormGated(*x, *w, *z, out.rows(), out.ne[0], n.eps, dst);
    }
    case Op::SsmConv: {
        const Tensor &X = g.tensor(n.src[0]), &S = g.tensor(n.src[2]);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* w, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* state, buf(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* info, buf(n.src[3]));
        const ops::ConvShape shape{X.ne[1], X.ne[0], g.tensor(n.src[1]).ne[0], S.ne[1]};
        return m_ops->ssmConv(*x, *w, const_cast<Buffer&>(*state), *info, shape, dst);
    }
    case Op::DeltaNet: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* qkv, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* gate, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* beta, buf(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* state, buf(n.src[3]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* info, buf(n.src[4]));
        const ops::DeltaShape shape{out.ne[2], out.ne[0], n.k, out.ne[1], g.tensor(n.src[3]).ne[1], n.eps};
        return m_ops->deltaNet(*qkv, *gate, *beta, const_cast<Buffer&>(*state), *info, shape, dst);
    }
    default: return unsupported(m_info.id + " does not run " + graph::opName(n.op));
    }
}

Result<std::unique_ptr<Program>> OpGraphDevice::compile(const ProgramSpec& spec) {
    if (!spec.graph) return invalidArgument("program without a graph");
    Compiling c;
    c.spec = &spec;
    if (spec.kv) {
        c.kv = dynamic_cast<const OpKvPool*>(spec.kv);
        if (!c.kv || c.kv->owner() != m_ops.get())
            return invalidArgument("the K/V pool of a " + m_info.id + " program belongs to another device");
    }
    const graph::Graph& g = *spec.graph;
    const auto& nodes = g.nodes();
    for (int index : spec.nodes)
        if (index < 0 || size_t(index) >= nodes.size()) return invalidArgument("program node index out of range");
    // A decode-sized step (a few tokens) is run again and again with new inputs.
    int64_t tokens = 0;
    for (const Tensor& t : g.tensors())
        if (t.kind == TensorKind::Input && t.input == graph::StepInput::TokenIds) tokens = t.elements();
    const bool repeated = tokens >= 1 && tokens <= 8;
    // The views are made while recording; the program keeps them alongside the list.
    auto list = m_ops->record(
        [&]() -> Status {
            for (int index : spec.nodes) {
                const Node& n = nodes[size_t(index)];
                const Status s = recordNode(c, n);
                if (!s.isOk())
                    return s.withContext("node " + std::to_string(index) + " (" + graph::opName(n.op) + ") on " +
                                         m_info.id);
            }
            return Status::ok();
        },
        repeated);
    if (!list) return list.status();
    auto program = std::make_unique<OpProgram>(*m_ops, std::move(c.views));
    program->setList(std::move(list).value());
    return std::unique_ptr<Program>(std::move(program));
}

} // namespace

std::unique_ptr<Device> makeOpGraphDevice(std::unique_ptr<OpDevice> ops, const std::string& id) {
    return std::unique_ptr<Device>(new OpGraphDevice(std::move(ops), id));
}

} // namespace hearth::backend
