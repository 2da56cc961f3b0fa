// Device discovery hooks: each GPU backend's enumeration when it is compiled in, otherwise a
// note that says the backend is not part of this build.
#include "runtime/device_discovery.h"

namespace hearth::runtime {

void discoverVulkanDevices(DeviceList& list) {
    list.notes.push_back("Vulkan: not built into this binary");
}

void discoverCudaDevices(DeviceList& list) {
    list.notes.push_back("CUDA: not built into this binary");
}

} // namespace hearth::runtime
