// The compute shaders compiled at build time (shaders/*.comp, one module per variant), embedded
// in the binary as SPIR-V words by shaders/embed_spirv.cmake.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace hearth::vk {

struct SpirvModule {
    const char* name;      // "matvec_q4_k", "rms_norm", ...
    const uint32_t* words;
    size_t wordCount;
};

std::span<const SpirvModule> embeddedSpirv();

} // namespace hearth::vk
