// Device discovery hooks: each GPU backend's enumeration when it is compiled in, otherwise a
// note that says the backend is not part of this build.
#include "runtime/device_discovery.h"

#if HEARTH_HAS_VULKAN
#include "backend/vulkan/vk_context.h"
#include "runtime/memory_budget.h"

#include <algorithm>
#include <string>
#endif

#if HEARTH_HAS_CUDA
#include "backend/cuda/cuda_device.h"

#include <string>
#endif

namespace hearth::runtime {

void discoverVulkanDevices(DeviceList& list) {
#if HEARTH_HAS_VULKAN
    auto devices = vk::listVulkanDevices();
    if (!devices) {
        list.notes.push_back("Vulkan: " + devices.status().toString());
        return;
    }
    if (devices->empty()) list.notes.push_back("Vulkan: the loader found no device");
    for (size_t i = 0; i < devices->size(); ++i) {
        const backend::DeviceInfo& info = (*devices)[i];
        DeviceDescription d;
        d.kind = DeviceKind::Vulkan;
        d.index = int(i);
        d.id = "vulkan:" + std::to_string(i);
        d.name = info.name;
        d.type = info.type;
        d.totalMemory = info.deviceMemory;
        d.freeMemory = info.freeMemory;
        d.sharesHostMemory = info.sharesHostMemory;
        // Without VK_EXT_memory_budget a device on system RAM has what the host has free.
        if (d.freeMemory == 0 && d.sharesHostMemory)
            d.freeMemory = std::min(d.totalMemory, availableMemoryBytes());
        list.devices.push_back(std::move(d));
    }
#else
    list.notes.push_back("Vulkan: not built into this binary");
#endif
}

void discoverCudaDevices(DeviceList& list) {
#if HEARTH_HAS_CUDA
    // Without a driver or device this is the runtime's reason, e.g. "cudaGetDeviceCount: CUDA
    // driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)".
    auto devices = cuda::listDevices();
    if (!devices) {
        list.notes.push_back("CUDA: " + devices.status().message());
        return;
    }
    for (const cuda::DeviceInfo& info : *devices) {
        DeviceDescription d;
        d.kind = DeviceKind::Cuda;
        d.index = info.index;
        d.id = "cuda:" + std::to_string(info.index);
        d.name = info.name + " (compute " + std::to_string(info.ccMajor) + "." +
                 std::to_string(info.ccMinor) + ", " + std::to_string(info.smCount) + " SMs)";
        d.type = info.integrated ? "integrated" : "discrete";
        d.sharesHostMemory = info.integrated;
        d.totalMemory = info.totalBytes;
        d.freeMemory = info.freeBytes;
        list.devices.push_back(std::move(d));
    }
#else
    list.notes.push_back("CUDA: not built into this binary");
#endif
}

} // namespace hearth::runtime
