// The encoders' ops on Vulkan (BERT, nomic-bert): LayerNorm, Concat and attention within the
// sequence (shaders layer_norm.comp, concat.comp, attention.comp WITHIN) and which shapes they
// take; VulkanOpDevice::layerNorm and concat (vk_encoder_ops.cpp) record the first two through
// dispatchShader, the third is VulkanOpDevice::attention with AttentionParams::causal false.
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

} // namespace hearth::vk
