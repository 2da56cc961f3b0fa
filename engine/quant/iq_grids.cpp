// Expands the compact i-quant grid codes (iq_grid_codes.inc, generated from the reference's
// dequantizers) into byte tables at compile time.
#include "quant/iq_grids.h"

#include <cstddef>
#include <iterator>

namespace hearth::quant::grids {

namespace {

#include "quant/iq_grid_codes.inc"

template <typename T, int Width, size_t Entries, size_t Levels>
constexpr std::array<T, Entries * Width> expand(const uint16_t (&codes)[Entries], int bits,
                                                const int8_t (&levels)[Levels]) {
    std::array<T, Entries * Width> out{};
    const unsigned mask = (1u << bits) - 1u;
    for (size_t e = 0; e < Entries; ++e)
        for (int j = 0; j < Width; ++j)
            out[e * Width + size_t(j)] = T(levels[(codes[e] >> (bits * j)) & mask]);
    return out;
}

constexpr CodeTable kCodeTables[] = {
    {"iq2xxs", kIq2xxsCodes, 256, 8, kIq2xxsBits, kIq2xxsLevels, int(std::size(kIq2xxsLevels))},
    {"iq2xs", kIq2xsCodes, 512, 8, kIq2xsBits, kIq2xsLevels, int(std::size(kIq2xsLevels))},
    {"iq2s", kIq2sCodes, 1024, 8, kIq2sBits, kIq2sLevels, int(std::size(kIq2sLevels))},
    {"iq3xxs", kIq3xxsCodes, 256, 4, kIq3xxsBits, kIq3xxsLevels, int(std::size(kIq3xxsLevels))},
    {"iq3s", kIq3sCodes, 512, 4, kIq3sBits, kIq3sLevels, int(std::size(kIq3sLevels))},
    {"iq1s", kIq1sCodes, 2048, 8, kIq1sBits, kIq1sLevels, int(std::size(kIq1sLevels))},
};

} // namespace

alignas(64) constexpr std::array<uint8_t, 256 * 8> kIq2xxs =
    expand<uint8_t, 8>(kIq2xxsCodes, kIq2xxsBits, kIq2xxsLevels);
alignas(64) constexpr std::array<uint8_t, 512 * 8> kIq2xs =
    expand<uint8_t, 8>(kIq2xsCodes, kIq2xsBits, kIq2xsLevels);
alignas(64) constexpr std::array<uint8_t, 1024 * 8> kIq2s =
    expand<uint8_t, 8>(kIq2sCodes, kIq2sBits, kIq2sLevels);
alignas(64) constexpr std::array<uint8_t, 256 * 4> kIq3xxs =
    expand<uint8_t, 4>(kIq3xxsCodes, kIq3xxsBits, kIq3xxsLevels);
alignas(64) constexpr std::array<uint8_t, 512 * 4> kIq3s =
    expand<uint8_t, 4>(kIq3sCodes, kIq3sBits, kIq3sLevels);
alignas(64) constexpr std::array<int8_t, 2048 * 8> kIq1s =
    expand<int8_t, 8>(kIq1sCodes, kIq1sBits, kIq1sLevels);

const CodeTable* codeTables(int* count) {
    *count = int(std::size(kCodeTables));
    return kCodeTables;
}

} // namespace hearth::quant::grids
