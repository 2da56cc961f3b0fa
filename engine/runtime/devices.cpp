// Device discovery for the public API: the CPU from /proc, and the GPU backends' own discovery
// when they are built in.
#include "hearth/devices.h"

#include "backend/cpu/matmul.h"
#include "runtime/device_discovery.h"
#include "runtime/memory_budget.h"

#include <cstdio>
#include <cstring>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hearth {

namespace {

std::string cpuModelName() {
    std::FILE* f = std::fopen("/proc/cpuinfo", "r");
    if (!f) return "CPU";
    char line[512];
    std::string name = "CPU";
    while (std::fgets(line, sizeof line, f)) {
        if (std::strncmp(line, "model name", 10) != 0) continue;
        const char* colon = std::strchr(line, ':');
        if (!colon) continue;
        std::string v = colon + 1;
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(v.begin());
        while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
        if (!v.empty()) name = v;
        break;
    }
    std::fclose(f);
    return name;
}

uint64_t totalRamBytes() {
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "MemTotal:", 9) == 0 && std::sscanf(line + 9, "%llu", &kb) == 1) break;
    std::fclose(f);
    return uint64_t(kb) * 1024;
}

} // namespace

const char* deviceKindName(DeviceKind kind) {
    switch (kind) {
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Vulkan: return "vulkan";
    case DeviceKind::Cuda: return "cuda";
    }
    return "cpu";
}

DeviceList listDevices() {
    DeviceList list;
    DeviceDescription cpu;
    cpu.kind = DeviceKind::Cpu;
    cpu.id = "cpu";
    const unsigned cores = std::thread::hardware_concurrency();
    // The kernels' instruction-set level (HEARTH_CPU_ISA may lower it) after the thread count.
    cpu.name = cpuModelName() + " (" + (cores ? std::to_string(cores) + " threads, " : std::string()) +
               cpu::activeIsa() + ")";
    if (cpu::detectIsa() == cpu::Isa::Scalar)
        list.notes.push_back("this CPU has no AVX2: the CPU device runs the portable scalar kernels, "
                             "several times slower than on a CPU with AVX2");
    if (const Status isa = cpu::isaEnvStatus(); !isa.isOk()) list.notes.push_back(isa.message());
    cpu.type = "cpu";
    cpu.totalMemory = totalRamBytes();
    cpu.freeMemory = runtime::availableMemoryBytes();
    cpu.sharesHostMemory = true;
    list.devices.push_back(cpu);
    runtime::discoverVulkanDevices(list);
    runtime::discoverCudaDevices(list);
    return list;
}

const DeviceDescription* findDevice(const DeviceList& list, const std::string& id) {
    for (const DeviceDescription& d : list.devices)
        if (d.id == id) return &d;
    return nullptr;
}

uint64_t usableMemory(const DeviceDescription& device) {
    const uint64_t bytes = device.freeMemory ? device.freeMemory : device.totalMemory;
    return bytes - bytes / 10;
}

uint64_t availableSystemMemory() { return runtime::availableMemoryBytes(); }

void releaseLargeFreesPromptly() {
#if defined(__GLIBC__)
    // Setting the threshold also stops glibc from raising it (and the trim threshold with it).
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#endif
}

} // namespace hearth
