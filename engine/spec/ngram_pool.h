// Continuations seen after n-grams in earlier requests, shared by every sequence of an engine
// (llama.cpp's ngram-mod idea): when an answer repeats text another request produced (the same
// boilerplate, a file quoted again, an agent's recurring tool output), it is drafted from here.
// A fixed table indexed by the hash of the key n-gram, each entry holding its key (checked on
// lookup, so a collision never drafts nonsense) and the tokens that followed it most recently.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace hearth::spec {

class NgramPool {
public:
    static constexpr int kKey = 4;  // tokens of a key
    static constexpr int kNext = 8; // tokens kept after it
    explicit NgramPool(size_t entries = size_t(1) << 16);

    // Records every key of `tokens` with what followed it (later occurrences replace earlier).
    void add(std::span<const int32_t> tokens);
    // Appends at most maxDraft tokens that followed the last kKey tokens of `tokens` (none when
    // that key was never seen).
    void propose(std::span<const int32_t> tokens, int maxDraft, std::vector<int32_t>& out) const;
    size_t used() const { return m_used; }

private:
    struct Entry {
        std::array<int32_t, kKey> key{};
        std::array<int32_t, kNext> next{};
        uint8_t length = 0; // 0: empty
    };
    size_t slotOf(std::span<const int32_t> key) const;

    std::vector<Entry> m_entries;
    size_t m_used = 0;
};

} // namespace hearth::spec
