// Recording of the K/V cache ops on Vulkan (vk_kv_ops.h): their checks, push constants and grids
// (kv_write: 64 invocations per workgroup, one per pair of values or per Q8_0 block; attention:
// one workgroup per head and token) and the shader module of each cache type.
#include "backend/vulkan/vk_kv_ops.h"

#include <algorithm>
#include <string>

namespace hearth::vk {

namespace {

using backend::Buffer;

constexpr uint64_t kKvWriteLocal = 64; // kv_write.comp's workgroup
constexpr int64_t kQ8Block = 32;       // values per Q8_0 block
constexpr uint64_t kQ8BlockBytes = 34;

const char* kvSuffix(KvType t) {
    switch (t) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::Q8_0: return "q8_0";
    }
    return "f32";
}

} // namespace

bool kvRowFits(int64_t rowSize, KvType type) {
    return rowSize > 0 && rowSize % (type == KvType::Q8_0 ? kQ8Block : 2) == 0;
}

uint64_t kvRowBytes(int64_t rowSize, KvType type) {
    switch (type) {
    case KvType::F32: return uint64_t(rowSize) * 4;
    case KvType::F16: return uint64_t(rowSize) * 2;
    case KvType::Q8_0: return uint64_t(rowSize) / kQ8Block * kQ8BlockBytes;
    }
    return 0;
}

Status recordKvWrite(VulkanOpDevice& d, const Buffer& src, const Buffer& slots, int64_t n, int64_t rowSize, KvType type,
                     Buffer& cache) {
    if (n <= 0) return Status::ok();
    if (!kvRowFits(rowSize, type))
        return invalidArgument(std::string("kvWrite: rows of ") + std::to_string(rowSize) + " values in a " +
                               kvTypeName(type) + " cache (F32/F16: even, Q8_0: a multiple of 32)");
    // An invocation per pair of values, or per Q8_0 block (the atomics at its ends keep a
    // neighbouring block's half of a shared word).
    const uint64_t items = uint64_t(n) * uint64_t(type == KvType::Q8_0 ? rowSize / kQ8Block : rowSize / 2);
    const uint64_t groups = (items + kKvWriteLocal - 1) / kKvWriteLocal;
    const uint64_t gx = std::min<uint64_t>(groups, uint64_t(kMaxWorkGroups)), gy = (groups + gx - 1) / gx;
    if (gy > uint64_t(kMaxWorkGroups)) return unsupported("Vulkan kvWrite: too many rows");
    struct { uint32_t n, rowSize; } p{uint32_t(n), uint32_t(rowSize)};
    return d.dispatchShader(std::string("kv_write_") + kvSuffix(type), {&src, &slots, &cache}, &p, sizeof p,
                            uint32_t(gx), uint32_t(gy));
}

Status recordAttention(VulkanOpDevice& d, const Buffer& q, const Buffer& kCache, const Buffer& vCache,
                       const Buffer& info, const Buffer& tables, const Buffer* sinks,
                       const backend::ops::AttentionParams& ap, Buffer& out) {
    if (ap.n <= 0) return Status::ok();
    if (ap.headDim > kMaxHeadDim || ap.headDim <= 0)
        return unsupported("Vulkan attention: headDim must be in [1, 256]");
    if (ap.nHeadKv <= 0 || ap.nHead % ap.nHeadKv) return invalidArgument("attention: nHead % nHeadKv != 0");
    if (!kvRowFits(int64_t(ap.nHeadKv) * ap.headDim, ap.kvType))
        return invalidArgument(std::string("attention: K/V rows that a ") + kvTypeName(ap.kvType) +
                               " cache cannot hold");
    if (ap.window < 0 || ap.softcap < 0.0f) return invalidArgument("attention: negative window or soft cap");
    if (ap.n > kMaxWorkGroups || ap.nHead > kMaxWorkGroups) return invalidArgument("too many tokens");
    struct {
        uint32_t n, nHead, nHeadKv, headDim, blockSize;
        float scale;
        uint32_t window;
        float softcap;
        uint32_t hasSinks;
    } p{uint32_t(ap.n), uint32_t(ap.nHead), uint32_t(ap.nHeadKv), uint32_t(ap.headDim), uint32_t(ap.blockSize),
        ap.scale, uint32_t(ap.window), ap.softcap, sinks ? 1u : 0u};
    const std::string name = std::string(ap.causal ? "attention_" : "attention_within_") + kvSuffix(ap.kvType);
    return d.dispatchShader(name, {&q, &kCache, &vCache, &info, &tables, &out, sinks}, &p, sizeof p,
                            uint32_t(ap.nHead), uint32_t(ap.n));
}

} // namespace hearth::vk
