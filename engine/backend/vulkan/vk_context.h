// One Vulkan device ready for compute: the instance, the chosen physical device (index from
// options or env HEARTH_VK_DEVICE) and what it offers, a logical device with one compute queue,
// memory-type choice, buffers (mapped when the memory allows, else written through staging) and
// views of their byte ranges, and a one-shot submit for copies.
#pragma once

#include "backend/device.h"
#include "backend/vulkan/vk_api.h"

#include <functional>
#include <memory>
#include <vector>

namespace hearth::vk {

struct VulkanOptions {
    int deviceIndex = -1;     // -1: env HEARTH_VK_DEVICE, else 0
    // Weights are bound in row ranges of at most this many bytes. 0: the device's
    // maxStorageBufferRange; tests force a small one to exercise the range path.
    uint64_t maxWeightRange = 0;
    // Lowers the device's storage-buffer binding limit (0: as the driver says), so tests reach the
    // paths that split work under it with small models.
    uint64_t maxBindRange = 0;
    // Device buffers are written and read through staging copies even when their memory could be
    // mapped (the discrete-GPU path, for tests on drivers whose memory is all host-visible).
    bool forceStaging = false;
    // Kernels that have a subgroup form use it where the device offers subgroup arithmetic;
    // false keeps them on their shared-memory form (tests check both).
    bool subgroups = true;
    // Quantized matrix products in their row-per-invocation form (DeviceInfo::rowKernels): -1 where
    // the device is a CPU implementation, 0 never, 1 always (tests check both forms on lavapipe).
    int rowKernels = -1;
};

// The Vulkan devices on this machine, described without creating a logical device.
Result<std::vector<backend::DeviceInfo>> listVulkanDevices();

class Context {
public:
    static Result<std::unique_ptr<Context>> create(const VulkanOptions& options);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // The memory type for a buffer: host-visible for per-step inputs/outputs, device-local
    // (mapped too when such a type exists) otherwise.
    Result<uint32_t> memoryType(uint32_t allowedBits, bool hostVisible) const;
    // Records with `record`, submits on the queue and waits for it.
    Status submitOnce(const std::function<void(VkCommandBuffer)>& record);
    Status submitAndWait(VkCommandBuffer cb);

    Api api;
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t queueFamily = 0;
    VkCommandPool commandPool = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties memory{};
    VkPhysicalDeviceLimits limits{};
    backend::DeviceInfo info;
    uint64_t maxBindRange = 0;   // maxStorageBufferRange
    uint64_t maxWeightRange = 0; // row-range size for weights (<= maxBindRange)
    uint64_t offsetAlign = 4;   // minStorageBufferOffsetAlignment (at least 4)
    bool forceStaging = false;

private:
    Context() = default;
};

// A buffer with its own memory allocation.
class VulkanBuffer final : public backend::Buffer {
public:
    static Result<std::unique_ptr<VulkanBuffer>> create(Context& ctx, uint64_t bytes, bool hostVisible);
    ~VulkanBuffer() override;
    uint64_t size() const override { return m_size; }
    Status write(uint64_t offset, const void* src, uint64_t bytes) override;
    Status read(uint64_t offset, void* dst, uint64_t bytes) const override;

    VkBuffer handle() const { return m_buffer; }
    const Context* context() const { return m_ctx; }
    uint64_t allocatedSize() const { return m_allocated; }

private:
    explicit VulkanBuffer(Context& ctx) : m_ctx(&ctx) {}
    Context* m_ctx;
    VkBuffer m_buffer = VK_NULL_HANDLE;
    VkDeviceMemory m_memory = VK_NULL_HANDLE;
    void* m_mapped = nullptr;
    uint64_t m_size = 0, m_allocated = 0;
};

// Bytes [offset, offset + size) of a VulkanBuffer seen as a buffer of its own (one tensor inside
// a step's scratch buffer, or a chunk of its rows); ops bind just that range. The parent must
// outlive the view; offset must be a multiple of the device's offset alignment to be bound.
class VulkanBufferView final : public backend::Buffer {
public:
    VulkanBufferView(VulkanBuffer& parent, uint64_t offset, uint64_t size)
        : m_parent(&parent), m_offset(offset), m_size(size) {}
    uint64_t size() const override { return m_size; }
    Status write(uint64_t offset, const void* src, uint64_t bytes) override;
    Status read(uint64_t offset, void* dst, uint64_t bytes) const override;

    VulkanBuffer& parent() const { return *m_parent; }
    uint64_t offset() const { return m_offset; }

private:
    VulkanBuffer* m_parent;
    uint64_t m_offset, m_size;
};

// The storage behind a Vulkan buffer or view: the buffer, where the range starts in it, the
// range's size, and the bytes from there to the end of the allocation (what a binding may cover).
struct BufferRange {
    const VulkanBuffer* buffer = nullptr;
    uint64_t offset = 0;
    uint64_t size = 0;
    uint64_t available = 0;
};
// The range of `b`; InvalidArgument when it is not a buffer of ctx.
Result<BufferRange> bufferRange(const backend::Buffer& b, const Context* ctx);

} // namespace hearth::vk
