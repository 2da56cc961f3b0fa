// K/V storage for the CPU path, addressed by KV-cache block ids: attention reads a sequence's
// history through its block table (slot = block * blockSize + offset). Rows are stored as F32,
// F16 or Q8_0 (blocks of 32 along the row) and converted on write and read.
#pragma once

#include "backend/cpu/zeroed_memory.h"
#include "hearth/engine.h"
#include "hearth/status.h"

#include <cstdint>
#include <span>
#include <vector>

namespace hearth::cpu {

class PagedKvStore {
public:
    // Layout per layer: [block][offset][row] for K and likewise for V, where a row is
    // [kvHead][headDim] values in `type`. Q8_0 needs nKvHeads * headDim to be a multiple of 32.
    static Result<PagedKvStore> create(int nLayers, int numBlocks, int blockSize, int nKvHeads,
                                       int headDim, KvType type = KvType::F32);
    // F32, for tests: a failed allocation leaves a store of no layers.
    PagedKvStore(int nLayers, int numBlocks, int blockSize, int nKvHeads, int headDim);

    // Bytes of one token's K (or V) row of one layer.
    static uint64_t rowBytes(int64_t rowSize, KvType type);

    int blockSize() const { return m_blockSize; }
    int numBlocks() const { return m_numBlocks; }
    int64_t rowSize() const { return m_rowSize; } // nKvHeads * headDim values per token
    int layers() const { return m_layers; }
    KvType type() const { return m_type; }

    // Converts and stores / loads one token's row (rowSize floats).
    void writeKey(int layer, int64_t slot, const float* row);
    void writeValue(int layer, int64_t slot, const float* row);
    void readKey(int layer, int64_t slot, float* row) const;
    void readValue(int layer, int64_t slot, float* row) const;
    // Loads values [first, first + count) of one row: one KV head's slice. For Q8_0, first and
    // count must be multiples of 32 (else use readKey/readValue).
    void readKeyPart(int layer, int64_t slot, int64_t first, int64_t count, float* out) const;
    void readValuePart(int layer, int64_t slot, int64_t first, int64_t count, float* out) const;

    // Hints that the K and V values [first, first + count) of these slots' rows are read soon
    // (software prefetch: rows of one head are a row apart, too far for the hardware to follow).
    void prefetch(int layer, int64_t slot0, int64_t slots, int64_t first, int64_t count) const;

    // The slot of position `pos` of a sequence with this block table, or -1 when unmapped.
    int64_t slotOf(std::span<const int32_t> blockTable, int64_t pos) const;

    // Copies a block's contents (copy-on-write after a fork).
    void copyBlock(int32_t src, int32_t dst);

    uint64_t bytes() const;

private:
    PagedKvStore() = default;
    Status init(int nLayers, int numBlocks, int blockSize, int nKvHeads, int headDim, KvType type);
    uint8_t* keyRow(int layer, int64_t slot) { return m_k.data() + (uint64_t(layer) * m_slots + uint64_t(slot)) * m_rowBytes; }
    uint8_t* valueRow(int layer, int64_t slot) { return m_v.data() + (uint64_t(layer) * m_slots + uint64_t(slot)) * m_rowBytes; }
    const uint8_t* keyRow(int layer, int64_t slot) const { return m_k.data() + (uint64_t(layer) * m_slots + uint64_t(slot)) * m_rowBytes; }
    const uint8_t* valueRow(int layer, int64_t slot) const { return m_v.data() + (uint64_t(layer) * m_slots + uint64_t(slot)) * m_rowBytes; }
    void write(uint8_t* p, const float* row);
    void readPart(const uint8_t* p, int64_t first, int64_t count, float* out) const;

    int m_numBlocks = 0;
    int m_blockSize = 0;
    int64_t m_rowSize = 0;
    uint64_t m_rowBytes = 0;
    KvType m_type = KvType::F32;
    int m_layers = 0;
    uint64_t m_slots = 0; // numBlocks * blockSize rows per layer
    // [layer][slot][row] each, zero until written; pages are taken as blocks are first used.
    ZeroedMemory m_k, m_v;
};

} // namespace hearth::cpu
