// Recording of the encoders' ops on Vulkan (vk_encoder_ops.h): push constants and grids of
// LayerNorm (one workgroup per row) and Concat (one invocation per output value, 256 per
// workgroup), and the limits of attention within the sequence.
#include "backend/vulkan/vk_encoder_ops.h"

#include "backend/op_graph_device.h"

#include <algorithm>
#include <string>

namespace hearth::vk {

using backend::Buffer;

namespace {

using graph::Node;
using graph::Op;
using graph::Tensor;

constexpr uint64_t kMaxEncoderIndex = 1ull << 31; // values a shader indexes (uint, room for a grid's tail)
constexpr int64_t kConcatLocal = 256;              // concat.comp's workgroup

// A grid of `groups` workgroups as gx × gy within the per-dimension limit.
struct EncoderGrid {
    uint32_t x = 1, y = 1;
};
EncoderGrid encoderGrid(int64_t groups) {
    const int64_t gx = std::clamp<int64_t>(groups, 1, kMaxWorkGroups);
    return {uint32_t(gx), uint32_t((std::max<int64_t>(groups, 1) + gx - 1) / gx)};
}

bool encoderGridFits(int64_t groups) { return groups <= kMaxWorkGroups * kMaxWorkGroups; }

} // namespace

bool encoderNodeFits(const graph::Graph& g, const Node& n) {
    const Tensor& out = g.tensor(n.out);
    switch (n.op) {
    case Op::LayerNorm: {
        const Tensor& X = g.tensor(n.src[0]);
        for (int i : {1, 2})
            if (n.src[size_t(i)] != graph::kNone && g.tensor(n.src[size_t(i)]).elements() != X.ne[0]) return false;
        return n.eps > 0.0f && out.ne == X.ne && uint64_t(X.elements()) < kMaxEncoderIndex && encoderGridFits(X.rows());
    }
    case Op::Concat: {
        if (n.dim < 0 || n.dim >= graph::kMaxDims) return false;
        const Tensor &A = g.tensor(n.src[0]), &B = g.tensor(n.src[1]);
        const backend::ops::ConcatShape s = backend::concatShape(g, n);
        return A.contiguous() && B.contiguous() && s.outer * (s.aBlock + s.bBlock) == out.elements() &&
               uint64_t(out.elements()) < kMaxEncoderIndex &&
               encoderGridFits((out.elements() + kConcatLocal - 1) / kConcatLocal);
    }
    case Op::Attention: {
        // Without the causal mask; the graph device checks the rest as for the causal kernel.
        const Tensor &Q = g.tensor(n.src[0]), &K = g.tensor(n.src[1]), &V = g.tensor(n.src[2]);
        const bool kv = (K.type == quant::Type::F32 || K.type == quant::Type::F16 || K.type == quant::Type::Q8_0) &&
                        V.type == K.type;
        return !n.attn.causal && kv && n.attn.nHeadKv > 0 && Q.ne[1] % n.attn.nHeadKv == 0 &&
               Q.ne[0] >= 1 && Q.ne[0] <= kMaxHeadDim && out.ne[0] == Q.ne[0] && Q.ne[1] <= kMaxWorkGroups &&
               Q.ne[2] <= kMaxWorkGroups && uint64_t(K.elements()) < kMaxEncoderIndex &&
               uint64_t(V.elements()) < kMaxEncoderIndex && uint64_t(Q.elements()) < kMaxEncoderIndex;
    }
    default: return false;
    }
}

Status VulkanOpDevice::layerNorm(const Buffer& x, const Buffer* w, const Buffer* b, int64_t rows, int64_t dim,
                                 float eps, Buffer& out) {
    if (rows <= 0 || dim <= 0) return Status::ok();
    if (!(eps > 0.0f)) return invalidArgument("layer_norm: eps must be positive");
    if (uint64_t(rows) * uint64_t(dim) >= kMaxEncoderIndex || !encoderGridFits(rows))
        return unsupported("Vulkan layer_norm: too many values");
    struct { uint32_t dim, rows; float eps; uint32_t hasWeight, hasBias; } p{
        uint32_t(dim), uint32_t(rows), eps, w ? 1u : 0u, b ? 1u : 0u};
    const EncoderGrid grid = encoderGrid(rows);
    return dispatchShader("layer_norm", {&x, w, b, &out}, &p, sizeof p, grid.x, grid.y);
}

Status VulkanOpDevice::concat(const Buffer& a, const Buffer& b, const backend::ops::ConcatShape& s, Buffer& out) {
    if (s.outer < 0 || s.aBlock < 0 || s.bBlock < 0) return invalidArgument("concat: negative extents");
    const int64_t count = s.outer * (s.aBlock + s.bBlock);
    if (count == 0) return Status::ok();
    if (uint64_t(count) >= kMaxEncoderIndex) return unsupported("Vulkan concat: too many values");
    const int64_t groups = (count + kConcatLocal - 1) / kConcatLocal;
    if (!encoderGridFits(groups)) return unsupported("Vulkan concat: too many values");
    struct { uint32_t aBlock, bBlock, count; } p{uint32_t(s.aBlock), uint32_t(s.bBlock), uint32_t(count)};
    const EncoderGrid grid = encoderGrid(groups);
    return dispatchShader("concat", {&a, &b, &out}, &p, sizeof p, grid.x, grid.y);
}

} // namespace hearth::vk
