// The i-quants' grid tables uploaded to a Vulkan device (vk_iq_tables.h): quant::grids' bytes,
// copied as they are (the IQ1 grid as signed bytes), each table starting at a multiple of the
// device's storage-buffer offset alignment.
#include "backend/vulkan/vk_iq_tables.h"

#include "quant/iq_grids.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hearth::vk {

namespace {

// The tables in m_ranges' order, and which one a type reads (-1: none).
struct TableBytes {
    const void* data;
    uint64_t size;
};
const std::array<TableBytes, 6>& tableBytes() {
    namespace g = quant::grids;
    static const std::array<TableBytes, 6> tables{{{g::kIq2xxs.data(), g::kIq2xxs.size()},
                                                   {g::kIq2xs.data(), g::kIq2xs.size()},
                                                   {g::kIq2s.data(), g::kIq2s.size()},
                                                   {g::kIq3xxs.data(), g::kIq3xxs.size()},
                                                   {g::kIq3s.data(), g::kIq3s.size()},
                                                   {g::kIq1s.data(), g::kIq1s.size()}}};
    return tables;
}

int tableOf(quant::Type type) {
    switch (type) {
    case quant::Type::IQ2_XXS: return 0;
    case quant::Type::IQ2_XS: return 1;
    case quant::Type::IQ2_S: return 2;
    case quant::Type::IQ3_XXS: return 3;
    case quant::Type::IQ3_S: return 4;
    case quant::Type::IQ1_S:
    case quant::Type::IQ1_M: return 5;
    default: return -1;
    }
}

} // namespace

const char* gridTypeSuffix(quant::Type type) {
    switch (type) {
    case quant::Type::IQ1_S: return "iq1_s";
    case quant::Type::IQ1_M: return "iq1_m";
    case quant::Type::IQ2_XXS: return "iq2_xxs";
    case quant::Type::IQ2_XS: return "iq2_xs";
    case quant::Type::IQ2_S: return "iq2_s";
    case quant::Type::IQ3_XXS: return "iq3_xxs";
    case quant::Type::IQ3_S: return "iq3_s";
    default: return nullptr;
    }
}

Result<std::unique_ptr<IqTables>> IqTables::create(Context& ctx) {
    std::unique_ptr<IqTables> t(new IqTables());
    const uint64_t align = std::max<uint64_t>(ctx.offsetAlign, 16);
    uint64_t end = 0;
    for (size_t i = 0; i < t->m_ranges.size(); ++i) {
        const uint64_t offset = (end + align - 1) / align * align;
        t->m_ranges[i] = {offset, tableBytes()[i].size};
        end = offset + tableBytes()[i].size;
    }
    std::vector<uint8_t> bytes(size_t(end), 0);
    for (size_t i = 0; i < t->m_ranges.size(); ++i)
        std::memcpy(bytes.data() + t->m_ranges[i].offset, tableBytes()[i].data, size_t(tableBytes()[i].size));
    HEARTH_ASSIGN_OR_RETURN(t->m_buffer, VulkanBuffer::create(ctx, end, false));
    HEARTH_RETURN_IF_ERROR(t->m_buffer->write(0, bytes.data(), end));
    return t;
}

IqTables::Range IqTables::range(quant::Type type) const {
    const int i = tableOf(type);
    return i < 0 ? Range{} : m_ranges[size_t(i)];
}

} // namespace hearth::vk
