// The backend registry: device ids to the backends built into this binary.
#include "backend/cpu/cpu_device.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/paged_kv.h"
#include "backend/device.h"

#include <string>

namespace hearth {
#if HEARTH_HAS_VULKAN
namespace vk {
Result<std::unique_ptr<backend::Device>> openVulkanDevice(int index); // vulkan/vk_graph_device.cpp (the op graph device over Vulkan)
}
#endif
#if HEARTH_HAS_CUDA
namespace cuda {
Result<std::unique_ptr<backend::Device>> openCudaDevice(int index); // cuda/cuda_op_device.cpp
}
#endif
} // namespace hearth

namespace hearth::backend {

uint64_t kvRowBytes(int64_t values, KvType type) { return cpu::PagedKvStore::rowBytes(values, type); }

Result<std::unique_ptr<Device>> openDevice(const std::string& id, cpu::ThreadPool* pool) {
    if (id == "cpu") HEARTH_RETURN_IF_ERROR(cpu::isaEnvStatus().withContext("device cpu"));
    if (id == "cpu" || id == "ref") return std::unique_ptr<Device>(new cpu::CpuDevice(id == "ref", pool));
    const size_t colon = id.find(':');
    const std::string kind = id.substr(0, colon);
    int index = 0;
    if (colon != std::string::npos) {
        const std::string digits = id.substr(colon + 1);
        if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
            return invalidArgument("device id '" + id + "': expected KIND:INDEX such as vulkan:0");
        index = std::stoi(digits);
    }
    if (kind == "vulkan") {
#if HEARTH_HAS_VULKAN
        auto dev = vk::openVulkanDevice(index);
        if (!dev) return dev.status().withContext("device " + id);
        return dev;
#else
        (void)index;
        return unsupported("device " + id + ": the Vulkan backend is not built into this binary");
#endif
    }
    if (kind == "cuda") {
#if HEARTH_HAS_CUDA
        auto dev = cuda::openCudaDevice(index);
        if (!dev) return dev.status().withContext("device " + id);
        return dev;
#else
        return unsupported("device " + id + ": the CUDA backend is not built into this binary");
#endif
    }
    return invalidArgument("unknown device '" + id + "' (expected cpu, ref, vulkan:N or cuda:N)");
}

} // namespace hearth::backend
