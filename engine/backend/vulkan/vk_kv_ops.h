// The paged K/V cache's ops on Vulkan: rows written into the pool (shaders kv_write.comp) and paged
// attention over it (attention.comp, causal or within the sequence) for F32, F16 and Q8_0 caches,
// the bytes of a cache row, and their recording through VulkanOpDevice::dispatchShader.
#pragma once

#include "backend/op_device.h"
#include "backend/vulkan/vk_device.h"

#include <cstdint>

namespace hearth::vk {

// Whether the kernels take K/V rows of rowSize values in a cache of this type: an even count for
// F32 and F16, a multiple of 32 (whole Q8_0 blocks) for Q8_0.
bool kvRowFits(int64_t rowSize, KvType type);

// Bytes of one token's row of rowSize values: 4 or 2 per value, or 34 per 32 values for Q8_0 (an
// fp16 scale and 32 int8 quants, as the CPU's PagedKvStore lays a Q8_0 row out).
uint64_t kvRowBytes(int64_t rowSize, KvType type);

// OpDevice::kvWrite: cache[slots[t]] = src[t] in the cache's type (Q8_0 quantized bit for bit as
// the CPU quantizes it).
Status recordKvWrite(VulkanOpDevice& d, const backend::Buffer& src, const backend::Buffer& slots, int64_t n,
                     int64_t rowSize, KvType type, backend::Buffer& cache);

// OpDevice::attention over a cache of p.kvType (Q8_0 values dequantized as d * q, products in fp32).
Status recordAttention(VulkanOpDevice& d, const backend::Buffer& q, const backend::Buffer& kCache,
                       const backend::Buffer& vCache, const backend::Buffer& info, const backend::Buffer& tables,
                       const backend::Buffer* sinks, const backend::ops::AttentionParams& p, backend::Buffer& out);

} // namespace hearth::vk
