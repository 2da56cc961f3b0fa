// K/V storage for the CPU path, addressed by KV-cache block ids: attention reads a sequence's
// history through its block table (slot = block * blockSize + offset). Values are stored as F32,
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
    // A token's row is [kvHead][headDim] values. Layout per layer and block:
    //   F32, F16 (head-major): per KV head, K as [headDim][blockSize] (transposed) and V as
    //     [blockSize][headDim], so one head's block is two contiguous runs, the K run already in
    //     the order attention's scores want (readBlockHead);
    //   Q8_0: [offset][row] with rows quantized in blocks of 32 (nKvHeads * headDim must be a
    //     multiple of 32).
    static Result<PagedKvStore> create(int nLayers, int numBlocks, int blockSize, int nKvHeads,
                                       int headDim, KvType type = KvType::F32);
    // F32, for tests: a failed allocation leaves a store of no layers.
    PagedKvStore(int nLayers, int numBlocks, int blockSize, int nKvHeads, int headDim);

    // Bytes of one token's K (or V) row of one layer.
    static uint64_t rowBytes(int64_t rowSize, KvType type);

    int blockSize() const { return m_blockSize; }
    int numBlocks() const { return m_numBlocks; }
    int64_t rowSize() const { return m_rowSize; } // nKvHeads * headDim values per token
    int64_t headDim() const { return m_headDim; }
    bool headMajor() const { return m_type != KvType::Q8_0; }
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

    // One KV head's part of a whole block as floats (head-major stores only): kT [headDim][blockSize]
    // and v [blockSize][headDim]. Offsets not yet written read as whatever the block last held.
    void readBlockHead(int layer, int32_t block, int64_t kvHead, float* kT, float* v) const;

    // The same for a Q8_0 store, for the block's first `count` offsets, when the head's values
    // start and end on the 32-value grid (headDim and kvHead * headDim multiples of 32).
    void readBlockHeadRows(int layer, int32_t block, int64_t kvHead, int64_t count, float* kT, float* v) const;

    // The stored bytes of one token's K (or V) row of a Q8_0 store (rowBytes(rowSize(), Q8_0) of
    // them: its blocks in order, as other devices lay out a Q8_0 row too); null for other types.
    const uint8_t* q8Row(int layer, int64_t slot, bool value) const {
        if (m_type != KvType::Q8_0) return nullptr;
        return (value ? m_v.data() : m_k.data()) + blockOffset(layer, slot / m_blockSize) +
               uint64_t(slot % m_blockSize) * m_rowBytes;
    }

    // Hints that one KV head's K and V of this block are read soon (software prefetch).
    void prefetch(int layer, int32_t block, int64_t kvHead) const;

    // The slot of position `pos` of a sequence with this block table, or -1 when unmapped.
    int64_t slotOf(std::span<const int32_t> blockTable, int64_t pos) const;

    // Copies a block's contents (copy-on-write after a fork).
    void copyBlock(int32_t src, int32_t dst);

    uint64_t bytes() const;

private:
    PagedKvStore() = default;
    Status init(int nLayers, int numBlocks, int blockSize, int nKvHeads, int headDim, KvType type);
    // Where a block of a layer starts in m_k or m_v (blockSize * rowBytes bytes either way).
    uint64_t blockOffset(int layer, int64_t block) const {
        return (uint64_t(layer) * uint64_t(m_numBlocks) + uint64_t(block)) * uint64_t(m_blockSize) * m_rowBytes;
    }
    void write(uint8_t* base, bool value, int layer, int64_t slot, const float* row);
    void read(const uint8_t* base, bool value, int layer, int64_t slot, int64_t first, int64_t count,
              float* out) const;

    int m_numBlocks = 0;
    int m_blockSize = 0;
    int64_t m_rowSize = 0;
    int64_t m_headDim = 0;
    uint64_t m_rowBytes = 0;
    KvType m_type = KvType::F32;
    int m_layers = 0;
    // [layer][block] each, zero until written; pages are taken as blocks are first used.
    ZeroedMemory m_k, m_v;
};

} // namespace hearth::cpu
