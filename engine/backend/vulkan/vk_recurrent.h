// The hybrid models' ops on Vulkan: the gated RMSNorm, the causal convolution over a rolling window
// and the gated delta rule (shaders rms_norm.comp GATED, ssm_conv.comp, delta_net.comp), which
// shapes they take; VulkanOpDevice::rmsNormGated, ssmConv and deltaNet (vk_recurrent.cpp) record
// them through dispatchShader.
#pragma once

#include "backend/vulkan/vk_device.h"
#include "graph/graph.h"

#include <cstdint>

namespace hearth::vk {

inline constexpr int64_t kMaxConvKernel = 8; // ssm_conv.comp keeps the window in registers

// Whether delta_net.comp is built for heads of S values (16, 32, 64, 128, 256).
bool deltaNetHeadSize(int64_t S);

// The node-specific limits of RmsNormGated, SsmConv and DeltaNet (kernel width, head size, grid
// sizes, the State pool within one binding of `maxBindRange` bytes); the graph device checks
// that the other operands are plain F32 / I32 tensors.
bool recurrentNodeFits(const graph::Graph& g, const graph::Node& n, uint64_t maxBindRange);

} // namespace hearth::vk
