// Vulkan instance and device setup, device description, memory types, buffers and one-shot
// submits. Every Vulkan failure comes back as a Status naming the call and its VkResult.
#include "backend/vulkan/vk_context.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hearth::vk {

namespace {

const char* deviceTypeName(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

// An instance with the entry points loaded; the caller destroys it.
Status createInstance(Api& api, VkInstance& instance) {
    HEARTH_ASSIGN_OR_RETURN(const Api* loader, loadLoader());
    api = *loader;
    uint32_t version = VK_API_VERSION_1_0;
    if (api.vkEnumerateInstanceVersion) api.vkEnumerateInstanceVersion(&version);
    if (version < VK_API_VERSION_1_2)
        return unsupported("Vulkan 1.2 instance needed, the loader offers " +
                           std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
                           std::to_string(VK_API_VERSION_MINOR(version)));
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "hearth";
    app.pEngineName = "hearth";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    const VkResult r = api.vkCreateInstance(&ci, nullptr, &instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return unsupported("no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)");
    if (r != VK_SUCCESS) return vkError("vkCreateInstance", r);
    Status s = loadInstanceFunctions(api, instance);
    if (!s.isOk()) {
        auto destroy = reinterpret_cast<PFN_vkDestroyInstance>(
            api.vkGetInstanceProcAddr(instance, "vkDestroyInstance"));
        if (destroy) destroy(instance, nullptr);
        instance = VK_NULL_HANDLE;
    }
    return s;
}

Result<std::vector<VkPhysicalDevice>> physicalDevices(const Api& api, VkInstance instance) {
    uint32_t count = 0;
    HEARTH_VK_CHECK("vkEnumeratePhysicalDevices", api.vkEnumeratePhysicalDevices(instance, &count, nullptr));
    std::vector<VkPhysicalDevice> devices(count);
    HEARTH_VK_CHECK("vkEnumeratePhysicalDevices",
                    api.vkEnumeratePhysicalDevices(instance, &count, devices.data()));
    devices.resize(count);
    return devices;
}

bool hasExtension(const Api& api, VkPhysicalDevice pd, const char* name) {
    uint32_t count = 0;
    if (api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, nullptr) != VK_SUCCESS) return false;
    std::vector<VkExtensionProperties> exts(count);
    if (api.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, exts.data()) != VK_SUCCESS) return false;
    for (uint32_t i = 0; i < count; ++i)
        if (std::strcmp(exts[i].extensionName, name) == 0) return true;
    return false;
}

// *rowCapable (when given): whether the device could run the row kernels (subgroup ballot over 8
// or more lanes), which info.rowKernels turns on only for CPU implementations.
backend::DeviceInfo describe(const Api& api, VkPhysicalDevice pd, bool* rowCapable = nullptr) {
    backend::DeviceInfo info;
    info.api = "vulkan";
    VkPhysicalDeviceProperties props{};
    api.vkGetPhysicalDeviceProperties(pd, &props);
    info.name = props.deviceName;
    info.type = deviceTypeName(props.deviceType);
    info.maxBindRange = props.limits.maxStorageBufferRange;
    info.sharesHostMemory = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                            props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    // The largest device-local heap, and what is free of it when VK_EXT_memory_budget says.
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mem2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    const bool haveBudget = hasExtension(api, pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (haveBudget) mem2.pNext = &budget;
    api.vkGetPhysicalDeviceMemoryProperties2(pd, &mem2);
    const VkPhysicalDeviceMemoryProperties& mem = mem2.memoryProperties;
    for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
        if ((mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && mem.memoryHeaps[h].size > info.deviceMemory) {
            info.deviceMemory = mem.memoryHeaps[h].size;
            info.freeMemory = haveBudget && budget.heapBudget[h] > budget.heapUsage[h]
                                  ? budget.heapBudget[h] - budget.heapUsage[h]
                                  : 0;
        }
    if (props.apiVersion >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
        VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
        props2.pNext = &sub;
        api.vkGetPhysicalDeviceProperties2(pd, &props2);
        info.subgroupSize = sub.subgroupSize;
        info.subgroupArithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                                  (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                                  (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
        const bool capable = sub.subgroupSize >= 8 && (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (sub.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT) &&
                             (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
        info.rowKernels = capable && props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
        if (rowCapable) *rowCapable = capable;
        VkPhysicalDeviceShaderFloat16Int8Features f16{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
        VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        feats.pNext = &f16;
        api.vkGetPhysicalDeviceFeatures2(pd, &feats);
        info.fp16 = f16.shaderFloat16 == VK_TRUE;
        info.int8 = f16.shaderInt8 == VK_TRUE;
    }
    return info;
}

} // namespace

Result<std::vector<backend::DeviceInfo>> listVulkanDevices() {
    Api api;
    VkInstance instance = VK_NULL_HANDLE;
    HEARTH_RETURN_IF_ERROR(createInstance(api, instance));
    auto devices = physicalDevices(api, instance);
    std::vector<backend::DeviceInfo> out;
    if (devices)
        for (VkPhysicalDevice pd : *devices) out.push_back(describe(api, pd));
    api.vkDestroyInstance(instance, nullptr);
    if (!devices) return devices.status();
    return out;
}

Result<std::unique_ptr<Context>> Context::create(const VulkanOptions& options) {
    std::unique_ptr<Context> ctx(new Context());
    HEARTH_RETURN_IF_ERROR(createInstance(ctx->api, ctx->instance));
    const Api& api = ctx->api;
    HEARTH_ASSIGN_OR_RETURN(auto devices, physicalDevices(api, ctx->instance));
    if (devices.empty()) return unsupported("no Vulkan device found");
    int index = options.deviceIndex;
    if (index < 0) {
        const char* env = std::getenv("HEARTH_VK_DEVICE");
        index = env && *env ? std::atoi(env) : 0;
    }
    if (index < 0 || size_t(index) >= devices.size())
        return invalidArgument("Vulkan device index " + std::to_string(index) + " out of range (" +
                               std::to_string(devices.size()) + " devices)");
    ctx->physical = devices[size_t(index)];
    bool rowCapable = false;
    ctx->info = describe(api, ctx->physical, &rowCapable);
    ctx->info.subgroupArithmetic = ctx->info.subgroupArithmetic && options.subgroups;
    // The options' choice, else HEARTH_VK_ROW_KERNELS=0|1 (for measuring one form against the other).
    int rowKernels = options.rowKernels;
    if (const char* env = std::getenv("HEARTH_VK_ROW_KERNELS"); rowKernels < 0 && env && (*env == '0' || *env == '1'))
        rowKernels = *env - '0';
    if (rowKernels > 0 && !rowCapable)
        return unsupported("Vulkan device '" + ctx->info.name + "': row kernels need subgroup ballot over 8 or more lanes");
    if (rowKernels >= 0) ctx->info.rowKernels = rowKernels > 0;
    VkPhysicalDeviceProperties props{};
    api.vkGetPhysicalDeviceProperties(ctx->physical, &props);
    if (props.apiVersion < VK_API_VERSION_1_2)
        return unsupported("Vulkan device '" + ctx->info.name + "' offers Vulkan < 1.2");
    ctx->limits = props.limits;
    api.vkGetPhysicalDeviceMemoryProperties(ctx->physical, &ctx->memory);
    ctx->maxBindRange = props.limits.maxStorageBufferRange;
    if (options.maxBindRange) ctx->maxBindRange = std::min<uint64_t>(ctx->maxBindRange, options.maxBindRange);
    ctx->info.maxBindRange = ctx->maxBindRange;
    ctx->maxWeightRange = ctx->maxBindRange;
    if (options.maxWeightRange) ctx->maxWeightRange = std::min<uint64_t>(ctx->maxBindRange, options.maxWeightRange);
    ctx->offsetAlign = std::max<uint64_t>(4, props.limits.minStorageBufferOffsetAlignment);
    ctx->forceStaging = options.forceStaging;

    uint32_t nFamilies = 0;
    api.vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &nFamilies, nullptr);
    std::vector<VkQueueFamilyProperties> families(nFamilies);
    api.vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical, &nFamilies, families.data());
    bool found = false;
    for (uint32_t f = 0; f < nFamilies && !found; ++f)
        if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) ctx->queueFamily = f, found = true;
    if (!found) return unsupported("Vulkan device '" + ctx->info.name + "' has no compute queue");

    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = ctx->queueFamily;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    HEARTH_VK_CHECK("vkCreateDevice", api.vkCreateDevice(ctx->physical, &dci, nullptr, &ctx->device));
    api.vkGetDeviceQueue(ctx->device, ctx->queueFamily, 0, &ctx->queue);
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = ctx->queueFamily;
    HEARTH_VK_CHECK("vkCreateCommandPool", api.vkCreateCommandPool(ctx->device, &pci, nullptr, &ctx->commandPool));
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    HEARTH_VK_CHECK("vkCreateFence", api.vkCreateFence(ctx->device, &fci, nullptr, &ctx->fence));
    return ctx;
}

Context::~Context() {
    if (device) {
        api.vkDeviceWaitIdle(device);
        if (fence) api.vkDestroyFence(device, fence, nullptr);
        if (commandPool) api.vkDestroyCommandPool(device, commandPool, nullptr);
        api.vkDestroyDevice(device, nullptr);
    }
    if (instance) api.vkDestroyInstance(instance, nullptr);
}

Result<uint32_t> Context::memoryType(uint32_t allowedBits, bool hostVisible) const {
    const VkMemoryPropertyFlags mapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    // In order of preference.
    const VkMemoryPropertyFlags wanted[] = {
        hostVisible ? mapped | VK_MEMORY_PROPERTY_HOST_CACHED_BIT : local | mapped,
        hostVisible ? mapped : local,
        mapped,
    };
    for (VkMemoryPropertyFlags w : wanted)
        for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
            if ((allowedBits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & w) == w) return i;
    return unsupported("no suitable Vulkan memory type");
}

Status Context::submitAndWait(VkCommandBuffer cb) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    HEARTH_VK_CHECK("vkQueueSubmit", api.vkQueueSubmit(queue, 1, &si, fence));
    HEARTH_VK_CHECK("vkWaitForFences", api.vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX));
    HEARTH_VK_CHECK("vkResetFences", api.vkResetFences(device, 1, &fence));
    return Status::ok();
}

Status Context::submitOnce(const std::function<void(VkCommandBuffer)>& record) {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = commandPool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    HEARTH_VK_CHECK("vkAllocateCommandBuffers", api.vkAllocateCommandBuffers(device, &ai, &cb));
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkResult r = api.vkBeginCommandBuffer(cb, &bi);
    Status s = Status::ok();
    if (r == VK_SUCCESS) {
        record(cb);
        r = api.vkEndCommandBuffer(cb);
        s = r == VK_SUCCESS ? submitAndWait(cb) : vkError("vkEndCommandBuffer", r);
    } else {
        s = vkError("vkBeginCommandBuffer", r);
    }
    api.vkFreeCommandBuffers(device, commandPool, 1, &cb);
    return s;
}

Result<std::unique_ptr<VulkanBuffer>> VulkanBuffer::create(Context& ctx, uint64_t bytes, bool hostVisible) {
    std::unique_ptr<VulkanBuffer> b(new VulkanBuffer(ctx));
    const Api& api = ctx.api;
    b->m_size = bytes;
    b->m_allocated = std::max<uint64_t>(16, (bytes + 15) / 16 * 16);
    VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    ci.size = b->m_allocated;
    ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    HEARTH_VK_CHECK("vkCreateBuffer", api.vkCreateBuffer(ctx.device, &ci, nullptr, &b->m_buffer));
    VkMemoryRequirements req{};
    api.vkGetBufferMemoryRequirements(ctx.device, b->m_buffer, &req);
    HEARTH_ASSIGN_OR_RETURN(const uint32_t type, ctx.memoryType(req.memoryTypeBits, hostVisible));
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = type;
    HEARTH_VK_CHECK("vkAllocateMemory", api.vkAllocateMemory(ctx.device, &ai, nullptr, &b->m_memory));
    HEARTH_VK_CHECK("vkBindBufferMemory", api.vkBindBufferMemory(ctx.device, b->m_buffer, b->m_memory, 0));
    if ((ctx.memory.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
        (hostVisible || !ctx.forceStaging))
        HEARTH_VK_CHECK("vkMapMemory", api.vkMapMemory(ctx.device, b->m_memory, 0, VK_WHOLE_SIZE, 0, &b->m_mapped));
    return b;
}

VulkanBuffer::~VulkanBuffer() {
    const Api& api = m_ctx->api;
    if (m_mapped) api.vkUnmapMemory(m_ctx->device, m_memory);
    if (m_buffer) api.vkDestroyBuffer(m_ctx->device, m_buffer, nullptr);
    if (m_memory) api.vkFreeMemory(m_ctx->device, m_memory, nullptr);
}

Status VulkanBuffer::write(uint64_t offset, const void* src, uint64_t bytes) {
    if (offset > m_size || bytes > m_size - offset) return outOfRange("write past the end of a Vulkan buffer");
    if (bytes == 0) return Status::ok();
    if (m_mapped) {
        std::memcpy(static_cast<uint8_t*>(m_mapped) + offset, src, bytes);
        return Status::ok();
    }
    HEARTH_ASSIGN_OR_RETURN(auto staging, create(*m_ctx, bytes, true));
    HEARTH_RETURN_IF_ERROR(staging->write(0, src, bytes));
    const VkBuffer from = staging->m_buffer, to = m_buffer;
    return m_ctx->submitOnce([&](VkCommandBuffer cb) {
        VkBufferCopy region{0, offset, bytes};
        m_ctx->api.vkCmdCopyBuffer(cb, from, to, 1, &region);
    });
}

Status VulkanBuffer::read(uint64_t offset, void* dst, uint64_t bytes) const {
    if (offset > m_size || bytes > m_size - offset) return outOfRange("read past the end of a Vulkan buffer");
    if (bytes == 0) return Status::ok();
    if (m_mapped) {
        std::memcpy(dst, static_cast<const uint8_t*>(m_mapped) + offset, bytes);
        return Status::ok();
    }
    HEARTH_ASSIGN_OR_RETURN(auto staging, create(*m_ctx, bytes, true));
    const VkBuffer from = m_buffer, to = staging->m_buffer;
    HEARTH_RETURN_IF_ERROR(m_ctx->submitOnce([&](VkCommandBuffer cb) {
        VkBufferCopy region{offset, 0, bytes};
        m_ctx->api.vkCmdCopyBuffer(cb, from, to, 1, &region);
    }));
    return staging->read(0, dst, bytes);
}

Status VulkanBufferView::write(uint64_t offset, const void* src, uint64_t bytes) {
    if (offset > m_size || bytes > m_size - offset) return outOfRange("write past the end of a Vulkan buffer view");
    return m_parent->write(m_offset + offset, src, bytes);
}

Status VulkanBufferView::read(uint64_t offset, void* dst, uint64_t bytes) const {
    if (offset > m_size || bytes > m_size - offset) return outOfRange("read past the end of a Vulkan buffer view");
    return m_parent->read(m_offset + offset, dst, bytes);
}

Result<BufferRange> bufferRange(const backend::Buffer& b, const Context* ctx) {
    BufferRange r;
    if (const auto* whole = dynamic_cast<const VulkanBuffer*>(&b)) {
        r.buffer = whole;
        r.size = whole->size();
    } else if (const auto* view = dynamic_cast<const VulkanBufferView*>(&b)) {
        r.buffer = &view->parent();
        r.offset = view->offset();
        r.size = view->size();
    }
    if (!r.buffer || r.buffer->context() != ctx) return invalidArgument("buffer belongs to another device");
    if (r.offset > r.buffer->allocatedSize() || r.size > r.buffer->size() - std::min(r.offset, r.buffer->size()))
        return invalidArgument("buffer view outside its buffer");
    r.available = r.buffer->allocatedSize() - r.offset;
    return r;
}

} // namespace hearth::vk
