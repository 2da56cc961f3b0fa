// GPT-2 byte-level alphabet: every byte has a printable stand-in character, so byte-level
// BPE vocabularies can spell any byte string as ordinary text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hearth::tokenizer {

// The stand-in codepoint of a byte: printable Latin-1 bytes (! to ~, ¡ to ¬, ® to ÿ) stand
// for themselves; the other 68 bytes map, in byte order, to U+0100 upward.
uint32_t byteToCodepoint(uint8_t byte);

// The UTF-8 spelling of byteToCodepoint(byte).
std::string_view byteToUtf8(uint8_t byte);

// The byte a stand-in codepoint represents, or -1 if it represents none.
int codepointToByte(uint32_t cp);

// Appends the byte-level spelling of raw bytes (each byte becomes its stand-in character).
void appendByteLevel(std::string& out, std::string_view bytes);

} // namespace hearth::tokenizer
