// The hooks through which each GPU backend adds its devices (or a note saying why it has none)
// to the public device list.
#pragma once

#include "hearth/devices.h"

namespace hearth::runtime {

void discoverVulkanDevices(DeviceList& list);
void discoverCudaDevices(DeviceList& list);

} // namespace hearth::runtime
