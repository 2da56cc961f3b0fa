// Command-line option values shared by hearth-cli's commands and hearth-server: whole-string
// integers (in a range), decimal numbers and byte sizes, each false for anything else.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace hearth::options {

// An integer that is the whole of s.
template <typename T> bool parseWhole(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

// An integer that is the whole of s, within [lo, hi].
inline bool parseInt(std::string_view s, int& out, int lo, int hi) {
    int v = 0;
    if (!parseWhole(s, v) || v < lo || v > hi) return false;
    out = v;
    return true;
}

// A decimal number that is the whole of s.
template <typename T> bool parseReal(std::string_view s, T& out) {
    const std::string text(s);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || !end || *end != '\0') return false;
    out = T(v);
    return true;
}

// "512M", "2G", "1.5GiB", "1T", "64kb", "1048576" -> bytes (binary units, any case, an optional
// B or iB); at least one byte.
bool parseByteSize(std::string_view text, uint64_t& bytes);

} // namespace hearth::options
