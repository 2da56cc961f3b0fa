// The lattice grids the 1-, 2- and 3-bit i-quants (IQ1_S/IQ1_M, IQ2_XXS/XS/S, IQ3_XXS/S) index
// into, expanded to one byte per value at compile time from the compact codes in
// iq_grid_codes.inc (derived by probing the reference dequantizers; see tests/tools).
#pragma once

#include <array>
#include <cstdint>

namespace hearth::quant::grids {

// Every table of one kind: `entries` rows of `width` bytes, row i at data + i * width.
// IQ2 grids hold unsigned magnitudes (8, 25, 43), IQ3 grids unsigned magnitudes of width 4,
// the IQ1 grid signed bytes (-1, 0, 1).
extern const std::array<uint8_t, 256 * 8> kIq2xxs;
extern const std::array<uint8_t, 512 * 8> kIq2xs;
extern const std::array<uint8_t, 1024 * 8> kIq2s;
extern const std::array<uint8_t, 256 * 4> kIq3xxs;
extern const std::array<uint8_t, 512 * 4> kIq3s;
extern const std::array<int8_t, 2048 * 8> kIq1s;

// The compact form the expansion starts from, for the test that re-derives it from the oracle:
// each entry packs its values' level indices, `bits` per value, value 0 in the low bits.
struct CodeTable {
    const char* name;
    const uint16_t* codes;
    int entries, width, bits;
    const int8_t* levels;
    int levelCount;
};
const CodeTable* codeTables(int* count);

// The eight sign bits of an IQ2/IQ3 sign index: the 7 stored bits plus an eighth that makes the
// number of set bits even (sign bit j negates value j of the group).
constexpr uint8_t evenParitySigns(uint32_t i) {
    i &= 127u;
    uint32_t p = i ^ (i >> 4);
    p ^= p >> 2;
    p ^= p >> 1;
    return uint8_t(i | (p & 1u) << 7);
}

} // namespace hearth::quant::grids
