// Recurrent-state slots of hybrid models (integer ids; the backend owns the memory): one live
// slot per running sequence, and snapshots of states at block boundaries kept as a prefix cache
// keyed by the prefix hash of the block that ends there (the K/V prefix cache's key), evicted
// least recently used. A sequence resumes from the longest prefix whose K/V blocks are cached
// and whose state after them is a snapshot.
#pragma once

#include "kv/prefix_hash.h"

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace hearth::kv {

using SeqId = uint64_t;

struct StateCacheConfig {
    int numSlots = 0;
    bool prefixCaching = true;
};

// A snapshot found for a prompt: the state after `blocks` full blocks is in `slot`.
struct StateSnapshot {
    int blocks = 0;
    int32_t slot = -1;
};

class StateCache {
public:
    explicit StateCache(StateCacheConfig config);

    int numSlots() const { return int(m_slots.size()); }
    int numFree() const;
    int numLive() const { return int(m_live.size()); }
    int numSnapshots() const { return int(m_snapshots.size()); }

    // The live slot of `seq` (acquired once; the same slot again while it lives). -1 when every
    // slot is live or pinned. Takes a free slot, else evicts the least recently used snapshot.
    int32_t acquire(SeqId seq);
    int32_t liveSlot(SeqId seq) const;
    // Frees the sequence's live slot.
    void release(SeqId seq);

    // The longest prefix of `hashes` (a prompt's full blocks, in order) whose state is a committed
    // snapshot: {0, -1} when none. Touches it (most recently used).
    StateSnapshot find(std::span<const BlockHash> hashes);
    // A pinned snapshot is never evicted (a sequence reads it in its first step).
    void pin(int32_t slot);
    void unpin(int32_t slot);

    // A slot to write the snapshot keyed `hash` into during the next step (-1: already cached,
    // caching is off, or no slot can be had). It becomes findable once committed.
    int32_t reserveSnapshot(BlockHash hash);
    void commitSnapshot(int32_t slot);
    // Drops a reserved snapshot whose step did not run.
    void abandonSnapshot(int32_t slot);

    // A slot for one step's use (the state at a draft position of speculative decoding): a free
    // slot, else the least recently used unpinned snapshot evicted; -1 when none.
    int32_t acquireScratch();
    void releaseScratch(int32_t slot);
    int numScratch() const { return m_numScratch; }

    // Snapshots in eviction order (least recently used first), for tests.
    std::vector<int32_t> snapshotOrder() const;

private:
    enum class Use : uint8_t { Free, Live, Reserved, Snapshot, Scratch };
    struct Slot {
        Use use = Use::Free;
        BlockHash hash = 0;
        int pins = 0;
        std::list<int32_t>::iterator lru; // Snapshot: its place in m_lru
    };
    int32_t takeSlot(); // a free slot, else the LRU unpinned snapshot evicted; -1 when none

    StateCacheConfig m_config;
    std::vector<Slot> m_slots;
    std::unordered_map<SeqId, int32_t> m_live;
    std::unordered_map<BlockHash, int32_t> m_snapshots; // committed and reserved, by hash
    std::list<int32_t> m_lru;                           // committed snapshots, least recent first
    std::vector<int32_t> m_free;                        // free slots, the next one taken last
    int m_numScratch = 0;
};

} // namespace hearth::kv
