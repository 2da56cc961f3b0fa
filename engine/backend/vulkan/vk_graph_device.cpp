// The Vulkan graph device: which graph nodes the shaders run (supportsOp), weights uploaded once
// per index, K/V pools of F32/F16/Q8_0 rows per layer, and programs whose nodes are translated into op
// device calls recorded once into a command list that every run() submits.
#include "backend/vulkan/vk_graph_device.h"

#include "backend/op_device.h"
#include "backend/vulkan/vk_device.h"
#include "backend/vulkan/vk_encoder_ops.h"
#include "backend/vulkan/vk_kv_ops.h"
#include "backend/vulkan/vk_recurrent.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace hearth::vk {

namespace {

using backend::Buffer;
using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;
using graph::TensorKind;
namespace ops = backend::ops;

// The root of a tensor's view chain, with the summed byte offset of the views.
TensorId rootOf(const graph::Graph& g, TensorId id, uint64_t& offset) {
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

class VulkanKvPool final : public backend::KvPool {
public:
    VulkanKvPool(const backend::KvPoolSpec& spec, VulkanOpDevice& ops) : m_spec(spec), m_ops(&ops) {}

    Status init() {
        const uint64_t rows = uint64_t(m_spec.numBlocks) * uint64_t(m_spec.blockSize);
        for (size_t i = 0; i < m_spec.layers.size(); ++i) {
            const backend::KvLayerShape shape = m_spec.shapeAt(i); // per layer: gemma4's differ
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
    const backend::KvPoolSpec& spec() const override { return m_spec; }
    uint64_t bytes() const override { return m_bytes; }
    Status copyBlock(int32_t src, int32_t dst) override {
        if (src < 0 || dst < 0 || src >= m_spec.numBlocks || dst >= m_spec.numBlocks)
            return outOfRange("block id outside the Vulkan K/V pool");
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

private:
    backend::KvPoolSpec m_spec;
    VulkanOpDevice* m_ops;
    std::vector<std::unique_ptr<Buffer>> m_k, m_v;
    std::vector<uint64_t> m_kBlock, m_vBlock; // bytes of one block, per layer
    uint64_t m_bytes = 0;
};

class VulkanProgram final : public backend::Program {
public:
    VulkanProgram(VulkanOpDevice& ops, std::vector<std::unique_ptr<Buffer>> views)
        : m_ops(&ops), m_views(std::move(views)) {}
    void setList(std::unique_ptr<CommandList> list) { m_list = std::move(list); }
    Status run() override { return m_list ? m_ops->submit(*m_list) : Status::ok(); }

private:
    VulkanOpDevice* m_ops;
    std::vector<std::unique_ptr<Buffer>> m_views; // the tensors' ranges and scratch the list binds
    std::unique_ptr<CommandList> m_list;          // declared last: released before the views
};

class VulkanGraphDevice final : public backend::Device {
public:
    VulkanGraphDevice(std::unique_ptr<VulkanOpDevice> ops, int index) : m_ops(std::move(ops)) {
        m_info = m_ops->info();
        m_info.id = "vulkan:" + std::to_string(index);
        m_info.api = "vulkan";
        m_info.host = false;
        m_offsetAlign = m_ops->context().offsetAlign;
        m_maxWeightRange = m_ops->context().maxWeightRange;
    }

    const backend::DeviceInfo& info() const override { return m_info; }
    bool supportsOp(const graph::Graph& g, const Node& node) const override;
    Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes) override { return m_ops->allocate(bytes, false); }
    Result<uint64_t> loadWeights(const std::vector<graph::Weight>& all, std::span<const backend::WeightUse> used) override;
    Result<std::unique_ptr<backend::KvPool>> createKvPool(const backend::KvPoolSpec& spec) override;
    int maxKvBlocks(const backend::KvPoolSpec& spec) const override;
    Result<std::unique_ptr<backend::Program>> compile(const backend::ProgramSpec& spec) override;

private:
    // What one compile resolves: per tensor id the buffer (or view) ops bind for it.
    struct Compiling {
        const backend::ProgramSpec* spec = nullptr;
        const VulkanKvPool* kv = nullptr;
        std::map<TensorId, const Buffer*> buffers;
        std::vector<std::unique_ptr<Buffer>> views; // and scratch buffers
        Buffer* scratch = nullptr;                  // mat_mul_id's routing table (in views)
    };
    Result<const Buffer*> bufferOf(Compiling& c, TensorId id) const;
    // A view of `bytes` bytes at `from` within the storage of activation or input `id`.
    Result<const Buffer*> viewOf(Compiling& c, TensorId id, uint64_t from, uint64_t bytes) const;
    Status recordNode(Compiling& c, const Node& n);
    Status recordMatMul(Compiling& c, const Node& n);
    // Tokens per MatMul dispatch (see recordMatMul); 0 when not even one aligned chunk fits.
    int64_t matMulChunk(int64_t n, uint64_t xRow, uint64_t yRow) const;
    // Whether the op device can bind one row of a matrix (it binds matrices in row ranges).
    bool weightRowFits(uint64_t rowBytes) const { return m_maxWeightRange >= m_offsetAlign + 4 + rowBytes; }

    std::unique_ptr<VulkanOpDevice> m_ops;
    backend::DeviceInfo m_info;
    uint64_t m_offsetAlign = 4, m_maxWeightRange = 0;
    std::vector<std::unique_ptr<Buffer>> m_weights; // per weight index; null where not used here
};

int64_t VulkanGraphDevice::matMulChunk(int64_t n, uint64_t xRow, uint64_t yRow) const {
    const uint64_t limit = m_info.maxBindRange, widest = std::max(xRow, yRow);
    const uint64_t most = uint64_t(kMaxWorkGroups) * 16; // token tiles of the tiled kernel
    if (uint64_t(n) * widest <= limit && uint64_t(n) <= most) return n;
    uint64_t c = std::min(limit / std::max<uint64_t>(widest, 1), most);
    c -= c % m_offsetAlign; // chunk starts then stay aligned whatever the row size
    return int64_t(c);
}

bool VulkanGraphDevice::supportsOp(const graph::Graph& g, const Node& n) const {
    const uint64_t limit = m_info.maxBindRange;
    // An activation or input operand: F32 (or I32 for indices), contiguous, at the start of its
    // storage, and (unless chunked) within one binding. Weights read whole (norm weights, biases,
    // frequency factors) fit one binding too.
    auto plain = [&](TensorId id, bool index = false, bool chunked = false) {
        if (id == graph::kNone) return true;
        const Tensor& t = g.tensor(id);
        uint64_t offset = 0;
        const Tensor& root = g.tensor(rootOf(g, id, offset));
        if (root.kind == TensorKind::KvCache) return false;
        if (t.type != (index ? quant::Type::I32 : quant::Type::F32) || !t.contiguous() || offset != 0) return false;
        return chunked || t.bytes() <= limit;
    };
    auto weightMatrix = [&](TensorId id, ops::Op op) {
        uint64_t offset = 0;
        const Tensor& root = g.tensor(rootOf(g, id, offset));
        const Tensor& t = g.tensor(id);
        return root.kind == TensorKind::Weight && offset == 0 && t.ne[2] == 1 && t.ne[3] == 1 &&
               m_ops->supportsOp(op, t.type) && weightRowFits(t.nb[1]);
    };
    // Stacked expert matrices W [nExp][rows][cols]: whole experts, bound as one matrix of rows.
    auto expertWeights = [&](TensorId id) {
        uint64_t offset = 0;
        const Tensor& root = g.tensor(rootOf(g, id, offset));
        const Tensor& t = g.tensor(id);
        return root.kind == TensorKind::Weight && offset == 0 && t.ne[3] == 1 && t.ne[1] <= kMaxWorkGroups &&
               t.nb[2] == t.nb[1] * uint64_t(t.ne[1]) && m_ops->supportsOp(ops::Op::MatMulId, t.type) &&
               weightRowFits(t.nb[1]);
    };
    const Tensor& out = g.tensor(n.out);
    switch (n.op) {
    case Op::GetRows: {
        const Tensor& T = g.tensor(n.src[0]);
        uint64_t offset = 0;
        const bool table = g.tensor(rootOf(g, n.src[0], offset)).kind == TensorKind::Weight
                               ? weightMatrix(n.src[0], ops::Op::GetRows)
                               : plain(n.src[0], false, true) && weightRowFits(T.nb[1]);
        return table && plain(n.src[1], true) && plain(n.out);
    }
    case Op::MatMul: {
        const Tensor& X = g.tensor(n.src[1]);
        return weightMatrix(n.src[0], ops::Op::MatMul) && plain(n.src[1], false, true) && plain(n.out, false, true) &&
               matMulChunk(X.rows(), X.nb[1], out.nb[1]) > 0;
    }
    case Op::MatMulId: {
        const Tensor& I = g.tensor(n.src[2]);
        return expertWeights(n.src[0]) && I.ne[0] <= kMaxWorkGroups && I.ne[1] <= kMaxWorkGroups && plain(n.src[1]) &&
               plain(n.src[2], true) && plain(n.out);
    }
    case Op::Gather:
    case Op::TopK:
    case Op::ArgSort: {
        const bool sort = n.op != Op::Gather;
        return (!sort || g.tensor(n.src[0]).ne[0] <= kMaxTopKWidth) && plain(n.src[0]) &&
               plain(n.src[1], true) && plain(n.out, sort);
    }
    case Op::WeightedSum:
    case Op::SwiGluOai: return plain(n.src[0]) && plain(n.src[1]) && plain(n.out);
    case Op::Copy: {
        // F32 rows of one stride (a column slice, rows at an offset, a reshape) of an activation.
        const Tensor& X = g.tensor(n.src[0]);
        uint64_t offset = 0;
        const Tensor& root = g.tensor(rootOf(g, n.src[0], offset));
        return (root.kind == TensorKind::Activation || root.kind == TensorKind::Input) && X.type == quant::Type::F32 &&
               root.type == quant::Type::F32 && X.nb[0] == 4 && X.nb[1] % 4 == 0 && offset % 4 == 0 &&
               X.nb[2] == X.nb[1] * uint64_t(X.ne[1]) && X.nb[3] == X.nb[2] * uint64_t(X.ne[2]) &&
               root.bytes() <= limit && plain(n.out);
    }
    case Op::Softmax: return plain(n.src[0]) && plain(n.out);
    case Op::RmsNorm: return plain(n.src[0]) && plain(n.src[1]) && plain(n.out);
    case Op::Rope: {
        const Tensor& X = g.tensor(n.src[0]);
        return X.ne[0] % 2 == 0 && plain(n.src[0]) &&
               plain(n.src[1], true) && plain(n.src[2]) && plain(n.out);
    }
    case Op::KvWrite: {
        const Tensor& C = g.tensor(n.src[0]);
        KvType type;
        return C.kind == TensorKind::KvCache && kvTypeOf(C.type, type) && kvRowFits(C.ne[0], type) && plain(n.src[1]) &&
               plain(n.src[2], true);
    }
    case Op::Attention: {
        const Tensor &Q = g.tensor(n.src[0]), &K = g.tensor(n.src[1]), &V = g.tensor(n.src[2]);
        KvType type;
        // Within the sequence (encoders): vk_encoder_ops.h's limits besides these.
        return (n.attn.causal || encoderNodeFits(g, n)) && K.kind == TensorKind::KvCache &&
               V.kind == TensorKind::KvCache && kvTypeOf(K.type, type) && K.type == V.type &&
               kvRowFits(K.ne[0], type) && kvRowFits(V.ne[0], type) && out.ne[0] == Q.ne[0] &&
               Q.ne[0] <= kMaxHeadDim && Q.ne[1] <= kMaxWorkGroups && Q.ne[2] <= kMaxWorkGroups && plain(n.src[0]) &&
               plain(n.src[3], true) && plain(n.src[4], true) && plain(n.src[5]) && plain(n.out);
    }
    case Op::Add:
    case Op::Mul: {
        const Tensor &A = g.tensor(n.src[0]), &B = g.tensor(n.src[1]);
        return (B.elements() == A.elements() || B.elements() == A.ne[0]) && plain(n.src[0]) && plain(n.src[1]) &&
               plain(n.out);
    }
    case Op::Scale:
    case Op::Silu:
    case Op::Gelu:
    case Op::Softcap:
    case Op::Sigmoid:
    case Op::Softplus: return plain(n.src[0]) && plain(n.out);
    case Op::SwiGlu:
    case Op::GeGlu: return plain(n.src[0]) && plain(n.src[1]) && plain(n.out);
    // The hybrid models' ops (vk_recurrent.h): the State pool checked there.
    case Op::RmsNormGated:
        return plain(n.src[0]) && plain(n.src[1]) && plain(n.src[2]) && plain(n.out) && recurrentNodeFits(g, n, limit);
    case Op::SsmConv:
        return plain(n.src[0]) && plain(n.src[1]) && plain(n.src[3], true) && plain(n.out) &&
               recurrentNodeFits(g, n, limit);
    case Op::DeltaNet:
        return plain(n.src[0]) && plain(n.src[1]) && plain(n.src[2]) && plain(n.src[4], true) && plain(n.out) &&
               recurrentNodeFits(g, n, limit);
    // The encoders' ops (vk_encoder_ops.h).
    case Op::LayerNorm:
        return plain(n.src[0]) && plain(n.src[1]) && plain(n.src[2]) && plain(n.out) && encoderNodeFits(g, n);
    case Op::Concat: return plain(n.src[0]) && plain(n.src[1]) && plain(n.out) && encoderNodeFits(g, n);
    default: return false;
    }
}

Result<uint64_t> VulkanGraphDevice::loadWeights(const std::vector<graph::Weight>& all,
                                                std::span<const backend::WeightUse> used) {
    m_weights.resize(all.size());
    uint64_t bytes = 0;
    for (const backend::WeightUse& u : used) {
        if (u.index < 0 || size_t(u.index) >= all.size()) return invalidArgument("weight index out of range");
        if (m_weights[size_t(u.index)]) continue; // each weight once, however it is read
        const graph::Weight& w = all[size_t(u.index)];
        if (!w.data) return invalidArgument("weight '" + w.name + "' has no data");
        auto buffer = m_ops->allocate(w.bytes(), false);
        if (!buffer) return buffer.status().withContext("uploading '" + w.name + "'");
        HEARTH_RETURN_IF_ERROR((*buffer)->write(0, w.data, w.bytes()));
        bytes += w.bytes();
        m_weights[size_t(u.index)] = std::move(buffer).value();
    }
    return bytes;
}

int VulkanGraphDevice::maxKvBlocks(const backend::KvPoolSpec& spec) const {
    if (!kvRowFits(spec.kRow, spec.type) || !kvRowFits(spec.vRow, spec.type)) return 0;
    const uint64_t block =
        uint64_t(std::max(1, spec.blockSize)) * kvRowBytes(std::max(spec.kRow, spec.vRow), spec.type);
    const uint64_t limit = m_info.maxBindRange > 16 ? m_info.maxBindRange - 16 : 0; // allocations round up to 16
    return int(std::min<uint64_t>(limit / std::max<uint64_t>(1, block), INT32_MAX));
}

Result<std::unique_ptr<backend::KvPool>> VulkanGraphDevice::createKvPool(const backend::KvPoolSpec& spec) {
    if (!kvRowFits(spec.kRow, spec.type) || !kvRowFits(spec.vRow, spec.type))
        return unsupported(std::string("the Vulkan K/V cache holds ") + kvTypeName(spec.type) + " rows of " +
                           (spec.type == KvType::Q8_0 ? "a multiple of 32" : "an even number of") + " values");
    if (spec.numBlocks < 1 || spec.blockSize < 1) return invalidArgument("Vulkan K/V pool: blocks needed");
    if (const int most = maxKvBlocks(spec); spec.numBlocks > most)
        return unsupported("a K/V cache of " + std::to_string(spec.numBlocks) + " blocks per layer exceeds the device's " +
                           std::to_string(m_info.maxBindRange) + "-byte binding limit (at most " +
                           std::to_string(most) + " blocks)");
    auto pool = std::make_unique<VulkanKvPool>(spec, *m_ops);
    HEARTH_RETURN_IF_ERROR(pool->init());
    return std::unique_ptr<backend::KvPool>(std::move(pool));
}

Result<const Buffer*> VulkanGraphDevice::viewOf(Compiling& c, TensorId id, uint64_t from, uint64_t bytes) const {
    const graph::Graph& g = *c.spec->graph;
    uint64_t offset = 0;
    const TensorId r = rootOf(g, id, offset);
    if (size_t(r) >= c.spec->bindings.size() || !c.spec->bindings[size_t(r)].buffer)
        return internalError("tensor '" + g.tensor(id).name + "' has no storage on " + m_info.id);
    const backend::Binding& b = c.spec->bindings[size_t(r)];
    auto* parent = dynamic_cast<VulkanBuffer*>(b.buffer);
    if (!parent) return internalError("tensor '" + g.tensor(id).name + "' is bound to a buffer of another device");
    const uint64_t start = b.offset + offset + from;
    if (start > parent->size() || bytes > parent->size() - start)
        return internalError("tensor '" + g.tensor(id).name + "' runs past its buffer");
    if (start % m_offsetAlign != 0)
        return unsupported("tensor '" + g.tensor(id).name + "' starts at an unaligned offset");
    c.views.push_back(std::make_unique<VulkanBufferView>(*parent, start, bytes));
    return c.views.back().get();
}

Result<const Buffer*> VulkanGraphDevice::bufferOf(Compiling& c, TensorId id) const {
    if (auto it = c.buffers.find(id); it != c.buffers.end()) return it->second;
    const graph::Graph& g = *c.spec->graph;
    uint64_t offset = 0;
    const Tensor& root = g.tensor(rootOf(g, id, offset));
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

Status VulkanGraphDevice::recordMatMul(Compiling& c, const Node& n) {
    const graph::Graph& g = *c.spec->graph;
    const Tensor &W = g.tensor(n.src[0]), &X = g.tensor(n.src[1]), &Y = g.tensor(n.out);
    HEARTH_ASSIGN_OR_RETURN(const Buffer* wb, bufferOf(c, n.src[0]));
    const ops::DeviceMatrix w{wb, W.type, W.ne[0], W.ne[1], W.nb[1]};
    const int64_t rows = X.rows();
    const int64_t chunk = matMulChunk(rows, X.nb[1], Y.nb[1]);
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

Status VulkanGraphDevice::recordNode(Compiling& c, const Node& n) {
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
        const TensorId root = rootOf(g, n.src[0], offset);
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
        if (!kvTypeOf(C.type, type)) return unsupported("Vulkan K/V cache type");
        HEARTH_ASSIGN_OR_RETURN(const Buffer* rows, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* slots, buf(n.src[2]));
        const int index = c.kv->spec().indexOf(C.layer);
        const backend::KvLayerShape shape = c.kv->spec().shapeAt(size_t(std::max(0, index)));
        if (index < 0 || C.ne[0] != (C.value ? shape.vRow : shape.kRow) ||
            C.ne[1] > int64_t(c.kv->spec().numBlocks) * c.kv->spec().blockSize)
            return internalError("kv_write: the graph's cache does not match the Vulkan K/V pool");
        return m_ops->kvWrite(*rows, *slots, g.tensor(n.src[2]).elements(), C.ne[0], type, dst);
    }
    case Op::Attention: {
        const Tensor& Q = g.tensor(n.src[0]);
        KvType type;
        if (!kvTypeOf(g.tensor(n.src[1]).type, type)) return unsupported("Vulkan K/V cache type");
        HEARTH_ASSIGN_OR_RETURN(const Buffer* q, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* k, buf(n.src[1])); // fails without a pool here
        HEARTH_ASSIGN_OR_RETURN(const Buffer* v, buf(n.src[2]));
        if (n.attn.blockSize != c.kv->spec().blockSize)
            return internalError("attention: block size differs from the Vulkan K/V pool's");
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
        return layerNorm(*m_ops, *x, w, b, out.rows(), out.ne[0], n.eps, dst);
    }
    case Op::Concat: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* a, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* b, buf(n.src[1]));
        return concat(*m_ops, *a, *b, concatShape(g, n), dst);
    }
    case Op::RmsNormGated: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* w, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* z, buf(n.src[2]));
        return rmsNormGated(*m_ops, *x, *w, *z, out.rows(), out.ne[0], n.eps, dst);
    }
    case Op::SsmConv: {
        const Tensor &X = g.tensor(n.src[0]), &S = g.tensor(n.src[2]);
        HEARTH_ASSIGN_OR_RETURN(const Buffer* x, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* w, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* state, buf(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* info, buf(n.src[3]));
        const ConvShape shape{X.ne[1], X.ne[0], g.tensor(n.src[1]).ne[0], S.ne[1]};
        return ssmConv(*m_ops, *x, *w, const_cast<Buffer&>(*state), *info, shape, dst);
    }
    case Op::DeltaNet: {
        HEARTH_ASSIGN_OR_RETURN(const Buffer* qkv, buf(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* gate, buf(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* beta, buf(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* state, buf(n.src[3]));
        HEARTH_ASSIGN_OR_RETURN(const Buffer* info, buf(n.src[4]));
        const DeltaShape shape{out.ne[2], out.ne[0], n.k, out.ne[1], g.tensor(n.src[3]).ne[1], n.eps};
        return deltaNet(*m_ops, *qkv, *gate, *beta, const_cast<Buffer&>(*state), *info, shape, dst);
    }
    default: return unsupported(std::string("Vulkan does not run ") + graph::opName(n.op));
    }
}

Result<std::unique_ptr<backend::Program>> VulkanGraphDevice::compile(const backend::ProgramSpec& spec) {
    if (!spec.graph) return invalidArgument("program without a graph");
    Compiling c;
    c.spec = &spec;
    if (spec.kv) {
        c.kv = dynamic_cast<const VulkanKvPool*>(spec.kv);
        if (!c.kv) return invalidArgument("the K/V pool of a Vulkan program belongs to another device");
    }
    const auto& nodes = spec.graph->nodes();
    for (int index : spec.nodes)
        if (index < 0 || size_t(index) >= nodes.size()) return invalidArgument("program node index out of range");
    // The views are made while recording; the program keeps them alongside the list.
    auto list = m_ops->record([&]() -> Status {
        for (int index : spec.nodes) {
            const Node& n = nodes[size_t(index)];
            const Status s = recordNode(c, n);
            if (!s.isOk())
                return s.withContext("node " + std::to_string(index) + " (" + graph::opName(n.op) + ") on " + m_info.id);
        }
        return Status::ok();
    });
    if (!list) return list.status();
    auto program = std::make_unique<VulkanProgram>(*m_ops, std::move(c.views));
    program->setList(std::move(list).value());
    return std::unique_ptr<backend::Program>(std::move(program));
}

} // namespace

Result<std::unique_ptr<backend::Device>> createVulkanGraphDevice(const VulkanOptions& options) {
    HEARTH_ASSIGN_OR_RETURN(auto ops, createVulkanDevice(options));
    int index = options.deviceIndex;
    if (index < 0) {
        const char* env = std::getenv("HEARTH_VK_DEVICE");
        index = env && *env ? std::atoi(env) : 0;
    }
    return std::unique_ptr<backend::Device>(new VulkanGraphDevice(std::move(ops), index));
}

Result<std::unique_ptr<backend::Device>> openVulkanDevice(int index) {
    VulkanOptions options;
    options.deviceIndex = index;
    return createVulkanGraphDevice(options);
}

} // namespace hearth::vk
