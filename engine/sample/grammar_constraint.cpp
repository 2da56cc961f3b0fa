// Token masks from a grammar: the vocabulary trie, built from sorted token pieces in one pass, and
// the walk that keeps every token whose bytes the parse sets survive.
#include "sample/grammar_constraint.h"

#include <algorithm>
#include <numeric>

namespace hearth::grammar {

namespace {

constexpr size_t kMaskCacheEntries = 16;
// Work allowed for one mask's new transitions (stack frames processed): a few hundred
// milliseconds at most. A grammar so ambiguous that it needs more is a dead end.
constexpr uint64_t kMaskWorkBudget = uint64_t(4) << 20;

struct TrieBuilder {
    const std::string& pieces;
    const std::vector<uint32_t>& start;
    const std::vector<int32_t>& order; // tokens sorted by piece
    std::vector<TokenTrie::Node>& nodes;
    std::vector<uint8_t>& edgeByte;
    std::vector<uint32_t>& edgeChild;
    std::vector<int32_t>& tokens;

    std::string_view piece(int32_t t) const {
        return std::string_view(pieces).substr(start[size_t(t)], start[size_t(t) + 1] - start[size_t(t)]);
    }
    // Fills node `id` from the tokens order[b, e), which share their first `depth` bytes.
    void fill(uint32_t id, size_t b, size_t e, size_t depth) {
        size_t i = b;
        nodes[id].firstToken = uint32_t(tokens.size());
        while (i < e && piece(order[i]).size() == depth) tokens.push_back(order[i++]);
        nodes[id].numTokens = uint32_t(tokens.size()) - nodes[id].firstToken;
        // One edge per distinct next byte, allocated together so a node's edges are contiguous.
        std::vector<std::pair<size_t, size_t>> groups;
        for (size_t j = i; j < e;) {
            const char c = piece(order[j])[depth];
            size_t k = j;
            while (k < e && piece(order[k])[depth] == c) ++k;
            groups.push_back({j, k});
            j = k;
        }
        nodes[id].firstEdge = uint32_t(edgeByte.size());
        nodes[id].numEdges = uint32_t(groups.size());
        for (const auto& [j, k] : groups) {
            edgeByte.push_back(static_cast<uint8_t>(piece(order[j])[depth]));
            edgeChild.push_back(0);
        }
        for (size_t gi = 0; gi < groups.size(); ++gi) {
            const uint32_t child = uint32_t(nodes.size());
            nodes.emplace_back();
            edgeChild[nodes[id].firstEdge + gi] = child;
            fill(child, groups[gi].first, groups[gi].second, depth + 1);
        }
    }
};

} // namespace

std::shared_ptr<const TokenTrie> TokenTrie::build(const tokenizer::Tokenizer& tokenizer) {
    auto trie = std::make_shared<TokenTrie>();
    const int32_t n = tokenizer.vocabSize();
    trie->m_vocabSize = n;
    trie->m_pieceStart.assign(size_t(n) + 1, 0);
    for (int32_t t = 0; t < n; ++t) {
        trie->m_pieceStart[size_t(t)] = uint32_t(trie->m_pieces.size());
        trie->m_pieces += tokenizer.tokenPiece(t, false);
    }
    trie->m_pieceStart[size_t(n)] = uint32_t(trie->m_pieces.size());
    std::vector<int32_t> order;
    for (int32_t t = 0; t < n; ++t)
        if (!trie->piece(t).empty()) order.push_back(t);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const auto pa = trie->piece(a), pb = trie->piece(b);
        return pa < pb || (pa == pb && a < b);
    });
    trie->m_nodes.emplace_back();
    TrieBuilder builder{trie->m_pieces, trie->m_pieceStart, order, trie->m_nodes,
                        trie->m_edgeByte, trie->m_edgeChild, trie->m_tokens};
    builder.fill(0, 0, order.size(), 0);
    return trie;
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar,
                                     std::shared_ptr<const TokenTrie> trie, std::vector<int32_t> stopTokens)
    : m_space(std::move(grammar)), m_trie(std::move(trie)), m_stopTokens(std::move(stopTokens)) {
    m_set = m_space.initialSet();
}

const GrammarConstraint::CachedMask& GrammarConstraint::maskFor(int32_t set) {
    for (auto it = m_masks.begin(); it != m_masks.end(); ++it)
        if (it->set == set) {
            m_masks.splice(m_masks.begin(), m_masks, it);
            return m_masks.front();
        }
    CachedMask m;
    m.set = set;
    m.bits.assign((size_t(m_trie->vocabSize()) + 63) / 64, 0);
    m.any = false;
    if (set != kDeadSet) {
        const auto& nodes = m_trie->nodes();
        const auto& edgeByte = m_trie->edgeBytes();
        const auto& edgeChild = m_trie->edgeChildren();
        const auto& tokens = m_trie->tokens();
        m_walk.clear();
        m_walk.push_back({0u, set});
        const uint64_t start = m_space.steps();
        while (!m_walk.empty()) {
            if (m_space.steps() - start > kMaskWorkBudget) {
                std::fill(m.bits.begin(), m.bits.end(), 0);
                m.any = false;
                break;
            }
            const auto [at, s] = m_walk.back();
            m_walk.pop_back();
            const TokenTrie::Node& node = nodes[at];
            for (uint32_t e = node.firstEdge; e < node.firstEdge + node.numEdges; ++e) {
                const int32_t next = m_space.advance(s, edgeByte[e]);
                if (next == kDeadSet) continue;
                const TokenTrie::Node& child = nodes[edgeChild[e]];
                for (uint32_t k = child.firstToken; k < child.firstToken + child.numTokens; ++k) {
                    const int32_t t = tokens[k];
                    m.bits[size_t(t) >> 6] |= uint64_t(1) << (t & 63);
                    m.any = true;
                }
                if (child.numEdges) m_walk.push_back({edgeChild[e], next});
            }
        }
        if (m_space.accepts(set) && m_space.steps() - start <= kMaskWorkBudget)
            for (int32_t t : m_stopTokens)
                if (t >= 0 && t < m_trie->vocabSize()) {
                    m.bits[size_t(t) >> 6] |= uint64_t(1) << (t & 63);
                    m.any = true;
                }
    }
    m_masks.push_front(std::move(m));
    if (m_masks.size() > kMaskCacheEntries) m_masks.pop_back();
    if (m_space.oversized()) { // the transitions the walk memoised are bounded here
        m_set = m_space.rebase(m_set);
        m_masks.front().set = m_set;
        m_masks.resize(1);
    }
    return m_masks.front();
}

std::span<const uint64_t> GrammarConstraint::allowed() {
    const CachedMask& m = maskFor(m_set);
    if (!m.any) return {};
    return m.bits;
}

bool GrammarConstraint::anyAllowed() { return maskFor(m_set).any; }

Status GrammarConstraint::accept(int32_t token) {
    if (token < 0 || token >= m_trie->vocabSize()) return invalidArgument("token outside the vocabulary");
    if (std::find(m_stopTokens.begin(), m_stopTokens.end(), token) != m_stopTokens.end()) {
        if (!m_space.accepts(m_set)) return invalidArgument("the grammar does not allow the text to end here");
        return Status::ok();
    }
    const std::string_view piece = m_trie->piece(token);
    if (piece.empty()) return invalidArgument("token " + std::to_string(token) + " has no text for the grammar");
    const int32_t next = m_space.advance(m_set, piece);
    if (next == kDeadSet)
        return invalidArgument("token " + std::to_string(token) + " does not fit the grammar here");
    m_set = next;
    if (m_space.oversized()) {
        m_set = m_space.rebase(m_set);
        m_masks.clear();
    }
    return Status::ok();
}

} // namespace hearth::grammar
