// Random weight blocks of the types the reference quantizer cannot make without an importance
// matrix (the grid i-quants) and the ternary ones: every bit pattern is a valid block (each index
// names a grid row), so random bytes with a finite scale per block make a test matrix.
#pragma once

#include "hearth/quant.h"
#include "quant/blocks_iq.h"

#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

namespace hearth::test {

inline bool isGridOrTernary(quant::Type t) {
    using T = quant::Type;
    return t == T::IQ1_S || t == T::IQ1_M || t == T::IQ2_XXS || t == T::IQ2_XS || t == T::IQ2_S || t == T::IQ3_XXS ||
           t == T::IQ3_S || t == T::TQ1_0 || t == T::TQ2_0;
}

// `rows` rows of `cols` values (a multiple of 256) of such a type; each block's scale is a half in
// ±[0.01, 2] (IQ1_M's sits in the top nibbles of its scale words).
inline std::vector<uint8_t> randomGridBlocks(quant::Type type, int64_t rows, int64_t cols, uint32_t seed) {
    const uint64_t rowBytes = quant::rowBytes(type, uint64_t(cols)).value();
    std::vector<uint8_t> bytes(rowBytes * uint64_t(rows));
    std::mt19937 rng(seed);
    for (uint8_t& b : bytes) b = uint8_t(rng());
    const size_t blockBytes = size_t(quant::rowBytes(type, uint64_t(quant::kQKK)).value());
    std::uniform_real_distribution<float> scale(0.01f, 2.0f);
    for (size_t at = 0; at < bytes.size(); at += blockBytes) {
        uint8_t* b = bytes.data() + at;
        const uint16_t d = quant::floatToHalf(scale(rng) * (rng() % 2 ? 1.0f : -1.0f));
        if (type == quant::Type::IQ1_M) {
            auto* blk = reinterpret_cast<quant::BlockIQ1_M*>(b);
            for (int i = 0; i < 4; ++i)
                blk->scales[2 * i + 1] = uint8_t((blk->scales[2 * i + 1] & 0x0f) | ((d >> 4 * i) & 15) << 4);
        } else {
            const size_t dAt = type == quant::Type::TQ1_0   ? offsetof(quant::BlockTQ1_0, d)
                               : type == quant::Type::TQ2_0 ? offsetof(quant::BlockTQ2_0, d)
                                                            : 0;
            std::memcpy(b + dAt, &d, sizeof d);
        }
    }
    return bytes;
}

} // namespace hearth::test
