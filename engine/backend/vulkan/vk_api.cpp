// Loading the Vulkan loader with dlopen and resolving entry points, and VkResult names.
#include "backend/vulkan/vk_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace hearth::vk {

Result<const Api*> loadLoader() {
    static Api api;
    static Status status = Status::ok();
    static std::once_flag once;
    std::call_once(once, [] {
        void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* why = dlerror();
            status = unsupported(std::string("Vulkan loader not found (libvulkan.so.1): ") + (why ? why : "?"));
            return;
        }
        api.vkGetInstanceProcAddr =
            reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
        if (!api.vkGetInstanceProcAddr) {
            status = unsupported("the Vulkan loader has no vkGetInstanceProcAddr");
            return;
        }
        api.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(
            api.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
        api.vkEnumerateInstanceVersion = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
            api.vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceVersion"));
        if (!api.vkCreateInstance) status = unsupported("the Vulkan loader has no vkCreateInstance");
    });
    if (!status.isOk()) return status;
    return &api;
}

Status loadInstanceFunctions(Api& api, VkInstance instance) {
#define HEARTH_VK_LOAD(name)                                                                       \
    api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name));           \
    if (!api.name) return unsupported("Vulkan entry point missing: " #name);
    HEARTH_VK_INSTANCE_FUNCTIONS(HEARTH_VK_LOAD)
#undef HEARTH_VK_LOAD
    return Status::ok();
}

const char* resultName(VkResult r) {
    switch (r) {
#define HEARTH_VK_CASE(x) case x: return #x;
        HEARTH_VK_CASE(VK_SUCCESS)
        HEARTH_VK_CASE(VK_NOT_READY)
        HEARTH_VK_CASE(VK_TIMEOUT)
        HEARTH_VK_CASE(VK_INCOMPLETE)
        HEARTH_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        HEARTH_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        HEARTH_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
        HEARTH_VK_CASE(VK_ERROR_DEVICE_LOST)
        HEARTH_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        HEARTH_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        HEARTH_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        HEARTH_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        HEARTH_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        HEARTH_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        HEARTH_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        HEARTH_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
        HEARTH_VK_CASE(VK_ERROR_UNKNOWN)
        HEARTH_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        HEARTH_VK_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        HEARTH_VK_CASE(VK_ERROR_FRAGMENTATION)
#undef HEARTH_VK_CASE
    default: return "VK_ERROR_(unnamed)";
    }
}

Status vkError(const char* what, VkResult r) {
    const std::string m = std::string(what) + ": " + resultName(r);
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY ||
        r == VK_ERROR_OUT_OF_POOL_MEMORY)
        return outOfMemory(m);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_EXTENSION_NOT_PRESENT ||
        r == VK_ERROR_FEATURE_NOT_PRESENT || r == VK_ERROR_LAYER_NOT_PRESENT)
        return unsupported(m);
    return internalError(m);
}

} // namespace hearth::vk
