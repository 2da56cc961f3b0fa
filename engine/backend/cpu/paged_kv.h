// K/V storage for the CPU path: fp32 values addressed by KV-cache block ids, so attention reads
// a sequence's history through its block table (slot = block * blockSize + offset).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hearth::cpu {

class PagedKvStore {
public:
    // Layout per layer: [block][offset][kvHead][headDim] for K and likewise for V.
    PagedKvStore(int nLayers, int numBlocks, int blockSize, int nKvHeads, int headDim);

    int blockSize() const { return m_blockSize; }
    int numBlocks() const { return m_numBlocks; }
    int64_t rowSize() const { return m_rowSize; } // nKvHeads * headDim floats per token

    float* key(int layer, int64_t slot) { return m_k[size_t(layer)].data() + slot * m_rowSize; }
    float* value(int layer, int64_t slot) { return m_v[size_t(layer)].data() + slot * m_rowSize; }

    // The slot of position `pos` of a sequence with this block table, or -1 when unmapped.
    int64_t slotOf(std::span<const int32_t> blockTable, int64_t pos) const;

    // Copies a block's contents (copy-on-write after a fork).
    void copyBlock(int32_t src, int32_t dst);

    uint64_t bytes() const;

private:
    int m_numBlocks;
    int m_blockSize;
    int64_t m_rowSize;
    std::vector<std::vector<float>> m_k, m_v;
};

} // namespace hearth::cpu
