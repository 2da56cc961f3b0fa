// The grid tables of the 1-, 2- and 3-bit i-quants on a Vulkan device: quant::grids' bytes in one
// device buffer written at device creation, each table at an offset the device can bind, so that
// the weight kernels of a grid type read their table through dequant.glsl's GRID_BINDING.
#pragma once

#include "backend/vulkan/vk_context.h"
#include "hearth/quant.h"

#include <array>
#include <memory>

namespace hearth::vk {

// The shader-name suffix of a grid i-quant type ("iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s",
// "iq3_xxs", "iq3_s"); nullptr for every other type.
const char* gridTypeSuffix(quant::Type type);

class IqTables {
public:
    static Result<std::unique_ptr<IqTables>> create(Context& ctx);

    // Bytes [offset, offset + size) of the buffer holding the table `type` reads (IQ1_S and IQ1_M
    // share kIq1s); size 0 for a type without a grid.
    struct Range {
        uint64_t offset = 0, size = 0;
    };
    Range range(quant::Type type) const;
    VkBuffer handle() const { return m_buffer->handle(); }

private:
    IqTables() = default;

    std::unique_ptr<VulkanBuffer> m_buffer;
    std::array<Range, 6> m_ranges{}; // kIq2xxs, kIq2xs, kIq2s, kIq3xxs, kIq3s, kIq1s
};

} // namespace hearth::vk
