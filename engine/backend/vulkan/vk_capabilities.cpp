// What the Vulkan op device takes beyond its ops and weight types (backend::OpCapabilities): the
// shaders' grid, sort, head, kernel and K/V row limits per node, the binding limits, and views of
// its buffers.
#include "backend/op_graph_device.h"
#include "backend/vulkan/vk_device.h"
#include "backend/vulkan/vk_encoder_ops.h"
#include "backend/vulkan/vk_kv_ops.h"
#include "backend/vulkan/vk_recurrent.h"

namespace hearth::vk {

using graph::Node;
using graph::Op;
using graph::Tensor;

bool VulkanOpDevice::nodeFits(const graph::Graph& g, const Node& n) const {
    const uint64_t limit = context().info.maxBindRange;
    switch (n.op) {
    case Op::MatMulId: {
        const Tensor &W = g.tensor(n.src[0]), &I = g.tensor(n.src[2]);
        return W.ne[1] <= kMaxWorkGroups && I.ne[0] <= kMaxWorkGroups && I.ne[1] <= kMaxWorkGroups;
    }
    case Op::TopK:
    case Op::ArgSort: return g.tensor(n.src[0]).ne[0] <= kMaxTopKWidth;
    case Op::KvWrite: {
        const Tensor& C = g.tensor(n.src[0]);
        KvType type;
        return backend::kvTypeOf(C.type, type) && kvRowFits(C.ne[0], type);
    }
    case Op::Attention: {
        const Tensor &Q = g.tensor(n.src[0]), &K = g.tensor(n.src[1]), &V = g.tensor(n.src[2]);
        KvType type;
        // Within the sequence (encoders): vk_encoder_ops.h's limits besides these.
        return (n.attn.causal || encoderNodeFits(g, n)) && backend::kvTypeOf(K.type, type) &&
               kvRowFits(K.ne[0], type) && kvRowFits(V.ne[0], type) && Q.ne[0] <= kMaxHeadDim &&
               Q.ne[1] <= kMaxWorkGroups && Q.ne[2] <= kMaxWorkGroups;
    }
    // The hybrid models' ops (vk_recurrent.h) and the encoders' (vk_encoder_ops.h).
    case Op::RmsNormGated:
    case Op::SsmConv:
    case Op::DeltaNet: return recurrentNodeFits(g, n, limit);
    case Op::LayerNorm:
    case Op::Concat: return encoderNodeFits(g, n);
    default: return true;
    }
}

bool VulkanOpDevice::kvShapeFits(const backend::KvLayerShape& shape, KvType type) const {
    return kvRowFits(shape.kRow, type) && kvRowFits(shape.vRow, type);
}

backend::ops::OpLimits VulkanOpDevice::limits() const {
    backend::ops::OpLimits l;
    l.maxBindRange = context().info.maxBindRange;
    l.offsetAlign = context().offsetAlign;
    l.maxWeightRange = context().maxWeightRange;
    l.maxMatMulTokens = kMaxWorkGroups * 16; // token tiles of the tiled kernel
    return l;
}

Result<std::unique_ptr<backend::Buffer>> VulkanOpDevice::view(const backend::Buffer& parent, uint64_t offset,
                                                              uint64_t bytes) {
    VulkanBuffer* root = nullptr;
    uint64_t base = 0;
    if (auto* b = dynamic_cast<const VulkanBuffer*>(&parent)) {
        root = const_cast<VulkanBuffer*>(b);
    } else if (auto* v = dynamic_cast<const VulkanBufferView*>(&parent)) {
        root = &v->parent();
        base = v->offset();
    } else {
        return internalError("a view of a buffer of another device");
    }
    if (root->context() != &context()) return internalError("a view of another Vulkan device's buffer");
    if (offset > parent.size() || bytes > parent.size() - offset) return internalError("a view past its buffer's end");
    return std::unique_ptr<backend::Buffer>(new VulkanBufferView(*root, base + offset, bytes));
}

} // namespace hearth::vk
