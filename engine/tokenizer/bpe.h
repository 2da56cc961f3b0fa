// BPE tokenization: pre-tokenizer split, then merges by rank inside each word. Byte-level
// (tokenizer.ggml.model = "gpt2") words start as bytes spelled by their stand-in characters;
// Gemma 4's SentencePiece-shaped words start as UTF-8 characters.
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
//
// Without byteLevel (Gemma 4), spaces first become U+2581 when escapeSpaces is set, words stay
// raw UTF-8 and start as one symbol per character, a word of newlines only that is a token is
// emitted whole, and a final symbol that is not a token is written as <0xXX> byte tokens.
void encodeBpe(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

} // namespace hearth::tokenizer::detail
