// The grammar as a pushdown automaton over bytes: parse stacks and sets of them interned as
// integers, with each (set, byte) transition computed once and remembered, so matching a token's
// bytes is mostly table lookups.
#pragma once

#include "sample/grammar.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hearth::grammar {

// Set ids: kDeadSet is the empty set (no parse survives). Stack id 0 is the empty stack: the text
// so far is a complete sentence.
inline constexpr int32_t kDeadSet = 0;

class StackSpace {
public:
    explicit StackSpace(std::shared_ptr<const Grammar> grammar);

    const Grammar& grammar() const { return *m_grammar; }

    // The set before any text: the root's alternatives.
    int32_t initialSet();
    // The set after one more byte; kDeadSet when the byte cannot follow.
    int32_t advance(int32_t set, uint8_t byte) {
        const auto& table = m_trans[size_t(set)];
        if (table) {
            const int32_t t = (*table)[byte];
            if (t >= 0) return t;
        }
        return computeAdvance(set, byte);
    }
    int32_t advance(int32_t set, std::string_view bytes) {
        for (char c : bytes) {
            if (set == kDeadSet) break;
            set = advance(set, static_cast<uint8_t>(c));
        }
        return set;
    }
    // The transition row of `set` (256 entries, -1 where not yet known; fill with
    // computeAdvance). The pointer stays valid until rebase().
    const int32_t* row(int32_t set) {
        auto& table = m_trans[size_t(set)];
        if (!table) {
            table = std::make_unique<std::array<int32_t, 256>>();
            table->fill(-1);
        }
        return table->data();
    }
    int32_t computeAdvance(int32_t set, uint8_t byte);
    // The text so far is a sentence.
    bool accepts(int32_t set) const;
    // Nothing can follow: the set holds only the empty stack.
    bool complete(int32_t set) const;

    size_t numSets() const { return m_sets.size(); }
    // Stack frames processed so far by uncached transitions (a work budget's meter).
    uint64_t steps() const { return m_steps; }
    size_t numStacks() const { return m_nodes.size(); }
    // Above these the owner should start afresh (rebase) to bound memory.
    bool oversized() const { return m_nodes.size() > kMaxNodes || m_sets.size() > kMaxSets; }
    // Forgets every set and stack but `set`, which comes back under a new id.
    int32_t rebase(int32_t set);

private:
    static constexpr size_t kMaxNodes = size_t(1) << 21;
    static constexpr size_t kMaxSets = size_t(1) << 15;
    static constexpr size_t kMaxSetSize = 2048; // parses kept alive at once

    // A stack frame: the element to match (a Char at the top, a return position below), the
    // frame under it (0: none), and the bytes of a partly read UTF-8 character (top only).
    struct Node {
        uint32_t pos;
        int32_t parent;
        uint32_t partial;
    };
    struct NodeKey {
        uint64_t a;
        uint32_t b;
        bool operator==(const NodeKey&) const = default;
    };
    struct NodeKeyHash {
        size_t operator()(const NodeKey& k) const { return size_t(k.a * 0x9E3779B97F4A7C15ull ^ k.b); }
    };
    struct VecHash {
        size_t operator()(const std::vector<int32_t>& v) const;
    };

    int32_t node(uint32_t pos, int32_t parent, uint32_t partial);
    // Adds the stacks whose tops are characters (or the empty stack) reachable from `start`.
    void closure(int32_t start, std::vector<int32_t>& out);
    int32_t internSet(std::vector<int32_t>& stacks);
    bool feasible(uint32_t pos, uint32_t lo, uint32_t hi) const;
    void reset();

    std::shared_ptr<const Grammar> m_grammar;
    std::vector<Node> m_nodes;
    std::unordered_map<NodeKey, int32_t, NodeKeyHash> m_nodeIndex;
    std::vector<std::vector<int32_t>> m_sets;
    std::unordered_map<std::vector<int32_t>, int32_t, VecHash> m_setIndex;
    std::vector<std::unique_ptr<std::array<int32_t, 256>>> m_trans;
    int32_t m_initial = -1;
    uint64_t m_steps = 0;
    // Scratch for closure().
    std::vector<int32_t> m_work;
    std::vector<int32_t> m_seen;
    std::vector<uint32_t> m_seenMark;
    uint32_t m_mark = 0;
};

} // namespace hearth::grammar
