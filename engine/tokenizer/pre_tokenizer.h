// BPE pre-tokenizers: which split rules a `tokenizer.ggml.pre` name selects, and the
// splitting of text into words by those rules (hand-written matchers, no regex engine).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace hearth::tokenizer {

// The families of split rules we implement. Several `tokenizer.ggml.pre` names share one.
enum class PreTokenizerKind {
    Default,       // punctuation runs, GPT-2 rules, digit runs, digit triples
    Gpt2,          // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
    Llama3,        // case-insensitive contractions, letters with one leading non-letter, \p{N}{1,3}
    Qwen2,         // as Llama3 but digits one at a time
    Qwen35,        // as Qwen2 with combining marks counted as letters
    DeepseekLlm,   // newlines, cased-letter runs, ASCII/full-width punctuation, CJK, digit runs
    DeepseekCoder, // newlines, letter runs, punctuation runs, CJK, single digits
    Falcon,        // punctuation runs (with `), GPT-2 rules, digit triples
    Starcoder,     // single digits, then GPT-2 rules
    Gpt4o,         // o200k: case-shaped letter runs with contractions, \p{N}{1,3}, ...
    Tekken,        // Mistral Tekken: as Gpt4o without contractions, digits one at a time
    Gemma4,        // [^\n]+|[\n]+ over SentencePiece-style text (spaces already U+2581)
};

struct PreTokenizerConfig {
    PreTokenizerKind kind = PreTokenizerKind::Default;
    bool known = true;          // false: the name was not recognised and Default is used
    bool cleanSpaces = true;    // decode applies clean_up_tokenization_spaces
    bool ignoreMerges = false;  // a word that is already a token is emitted whole
    bool forceAddBos = false;   // the family adds BOS unless the file says otherwise
    // Gemma 4 style (SentencePiece-shaped BPE), all three set by the Gemma4 kind:
    bool byteLevel = true;     // words are spelled in the GPT-2 byte alphabet; false: raw
                               // UTF-8 with <0xXX> byte tokens for what the vocab lacks
    bool escapeSpaces = false; // spaces become U+2581 before splitting; decode undoes it
    bool alwaysAddBos = false; // BOS is added even when the file says not to
};

// Maps a `tokenizer.ggml.pre` value to its configuration. An empty name means Default; an
// unknown name gives Default with known = false (the caller warns).
PreTokenizerConfig preTokenizerConfig(std::string_view name);

std::string_view preTokenizerKindName(PreTokenizerKind kind);

// A word: codepoints [begin, end) of the text being split.
struct CodepointRange {
    uint32_t begin = 0;
    uint32_t end = 0;
};

// Splits decoded text into words. `info` holds codepointInfo() of each codepoint. The words
// cover the text exactly, in order; none is empty.
void preTokenize(PreTokenizerKind kind, std::span<const uint32_t> cps,
                 std::span<const uint8_t> info, std::vector<CodepointRange>& words);

} // namespace hearth::tokenizer
