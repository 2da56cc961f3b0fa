// Drafts from the sequence's own context (prompt lookup): the last few tokens are searched for
// earlier in the prompt and output, and what followed their most recent occurrence is proposed.
// No model runs; it pays where text repeats (code, quoting, structured output, summaries).
#pragma once

#include "spec/drafter.h"

namespace hearth::spec {

class NgramDrafter final : public Drafter {
public:
    // Keys of maxN tokens are tried first, down to minN.
    explicit NgramDrafter(int minN = 2, int maxN = 4);
    void propose(std::span<const int32_t> tokens, int promptLength, int maxDraft,
                 std::vector<int32_t>& out) override;

private:
    int m_minN, m_maxN;
};

// The start of the most recent earlier occurrence of `key` in `text` that begins before
// `before` (-1: none). Exposed for tests.
int64_t findLast(std::span<const int32_t> text, std::span<const int32_t> key, int64_t before);

} // namespace hearth::spec
