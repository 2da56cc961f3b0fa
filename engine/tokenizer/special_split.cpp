// Special-token matching in one pass over the input (a walk of the token trie from each
// position), then resolution of overlaps in the priority order llama.cpp uses.
#include "tokenizer/special_split.h"

#include <algorithm>

namespace hearth::tokenizer::detail {

namespace {

struct Occurrence {
    uint32_t order; // position of the token in vocab.specialTokens (lower = longer, first)
    size_t pos;
};

} // namespace

void buildSpecialTrie(Vocab& vocab) {
    vocab.specialTrie.assign(1, Vocab::TrieNode{});
    for (uint32_t order = 0; order < vocab.specialTokens.size(); ++order) {
        int32_t node = 0;
        for (char c : vocab.text[vocab.specialTokens[order]]) {
            const auto byte = static_cast<uint8_t>(c);
            int32_t next = -1;
            for (const auto& [b, child] : vocab.specialTrie[node].children) {
                if (b == byte) next = child;
            }
            if (next < 0) {
                next = static_cast<int32_t>(vocab.specialTrie.size());
                vocab.specialTrie[node].children.emplace_back(byte, next);
                vocab.specialTrie.emplace_back();
            }
            node = next;
        }
        if (vocab.specialTrie[node].order < 0) vocab.specialTrie[node].order = int32_t(order);
    }
}

void splitSpecialTokens(const Vocab& vocab, std::string_view text, bool parseSpecial,
                        std::vector<Fragment>& out) {
    out.clear();
    if (text.empty()) return;

    // Every occurrence of an eligible token: walk the trie from each position.
    std::vector<Occurrence> found;
    const auto& trie = vocab.specialTrie;
    if (!trie.empty() && !trie[0].children.empty()) {
        for (size_t pos = 0; pos < text.size(); ++pos) {
            int32_t node = 0;
            for (size_t i = pos; i < text.size(); ++i) {
                const auto byte = static_cast<uint8_t>(text[i]);
                int32_t next = -1;
                for (const auto& [b, child] : trie[node].children) {
                    if (b == byte) {
                        next = child;
                        break;
                    }
                }
                if (next < 0) break;
                node = next;
                const int32_t order = trie[node].order;
                if (order < 0) continue;
                const TokenType type = vocab.tokenType[vocab.specialTokens[order]];
                if (parseSpecial || type == TokenType::UserDefined) {
                    found.push_back({static_cast<uint32_t>(order), pos});
                }
            }
        }
    }
    if (found.empty()) {
        out.push_back({kNoToken, 0, text.size()});
        return;
    }

    // Longest tokens first; each token left to right, skipping occurrences that overlap text
    // already claimed (by a longer token, or by its own previous occurrence).
    std::sort(found.begin(), found.end(), [](const Occurrence& a, const Occurrence& b) {
        return a.order != b.order ? a.order < b.order : a.pos < b.pos;
    });
    std::vector<uint8_t> claimed(text.size(), 0);
    std::vector<Occurrence> chosen;
    for (const Occurrence& o : found) {
        const size_t len = vocab.text[vocab.specialTokens[o.order]].size();
        if (std::any_of(claimed.begin() + o.pos, claimed.begin() + o.pos + len,
                        [](uint8_t c) { return c != 0; })) {
            continue;
        }
        std::fill(claimed.begin() + o.pos, claimed.begin() + o.pos + len, 1);
        chosen.push_back(o);
    }
    std::sort(chosen.begin(), chosen.end(),
              [](const Occurrence& a, const Occurrence& b) { return a.pos < b.pos; });

    size_t cursor = 0;
    for (const Occurrence& o : chosen) {
        const int32_t id = vocab.specialTokens[o.order];
        if (o.pos > cursor) out.push_back({kNoToken, cursor, o.pos - cursor});
        out.push_back({id, o.pos, vocab.text[id].size()});
        cursor = o.pos + vocab.text[id].size();
    }
    if (cursor < text.size()) out.push_back({kNoToken, cursor, text.size() - cursor});
}

} // namespace hearth::tokenizer::detail
