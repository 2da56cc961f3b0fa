// Derives the i-quant lattice grids from a reference dequantizer: crafted blocks with a unit
// scale, zero signs and one grid index per group decode to the grid values themselves (times a
// known power of two, or shifted by the IQ1 delta). Shared by tools/gen_iq_grids (which writes
// engine/quant/iq_grid_codes.inc) and the test that re-derives the tables and compares.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hearth::test {

using ToFloatFn = void (*)(const void* x, float* y, int64_t k);

struct GridSpec {
    const char* name;         // as in engine/quant/iq_grids.h (kIq2xxs -> "iq2xxs")
    int ggmlType;             // the type whose dequantizer reads it
    int entries, width;       // rows, values per row
    int blockBytes, perBlock; // block size, grid rows one block decodes
};

inline const std::vector<GridSpec>& gridSpecs() {
    static const std::vector<GridSpec> specs = {
        {"iq2xxs", 16, 256, 8, 66, 32}, {"iq2xs", 17, 512, 8, 74, 32},
        {"iq2s", 22, 1024, 8, 82, 32},  {"iq3xxs", 18, 256, 4, 98, 64},
        {"iq3s", 21, 512, 4, 110, 64},  {"iq1s", 19, 2048, 8, 50, 32},
    };
    return specs;
}

// Writes into `block` (zeroed, fp16 scale 1.0) grid row `index` as the block's row `slot`.
inline void placeIndex(const GridSpec& s, uint8_t* block, int slot, int index) {
    uint8_t* q = block + 2; // every probed layout starts with its fp16 d
    switch (s.ggmlType) {
    case 16:
        q[8 * (slot / 4) + slot % 4] = uint8_t(index);
        break; // word 0 of each 32
    case 17:
        q[2 * slot] = uint8_t(index), q[2 * slot + 1] = uint8_t(index >> 8);
        break;
    case 22:
        q[slot] = uint8_t(index);
        q[64 + slot / 4] |= uint8_t((index >> 8) << 2 * (slot % 4));
        break;
    case 18:
        q[slot] = uint8_t(index);
        break;
    case 21:
        q[slot] = uint8_t(index);
        q[64 + slot / 8] |= uint8_t((index >> 8) << slot % 8);
        break;
    case 19: {
        q[slot] = uint8_t(index);
        uint8_t* qh = q + 32 + 2 * (slot / 4);
        const unsigned bits = unsigned(index >> 8) << 3 * (slot % 4);
        qh[0] |= uint8_t(bits), qh[1] |= uint8_t(bits >> 8);
        break;
    }
    default:
        break;
    }
}

// The decoded value of one grid value: IQ2 decodes scale 0 as d/8, IQ3_XXS as d/4, IQ3_S as d,
// IQ1_S as d * (grid + 1/8).
inline double gridValue(const GridSpec& s, float y) {
    switch (s.ggmlType) {
    case 16:
    case 17:
    case 22:
        return double(y) * 8.0;
    case 18:
        return double(y) * 4.0;
    case 19:
        return double(y) - 0.125;
    default:
        return double(y);
    }
}

// Fills `values` (entries * width, row-major) from the reference; returns an error or "".
inline std::string probeGrid(const GridSpec& s, ToFloatFn toFloat, std::vector<int>& values) {
    const int blocks = s.entries / s.perBlock;
    std::vector<uint8_t> bytes(size_t(blocks) * size_t(s.blockBytes), 0);
    for (int b = 0; b < blocks; ++b) {
        uint8_t* block = bytes.data() + size_t(b) * size_t(s.blockBytes);
        block[0] = 0x00, block[1] = 0x3c; // fp16 1.0
        for (int slot = 0; slot < s.perBlock; ++slot)
            placeIndex(s, block, slot, b * s.perBlock + slot);
    }
    std::vector<float> y(size_t(blocks) * 256);
    toFloat(bytes.data(), y.data(), int64_t(y.size()));
    values.assign(size_t(s.entries) * size_t(s.width), 0);
    for (size_t i = 0; i < values.size(); ++i) {
        const double v = gridValue(s, y[i]);
        if (v != std::floor(v) || v < -128 || v > 255)
            return std::string(s.name) + ": value " + std::to_string(i) + " decodes to " +
                   std::to_string(y[i]) + ", not a grid integer";
        values[i] = int(v);
    }
    return {};
}

} // namespace hearth::test
