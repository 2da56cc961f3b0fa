// Per-sequence block tables over a BlockPool: slots allocated on demand, prefix reuse of cached
// full blocks, forks that share blocks with copy-on-write, and release at finish. Integer ids only;
// the backend owns the memory the ids index (slot = block * blockSize + offset).
#pragma once

#include "hearth/status.h"
#include "kv/block_pool.h"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace hearth::kv {

using SeqId = uint64_t;

struct KvCacheConfig {
    int numBlocks = 0;
    int blockSize = 16;
    bool prefixCaching = true;
    BlockHashFn hashFn = hashBlockTokens;
};

// A cached prefix found for a prompt: the blocks and how many tokens they hold.
struct CachedPrefix {
    std::vector<BlockId> blocks;
    std::vector<BlockHash> hashes; // one per block
    int numTokens = 0;
};

// A block the backend must copy before a sequence writes into it (copy-on-write after a fork).
struct BlockCopy {
    BlockId src = kNoBlock;
    BlockId dst = kNoBlock;
};

class KvCacheManager {
public:
    explicit KvCacheManager(KvCacheConfig config);

    int blockSize() const { return m_config.blockSize; }
    const BlockHashFn& hashFn() const { return m_config.hashFn; }
    bool prefixCaching() const { return m_config.prefixCaching; }
    int numBlocks() const { return m_pool.numBlocks(); }
    int numFreeBlocks() const { return m_pool.numFree(); }
    int numUsedBlocks() const { return m_pool.numBlocks() - m_pool.numFree(); }
    const BlockPool& pool() const { return m_pool; }

    // Longest run of cached full blocks that starts the prompt, leaving at least one token to
    // compute (its logits are needed). Takes no references; pass the result to allocateSlots.
    CachedPrefix findCachedPrefix(std::span<const int32_t> prompt) const;

    // Blocks needed for `seq` to hold `totalTokens` tokens (after adopting `prefix` for a new one).
    int blocksNeeded(SeqId seq, int totalTokens, const CachedPrefix* prefix = nullptr) const;

    // Ensures `seq` has slots for `totalTokens` tokens. For a sequence seen for the first time,
    // `prefix` (from findCachedPrefix) is adopted first. Returns false, changing nothing, when the
    // pool has too few free blocks; the scheduler then preempts someone.
    bool allocateSlots(SeqId seq, int totalTokens, const CachedPrefix* prefix = nullptr);

    // Registers in the prefix cache every full block of `seq` whose tokens are now computed.
    // `tokens` are the sequence's tokens (prompt then generated); numComputed of them are in cache.
    void cacheComputedBlocks(SeqId seq, std::span<const int32_t> tokens, int numComputed);

    // Makes `child` share every block of `parent` (parallel sampling, n > 1).
    Status fork(SeqId parent, SeqId child);

    // Call before writing the token at `pos` of `seq`: when that position's block is shared,
    // gives the sequence a private copy and returns the copy the backend must perform.
    // Fails with OutOfMemory when no block is free for the copy.
    Result<std::optional<BlockCopy>> prepareWrite(SeqId seq, int pos);

    // Keeps only the blocks `seq` needs for its first `numTokens` tokens: the blocks after them
    // (holding rejected speculative tokens) go back to the pool's head, to be reused first. Blocks
    // already registered in the prefix cache are never among them (they hold computed tokens).
    void truncate(SeqId seq, int numTokens);

    // Releases the sequence's blocks (last block first, so its longest prefix is evicted first).
    void free(SeqId seq);

    bool hasSequence(SeqId seq) const { return m_seqs.count(seq) != 0; }
    // The sequence's block table (logical block i -> block id); empty for an unknown sequence.
    std::span<const BlockId> blockTable(SeqId seq) const;

    // Prefix-cache accounting: prompt tokens looked up and found.
    uint64_t prefixQueryTokens() const { return m_queryTokens; }
    uint64_t prefixHitTokens() const { return m_hitTokens; }
    void recordPrefixLookup(int queried, int hit) const;

private:
    struct Sequence {
        std::vector<BlockId> blocks;
        int numHashed = 0;               // leading blocks whose hash is known
        BlockHash lastHash = kRootHash;  // hash of block numHashed-1 (root when none)
    };

    KvCacheConfig m_config;
    BlockPool m_pool;
    std::unordered_map<SeqId, Sequence> m_seqs;
    mutable uint64_t m_queryTokens = 0;
    mutable uint64_t m_hitTokens = 0;
};

} // namespace hearth::kv
