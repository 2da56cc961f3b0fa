// The hybrid models' ops on Vulkan: the gated RMSNorm, the causal convolution over a rolling window
// and the gated delta rule (shaders rms_norm.comp GATED, ssm_conv.comp, delta_net.comp), which
// shapes they take, and their recording through VulkanOpDevice::dispatchShader.
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

// out[rows][dim] = x / sqrt(mean(x²) + eps) · w · silu(z) per row.
Status rmsNormGated(VulkanOpDevice& d, const backend::Buffer& x, const backend::Buffer& w, const backend::Buffer& z,
                    int64_t rows, int64_t dim, float eps, backend::Buffer& out);

struct ConvShape {
    int64_t n = 0, C = 0, K = 0, slots = 0; // tokens, channels, kernel width, state slots
};
// out [n][C]: graph Op::SsmConv over x [n][C], w [C][K], the pool [slots][(K-1)·C] and info [n][3].
Status ssmConv(VulkanOpDevice& d, const backend::Buffer& x, const backend::Buffer& w, backend::Buffer& state,
               const backend::Buffer& info, const ConvShape& s, backend::Buffer& out);

struct DeltaShape {
    int64_t n = 0, S = 0, Hk = 0, Hv = 0, slots = 0; // tokens, head size, q/k heads, v heads, slots
    float eps = 1e-6f;
};
// out [n][Hv][S]: graph Op::DeltaNet over qkv [n][(2Hk + Hv)·S], g and beta [n][Hv], the pool
// [slots][Hv·S·S] and info [n][3].
Status deltaNet(VulkanOpDevice& d, const backend::Buffer& qkv, const backend::Buffer& g, const backend::Buffer& beta,
                backend::Buffer& state, const backend::Buffer& info, const DeltaShape& s, backend::Buffer& out);

} // namespace hearth::vk
