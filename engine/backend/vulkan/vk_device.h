// The Vulkan implementation of backend::OpDevice: our GLSL compute shaders (embedded SPIR-V) run
// each op; ops of a step are recorded into one command buffer and submitted by run(), or recorded
// once into a CommandList that a compiled program submits every step.
#pragma once

#include "backend/op_device.h"
#include "backend/vulkan/vk_context.h"

#include <functional>
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

// Ops recorded once into a command buffer of their own (with their descriptor sets), submitted
// any number of times; the buffers they name must outlive it.
class CommandList {
public:
    virtual ~CommandList() = default;
};

class VulkanOpDevice : public backend::OpDevice {
public:
    // Records the ops `body` issues into a new command list instead of the current step.
    virtual Result<std::unique_ptr<CommandList>> record(const std::function<Status()>& body) = 0;
    // Submits a recorded list and waits for it.
    virtual Status submit(const CommandList& list) = 0;
    // Records embedded shader `name` over these buffers, bound whole in binding order (null: a
    // dummy binding), with `push` as its push constants (at most 64 bytes) on a gx × gy × gz grid:
    // for the ops recorded in files of their own (vk_recurrent.cpp).
    virtual Status dispatchShader(const std::string& name, std::initializer_list<const backend::Buffer*> buffers,
                                  const void* push, uint32_t pushBytes, uint32_t gx, uint32_t gy = 1,
                                  uint32_t gz = 1) = 0;
    virtual Context& context() = 0;
};

// Opens the device chosen by `options`; a missing loader, no device or an old driver gives a
// Status (Unsupported) that callers log before staying on the CPU.
Result<std::unique_ptr<VulkanOpDevice>> createVulkanDevice(const VulkanOptions& options = {});

} // namespace hearth::vk
