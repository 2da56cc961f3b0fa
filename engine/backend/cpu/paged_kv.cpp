// CPU paged K/V storage.
#include "backend/cpu/paged_kv.h"

#include <algorithm>

namespace hearth::cpu {

PagedKvStore::PagedKvStore(int nLayers, int numBlocks, int blockSize, int nKvHeads, int headDim)
    : m_numBlocks(numBlocks), m_blockSize(blockSize), m_rowSize(int64_t(nKvHeads) * headDim) {
    const size_t perLayer = size_t(numBlocks) * size_t(blockSize) * size_t(m_rowSize);
    m_k.assign(size_t(nLayers), std::vector<float>(perLayer, 0.0f));
    m_v.assign(size_t(nLayers), std::vector<float>(perLayer, 0.0f));
}

int64_t PagedKvStore::slotOf(std::span<const int32_t> blockTable, int64_t pos) const {
    if (pos < 0) return -1;
    const int64_t index = pos / m_blockSize;
    if (index >= int64_t(blockTable.size())) return -1;
    const int32_t block = blockTable[size_t(index)];
    if (block < 0 || block >= m_numBlocks) return -1;
    return int64_t(block) * m_blockSize + pos % m_blockSize;
}

void PagedKvStore::copyBlock(int32_t src, int32_t dst) {
    const int64_t n = int64_t(m_blockSize) * m_rowSize;
    for (size_t l = 0; l < m_k.size(); ++l) {
        std::copy_n(m_k[l].begin() + src * n, n, m_k[l].begin() + dst * n);
        std::copy_n(m_v[l].begin() + src * n, n, m_v[l].begin() + dst * n);
    }
}

uint64_t PagedKvStore::bytes() const {
    uint64_t total = 0;
    for (size_t l = 0; l < m_k.size(); ++l) total += (m_k[l].size() + m_v[l].size()) * 4;
    return total;
}

} // namespace hearth::cpu
