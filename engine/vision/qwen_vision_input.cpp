// The Qwen3-VL tower's step input: its position table resized to the image's patch grid (ggml's
// bilinear interpolation with aligned corners, which mtmd applies in the tower's graph) and the
// patches in the 2 x 2 square order its merger reads them in.
#include "vision/qwen_vision_input.h"

#include "hearth/quant.h"

#include <algorithm>
#include <cmath>

namespace hearth::vision {

Result<PositionTable> readPositionTable(const gguf::File& file) {
    const gguf::TensorInfo* t = file.findTensor("v.position_embd.weight");
    if (!t || t->nDims != 2) return notFound("missing 2-D tensor 'v.position_embd.weight'");
    if (t->type != quant::Type::F32 && t->type != quant::Type::F16 && t->type != quant::Type::BF16)
        return unsupported("v.position_embd.weight: type " + std::string(quant::typeName(t->type)));
    PositionTable out;
    out.width = int64_t(t->ne[0]);
    out.side = int(std::llround(std::sqrt(double(t->ne[1]))));
    if (out.side < 2 || uint64_t(out.side) * uint64_t(out.side) != t->ne[1] || out.width < 1)
        return invalidFormat("v.position_embd.weight: its rows are not a square grid of at least 2 x 2");
    const uint8_t* data = file.tensorData(*t);
    if (!data) return invalidFormat("v.position_embd.weight: its data is not in the file");
    std::vector<uint8_t> bytes(size_t(t->bytes));
    HEARTH_RETURN_IF_ERROR(file.dataReader()->read(data, bytes.size(), bytes.data()));
    out.values.resize(size_t(t->elements()));
    HEARTH_RETURN_IF_ERROR(quant::dequantizeRow(t->type, bytes.data(), out.values.data(), int64_t(t->elements())));
    return out;
}

std::vector<float> resizePositions(const PositionTable& table, int columns, int rows) {
    const int64_t E = table.width, S = table.side;
    std::vector<float> out(size_t(columns) * size_t(rows) * size_t(E));
    if (columns == S && rows == S) {
        std::copy(table.values.begin(), table.values.end(), out.begin());
        return out;
    }
    // Source coordinate of a destination index along one axis, and its two neighbours.
    struct Tap {
        int64_t lo, hi;
        float frac;
    };
    auto taps = [&](int n) {
        const float sf = n > 1 && S > 1 ? float(n - 1) / float(S - 1) : float(n) / float(S);
        std::vector<Tap> v(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
            const float x = float(i) / sf;
            const int64_t x0 = int64_t(std::floor(x));
            Tap& t = v[size_t(i)];
            t.lo = std::clamp<int64_t>(x0, 0, S - 1);
            t.hi = std::clamp<int64_t>(x0 + 1, 0, S - 1);
            t.frac = std::clamp(x - float(t.lo), 0.0f, 1.0f);
        }
        return v;
    };
    const std::vector<Tap> tx = taps(columns), ty = taps(rows);
    const float* T = table.values.data();
    float* o = out.data();
    for (int y = 0; y < rows; ++y)
        for (int x = 0; x < columns; ++x, o += E) {
            const float dx = tx[size_t(x)].frac, dy = ty[size_t(y)].frac;
            const float* a = T + (ty[size_t(y)].lo * S + tx[size_t(x)].lo) * E;
            const float* b = T + (ty[size_t(y)].lo * S + tx[size_t(x)].hi) * E;
            const float* c = T + (ty[size_t(y)].hi * S + tx[size_t(x)].lo) * E;
            const float* d = T + (ty[size_t(y)].hi * S + tx[size_t(x)].hi) * E;
            for (int64_t e = 0; e < E; ++e)
                o[e] = a[e] * (1 - dx) * (1 - dy) + b[e] * dx * (1 - dy) + c[e] * (1 - dx) * dy + d[e] * dx * dy;
        }
    return out;
}

int64_t squareOrderPatch(int64_t i, int columns) {
    const int64_t square = i / 4, k = i % 4, perRow = columns / 2;
    const int64_t y = (square / perRow) * 2 + k / 2, x = (square % perRow) * 2 + k % 2;
    return y * columns + x;
}

std::vector<float> squareOrderRows(const std::vector<float>& pixels, int64_t patchWidth,
                                   const std::vector<float>& positions, int64_t positionWidth, int columns,
                                   int rows) {
    const int64_t n = int64_t(columns) * rows, width = patchWidth + positionWidth;
    std::vector<float> out(size_t(n * width));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t p = squareOrderPatch(i, columns);
        float* o = out.data() + i * width;
        std::copy_n(pixels.begin() + p * patchWidth, patchWidth, o);
        std::copy_n(positions.begin() + p * positionWidth, positionWidth, o + patchWidth);
    }
    return out;
}

} // namespace hearth::vision
