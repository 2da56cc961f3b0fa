// Prompt-lookup drafting: a backward scan for the sequence's last n tokens.
#include "spec/ngram_drafter.h"

#include <algorithm>

namespace hearth::spec {

int64_t findLast(std::span<const int32_t> text, std::span<const int32_t> key, int64_t before) {
    const int64_t n = int64_t(key.size());
    if (n == 0) return -1;
    for (int64_t i = std::min<int64_t>(before, int64_t(text.size()) - n); i-- > 0;) {
        // Compare from the end: the last token is the most selective in running text.
        if (text[size_t(i + n - 1)] != key[size_t(n - 1)]) continue;
        if (std::equal(key.begin(), key.end(), text.begin() + i)) return i;
    }
    return -1;
}

NgramDrafter::NgramDrafter(int minN, int maxN) : m_minN(std::max(1, minN)), m_maxN(std::max(m_minN, maxN)) {}

void NgramDrafter::propose(std::span<const int32_t> tokens, int /*promptLength*/, int maxDraft,
                           std::vector<int32_t>& out) {
    const int64_t len = int64_t(tokens.size());
    if (maxDraft <= 0) return;
    for (int n = m_maxN; n >= m_minN; --n) {
        if (len <= n) continue;
        const std::span<const int32_t> key = tokens.subspan(size_t(len - n));
        // An occurrence ending before the key itself, so at least one token follows it.
        const int64_t at = findLast(tokens, key, len - n);
        if (at < 0) continue;
        const int64_t from = at + n, to = std::min(len, from + maxDraft);
        out.insert(out.end(), tokens.begin() + from, tokens.begin() + to);
        return;
    }
}

} // namespace hearth::spec
