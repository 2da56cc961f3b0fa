// Finding special-token text in the input before tokenizing: the input becomes a sequence of
// plain-text fragments and special tokens.
#pragma once

#include "tokenizer/vocab.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace hearth::tokenizer::detail {

struct Fragment {
    int32_t token = kNoToken; // a special token, or kNoToken for plain text
    size_t offset = 0;        // plain text: its bytes in the input
    size_t length = 0;
};

// Builds vocab.specialTrie from vocab.specialTokens.
void buildSpecialTrie(Vocab& vocab);

// Splits `text` at occurrences of special-token text. User-defined tokens always count;
// control and unknown tokens only with parseSpecial. Matching follows llama.cpp: tokens are
// taken longest first, and each takes its leftmost non-overlapping occurrences in the text not
// yet claimed by a longer one. Plain-text fragments are never empty.
void splitSpecialTokens(const Vocab& vocab, std::string_view text, bool parseSpecial,
                        std::vector<Fragment>& out);

} // namespace hearth::tokenizer::detail
