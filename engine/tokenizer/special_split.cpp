// Special-token matching in one pass over the input (candidates bucketed by first byte), then
// resolution of overlaps in the priority order llama.cpp uses.
#include "tokenizer/special_split.h"

#include <algorithm>
#include <array>

namespace hearth::tokenizer::detail {

namespace {

struct Occurrence {
    uint32_t order; // position of the token in vocab.specialTokens (lower = longer, first)
    size_t pos;
};

} // namespace

void splitSpecialTokens(const Vocab& vocab, std::string_view text, bool parseSpecial,
                        std::vector<Fragment>& out) {
    out.clear();
    if (text.empty()) return;

    // Eligible tokens grouped by first byte, keeping their priority order.
    std::array<std::vector<uint32_t>, 256> byFirstByte;
    bool any = false;
    for (uint32_t order = 0; order < vocab.specialTokens.size(); ++order) {
        const int32_t id = vocab.specialTokens[order];
        const TokenType type = vocab.tokenType[id];
        if (!parseSpecial && type != TokenType::UserDefined) continue;
        const std::string& t = vocab.text[id];
        byFirstByte[static_cast<uint8_t>(t[0])].push_back(order);
        any = true;
    }

    std::vector<Occurrence> found;
    if (any) {
        for (size_t pos = 0; pos < text.size(); ++pos) {
            for (uint32_t order : byFirstByte[static_cast<uint8_t>(text[pos])]) {
                const std::string& t = vocab.text[vocab.specialTokens[order]];
                if (text.compare(pos, t.size(), t) == 0) found.push_back({order, pos});
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
