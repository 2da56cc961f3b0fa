// Lookup structures the grid i-quant quantizers search with, built once from the grids on first
// use: for every point of the level lattice, its grid row, or the grid rows nearest to it.
#pragma once

#include <cstdint>
#include <vector>

namespace hearth::quant::detail {

// A grid of `entries` rows of `width` level indices (0..levels-1). A lattice point is keyed by
// its level indices, `bits` per value, value 0 lowest.
struct GridSearch {
    int width = 0, bits = 0;
    std::vector<uint8_t> level;    // [entries * width] level index of each grid value
    std::vector<int32_t> rowOfKey; // [1 << (bits * width)] grid row, or -1 - offset into `near`
    std::vector<uint16_t> near;    // per off-grid key: a count, then that many grid rows

    // The grid row of `key`, or -1 when the key is not on the grid.
    int row(uint32_t key) const { return rowOfKey[key] >= 0 ? rowOfKey[key] : -1; }
    // The nearest grid rows of an off-grid key: near[0] is their count.
    const uint16_t* neighbours(uint32_t key) const { return near.data() - rowOfKey[key] - 1; }
};

enum class Grid { Iq3xxs, Iq3s, Iq2xxs, Iq2xs, Iq2s, Iq1s };

// Built on first call (thread-safe); neighbours of an off-grid point are the grid rows within
// its `nearest distinct squared distances` closest distances (ties ordered by row), as the
// reference's tables hold.
const GridSearch& gridSearch(Grid g);

} // namespace hearth::quant::detail
