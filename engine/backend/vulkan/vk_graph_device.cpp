// The Vulkan graph device: the op graph device (backend/op_graph_device.h) over the Vulkan op
// device that the options choose.
#include "backend/vulkan/vk_graph_device.h"

#include "backend/op_graph_device.h"
#include "backend/vulkan/vk_device.h"

#include <cstdlib>
#include <string>

namespace hearth::vk {

Result<std::unique_ptr<backend::Device>> createVulkanGraphDevice(const VulkanOptions& options) {
    HEARTH_ASSIGN_OR_RETURN(auto ops, createVulkanDevice(options));
    int index = options.deviceIndex;
    if (index < 0) {
        const char* env = std::getenv("HEARTH_VK_DEVICE");
        index = env && *env ? std::atoi(env) : 0;
    }
    return backend::makeOpGraphDevice(std::move(ops), "vulkan:" + std::to_string(index));
}

Result<std::unique_ptr<backend::Device>> openVulkanDevice(int index) {
    VulkanOptions options;
    options.deviceIndex = index;
    return createVulkanGraphDevice(options);
}

} // namespace hearth::vk
