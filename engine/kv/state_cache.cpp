// Live and snapshot slots of recurrent state, with the snapshots' LRU order.
#include "kv/state_cache.h"

#include <algorithm>

namespace hearth::kv {

StateCache::StateCache(StateCacheConfig config) : m_config(config) {
    m_slots.resize(size_t(std::max(0, config.numSlots)));
    // Taken from the back: slot 0 first.
    for (int32_t s = int32_t(m_slots.size()) - 1; s >= 0; --s) m_free.push_back(s);
}

int StateCache::numFree() const { return int(m_free.size()); }

int32_t StateCache::takeSlot() {
    if (!m_free.empty()) {
        const int32_t s = m_free.back();
        m_free.pop_back();
        return s;
    }
    for (auto it = m_lru.begin(); it != m_lru.end(); ++it) {
        Slot& slot = m_slots[size_t(*it)];
        if (slot.pins > 0) continue;
        const int32_t s = *it;
        m_snapshots.erase(slot.hash);
        m_lru.erase(it);
        slot = Slot{};
        return s;
    }
    return -1;
}

int32_t StateCache::acquire(SeqId seq) {
    if (auto it = m_live.find(seq); it != m_live.end()) return it->second;
    const int32_t s = takeSlot();
    if (s < 0) return -1;
    m_slots[size_t(s)].use = Use::Live;
    m_live.emplace(seq, s);
    return s;
}

int32_t StateCache::liveSlot(SeqId seq) const {
    auto it = m_live.find(seq);
    return it == m_live.end() ? -1 : it->second;
}

void StateCache::release(SeqId seq) {
    auto it = m_live.find(seq);
    if (it == m_live.end()) return;
    m_slots[size_t(it->second)] = Slot{};
    m_free.push_back(it->second);
    m_live.erase(it);
}

StateSnapshot StateCache::find(std::span<const BlockHash> hashes) {
    if (!m_config.prefixCaching) return {};
    for (size_t k = hashes.size(); k > 0; --k) {
        auto it = m_snapshots.find(hashes[k - 1]);
        if (it == m_snapshots.end()) continue;
        Slot& slot = m_slots[size_t(it->second)];
        if (slot.use != Use::Snapshot) continue;
        m_lru.splice(m_lru.end(), m_lru, slot.lru);
        return {int(k), it->second};
    }
    return {};
}

void StateCache::pin(int32_t slot) {
    if (slot >= 0 && size_t(slot) < m_slots.size()) ++m_slots[size_t(slot)].pins;
}

void StateCache::unpin(int32_t slot) {
    if (slot >= 0 && size_t(slot) < m_slots.size() && m_slots[size_t(slot)].pins > 0) --m_slots[size_t(slot)].pins;
}

int32_t StateCache::reserveSnapshot(BlockHash hash) {
    if (!m_config.prefixCaching) return -1;
    if (auto it = m_snapshots.find(hash); it != m_snapshots.end()) {
        Slot& slot = m_slots[size_t(it->second)];
        if (slot.use == Use::Snapshot) m_lru.splice(m_lru.end(), m_lru, slot.lru);
        return -1;
    }
    const int32_t s = takeSlot();
    if (s < 0) return -1;
    m_slots[size_t(s)].use = Use::Reserved;
    m_slots[size_t(s)].hash = hash;
    m_snapshots.emplace(hash, s);
    return s;
}

void StateCache::commitSnapshot(int32_t slot) {
    if (slot < 0 || size_t(slot) >= m_slots.size()) return;
    Slot& s = m_slots[size_t(slot)];
    if (s.use != Use::Reserved) return;
    s.use = Use::Snapshot;
    s.lru = m_lru.insert(m_lru.end(), slot);
}

void StateCache::abandonSnapshot(int32_t slot) {
    if (slot < 0 || size_t(slot) >= m_slots.size()) return;
    Slot& s = m_slots[size_t(slot)];
    if (s.use != Use::Reserved) return;
    m_snapshots.erase(s.hash);
    s = Slot{};
    m_free.push_back(slot);
}

int32_t StateCache::acquireScratch() {
    const int32_t s = takeSlot();
    if (s < 0) return -1;
    m_slots[size_t(s)].use = Use::Scratch;
    ++m_numScratch;
    return s;
}

void StateCache::releaseScratch(int32_t slot) {
    if (slot < 0 || size_t(slot) >= m_slots.size() || m_slots[size_t(slot)].use != Use::Scratch) return;
    m_slots[size_t(slot)] = Slot{};
    m_free.push_back(slot);
    --m_numScratch;
}

std::vector<int32_t> StateCache::snapshotOrder() const { return {m_lru.begin(), m_lru.end()}; }

} // namespace hearth::kv
