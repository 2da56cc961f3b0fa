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

} // namespace

std::shared_ptr<const TokenTrie> TokenTrie::build(const tokenizer::Tokenizer& tokenizer) {
    auto trie = std::make_shared<TokenTrie>();
    const int32_t n = tokenizer.vocabSize();
    trie->m_vocabSize = n;
    trie->m_pieceStart.assign(size_t(n) + 1, 0);
    for (int32_t t = 0; t < n; ++t) {
        trie->m_pieceStart[size_t(t)] = uint32_t(trie->m_pieces.size());
        std::string p = tokenizer.tokenPiece(t, false);
        if (p.size() > 0xFFFF) p.clear(); // no real token is this long; keep depths in 16 bits
        trie->m_pieces += p;
    }
    trie->m_pieceStart[size_t(n)] = uint32_t(trie->m_pieces.size());
    std::vector<int32_t> order;
    for (int32_t t = 0; t < n; ++t)
        if (!trie->piece(t).empty()) order.push_back(t);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const auto pa = trie->piece(a), pb = trie->piece(b);
        return pa < pb || (pa == pb && a < b);
    });
    // Sorted pieces give the nodes in depth-first order: each piece shares a prefix with the one
    // before, pops the path back to it, and appends its remaining bytes.
    TokenTrie& t = *trie;
    auto addNode = [&](uint8_t byte, size_t depth) {
        t.m_byte.push_back(byte);
        t.m_depth.push_back(uint16_t(depth));
        t.m_next.push_back(0);
        t.m_tokenStart.push_back(uint32_t(t.m_tokens.size()));
        t.m_maxDepth = std::max(t.m_maxDepth, depth);
    };
    addNode(0, 0);
    std::vector<uint32_t> path{0}; // node at each depth of the current piece
    std::string_view previous;
    for (int32_t token : order) {
        const std::string_view p = t.piece(token);
        size_t common = 0;
        while (common < p.size() && common < previous.size() && p[common] == previous[common]) ++common;
        while (path.size() > common + 1) { // subtrees that end here
            t.m_next[path.back()] = uint32_t(t.m_byte.size());
            path.pop_back();
        }
        for (size_t d = common; d < p.size(); ++d) {
            path.push_back(uint32_t(t.m_byte.size()));
            addNode(static_cast<uint8_t>(p[d]), d + 1);
        }
        t.m_tokens.push_back(token); // belongs to the newest node (equal pieces share it)
        previous = p;
    }
    while (!path.empty()) {
        t.m_next[path.back()] = uint32_t(t.m_byte.size());
        path.pop_back();
    }
    t.m_tokenStart.push_back(uint32_t(t.m_tokens.size()));
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
        const auto& bytes = m_trie->bytes();
        const auto& depths = m_trie->depths();
        const auto& next = m_trie->next();
        const auto& tokenStart = m_trie->tokenStart();
        const auto& tokens = m_trie->tokens();
        const size_t n = bytes.size();
        m_walkSets.assign(m_trie->maxDepth() + 1, kDeadSet);
        m_walkRows.assign(m_trie->maxDepth() + 1, nullptr);
        m_walkSets[0] = set;
        m_walkRows[0] = m_space.row(set);
        const uint64_t start = m_space.steps();
        bool exhausted = false;
        for (size_t i = 1; i < n;) {
            if ((i & 4095) == 0 && m_space.steps() - start > kMaskWorkBudget) {
                exhausted = true;
                break;
            }
            const size_t d = depths[i];
            int32_t to = m_walkRows[d - 1][bytes[i]];
            if (to < 0) to = m_space.computeAdvance(m_walkSets[d - 1], bytes[i]);
            if (to == kDeadSet) {
                i = next[i];
                continue;
            }
            for (uint32_t k = tokenStart[i]; k < tokenStart[i + 1]; ++k) {
                const int32_t t = tokens[k];
                m.bits[size_t(t) >> 6] |= uint64_t(1) << (t & 63);
            }
            m.any |= tokenStart[i] != tokenStart[i + 1];
            if (next[i] != i + 1) { // has children
                m_walkSets[d] = to;
                m_walkRows[d] = m_space.row(to);
            }
            ++i;
        }
        if (exhausted) {
            std::fill(m.bits.begin(), m.bits.end(), 0);
            m.any = false;
        } else if (m_space.accepts(set)) {
            for (int32_t t : m_stopTokens)
                if (t >= 0 && t < m_trie->vocabSize()) {
                    m.bits[size_t(t) >> 6] |= uint64_t(1) << (t & 63);
                    m.any = true;
                }
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
