// The Vulkan entry points the backend uses, loaded at run time from the system loader
// (libvulkan.so.1) so a machine without Vulkan still runs the engine: a missing loader or driver
// becomes a Status, never a failed program start. Also VkResult names for error messages.
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "hearth/status.h"

namespace hearth::vk {

// Instance-level entry points (device functions are reached through the instance too).
#define HEARTH_VK_INSTANCE_FUNCTIONS(X)                                                            \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2)                              \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceQueueFamilyProperties)             \
    X(vkGetPhysicalDeviceMemoryProperties2) X(vkEnumerateDeviceExtensionProperties)                \
    X(vkCreateDevice) X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)  \
    X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)     \
    X(vkMapMemory) X(vkUnmapMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)               \
    X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout)       \
    X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline)                    \
    X(vkCreatePipelineCache) X(vkDestroyPipelineCache) X(vkCreateDescriptorPool)                   \
    X(vkDestroyDescriptorPool) X(vkResetDescriptorPool) X(vkAllocateDescriptorSets)                \
    X(vkUpdateDescriptorSets) X(vkCreateCommandPool) X(vkDestroyCommandPool)                       \
    X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers) X(vkResetCommandBuffer) X(vkBeginCommandBuffer)                    \
    X(vkEndCommandBuffer) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants)    \
    X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkQueueSubmit) X(vkCreateFence)  \
    X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences) X(vkDeviceWaitIdle) X(vkCreateQueryPool)     \
    X(vkDestroyQueryPool) X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp) X(vkGetQueryPoolResults)

struct Api {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    PFN_vkCreateInstance vkCreateInstance = nullptr;
    PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;
#define HEARTH_VK_DECLARE(name) PFN_##name name = nullptr;
    HEARTH_VK_INSTANCE_FUNCTIONS(HEARTH_VK_DECLARE)
#undef HEARTH_VK_DECLARE
};

// Opens the loader once per process and fills the global entry points.
Result<const Api*> loadLoader();
// Fills the instance-level entry points of `api` for `instance`.
Status loadInstanceFunctions(Api& api, VkInstance instance);

const char* resultName(VkResult r);
// A Status naming the call and the VkResult ("vkCreateDevice: VK_ERROR_OUT_OF_DEVICE_MEMORY").
Status vkError(const char* what, VkResult r);

} // namespace hearth::vk

#define HEARTH_VK_CHECK(what, call)                                                                \
    do {                                                                                           \
        const VkResult hearthVkResult_ = (call);                                                   \
        if (hearthVkResult_ != VK_SUCCESS) return ::hearth::vk::vkError(what, hearthVkResult_);    \
    } while (0)
