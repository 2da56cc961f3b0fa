// backend::OpDevice on Vulkan: pipelines built lazily from the embedded SPIR-V, descriptor sets
// from pools reset after every step (or kept by a recorded backend::OpList), one command buffer per
// step with a barrier between dispatches, and weights larger than the storage-buffer binding limit
// bound one row range at a time.
#include "backend/vulkan/vk_device.h"

#include "backend/vulkan/embedded_spirv.h"
#include "backend/vulkan/vk_iq_tables.h"
#include "backend/vulkan/vk_kv_ops.h"
#include "backend/vulkan/vk_profile.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace hearth::vk {

namespace {

using backend::Buffer;
using backend::ops::DeviceMatrix;

constexpr uint32_t kPushBytes = 64;     // every shader's push constants fit here
constexpr uint32_t kMaxBindings = 7;
constexpr uint32_t kSetsPerPool = 1024;
constexpr uint32_t kMaxGroups = 65535;  // guaranteed maxComputeWorkGroupCount per dimension
constexpr uint32_t kMatvecRows = 8;     // rows per workgroup of matvec_sg_* (shaders/matvec.comp)
constexpr uint32_t kTileRows = 64;      // rows x tokens per workgroup of matmul_* (shaders/matmul.comp)
constexpr uint32_t kTileTokens = 32;
// Rows x tokens per workgroup of the row forms (shaders/matmul_rows.comp, matmul_id_rows.comp): 64
// invocations of NR rows each; shaders/CMakeLists.txt builds each type's four forms with these NR.
struct RowsTile {
    uint32_t rows, tokens;
};
enum class RowForm { Prefill, Decode, Routed, Direct };
RowsTile rowsTile(quant::Type t, RowForm f) {
    // The grid i-quants and TQ keep one row per invocation (their chunk readers are long).
    const bool oneRow = t == quant::Type::IQ1_S || t == quant::Type::IQ1_M || t == quant::Type::IQ2_XXS ||
                        t == quant::Type::IQ2_XS || t == quant::Type::IQ2_S || t == quant::Type::IQ3_XXS ||
                        t == quant::Type::IQ3_S || t == quant::Type::TQ1_0 || t == quant::Type::TQ2_0;
    switch (f) {
    case RowForm::Prefill: return {64u * (oneRow ? 1u : 4u), 32};
    case RowForm::Decode: return {64u * (oneRow ? 1u : 2u), 8};
    case RowForm::Routed: return {64u, 32};
    case RowForm::Direct: return {64u * (oneRow ? 1u : 2u), 1};
    }
    return {64, 1};
}

// Whether shaders/matmul_rows.comp has a variant for t: the types with a chunk reader.
bool hasRowKernel(quant::Type t) { return t != quant::Type::F32 && t != quant::Type::F16 && t != quant::Type::BF16; }

struct Pipeline {
    VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
};

// One storage-buffer binding: a buffer range.
struct Binding {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;
    VkDeviceSize range = 0;
};

// Rows [rowOffset, rowOffset + nRows) of a matrix, bound at `bindOffset` (aligned) with the first
// row `byteBase` bytes further.
struct RowRange {
    uint64_t bindOffset = 0, bindSize = 0;
    uint32_t byteBase = 0, rowOffset = 0, nRows = 0;
};

// The matrix kernels' push constants (shaders/matmul_params.glsl).
struct MatParams {
    uint32_t cols, rowBytes, byteBase, rowOffset, nRows, totalRows, n;
};

const char* typeSuffix(quant::Type t) {
    switch (t) {
    case quant::Type::F32: return "f32";
    case quant::Type::F16: return "f16";
    case quant::Type::BF16: return "bf16";
    case quant::Type::Q8_0: return "q8_0";
    case quant::Type::Q8_1: return "q8_1";
    case quant::Type::Q8_K: return "q8_k";
    case quant::Type::Q4_0: return "q4_0";
    case quant::Type::Q4_1: return "q4_1";
    case quant::Type::Q5_0: return "q5_0";
    case quant::Type::Q5_1: return "q5_1";
    case quant::Type::Q2_K: return "q2_k";
    case quant::Type::Q3_K: return "q3_k";
    case quant::Type::Q4_K: return "q4_k";
    case quant::Type::Q5_K: return "q5_k";
    case quant::Type::Q6_K: return "q6_k";
    case quant::Type::IQ4_NL: return "iq4_nl";
    case quant::Type::IQ4_XS: return "iq4_xs";
    case quant::Type::MXFP4: return "mxfp4";
    case quant::Type::TQ1_0: return "tq1_0";
    case quant::Type::TQ2_0: return "tq2_0";
    default: return gridTypeSuffix(t);
    }
}

// Work groups for `items` invocations of `local` each, split over x and y under the per-dimension
// limit; shaders rebuild the linear index as x + y * numGroups.x * local.
std::array<uint32_t, 2> groups2d(uint64_t items, uint32_t local) {
    const uint64_t g = std::max<uint64_t>(1, (items + local - 1) / local);
    const uint64_t gx = std::min<uint64_t>(g, kMaxGroups);
    return {uint32_t(gx), uint32_t((g + gx - 1) / gx)};
}

// A command buffer and the descriptor pools its sets come from.
struct Recording {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    std::vector<VkDescriptorPool> pools;
    size_t poolInUse = 0;
    bool open = false;
    mutable ProfileMarks marks; // HEARTH_VK_PROFILE's timestamps
};

void releaseRecording(Context& ctx, Recording& r) {
    for (VkDescriptorPool pool : r.pools) ctx.api.vkDestroyDescriptorPool(ctx.device, pool, nullptr);
    r.pools.clear();
    if (r.cmd) ctx.api.vkFreeCommandBuffers(ctx.device, ctx.commandPool, 1, &r.cmd);
    if (r.marks.pool) ctx.api.vkDestroyQueryPool(ctx.device, r.marks.pool, nullptr);
    r.marks.pool = VK_NULL_HANDLE;
    r.cmd = VK_NULL_HANDLE;
}

class RecordedList final : public backend::OpList {
public:
    explicit RecordedList(Context& ctx) : m_ctx(&ctx) {}
    ~RecordedList() override { releaseRecording(*m_ctx, rec); }
    Recording rec;

private:
    Context* m_ctx;
};

class VulkanDevice final : public VulkanOpDevice {
public:
    explicit VulkanDevice(std::unique_ptr<Context> ctx) : m_ctx(std::move(ctx)) {}
    ~VulkanDevice() override;

    Status init();
    const backend::DeviceInfo& info() const override { return m_ctx->info; }
    bool supportsOp(backend::ops::Op op, quant::Type type) const override;
    Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes, bool hostVisible) override;

    Status matMul(const DeviceMatrix& w, const Buffer& x, int64_t n, Buffer& y) override;
    Status getRows(const DeviceMatrix& w, const Buffer& ids, int64_t n, Buffer& out) override;
    Status rmsNorm(const Buffer& x, const Buffer* weight, int64_t rows, int64_t dim, float eps, Buffer& out) override;
    Status rope(const Buffer& x, const Buffer& pos, const Buffer* freqFactors, const backend::ops::RopeParams& p,
                Buffer& out) override;
    Status unary(backend::ops::Unary op, const Buffer& x, int64_t count, float param, Buffer& out) override;
    Status binary(backend::ops::Binary op, const Buffer& a, const Buffer& b, int64_t count, int64_t bLen,
                  Buffer& out) override;
    Status swigluOai(const Buffer& gate, const Buffer& up, int64_t count, float alpha, float limit,
                     Buffer& out) override;
    Status matMulId(const backend::ops::DeviceExperts& w, const Buffer& x, int64_t xSlots, const Buffer& ids, int64_t k,
                    int64_t n, Buffer& y, Buffer* scratch) override;
    uint64_t matMulIdScratchBytes(int64_t nExp, int64_t k, int64_t n) const override;
    Status gather(const Buffer& x, const Buffer& ids, int64_t rows, int64_t width, int64_t k, Buffer& out) override;
    Status copyRows(const Buffer& x, uint64_t offset, int64_t rows, int64_t width, int64_t stride,
                    Buffer& out) override;
    Status weightedSum(const Buffer& y, const Buffer& w, int64_t n, int64_t k, int64_t width, Buffer& out) override;
    Status softmax(const Buffer& x, int64_t rows, int64_t width, float scale, Buffer& out) override;
    Status topK(const Buffer& x, int64_t rows, int64_t width, int64_t k, Buffer& out) override;
    Status kvWrite(const Buffer& src, const Buffer& slots, int64_t n, int64_t rowSize, KvType type,
                   Buffer& cache) override;
    Status attention(const Buffer& q, const Buffer& kCache, const Buffer& vCache, const Buffer& info,
                     const Buffer& tables, const Buffer* sinks, const backend::ops::AttentionParams& p,
                     Buffer& out) override;
    Status copy(const Buffer& src, uint64_t srcOffset, Buffer& dst, uint64_t dstOffset, uint64_t bytes) override;
    Status run() override;
    void discard() override;

    Status dispatchShader(const std::string& name, std::initializer_list<const Buffer*> buffers, const void* push,
                          uint32_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz) override;
    Result<std::unique_ptr<backend::OpList>> record(const std::function<Status()>& body, bool repeated) override;
    Status submit(const backend::OpList& list) override;
    Context& context() override { return *m_ctx; }
    const Context& context() const override { return *m_ctx; }

private:
    Result<const Pipeline*> pipeline(const std::string& name);
    Result<Binding> whole(const Buffer& b) const;
    Result<std::vector<RowRange>> rowRanges(const DeviceMatrix& w, uint32_t maxRows) const;
    Status dispatch(const std::string& name, std::initializer_list<Binding> bindings, const void* push,
                    uint32_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz = 1) {
        return dispatch(name, bindings.begin(), bindings.size(), push, pushBytes, gx, gy, gz);
    }
    Status dispatch(const std::string& name, const Binding* bindings, size_t count, const void* push,
                    uint32_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz);
    Result<VkDescriptorSet> allocateSet(VkDescriptorSetLayout layout);
    Status beginIfNeeded();
    Status allocateCommandBuffer(VkCommandBuffer& cmd);
    void resetStep();
    // Makes every write so far visible to the host and to later copies (the end of a step).
    void finalBarrier(VkCommandBuffer cmd);

    std::unique_ptr<Context> m_ctx;
    std::map<std::string, Pipeline> m_pipelines;
    VkPipelineCache m_cache = VK_NULL_HANDLE;
    Recording m_step;             // the ops of the current step, submitted by run()
    Recording* m_rec = &m_step;   // where ops go now (m_step, or a list being recorded)
    std::unique_ptr<VulkanBuffer> m_dummy; // bound where an optional input is absent
    std::unique_ptr<IqTables> m_grids;     // the i-quants' grids (dequant.glsl's GRID_BINDING)
    std::unique_ptr<Profiler> m_profile;   // HEARTH_VK_PROFILE=1: time per shader

    // The grid table weight type t reads, or the dummy buffer for a type without one.
    Binding gridOf(quant::Type t) const {
        const IqTables::Range r = m_grids->range(t);
        return r.size ? Binding{m_grids->handle(), r.offset, r.size} : Binding{m_dummy->handle(), 0, VK_WHOLE_SIZE};
    }
};

VulkanDevice::~VulkanDevice() {
    const Api& api = m_ctx->api;
    api.vkDeviceWaitIdle(m_ctx->device);
    m_profile.reset(); // prints its table
    m_dummy.reset();
    m_grids.reset();
    for (auto& [name, p] : m_pipelines) {
        api.vkDestroyPipeline(m_ctx->device, p.pipeline, nullptr);
        api.vkDestroyPipelineLayout(m_ctx->device, p.layout, nullptr);
        api.vkDestroyDescriptorSetLayout(m_ctx->device, p.setLayout, nullptr);
    }
    releaseRecording(*m_ctx, m_step);
    if (m_cache) api.vkDestroyPipelineCache(m_ctx->device, m_cache, nullptr);
}

Status VulkanDevice::allocateCommandBuffer(VkCommandBuffer& cmd) {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = m_ctx->commandPool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    HEARTH_VK_CHECK("vkAllocateCommandBuffers", m_ctx->api.vkAllocateCommandBuffers(m_ctx->device, &ai, &cmd));
    return Status::ok();
}

Status VulkanDevice::init() {
    const Api& api = m_ctx->api;
    VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    HEARTH_VK_CHECK("vkCreatePipelineCache", api.vkCreatePipelineCache(m_ctx->device, &pci, nullptr, &m_cache));
    HEARTH_RETURN_IF_ERROR(allocateCommandBuffer(m_step.cmd));
    HEARTH_ASSIGN_OR_RETURN(m_dummy, VulkanBuffer::create(*m_ctx, 16, false));
    HEARTH_ASSIGN_OR_RETURN(m_grids, IqTables::create(*m_ctx));
    m_profile = Profiler::fromEnv(*m_ctx);
    return Status::ok();
}

bool VulkanDevice::supportsOp(backend::ops::Op op, quant::Type type) const {
    switch (op) {
    case backend::ops::Op::MatMul:
    case backend::ops::Op::MatMulId:
    case backend::ops::Op::GetRows: return typeSuffix(type) != nullptr;
    default: return type == quant::Type::F32;
    }
}

Result<std::unique_ptr<Buffer>> VulkanDevice::allocate(uint64_t bytes, bool hostVisible) {
    HEARTH_ASSIGN_OR_RETURN(auto b, VulkanBuffer::create(*m_ctx, bytes, hostVisible));
    return std::unique_ptr<Buffer>(std::move(b));
}

Result<const Pipeline*> VulkanDevice::pipeline(const std::string& name) {
    auto it = m_pipelines.find(name);
    if (it != m_pipelines.end()) return &it->second;
    const SpirvModule* module = nullptr;
    for (const SpirvModule& m : embeddedSpirv())
        if (name == m.name) module = &m;
    if (!module) return internalError("no embedded shader named " + name);
    const Api& api = m_ctx->api;
    const VkDevice dev = m_ctx->device;
    Pipeline p;
    std::array<VkDescriptorSetLayoutBinding, kMaxBindings> bindings{};
    for (uint32_t i = 0; i < kMaxBindings; ++i)
        bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dci.bindingCount = kMaxBindings;
    dci.pBindings = bindings.data();
    HEARTH_VK_CHECK("vkCreateDescriptorSetLayout", api.vkCreateDescriptorSetLayout(dev, &dci, nullptr, &p.setLayout));
    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
    VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    lci.setLayoutCount = 1;
    lci.pSetLayouts = &p.setLayout;
    lci.pushConstantRangeCount = 1;
    lci.pPushConstantRanges = &push;
    VkResult r = api.vkCreatePipelineLayout(dev, &lci, nullptr, &p.layout);
    VkShaderModule shader = VK_NULL_HANDLE;
    if (r == VK_SUCCESS) {
        VkShaderModuleCreateInfo sci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        sci.codeSize = module->wordCount * sizeof(uint32_t);
        sci.pCode = module->words;
        r = api.vkCreateShaderModule(dev, &sci, nullptr, &shader);
    }
    if (r == VK_SUCCESS) {
        VkComputePipelineCreateInfo cci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
        cci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
        cci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        cci.stage.module = shader;
        cci.stage.pName = "main";
        cci.layout = p.layout;
        const auto start = std::chrono::steady_clock::now();
        r = api.vkCreateComputePipelines(dev, m_cache, 1, &cci, nullptr, &p.pipeline);
        if (m_profile) m_profile->addCompile(name, std::chrono::steady_clock::now() - start);
        api.vkDestroyShaderModule(dev, shader, nullptr);
    }
    if (r != VK_SUCCESS) {
        if (p.layout) api.vkDestroyPipelineLayout(dev, p.layout, nullptr);
        api.vkDestroyDescriptorSetLayout(dev, p.setLayout, nullptr);
        return vkError(("pipeline " + name).c_str(), r);
    }
    return &(m_pipelines[name] = p);
}

Result<VkDescriptorSet> VulkanDevice::allocateSet(VkDescriptorSetLayout layout) {
    const Api& api = m_ctx->api;
    Recording& rec = *m_rec;
    for (;; ++rec.poolInUse) {
        if (rec.poolInUse == rec.pools.size()) {
            // A recorded list keeps its sets for good: its pools start small.
            const uint32_t sets = &rec == &m_step ? kSetsPerPool : 256;
            VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets * kMaxBindings};
            VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
            ci.maxSets = sets;
            ci.poolSizeCount = 1;
            ci.pPoolSizes = &size;
            VkDescriptorPool pool = VK_NULL_HANDLE;
            HEARTH_VK_CHECK("vkCreateDescriptorPool", api.vkCreateDescriptorPool(m_ctx->device, &ci, nullptr, &pool));
            rec.pools.push_back(pool);
        }
        VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        ai.descriptorPool = rec.pools[rec.poolInUse];
        ai.descriptorSetCount = 1;
        ai.pSetLayouts = &layout;
        VkDescriptorSet set = VK_NULL_HANDLE;
        const VkResult r = api.vkAllocateDescriptorSets(m_ctx->device, &ai, &set);
        if (r == VK_SUCCESS) return set;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
            return vkError("vkAllocateDescriptorSets", r);
    }
}

Status VulkanDevice::beginIfNeeded() {
    if (m_rec->open) return Status::ok();
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = m_rec == &m_step ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0;
    HEARTH_VK_CHECK("vkBeginCommandBuffer", m_ctx->api.vkBeginCommandBuffer(m_rec->cmd, &bi));
    m_rec->open = true;
    if (m_profile) m_profile->begin(m_rec->cmd, m_rec->marks);
    return Status::ok();
}

Result<Binding> VulkanDevice::whole(const Buffer& b) const {
    HEARTH_ASSIGN_OR_RETURN(const BufferRange r, bufferRange(b, m_ctx.get()));
    if (r.offset % m_ctx->offsetAlign != 0) return invalidArgument("a buffer view starts at an unaligned offset");
    // The range covers the view rounded up to whole words (16 for a whole buffer, as allocated).
    const uint64_t range = r.offset == 0 && r.size == r.buffer->size() ? r.available
                                                                       : std::min<uint64_t>((r.size + 3) / 4 * 4, r.available);
    if (range > m_ctx->maxBindRange)
        return unsupported("a " + std::to_string(r.size) + "-byte activation buffer exceeds the " +
                           std::to_string(m_ctx->maxBindRange) + "-byte binding limit");
    return Binding{r.buffer->handle(), r.offset, std::max<uint64_t>(range, 4)};
}

Result<std::vector<RowRange>> VulkanDevice::rowRanges(const DeviceMatrix& w, uint32_t maxRows) const {
    if (!w.buffer) return invalidArgument("weight matrix without a buffer");
    HEARTH_ASSIGN_OR_RETURN(const BufferRange b, bufferRange(*w.buffer, m_ctx.get()));
    if (uint64_t(w.rows) * w.rowBytes > b.size) return invalidArgument("weight buffer smaller than its matrix");
    const uint64_t align = m_ctx->offsetAlign, limit = m_ctx->maxWeightRange;
    if (limit < align + 4 + w.rowBytes) return unsupported("one weight row exceeds the binding limit");
    const uint64_t perRange = std::min<uint64_t>((limit - align - 4) / w.rowBytes, maxRows);
    std::vector<RowRange> out;
    for (uint64_t r0 = 0; r0 < uint64_t(w.rows); r0 += perRange) {
        RowRange rr;
        const uint64_t start = b.offset + r0 * w.rowBytes;
        rr.bindOffset = start - start % align;
        rr.byteBase = uint32_t(start - rr.bindOffset);
        rr.rowOffset = uint32_t(r0);
        rr.nRows = uint32_t(std::min<uint64_t>(perRange, uint64_t(w.rows) - r0));
        rr.bindSize = std::min<uint64_t>((rr.byteBase + uint64_t(rr.nRows) * w.rowBytes + 3) / 4 * 4,
                                         b.buffer->allocatedSize() - rr.bindOffset);
        out.push_back(rr);
    }
    return out;
}

Status VulkanDevice::dispatchShader(const std::string& name, std::initializer_list<const Buffer*> buffers,
                                    const void* push, uint32_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    if (buffers.size() > kMaxBindings || pushBytes > kPushBytes)
        return invalidArgument("dispatch of " + name + ": too many bindings or push bytes");
    std::array<Binding, kMaxBindings> bound{};
    size_t i = 0;
    for (const Buffer* b : buffers) {
        if (b) {
            HEARTH_ASSIGN_OR_RETURN(bound[i], whole(*b));
        } else {
            bound[i] = {m_dummy->handle(), 0, VK_WHOLE_SIZE};
        }
        ++i;
    }
    return dispatch(name, bound.data(), i, push, pushBytes, gx, gy, gz);
}

Status VulkanDevice::dispatch(const std::string& name, const Binding* bindings, size_t count, const void* push,
                              uint32_t pushBytes, uint32_t gx, uint32_t gy, uint32_t gz) {
    if (count > kMaxBindings) return internalError("dispatch of " + name + ": too many bindings");
    HEARTH_RETURN_IF_ERROR(beginIfNeeded());
    HEARTH_ASSIGN_OR_RETURN(const Pipeline* p, pipeline(name));
    HEARTH_ASSIGN_OR_RETURN(VkDescriptorSet set, allocateSet(p->setLayout));
    const Api& api = m_ctx->api;
    const VkCommandBuffer cmd = m_rec->cmd;
    std::array<VkDescriptorBufferInfo, kMaxBindings> infos{};
    std::array<VkWriteDescriptorSet, kMaxBindings> writes{};
    const VkBuffer dummy = m_dummy->handle();
    uint32_t i = 0;
    for (; i < count; ++i) infos[i] = {bindings[i].buffer, bindings[i].offset, bindings[i].range};
    for (; i < kMaxBindings; ++i) infos[i] = {dummy, 0, VK_WHOLE_SIZE};
    for (uint32_t k = 0; k < kMaxBindings; ++k) {
        writes[k] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[k].dstSet = set;
        writes[k].dstBinding = k;
        writes[k].descriptorCount = 1;
        writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[k].pBufferInfo = &infos[k];
    }
    api.vkUpdateDescriptorSets(m_ctx->device, kMaxBindings, writes.data(), 0, nullptr);
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
    api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, nullptr);
    std::array<uint8_t, kPushBytes> pushData{};
    std::memcpy(pushData.data(), push, std::min(pushBytes, kPushBytes));
    api.vkCmdPushConstants(cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes, pushData.data());
    api.vkCmdDispatch(cmd, gx, gy, gz);
    // Every op reads what the previous ones wrote.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             0, 1, &barrier, 0, nullptr, 0, nullptr);
    if (m_profile) m_profile->mark(cmd, m_rec->marks, name);
    return Status::ok();
}

Status VulkanDevice::copy(const Buffer& src, uint64_t srcOffset, Buffer& dst, uint64_t dstOffset, uint64_t bytes) {
    if (bytes == 0) return Status::ok();
    HEARTH_ASSIGN_OR_RETURN(const BufferRange from, bufferRange(src, m_ctx.get()));
    HEARTH_ASSIGN_OR_RETURN(const BufferRange to, bufferRange(dst, m_ctx.get()));
    if (srcOffset > from.size || bytes > from.size - srcOffset || dstOffset > to.size || bytes > to.size - dstOffset)
        return outOfRange("copy past the end of a Vulkan buffer");
    HEARTH_RETURN_IF_ERROR(beginIfNeeded());
    const Api& api = m_ctx->api;
    const VkCommandBuffer cmd = m_rec->cmd;
    // Earlier dispatches' writes are visible to the copy, and the copy's to later dispatches.
    VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    before.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
    const VkBufferCopy region{from.offset + srcOffset, to.offset + dstOffset, bytes};
    api.vkCmdCopyBuffer(cmd, from.buffer->handle(), to.buffer->handle(), 1, &region);
    VkMemoryBarrier after{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    after.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
    api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &after, 0,
                             nullptr, 0, nullptr);
    return Status::ok();
}

void VulkanDevice::resetStep() {
    const Api& api = m_ctx->api;
    api.vkResetCommandBuffer(m_step.cmd, 0);
    for (VkDescriptorPool pool : m_step.pools) api.vkResetDescriptorPool(m_ctx->device, pool, 0);
    m_step.poolInUse = 0;
    m_step.open = false;
    m_step.marks.names.clear();
}

void VulkanDevice::discard() {
    if (!m_step.open) return;
    m_ctx->api.vkEndCommandBuffer(m_step.cmd);
    resetStep();
}

void VulkanDevice::finalBarrier(VkCommandBuffer cmd) {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    m_ctx->api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                    VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0,
                                    nullptr, 0, nullptr);
}

Status VulkanDevice::run() {
    if (!m_step.open) return Status::ok();
    finalBarrier(m_step.cmd);
    const VkResult r = m_ctx->api.vkEndCommandBuffer(m_step.cmd);
    const Status s = r == VK_SUCCESS ? m_ctx->submitAndWait(m_step.cmd) : vkError("vkEndCommandBuffer", r);
    if (m_profile && s.isOk()) m_profile->collect(m_step.marks, false);
    resetStep();
    return s;
}

Result<std::unique_ptr<backend::OpList>> VulkanDevice::record(const std::function<Status()>& body, bool repeated) {
    (void)repeated; // a recorded command buffer is submitted as it is
    if (m_rec != &m_step) return internalError("a command list is already being recorded");
    auto list = std::make_unique<RecordedList>(*m_ctx);
    HEARTH_RETURN_IF_ERROR(allocateCommandBuffer(list->rec.cmd));
    m_rec = &list->rec;
    Status s = beginIfNeeded();
    if (s.isOk()) s = body();
    m_rec = &m_step;
    if (!s.isOk()) {
        if (list->rec.open) m_ctx->api.vkEndCommandBuffer(list->rec.cmd);
        return s;
    }
    finalBarrier(list->rec.cmd);
    HEARTH_VK_CHECK("vkEndCommandBuffer", m_ctx->api.vkEndCommandBuffer(list->rec.cmd));
    list->rec.open = false;
    return std::unique_ptr<backend::OpList>(std::move(list));
}

Status VulkanDevice::submit(const backend::OpList& list) {
    const auto* recorded = dynamic_cast<const RecordedList*>(&list);
    if (!recorded || !recorded->rec.cmd) return invalidArgument("command list of another device");
    const Status s = m_ctx->submitAndWait(recorded->rec.cmd);
    if (m_profile && s.isOk()) m_profile->collect(recorded->rec.marks, true);
    return s;
}

Status VulkanDevice::matMul(const DeviceMatrix& w, const Buffer& x, int64_t n, Buffer& y) {
    const char* suffix = typeSuffix(w.type);
    if (!suffix) return unsupported(std::string("Vulkan matMul: weight type ") + std::string(quant::typeName(w.type)));
    if (n <= 0) return Status::ok();
    if (uint64_t(x.size()) < uint64_t(n * w.cols) * 4 || uint64_t(y.size()) < uint64_t(n * w.rows) * 4)
        return invalidArgument("Vulkan matMul: activation buffer too small");
    const bool tiled = n > 8;
    // CPU implementations take every product of a quantized matrix in the row form, decode too.
    const bool rowForm = m_ctx->info.rowKernels && hasRowKernel(w.type);
    if ((tiled ? (n + kTileTokens - 1) / kTileTokens : n) > kMaxGroups) return invalidArgument("too many tokens");
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    HEARTH_ASSIGN_OR_RETURN(const Binding by, whole(y));
    HEARTH_ASSIGN_OR_RETURN(auto ranges,
                            rowRanges(w, rowForm ? kMaxGroups * 64 : tiled ? kMaxGroups * kTileRows : kMaxGroups));
    HEARTH_ASSIGN_OR_RETURN(const BufferRange wr, bufferRange(*w.buffer, m_ctx.get()));
    const VkBuffer wb = wr.buffer->handle();
    const Binding bg = gridOf(w.type);
    for (const RowRange& rr : ranges) {
        const MatParams p{uint32_t(w.cols), uint32_t(w.rowBytes), rr.byteBase, rr.rowOffset, rr.nRows,
                          uint32_t(w.rows), uint32_t(n)};
        const Binding bw{wb, rr.bindOffset, rr.bindSize};
        if (rowForm) {
            // Prefill of matrices that fill a prefill workgroup's rows; decode and the rest.
            const bool wide = tiled && rr.nRows >= rowsTile(w.type, RowForm::Prefill).rows;
            const RowsTile tile = rowsTile(w.type, wide ? RowForm::Prefill : RowForm::Decode);
            HEARTH_RETURN_IF_ERROR(dispatch(std::string(wide ? "matmul_rows_" : "matvec_rows_") + suffix,
                                            {bw, bx, by, bg}, &p, sizeof p, (rr.nRows + tile.rows - 1) / tile.rows,
                                            uint32_t((n + tile.tokens - 1) / tile.tokens)));
        } else if (tiled)
            HEARTH_RETURN_IF_ERROR(dispatch(std::string("matmul_") + suffix, {bw, bx, by, bg}, &p, sizeof p,
                                            (rr.nRows + kTileRows - 1) / kTileRows,
                                            uint32_t((n + kTileTokens - 1) / kTileTokens)));
        else if (m_ctx->info.subgroupArithmetic)
            HEARTH_RETURN_IF_ERROR(dispatch(std::string("matvec_sg_") + suffix, {bw, bx, by, bg}, &p, sizeof p,
                                            (rr.nRows + kMatvecRows - 1) / kMatvecRows, 1));
        else
            HEARTH_RETURN_IF_ERROR(dispatch(std::string("matvec_") + suffix, {bw, bx, by, bg}, &p, sizeof p,
                                            rr.nRows, uint32_t(n)));
    }
    return Status::ok();
}

Status VulkanDevice::getRows(const DeviceMatrix& w, const Buffer& ids, int64_t n, Buffer& out) {
    const char* suffix = typeSuffix(w.type);
    if (!suffix) return unsupported(std::string("Vulkan getRows: weight type ") + std::string(quant::typeName(w.type)));
    if (n <= 0) return Status::ok();
    HEARTH_ASSIGN_OR_RETURN(const Binding bi, whole(ids));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    HEARTH_ASSIGN_OR_RETURN(auto ranges, rowRanges(w, UINT32_MAX));
    HEARTH_ASSIGN_OR_RETURN(const BufferRange wr, bufferRange(*w.buffer, m_ctx.get()));
    const VkBuffer wb = wr.buffer->handle();
    const auto g = groups2d(uint64_t(n), 1);
    const Binding bg = gridOf(w.type);
    for (const RowRange& rr : ranges) {
        const MatParams p{uint32_t(w.cols), uint32_t(w.rowBytes), rr.byteBase, rr.rowOffset, rr.nRows,
                          uint32_t(w.rows), uint32_t(n)};
        const Binding bw{wb, rr.bindOffset, rr.bindSize};
        HEARTH_RETURN_IF_ERROR(
            dispatch(std::string("get_rows_") + suffix, {bw, bi, bo, bg}, &p, sizeof p, g[0], g[1]));
    }
    return Status::ok();
}

Status VulkanDevice::rmsNorm(const Buffer& x, const Buffer* weight, int64_t rows, int64_t dim, float eps, Buffer& out) {
    if (rows <= 0) return Status::ok();
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    Binding bw{m_dummy->handle(), 0, VK_WHOLE_SIZE};
    if (weight) {
        HEARTH_ASSIGN_OR_RETURN(bw, whole(*weight));
    }
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t dim, rows; float eps; uint32_t hasWeight; } p{uint32_t(dim), uint32_t(rows), eps, weight ? 1u : 0u};
    const auto g = groups2d(uint64_t(rows), 1);
    return dispatch("rms_norm", {bx, bw, bo}, &p, sizeof p, g[0], g[1]);
}

Status VulkanDevice::rope(const Buffer& x, const Buffer& pos, const Buffer* freqFactors,
                          const backend::ops::RopeParams& rp, Buffer& out) {
    if (rp.n <= 0) return Status::ok();
    if (rp.nRot < 2 || rp.nRot % 2 || rp.nRot > rp.headDim || rp.headDim % 2)
        return invalidArgument("rope: nRot must be even and at most the (even) head size");
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    HEARTH_ASSIGN_OR_RETURN(const Binding bp, whole(pos));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    Binding bf{m_dummy->handle(), 0, VK_WHOLE_SIZE};
    if (freqFactors && rp.nFreqFactors > 0) {
        HEARTH_ASSIGN_OR_RETURN(bf, whole(*freqFactors));
    }
    // YaRN's ramp over dimension pairs [low, high] and its magnitude, derived here as the CPU's
    // rope_math.h does (ext 0: the plain angle times freqScale).
    float ext = 0.0f, low = 0.0f, high = 1.0f, magnitude = rp.attnFactor;
    if (rp.extFactor != 0.0f && rp.nCtxOrig > 0) {
        auto corrDim = [&](double rotations) {
            return double(rp.nRot) * std::log(double(rp.nCtxOrig) / (rotations * 2.0 * M_PI)) /
                   (2.0 * std::log(double(rp.freqBase)));
        };
        ext = rp.extFactor;
        low = float(std::max(0.0, std::floor(corrDim(double(rp.betaFast)))));
        high = float(std::min(double(rp.nRot - 1), std::ceil(corrDim(double(rp.betaSlow)))));
        magnitude = float(double(rp.attnFactor) * (1.0 + 0.1 * std::log(1.0 / double(rp.freqScale))));
    }
    if (rp.tempScale != 0.0f && (rp.tempLength <= 0 || rp.nRot != rp.headDim))
        return invalidArgument("rope: the attention temperature needs a positive length and the whole head rotated");
    struct {
        uint32_t n, nHeads, headDim, nRot;
        float base;
        uint32_t neox, nFreq;
        float freqScale, ext, low, high, magnitude, tempScale;
        uint32_t tempLength;
    } p{uint32_t(rp.n), uint32_t(rp.nHeads), uint32_t(rp.headDim), uint32_t(rp.nRot), rp.freqBase,
        rp.neox ? 1u : 0u, uint32_t(freqFactors ? rp.nFreqFactors : 0), rp.freqScale, ext, low, high, magnitude,
        rp.tempScale, uint32_t(std::max(rp.tempLength, 0))};
    const auto g = groups2d(uint64_t(rp.n) * uint64_t(rp.nHeads) * uint64_t(rp.headDim / 2), 64);
    return dispatch("rope", {bx, bp, bf, bo}, &p, sizeof p, g[0], g[1]);
}

Status VulkanDevice::unary(backend::ops::Unary op, const Buffer& x, int64_t count, float param, Buffer& out) {
    if (count <= 0) return Status::ok();
    const char* name = "scale";
    switch (op) {
    case backend::ops::Unary::Scale: name = "scale"; break;
    case backend::ops::Unary::Silu: name = "silu"; break;
    case backend::ops::Unary::Gelu: name = "gelu"; break;
    case backend::ops::Unary::Softcap:
        if (!(param > 0.0f)) return invalidArgument("softcap: the cap must be positive");
        name = "softcap";
        break;
    case backend::ops::Unary::Sigmoid: name = "sigmoid"; break;
    case backend::ops::Unary::Softplus: name = "softplus"; break;
    }
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t count, bLen; float param; } p{uint32_t(count), 1u, param};
    return dispatch(name, {bx, {m_dummy->handle(), 0, VK_WHOLE_SIZE}, bo}, &p, sizeof p,
                    uint32_t(std::min<int64_t>((count + 255) / 256, kMaxGroups)), 1);
}

Status VulkanDevice::binary(backend::ops::Binary op, const Buffer& a, const Buffer& b, int64_t count, int64_t bLen,
                            Buffer& out) {
    if (count <= 0) return Status::ok();
    if (bLen <= 0) return invalidArgument("binary op: bLen must be positive");
    const char* name = "add";
    switch (op) {
    case backend::ops::Binary::Add: name = "add"; break;
    case backend::ops::Binary::Mul: name = "mul"; break;
    case backend::ops::Binary::Swiglu: name = "swiglu"; break;
    case backend::ops::Binary::Geglu: name = "geglu"; break;
    }
    if ((op == backend::ops::Binary::Swiglu || op == backend::ops::Binary::Geglu) && bLen != count)
        return invalidArgument("gated op: gate and up must have the same length");
    HEARTH_ASSIGN_OR_RETURN(const Binding ba, whole(a));
    HEARTH_ASSIGN_OR_RETURN(const Binding bb, whole(b));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t count, bLen; float param; } p{uint32_t(count), uint32_t(bLen), 0.0f};
    return dispatch(name, {ba, bb, bo}, &p, sizeof p, uint32_t(std::min<int64_t>((count + 255) / 256, kMaxGroups)), 1);
}

Status VulkanDevice::swigluOai(const Buffer& gate, const Buffer& up, int64_t count, float alpha, float limit,
                               Buffer& out) {
    if (count <= 0) return Status::ok();
    HEARTH_ASSIGN_OR_RETURN(const Binding bg, whole(gate));
    HEARTH_ASSIGN_OR_RETURN(const Binding bu, whole(up));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t count, bLen; float alpha, limit; } p{uint32_t(count), uint32_t(count), alpha, limit};
    return dispatch("swiglu_oai", {bg, bu, bo}, &p, sizeof p,
                    uint32_t(std::min<int64_t>((count + 255) / 256, kMaxGroups)), 1);
}

// Up to 8 tokens, one workgroup per (row or 8 rows, slot, token) reads the chosen rows (matvec_id); more,
// with a scratch for the routing table, 64 x 32 tiles of one expert's rows by the pairs that chose
// it (moe_route, then matmul_id).
uint64_t VulkanDevice::matMulIdScratchBytes(int64_t nExp, int64_t k, int64_t n) const {
    return n > 8 ? uint64_t(2 * nExp + n * k) * 4 : 0;
}

Status VulkanDevice::matMulId(const backend::ops::DeviceExperts& e, const Buffer& x, int64_t xSlots,
                              const Buffer& ids, int64_t k, int64_t n, Buffer& y, Buffer* scratch) {
    const DeviceMatrix& w = e.matrix;
    const char* suffix = typeSuffix(w.type);
    if (!suffix) return unsupported(std::string("Vulkan matMulId: weight type ") + std::string(quant::typeName(w.type)));
    if (n <= 0 || k <= 0) return Status::ok();
    if (e.expertRows <= 0 || w.rows % e.expertRows != 0) return invalidArgument("matMulId: rows are not whole experts");
    if (xSlots != 1 && xSlots != k) return invalidArgument("matMulId: x must have 1 or k rows per token");
    const int64_t nExp = w.rows / e.expertRows;
    if (e.expertRows > kMaxGroups || k > kMaxGroups || n > kMaxGroups || nExp > kMaxGroups)
        return invalidArgument("matMulId: too many rows");
    if (uint64_t(x.size()) < uint64_t(n * xSlots * w.cols) * 4 || uint64_t(y.size()) < uint64_t(n * k * e.expertRows) * 4 ||
        uint64_t(ids.size()) < uint64_t(n * k) * 4)
        return invalidArgument("Vulkan matMulId: buffer too small");
    const uint64_t scratchBytes = matMulIdScratchBytes(nExp, k, n);
    const bool tiled = scratchBytes > 0 && scratch && scratch->size() >= scratchBytes;
    const bool rowForm = m_ctx->info.rowKernels && hasRowKernel(w.type);
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    HEARTH_ASSIGN_OR_RETURN(const Binding bi, whole(ids));
    HEARTH_ASSIGN_OR_RETURN(const Binding by, whole(y));
    HEARTH_ASSIGN_OR_RETURN(auto ranges, rowRanges(w, UINT32_MAX));
    HEARTH_ASSIGN_OR_RETURN(const BufferRange wr, bufferRange(*w.buffer, m_ctx.get()));
    const VkBuffer wb = wr.buffer->handle();
    const Binding bg = gridOf(w.type);
    Binding route{};
    if (tiled) {
        HEARTH_ASSIGN_OR_RETURN(route, whole(*scratch));
        const uint32_t rp[2] = {uint32_t(n * k), uint32_t(nExp)};
        HEARTH_RETURN_IF_ERROR(dispatch("moe_route", {bi, route}, rp, sizeof rp, 1, 1));
    }
    const RowsTile routed = rowsTile(w.type, RowForm::Routed), direct = rowsTile(w.type, RowForm::Direct);
    // Each range's dispatch covers every row of the chosen experts; rows of other ranges are skipped.
    for (const RowRange& rr : ranges) {
        const uint32_t p[8] = {uint32_t(w.cols), uint32_t(w.rowBytes), rr.byteBase,  rr.rowOffset,
                               rr.nRows,         uint32_t(e.expertRows), uint32_t(k), uint32_t(xSlots)};
        const Binding bw{wb, rr.bindOffset, rr.bindSize};
        if (rowForm && tiled)
            HEARTH_RETURN_IF_ERROR(dispatch(std::string("matmul_id_rows_") + suffix, {bw, bx, route, by, bg}, p, sizeof p,
                                            uint32_t((e.expertRows + routed.rows - 1) / routed.rows),
                                            uint32_t((n + routed.tokens - 1) / routed.tokens), uint32_t(nExp)));
        else if (rowForm)
            HEARTH_RETURN_IF_ERROR(dispatch(std::string("matvec_id_rows_") + suffix, {bw, bx, bi, by, bg}, p, sizeof p,
                                            uint32_t((e.expertRows + direct.rows - 1) / direct.rows), uint32_t(k),
                                            uint32_t(n)));
        else if (tiled)
            HEARTH_RETURN_IF_ERROR(dispatch(std::string("matmul_id_") + suffix, {bw, bx, route, by, bg}, p, sizeof p,
                                            uint32_t((e.expertRows + kTileRows - 1) / kTileRows),
                                            uint32_t((n + kTileTokens - 1) / kTileTokens), uint32_t(nExp)));
        else if (m_ctx->info.subgroupArithmetic)
            HEARTH_RETURN_IF_ERROR(dispatch(std::string("matvec_id_sg_") + suffix, {bw, bx, bi, by, bg}, p, sizeof p,
                                            uint32_t((e.expertRows + kMatvecRows - 1) / kMatvecRows), uint32_t(k),
                                            uint32_t(n)));
        else
            HEARTH_RETURN_IF_ERROR(dispatch(std::string("matvec_id_") + suffix, {bw, bx, bi, by, bg}, p, sizeof p,
                                            uint32_t(e.expertRows), uint32_t(k), uint32_t(n)));
    }
    return Status::ok();
}

Status VulkanDevice::gather(const Buffer& x, const Buffer& ids, int64_t rows, int64_t width, int64_t k, Buffer& out) {
    if (rows <= 0 || k <= 0) return Status::ok();
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    HEARTH_ASSIGN_OR_RETURN(const Binding bi, whole(ids));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t count, width, k; } p{uint32_t(rows * k), uint32_t(width), uint32_t(k)};
    const auto g = groups2d(uint64_t(rows * k), 64);
    return dispatch("gather", {bx, bi, bo}, &p, sizeof p, g[0], g[1]);
}

Status VulkanDevice::copyRows(const Buffer& x, uint64_t offset, int64_t rows, int64_t width, int64_t stride,
                              Buffer& out) {
    if (rows <= 0 || width <= 0) return Status::ok();
    if (offset + uint64_t(rows - 1) * uint64_t(stride) + uint64_t(width) > UINT32_MAX || uint64_t(rows * width) > UINT32_MAX)
        return unsupported("copy_rows: a view too large for 32-bit indices");
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t count, width, stride, offset; } p{uint32_t(rows * width), uint32_t(width), uint32_t(stride),
                                                      uint32_t(offset)};
    const auto g = groups2d(uint64_t(rows * width), 64);
    return dispatch("copy_rows", {bx, bo}, &p, sizeof p, g[0], g[1]);
}

Status VulkanDevice::weightedSum(const Buffer& y, const Buffer& w, int64_t n, int64_t k, int64_t width, Buffer& out) {
    if (n <= 0 || width <= 0) return Status::ok();
    HEARTH_ASSIGN_OR_RETURN(const Binding by, whole(y));
    HEARTH_ASSIGN_OR_RETURN(const Binding bw, whole(w));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t count, width, k; } p{uint32_t(n * width), uint32_t(width), uint32_t(k)};
    const auto g = groups2d(uint64_t(n * width), 64);
    return dispatch("weighted_sum", {by, bw, bo}, &p, sizeof p, g[0], g[1]);
}

Status VulkanDevice::softmax(const Buffer& x, int64_t rows, int64_t width, float scale, Buffer& out) {
    if (rows <= 0 || width <= 0) return Status::ok();
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t rows, width; float scale; } p{uint32_t(rows), uint32_t(width), scale};
    const auto g = groups2d(uint64_t(rows), 1);
    return dispatch("softmax", {bx, bo}, &p, sizeof p, g[0], g[1]);
}

Status VulkanDevice::topK(const Buffer& x, int64_t rows, int64_t width, int64_t k, Buffer& out) {
    if (rows <= 0) return Status::ok();
    if (width > kMaxTopKWidth) return unsupported("Vulkan topK: rows wider than " + std::to_string(kMaxTopKWidth));
    if (k < 1 || k > width) return invalidArgument("topK: k must be 1..width");
    HEARTH_ASSIGN_OR_RETURN(const Binding bx, whole(x));
    HEARTH_ASSIGN_OR_RETURN(const Binding bo, whole(out));
    struct { uint32_t rows, width, k; } p{uint32_t(rows), uint32_t(width), uint32_t(k)};
    const auto g = groups2d(uint64_t(rows), 1);
    return dispatch("top_k", {bx, bo}, &p, sizeof p, g[0], g[1]);
}

Status VulkanDevice::kvWrite(const Buffer& src, const Buffer& slots, int64_t n, int64_t rowSize, KvType type,
                             Buffer& cache) {
    return recordKvWrite(*this, src, slots, n, rowSize, type, cache);
}

Status VulkanDevice::attention(const Buffer& q, const Buffer& kCache, const Buffer& vCache, const Buffer& info,
                               const Buffer& tables, const Buffer* sinks, const backend::ops::AttentionParams& ap,
                               Buffer& out) {
    return recordAttention(*this, q, kCache, vCache, info, tables, sinks, ap, out);
}

} // namespace

Result<std::unique_ptr<VulkanOpDevice>> createVulkanDevice(const VulkanOptions& options) {
    HEARTH_ASSIGN_OR_RETURN(auto ctx, Context::create(options));
    auto dev = std::make_unique<VulkanDevice>(std::move(ctx));
    HEARTH_RETURN_IF_ERROR(dev->init());
    return std::unique_ptr<VulkanOpDevice>(std::move(dev));
}

} // namespace hearth::vk
