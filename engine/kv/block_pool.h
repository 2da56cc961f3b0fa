// The pool of KV-cache blocks, by integer id: reference counts, an LRU free queue, and the prefix
// cache mapping block hashes to blocks. It knows nothing of device memory.
//
// Eviction order: a block whose count drops to 0 joins the free queue's tail but keeps its cached
// contents; allocate() takes blocks from the head (least recently freed first), and only then is
// a cached block's hash dropped. A prefix hit on a free block takes it back off the queue.
#pragma once

#include "kv/prefix_hash.h"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace hearth::kv {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

class BlockPool {
public:
    explicit BlockPool(int numBlocks);

    int numBlocks() const { return int(m_blocks.size()); }
    // Blocks with no owner (some may still hold cached prefixes that allocate() will evict).
    int numFree() const { return m_numFree; }

    // Takes n blocks from the head of the free queue, each with count 1, dropping any cached
    // hash they held. Returns nullopt (and changes nothing) when fewer than n are free.
    std::optional<std::vector<BlockId>> allocate(int n);

    // Adds a reference to each block (a prefix-cache hit or a fork); a free block leaves the queue.
    void touch(std::span<const BlockId> ids);

    // Drops a reference from each block, in order; blocks reaching 0 join the free queue's tail in
    // that order. Pass a sequence's blocks last-first so its longest prefix is evicted first.
    void release(std::span<const BlockId> ids);
    // The same, but blocks reaching 0 go to the queue's head, to be allocated next: blocks that
    // never held anything worth keeping (rejected speculative tokens' K/V), so cached prefixes
    // further back in the queue live longer.
    void releaseToHead(std::span<const BlockId> ids);

    // The cached block holding exactly these tokens after this parent, if any. Hash collisions are
    // resolved by comparing the stored parent hash and tokens.
    std::optional<BlockId> lookup(BlockHash hash, BlockHash parent,
                                  std::span<const int32_t> tokens) const;

    // Records a full, owned block in the prefix cache. Returns false when an identical block is
    // already cached (the new one stays uncached) or the block is already cached.
    bool cacheBlock(BlockId id, BlockHash hash, BlockHash parent, std::span<const int32_t> tokens);

    int refCount(BlockId id) const { return m_blocks[size_t(id)].refCount; }
    bool isCached(BlockId id) const { return m_blocks[size_t(id)].cached; }
    int numCachedBlocks() const { return int(m_cache.size()); }

    // The free queue from head (next to be allocated) to tail; for tests and diagnostics.
    std::vector<BlockId> freeQueue() const;

private:
    struct Block {
        int32_t refCount = 0;
        bool inFreeQueue = false;
        bool cached = false;
        BlockHash hash = 0;
        BlockHash parent = 0;
        std::vector<int32_t> tokens; // contents, kept while cached, to verify hits
        BlockId prev = kNoBlock;
        BlockId next = kNoBlock;
    };

    void pushTail(BlockId id);
    void pushHead(BlockId id);
    void unlink(BlockId id);
    void uncache(BlockId id);

    std::vector<Block> m_blocks;
    BlockId m_head = kNoBlock;
    BlockId m_tail = kNoBlock;
    int m_numFree = 0;
    std::unordered_multimap<BlockHash, BlockId> m_cache;
};

} // namespace hearth::kv
