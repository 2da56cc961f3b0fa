// SentencePiece-style tokenization (tokenizer.ggml.model = "llama"): score-driven merging of
// adjacent symbols, with byte fallback for text the vocabulary cannot spell.
#pragma once

#include "tokenizer/vocab.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace hearth::tokenizer::detail {

// Spaces become U+2581 ("▁"), with one prepended when `prefixSpace` is set.
std::string escapeSpmText(std::string_view text, bool prefixSpace);

// Tokenizes escaped text (see escapeSpmText) and appends the ids to `out`.
//
// The text starts as one symbol per UTF-8 character (cut by lead byte, so malformed bytes are
// symbols of their own). Repeatedly, the adjacent pair whose joined text is a token with the
// highest score is merged (ties: leftmost first). Remaining symbols that are not tokens are
// written as byte tokens <0xXX>, or the unknown token when the vocabulary has no byte token.
void encodeSpm(const Vocab& vocab, std::string_view escaped, std::vector<int32_t>& out);

} // namespace hearth::tokenizer::detail
