// The Vulkan implementation of backend::OpDevice: our GLSL compute shaders (embedded SPIR-V) run
// each op; ops of a step are recorded into one command buffer and submitted by run(), or recorded
// once into a list (backend::OpList) that a compiled program submits every step.
#pragma once

#include "backend/op_device.h"
#include "backend/vulkan/vk_context.h"

#include <initializer_list>
#include <memory>
#include <string>

namespace hearth::vk {

// The widest row topK sorts (top_k.comp stages a row in shared memory).
inline constexpr int64_t kMaxTopKWidth = 2048;
// Workgroups per grid dimension every device allows (the guaranteed maxComputeWorkGroupCount).
inline constexpr int64_t kMaxWorkGroups = 65535;
// The widest attention head (attention.comp keeps 4 dims per invocation of 64).
inline constexpr int64_t kMaxHeadDim = 256;

// backend::OpDevice on Vulkan. The ops of op_device.h are the shaders of vk_device.cpp; the
// encoders' and hybrid models' ops (vk_encoder_ops.cpp, vk_recurrent.cpp), the capabilities
// (vk_capabilities.cpp) and buffer views are defined beside them.
class VulkanOpDevice : public backend::OpDevice {
public:
    // Records embedded shader `name` over these buffers, bound whole in binding order (null: a
    // dummy binding), with `push` as its push constants (at most 64 bytes) on a gx × gy × gz grid:
    // for the ops recorded in files of their own (vk_recurrent.cpp).
    virtual Status dispatchShader(const std::string& name, std::initializer_list<const backend::Buffer*> buffers,
                                  const void* push, uint32_t pushBytes, uint32_t gx, uint32_t gy = 1,
                                  uint32_t gz = 1) = 0;
    virtual Context& context() = 0;
    virtual const Context& context() const = 0;

    bool nodeFits(const graph::Graph& g, const graph::Node& n) const override;
    bool kvShapeFits(const backend::KvLayerShape& shape, KvType type) const override;
    backend::ops::OpLimits limits() const override;
    Result<std::unique_ptr<backend::Buffer>> view(const backend::Buffer& parent, uint64_t offset,
                                                  uint64_t bytes) override;

    Status layerNorm(const backend::Buffer& x, const backend::Buffer* w, const backend::Buffer* b, int64_t rows,
                     int64_t dim, float eps, backend::Buffer& out) override;
    Status concat(const backend::Buffer& a, const backend::Buffer& b, const backend::ops::ConcatShape& s,
                  backend::Buffer& out) override;
    Status rmsNormGated(const backend::Buffer& x, const backend::Buffer& w, const backend::Buffer& z, int64_t rows,
                        int64_t dim, float eps, backend::Buffer& out) override;
    Status ssmConv(const backend::Buffer& x, const backend::Buffer& w, backend::Buffer& state,
                   const backend::Buffer& info, const backend::ops::ConvShape& s, backend::Buffer& out) override;
    Status deltaNet(const backend::Buffer& qkv, const backend::Buffer& g, const backend::Buffer& beta,
                    backend::Buffer& state, const backend::Buffer& info, const backend::ops::DeltaShape& s,
                    backend::Buffer& out) override;
};

// Opens the device chosen by `options`; a missing loader, no device or an old driver gives a
// Status (Unsupported) that callers log before staying on the CPU.
Result<std::unique_ptr<VulkanOpDevice>> createVulkanDevice(const VulkanOptions& options = {});

} // namespace hearth::vk
