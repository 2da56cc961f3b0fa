// Text helpers for the template interpreter: UTF-8 walking that keeps invalid bytes, Python's
// notion of whitespace and printable characters, simple case mapping, and Python number formatting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tmpl {

// One decoded character: its code point (0xFFFD for an invalid byte) and its byte length (>= 1).
struct Utf8Char {
    char32_t cp;
    size_t len;
    bool valid;
};

Utf8Char decodeUtf8(std::string_view s, size_t pos);
void appendUtf8(std::string& out, char32_t cp);

// Number of characters (code points; each invalid byte counts as one).
size_t utf8Length(std::string_view s);
// Byte offsets of every character start, plus s.size() at the end.
std::vector<size_t> utf8Offsets(std::string_view s);
inline bool isAscii(std::string_view s) {
    for (unsigned char c : s)
        if (c >= 0x80) return false;
    return true;
}

// Python str.isspace() for one code point (also what `\s` matches in Python's re).
bool isPySpace(char32_t cp);
// Python str.isprintable() for one code point (an approximation for rare categories).
bool isPyPrintable(char32_t cp);

// Python str.strip/lstrip/rstrip: with chars == nullptr strips whitespace, else any of `chars`.
std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right);

// Simple (one-to-one) case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic.
char32_t toUpperCp(char32_t cp);
char32_t toLowerCp(char32_t cp);
bool isCased(char32_t cp);
bool isUpperCp(char32_t cp);
bool isLowerCp(char32_t cp);
bool isAlphaCp(char32_t cp);
bool isDigitCp(char32_t cp);

std::string pyUpper(std::string_view s);
std::string pyLower(std::string_view s);
std::string pyCapitalize(std::string_view s); // first character upper, the rest lower
std::string pyTitleMethod(std::string_view s); // str.title(): after a non-cased character, upper

// Python repr(float) / str(float): shortest round-trip digits, "1.0", "1e+16", "1.5e-05",
// "inf", "nan".
std::string formatPyFloat(double v);

// Python repr(str): quotes chosen like Python, escapes for \\ \n \r \t and non-printables.
std::string pyStringRepr(std::string_view s);

// Python int() on a string: optional sign, surrounding whitespace, underscores between digits.
bool parsePyInt(std::string_view s, int base, int64_t& out);
// Python float() on a string (also "inf", "nan", with sign and whitespace).
bool parsePyFloat(std::string_view s, double& out);

} // namespace hearth::tmpl
