// The encoders' ops on Vulkan (BERT, nomic-bert): LayerNorm, Concat and attention within the
// sequence (shaders layer_norm.comp, concat.comp, attention.comp WITHIN), which shapes they take,
// and the recording of the first two through VulkanOpDevice::dispatchShader (the third is
// VulkanOpDevice::attention with AttentionParams::causal false).
#pragma once

#include "backend/op_device.h"
#include "backend/vulkan/vk_device.h"
#include "graph/graph.h"

#include <cstdint>

namespace hearth::vk {

// The node-specific limits of LayerNorm, Concat and Attention without the causal mask (values the
// shaders index in 32 bits, grid sizes, head size, no sliding window, F32/F16/Q8_0 K/V); the graph
// device checks that the other operands are plain F32 / I32 tensors within one binding.
bool encoderNodeFits(const graph::Graph& g, const graph::Node& n);

// out[rows][dim] = (x - mean) / sqrt(var + eps) (· w) (+ b) per row; w, b [dim] or null.
Status layerNorm(VulkanOpDevice& d, const backend::Buffer& x, const backend::Buffer* w, const backend::Buffer* b,
                 int64_t rows, int64_t dim, float eps, backend::Buffer& out);

// A Concat as blocks: a [outer][aBlock] and b [outer][bBlock] give out [outer][aBlock + bBlock].
struct ConcatShape {
    int64_t outer = 0, aBlock = 0, bBlock = 0;
};
// The blocks of Concat node n (contiguous F32 a and b joined along n.dim).
ConcatShape concatShape(const graph::Graph& g, const graph::Node& n);
Status concat(VulkanOpDevice& d, const backend::Buffer& a, const backend::Buffer& b, const ConcatShape& s,
              backend::Buffer& out);

} // namespace hearth::vk
