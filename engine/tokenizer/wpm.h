// WordPiece tokenization (tokenizer.ggml.model = "bert", llama.cpp's WPM): BERT-style
// normalizing and word splitting, then greedy longest-match-first over the vocabulary.
#pragma once

#include "tokenizer/vocab.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tokenizer::detail {

// Every `step`-th codepoint from `first` to `last` lowercases to itself + delta.
struct LowercaseRun {
    uint32_t first;
    uint32_t last;
    uint8_t step;
    int32_t delta;
};

// Codepoints `first`..`last` all have `to` as the first codepoint of their NFD form.
struct NfdRange {
    uint32_t first;
    uint32_t last;
    uint32_t to;
};

// Generated tables (wpm_tables.cpp), sorted by `first`.
extern const LowercaseRun kLowercaseRuns[];
extern const size_t kLowercaseRunsCount;
extern const NfdRange kFirstOfNfdRanges[];
extern const size_t kFirstOfNfdRangesCount;

// The simple (one-codepoint) lowercase mapping; cp itself when it has none.
uint32_t simpleLowercase(uint32_t cp);

// The first codepoint of cp's canonical decomposition; cp itself when it has none.
uint32_t firstOfNfd(uint32_t cp);

struct WpmNormalizer {
    bool lowercase = true;    // tokenizer.ggml.normalizer.lowercase
    bool stripAccents = true; // tokenizer.ggml.normalizer.strip_accents (defaults to lowercase)
};

// Cuts text into the words WordPiece matches, normalized as llama.cpp's BERT normalizer does:
//  - with stripAccents, each codepoint is replaced by the first codepoint of its NFD form
//    (so "é" becomes "e" and a Hangul syllable its leading consonant) and marks (\p{M}) are
//    dropped;
//  - with lowercase, each codepoint takes its simple lowercase mapping;
//  - whitespace ends a word; NUL, U+FFFD (which invalid UTF-8 decodes to) and \p{C} are
//    dropped without ending one;
//  - punctuation (\p{P}), ASCII symbols and CJK ideographs are words of one character.
// Words are appended to `words` (never empty strings).
void splitWpmWords(std::string_view text, const WpmNormalizer& normalizer,
                   std::vector<std::string>& words);

// Tokenizes text (no special tokens in it) and appends the ids to `out`. Each word, with "▁"
// (U+2581, how GGUF vocabularies mark a word start) in front, is cut greedily from the left
// into the longest byte strings that are tokens; a word that cannot be cut to the end becomes
// the single unknown token. Words have no length limit (llama.cpp has none either).
void encodeWpm(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

} // namespace hearth::tokenizer::detail
