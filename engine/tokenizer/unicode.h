// Unicode helpers for the tokenizers: codepoint classes (letter, number, ...), White_Space,
// and UTF-8 decoding/encoding with the lenient rules the reference tokenizers use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tokenizer {

// General-category groups, as the pre-tokenizer regexes see them (\p{L}, \p{N}, ...).
enum class CharClass : uint8_t {
    Undefined = 0, // unassigned (Cn)
    Letter = 1,    // Lu Ll Lt Lm Lo
    Number = 2,    // Nd Nl No
    Punctuation = 3,
    Symbol = 4,
    Mark = 5,
    Separator = 6, // Zs Zl Zp
    Control = 7,   // Cc Cf Co Cs
};

// One byte per codepoint: the CharClass in the low bits, kWhitespaceFlag for White_Space (\s).
inline constexpr uint8_t kClassMask = 0x0F;
inline constexpr uint8_t kWhitespaceFlag = 0x10;

uint8_t codepointInfo(uint32_t cp);

inline CharClass classOf(uint8_t info) { return static_cast<CharClass>(info & kClassMask); }
inline bool isLetterInfo(uint8_t info) { return classOf(info) == CharClass::Letter; }
inline bool isNumberInfo(uint8_t info) { return classOf(info) == CharClass::Number; }
inline bool isPunctuationInfo(uint8_t info) { return classOf(info) == CharClass::Punctuation; }
inline bool isWhitespaceInfo(uint8_t info) { return (info & kWhitespaceFlag) != 0; }

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Bytes in the UTF-8 sequence a lead byte announces, judged by its top four bits only
// (continuation and invalid bytes count as 1; 0xF8..0xFF count as 4). This is how the
// SentencePiece-style tokenizer cuts text into symbols.
inline size_t utf8LengthFromLead(uint8_t lead) {
    static constexpr uint8_t kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLength[lead >> 4];
}

// Decodes the codepoint at `pos` and advances past it. A malformed sequence (bad lead byte,
// missing continuation bytes) yields U+FFFD and advances one byte. Like the reference, it does
// not reject overlong forms or surrogates; values above U+10FFFF become U+FFFD.
uint32_t decodeUtf8At(std::string_view text, size_t& pos);

// Decodes a whole string with decodeUtf8At.
std::vector<uint32_t> decodeUtf8(std::string_view text);

// Appends the UTF-8 form of `cp` (cp must be <= U+10FFFF).
void appendUtf8(std::string& out, uint32_t cp);

// Strict UTF-8 validation (no overlongs, no surrogates, nothing above U+10FFFF).
bool isValidUtf8(std::string_view text);

// Bytes at the end of `text` that begin a valid UTF-8 sequence but do not finish it (0 to 3):
// what a streaming decoder must hold back until more bytes arrive.
size_t incompleteUtf8Tail(std::string_view text);

// Appends `text` to `out` with every invalid byte sequence replaced by U+FFFD (one per
// maximal invalid subpart), so the result is always valid UTF-8.
void appendSanitizedUtf8(std::string& out, std::string_view text);

namespace detail {
struct CodepointRun {
    uint32_t start;
    uint8_t info;
};
extern const CodepointRun kCodepointRuns[];
extern const size_t kCodepointRunCount;
} // namespace detail

} // namespace hearth::tokenizer
