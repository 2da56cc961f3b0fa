// The compute devices the engine can use on this machine: the CPU always, and each Vulkan and
// CUDA device that the backends built into this binary find at run time, with their memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hearth {

enum class DeviceKind { Cpu, Vulkan, Cuda };
const char* deviceKindName(DeviceKind kind); // "cpu", "vulkan", "cuda"

struct DeviceDescription {
    DeviceKind kind = DeviceKind::Cpu;
    int index = 0;                 // within its kind
    std::string id;                // "cpu", "vulkan:0", "cuda:1"
    std::string name;              // "AMD EPYC 9R14", "NVIDIA GeForce RTX 4090", "llvmpipe (LLVM 15)"
    std::string type;              // "cpu", "discrete", "integrated", "virtual", "software"
    uint64_t totalMemory = 0;      // bytes it can use: RAM for the CPU, device memory for a GPU
    uint64_t freeMemory = 0;       // free now when known, else 0
    bool sharesHostMemory = false; // integrated and software devices use system RAM
};

struct DeviceList {
    std::vector<DeviceDescription> devices; // the CPU first
    // Why a backend lists nothing or is absent, e.g. "CUDA: no NVIDIA driver (cudaErrorInsufficientDriver)".
    std::vector<std::string> notes;
};

// Looks for devices now (this can take a moment: GPU drivers are initialised). Never fails: a
// backend that cannot start adds a note instead.
DeviceList listDevices();

// The device with this id ("cpu", "vulkan:0", ...), or nullptr.
const DeviceDescription* findDevice(const DeviceList& list, const std::string& id);

// What a load may plan to use on the device: its free memory (else its total) less a tenth for
// the driver and other programs.
uint64_t usableMemory(const DeviceDescription& device);

// Memory the OS says can be allocated now without swapping (Linux: MemAvailable), 0 when unknown.
// Cheap: no device is probed.
uint64_t availableSystemMemory();

// Has the C library give a freed block of 128 KiB or more back to the system at once (glibc: a
// fixed mmap threshold, where by default it rises with each large block freed and later blocks of
// that size stay in the heap of the thread that freed them). A process that loads and unloads
// models then stays near what its loaded models use. Process-wide; nothing elsewhere; idempotent.
void releaseLargeFreesPromptly();

} // namespace hearth
