// Byte-level BPE tokenization (tokenizer.ggml.model = "gpt2"): pre-tokenizer split, bytes to
// their stand-in characters, then merges by rank inside each word.
#pragma once

#include "tokenizer/vocab.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace hearth::tokenizer::detail {

// Tokenizes plain text (no special-token handling) and appends the ids to `out`.
//
// The text is decoded leniently (malformed UTF-8 becomes U+FFFD), split into words by the
// vocabulary's pre-tokenizer, and each word's UTF-8 bytes are spelled in the byte-level
// alphabet. Within a word, the adjacent pair with the lowest merge rank is merged until no
// pair has a merge (ties: leftmost first). With ignoreMerges, a word that is already a token
// is emitted whole. A final symbol that is not a token is written byte by byte where the
// vocabulary has single-character tokens for those bytes of its spelling.
void encodeBpe(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

} // namespace hearth::tokenizer::detail
