// The table of ggml tensor types (ids, names, block sizes), checked size arithmetic, and the
// public half-precision conversions.
#include "hearth/quant.h"

#include "quant/half.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <string>

namespace hearth::quant {

namespace {

// Every type id a GGUF file may name; the flags say which ones we can convert today.
constexpr TypeInfo kTypes[] = {
    // type          name       elems bytes  deq    quant
    {Type::F32, "F32", 1, 4, true, true},
    {Type::F16, "F16", 1, 2, true, true},
    {Type::Q4_0, "Q4_0", 32, 18, true, true},
    {Type::Q4_1, "Q4_1", 32, 20, true, true},
    {Type::Q5_0, "Q5_0", 32, 22, true, true},
    {Type::Q5_1, "Q5_1", 32, 24, true, true},
    {Type::Q8_0, "Q8_0", 32, 34, true, true},
    {Type::Q8_1, "Q8_1", 32, 36, true, true},
    {Type::Q2_K, "Q2_K", 256, 84, true, true},
    {Type::Q3_K, "Q3_K", 256, 110, true, true},
    {Type::Q4_K, "Q4_K", 256, 144, true, true},
    {Type::Q5_K, "Q5_K", 256, 176, true, true},
    {Type::Q6_K, "Q6_K", 256, 210, true, true},
    {Type::Q8_K, "Q8_K", 256, 292, true, true},
    {Type::IQ2_XXS, "IQ2_XXS", 256, 66, true, false},
    {Type::IQ2_XS, "IQ2_XS", 256, 74, true, false},
    {Type::IQ3_XXS, "IQ3_XXS", 256, 98, true, true},
    {Type::IQ1_S, "IQ1_S", 256, 50, true, false},
    {Type::IQ4_NL, "IQ4_NL", 32, 18, true, true},
    {Type::IQ3_S, "IQ3_S", 256, 110, true, true},
    {Type::IQ2_S, "IQ2_S", 256, 82, true, true},
    {Type::IQ4_XS, "IQ4_XS", 256, 136, true, true},
    {Type::I8, "I8", 1, 1, false, false},
    {Type::I16, "I16", 1, 2, false, false},
    {Type::I32, "I32", 1, 4, false, false},
    {Type::I64, "I64", 1, 8, false, false},
    {Type::F64, "F64", 1, 8, false, false},
    {Type::IQ1_M, "IQ1_M", 256, 56, true, true},
    {Type::BF16, "BF16", 1, 2, true, true},
    {Type::TQ1_0, "TQ1_0", 256, 54, true, true},
    {Type::TQ2_0, "TQ2_0", 256, 66, true, true},
    {Type::MXFP4, "MXFP4", 32, 17, true, true},
};

constexpr uint32_t kMaxId = 64;

constexpr std::array<int8_t, kMaxId> buildIndex() {
    std::array<int8_t, kMaxId> idx{};
    for (auto& v : idx) v = -1;
    for (size_t i = 0; i < std::size(kTypes); ++i) idx[uint32_t(kTypes[i].type)] = int8_t(i);
    return idx;
}
constexpr auto kIndex = buildIndex();

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) !=
            std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

} // namespace

const TypeInfo* typeInfo(uint32_t rawId) {
    if (rawId >= kMaxId || kIndex[rawId] < 0) return nullptr;
    return &kTypes[size_t(kIndex[rawId])];
}

std::string_view typeName(Type t) {
    const TypeInfo* info = typeInfo(t);
    return info ? info->name : std::string_view("?");
}

std::optional<Type> typeFromName(std::string_view name) {
    for (const TypeInfo& t : kTypes)
        if (equalsIgnoreCase(t.name, name)) return t.type;
    return std::nullopt;
}

std::span<const TypeInfo> allTypes() { return kTypes; }

Result<uint64_t> rowBytes(Type t, uint64_t n) {
    const TypeInfo* info = typeInfo(t);
    if (!info) return unsupported("unknown tensor type id " + std::to_string(uint32_t(t)));
    if (n % info->blockElems != 0)
        return invalidArgument(std::to_string(n) + " elements is not a multiple of " +
                               std::string(info->name) + "'s block of " +
                               std::to_string(info->blockElems));
    const uint64_t blocks = n / info->blockElems;
    if (blocks > std::numeric_limits<uint64_t>::max() / info->blockBytes)
        return outOfRange("tensor size overflows 64 bits");
    return blocks * info->blockBytes;
}

float f16ToF32(uint16_t h) { return halfToFloat(h); }
uint16_t f32ToF16(float f) { return floatToHalf(f); }
float bf16ToF32(uint16_t h) { return bf16ToFloat(h); }
uint16_t f32ToBf16(float f) { return floatToBf16(f); }

} // namespace hearth::quant
