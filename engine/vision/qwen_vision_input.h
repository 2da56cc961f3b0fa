// The step input of the Qwen3-VL vision tower (model/qwen3vl_vision.cpp): its learned position
// table read from the projector and resized to an image's patch grid as mtmd resizes it, and the
// patches reordered 2 x 2 square by square, each with its position row beside its pixels.
#pragma once

#include "hearth/gguf.h"
#include "hearth/status.h"

#include <cstdint>
#include <vector>

namespace hearth::vision {

// The tower's position table, [side²][width] row-major by (row, column) of a side x side grid.
struct PositionTable {
    int side = 0;
    int64_t width = 0;
    std::vector<float> values;
};

// v.position_embd.weight of the projector file (F32, F16 or BF16), its rows a square.
Result<PositionTable> readPositionTable(const gguf::File& file);

// The table resized to columns x rows as ggml's bilinear interpolation with aligned corners
// computes it (the same single-precision expressions): [rows · columns][width], row-major.
std::vector<float> resizePositions(const PositionTable& table, int columns, int rows);

// Patch i of the step (i in [0, columns · rows), both even): square i / 4 (row-major over the
// squares), within it top left, top right, bottom left, bottom right. Returns the row-major
// index of the patch in the grid.
int64_t squareOrderPatch(int64_t i, int columns);

// The step rows: per patch in square order, its pixels (`patchWidth` values of `pixels`, which
// holds the grid's patches row-major) followed by its resized position row.
std::vector<float> squareOrderRows(const std::vector<float>& pixels, int64_t patchWidth,
                                   const std::vector<float>& positions, int64_t positionWidth, int columns,
                                   int rows);

} // namespace hearth::vision
