// Vulkan as a backend::Device (backend/device.h): runs the step-graph nodes its shaders cover
// through the op device (vk_device.h), keeps every weight its nodes read uploaded once and the K/V
// pools of the layers placed on it, and records each compiled program once.
#pragma once

#include "backend/device.h"
#include "backend/vulkan/vk_context.h"

#include <memory>

namespace hearth::vk {

// The graph device on the Vulkan device that `options` choose (tests lower its limits).
Result<std::unique_ptr<backend::Device>> createVulkanGraphDevice(const VulkanOptions& options);

// "vulkan:N" for the backend registry (registry.cpp).
Result<std::unique_ptr<backend::Device>> openVulkanDevice(int index);

} // namespace hearth::vk
