// The Vulkan implementation of backend::Device: our GLSL compute shaders (embedded SPIR-V) run
// each op; ops of a step are recorded into one command buffer and submitted by run().
#pragma once

#include "backend/device.h"
#include "backend/vulkan/vk_context.h"

#include <memory>

namespace hearth::vk {

// Opens the device chosen by `options`; a missing loader, no device or an old driver gives a
// Status (Unsupported) that callers log before staying on the CPU.
Result<std::unique_ptr<backend::Device>> createVulkanDevice(const VulkanOptions& options = {});

} // namespace hearth::vk
