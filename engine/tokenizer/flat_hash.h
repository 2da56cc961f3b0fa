// Compact open-addressing hash tables for the vocabulary: token text -> id, and 64-bit keys ->
// values (BPE merges, SPM symbol pairs). One allocation each, so large vocabularies load fast
// and lookups stay cache-friendly.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tokenizer::detail {

inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

inline size_t tableCapacityFor(size_t count) {
    size_t cap = 16;
    while (cap < count * 2) cap *= 2; // load factor at most 1/2
    return cap;
}

// Maps token text to id. Slots hold ids; texts live in the vocabulary's own vector, which
// must outlive the index and not change after build().
class TokenIndex {
public:
    // Indexes texts[0..n). Returns the id of the first text seen twice and sets `firstId` to
    // its earlier id, or returns -1 when all texts are distinct.
    int32_t build(const std::vector<std::string>& texts, int32_t& firstId) {
        m_texts = &texts;
        m_slots.assign(tableCapacityFor(texts.size()), -1);
        m_mask = m_slots.size() - 1;
        for (size_t i = 0; i < texts.size(); ++i) {
            size_t slot = hashOf(texts[i]) & m_mask;
            while (m_slots[slot] >= 0) {
                if (texts[m_slots[slot]] == texts[i]) {
                    firstId = m_slots[slot];
                    return static_cast<int32_t>(i);
                }
                slot = (slot + 1) & m_mask;
            }
            m_slots[slot] = static_cast<int32_t>(i);
        }
        return -1;
    }

    int32_t find(std::string_view s) const {
        if (m_slots.empty()) return -1;
        size_t slot = hashOf(s) & m_mask;
        while (true) {
            const int32_t id = m_slots[slot];
            if (id < 0) return -1;
            if ((*m_texts)[id] == s) return id;
            slot = (slot + 1) & m_mask;
        }
    }

private:
    static size_t hashOf(std::string_view s) { return mix64(std::hash<std::string_view>{}(s)); }

    const std::vector<std::string>* m_texts = nullptr;
    std::vector<int32_t> m_slots;
    size_t m_mask = 0;
};

// Maps 64-bit keys (never kEmptyKey) to values. Insert keeps the first value for a key.
template <typename Value> class U64Map {
public:
    static constexpr uint64_t kEmptyKey = ~0ull;

    void reserve(size_t count) {
        m_slots.assign(tableCapacityFor(count), Slot{kEmptyKey, Value{}});
        m_mask = m_slots.size() - 1;
        m_size = 0;
    }

    // Returns false if the key was already present (the stored value is kept).
    bool insert(uint64_t key, const Value& value) {
        if (m_slots.empty() || (m_size + 1) * 2 > m_slots.size()) grow();
        size_t slot = mix64(key) & m_mask;
        while (m_slots[slot].key != kEmptyKey) {
            if (m_slots[slot].key == key) return false;
            slot = (slot + 1) & m_mask;
        }
        m_slots[slot] = Slot{key, value};
        ++m_size;
        return true;
    }

    const Value* find(uint64_t key) const {
        if (m_slots.empty()) return nullptr;
        size_t slot = mix64(key) & m_mask;
        while (true) {
            const Slot& s = m_slots[slot];
            if (s.key == key) return &s.value;
            if (s.key == kEmptyKey) return nullptr;
            slot = (slot + 1) & m_mask;
        }
    }

    size_t size() const { return m_size; }

private:
    struct Slot {
        uint64_t key;
        Value value;
    };

    void grow() {
        std::vector<Slot> old = std::move(m_slots);
        reserve(old.empty() ? 8 : old.size());
        for (const Slot& s : old) {
            if (s.key != kEmptyKey) insert(s.key, s.value);
        }
    }

    std::vector<Slot> m_slots;
    size_t m_mask = 0;
    size_t m_size = 0;
};

} // namespace hearth::tokenizer::detail
