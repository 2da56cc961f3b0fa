// Text helpers for the template interpreter: UTF-8, Python whitespace and case rules, and Python
// number formatting and parsing.
#include "tokenizer/chat_template/text_util.h"

#include "tokenizer/unicode.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace hearth::tmpl {

Utf8Char decodeUtf8(std::string_view s, size_t pos) {
    const auto b0 = static_cast<unsigned char>(s[pos]);
    if (b0 < 0x80) return {b0, 1, true};
    size_t need = 0;
    char32_t cp = 0;
    char32_t minimum = 0;
    if ((b0 & 0xE0) == 0xC0) {
        need = 1;
        cp = b0 & 0x1F;
        minimum = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        need = 2;
        cp = b0 & 0x0F;
        minimum = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        need = 3;
        cp = b0 & 0x07;
        minimum = 0x10000;
    } else {
        return {0xFFFD, 1, false};
    }
    for (size_t k = 1; k <= need; ++k) {
        if (pos + k >= s.size()) return {0xFFFD, 1, false};
        const auto b = static_cast<unsigned char>(s[pos + k]);
        if ((b & 0xC0) != 0x80) return {0xFFFD, 1, false};
        cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1, false};
    return {cp, need + 1, true};
}

void appendUtf8(std::string& out, char32_t cp) { tokenizer::appendUtf8(out, uint32_t(cp)); }

size_t utf8Length(std::string_view s) {
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++n) {
        if (static_cast<unsigned char>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        i += decodeUtf8(s, i).len;
    }
    return n;
}

std::vector<size_t> utf8Offsets(std::string_view s) {
    std::vector<size_t> offsets;
    offsets.reserve(s.size() + 1);
    for (size_t i = 0; i < s.size();) {
        offsets.push_back(i);
        i += static_cast<unsigned char>(s[i]) < 0x80 ? 1 : decodeUtf8(s, i).len;
    }
    offsets.push_back(s.size());
    return offsets;
}

bool isPySpace(char32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    if (cp < 0x85) return false;
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool isPyPrintable(char32_t cp) {
    if (cp < 0x20 || cp == 0x7F) return false;
    if (cp < 0x7F) return true;
    if (cp <= 0xA0) return false; // C1 controls and NBSP (Zs)
    if (cp == 0xAD) return false; // soft hyphen (Cf)
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
        (cp >= 0x205F && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x206F) || cp == 0x3000)
        return false;
    if ((cp >= 0x0600 && cp <= 0x0605) || cp == 0x061C || cp == 0x06DD || cp == 0x070F ||
        cp == 0x180E || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB))
        return false;
    if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0xE000 && cp <= 0xF8FF)) return false;
    if (cp >= 0xF0000) return false; // private use planes
    if (cp == 0xE0001 || (cp >= 0xE0020 && cp <= 0xE007F)) return false;
    if ((cp & 0xFFFE) == 0xFFFE) return false; // noncharacters
    return true;
}

std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
    auto shouldStrip = [&](char32_t cp) {
        if (!chars) return isPySpace(cp);
        for (size_t i = 0; i < chars->size();) {
            Utf8Char c = decodeUtf8(*chars, i);
            if (c.cp == cp) return true;
            i += c.len;
        }
        return false;
    };
    size_t begin = 0;
    size_t end = s.size();
    if (left) {
        while (begin < end) {
            Utf8Char c = decodeUtf8(s, begin);
            if (!c.valid || !shouldStrip(c.cp)) break;
            begin += c.len;
        }
    }
    if (right) {
        while (end > begin) {
            size_t start = end - 1;
            while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
            Utf8Char c = decodeUtf8(s, start);
            if (start + c.len != end) break; // invalid tail byte: keep it
            if (!c.valid || !shouldStrip(c.cp)) break;
            end = start;
        }
    }
    return std::string(s.substr(begin, end - begin));
}

namespace {

// Case pairs laid out as alternating upper (even) / lower (odd) code points.
bool inAlternatingEvenUpper(char32_t cp) {
    return (cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177) ||
           (cp >= 0x460 && cp <= 0x481) || (cp >= 0x48A && cp <= 0x4BF) ||
           (cp >= 0x4D0 && cp <= 0x52F) || (cp >= 0x1E00 && cp <= 0x1E95) ||
           (cp >= 0x1EA0 && cp <= 0x1EFF);
}
// ... and with odd upper / even lower.
bool inAlternatingOddUpper(char32_t cp) {
    return (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E) ||
           (cp >= 0x4C1 && cp <= 0x4CE);
}

} // namespace

char32_t toUpperCp(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
    if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
    if (cp == 0xFF) return 0x178;
    if (cp == 0xB5) return 0x39C;
    if (cp == 0x131) return 'I';
    if (cp == 0x17F) return 'S';
    if (inAlternatingEvenUpper(cp)) return (cp & 1) ? cp - 1 : cp;
    if (inAlternatingOddUpper(cp)) return (cp & 1) ? cp : cp - 1;
    if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
    if (cp == 0x3C2) return 0x3A3;
    if (cp == 0x3AC) return 0x386;
    if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
    if (cp == 0x3CC) return 0x38C;
    if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
    if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
    if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
    if (cp == 0x4CF) return 0x4C0;
    if (cp >= 0x561 && cp <= 0x586) return cp - 48;
    if (cp >= 0xFF41 && cp <= 0xFF5A) return cp - 32;
    return cp;
}

char32_t toLowerCp(char32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
    if (cp == 0x178) return 0xFF;
    if (cp == 0x130) return 'i';
    if (inAlternatingEvenUpper(cp)) return (cp & 1) ? cp : cp + 1;
    if (inAlternatingOddUpper(cp)) return (cp & 1) ? cp + 1 : cp;
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
    if (cp == 0x386) return 0x3AC;
    if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
    if (cp == 0x38C) return 0x3CC;
    if (cp == 0x38E || cp == 0x38F) return cp + 63;
    if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
    if (cp == 0x4C0) return 0x4CF;
    if (cp >= 0x531 && cp <= 0x556) return cp + 48;
    if (cp >= 0xFF21 && cp <= 0xFF3A) return cp + 32;
    return cp;
}

bool isUpperCp(char32_t cp) { return toLowerCp(cp) != cp || cp == 0x130; }
bool isLowerCp(char32_t cp) {
    return toUpperCp(cp) != cp || cp == 0xDF || cp == 0x138 || cp == 0x149;
}
bool isCased(char32_t cp) { return isUpperCp(cp) || isLowerCp(cp); }

bool isDigitCp(char32_t cp) {
    return (cp >= '0' && cp <= '9') || (cp >= 0x660 && cp <= 0x669) ||
           (cp >= 0x6F0 && cp <= 0x6F9) || (cp >= 0x966 && cp <= 0x96F) ||
           (cp >= 0xFF10 && cp <= 0xFF19);
}

bool isAlphaCp(char32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    if (isCased(cp) || cp == 0xAA || cp == 0xBA) return true;
    return (cp >= 0x5D0 && cp <= 0x5EA) || (cp >= 0x620 && cp <= 0x64A) ||
           (cp >= 0x904 && cp <= 0x939) || (cp >= 0xE01 && cp <= 0xE30) ||
           (cp >= 0x3041 && cp <= 0x3096) || (cp >= 0x30A1 && cp <= 0x30FA) ||
           (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) ||
           (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0x20000 && cp <= 0x2FA1F);
}

namespace {

template <typename Map> std::string mapChars(std::string_view s, Map&& map) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        Utf8Char c = decodeUtf8(s, i);
        char32_t m = c.valid ? map(c.cp, i == 0) : c.cp;
        if (!c.valid || m == c.cp)
            out.append(s.substr(i, c.len));
        else
            appendUtf8(out, m);
        i += c.len;
    }
    return out;
}

} // namespace

std::string pyUpper(std::string_view s) {
    std::string out = mapChars(s, [](char32_t cp, bool) { return toUpperCp(cp); });
    // The one common full (one-to-many) mapping: sharp s becomes "SS".
    for (size_t k = out.find("\xC3\x9F"); k != std::string::npos; k = out.find("\xC3\x9F", k)) out.replace(k, 2, "SS");
    return out;
}
std::string pyLower(std::string_view s) {
    return mapChars(s, [](char32_t cp, bool) { return toLowerCp(cp); });
}
std::string pyCapitalize(std::string_view s) {
    return mapChars(s, [](char32_t cp, bool first) { return first ? toUpperCp(cp) : toLowerCp(cp); });
}

std::string pyTitleMethod(std::string_view s) {
    bool previousCased = false;
    return mapChars(s, [&](char32_t cp, bool) {
        char32_t r = cp;
        if (isUpperCp(cp)) {
            if (previousCased) r = toLowerCp(cp);
            previousCased = true;
        } else if (isLowerCp(cp)) {
            if (!previousCased) r = toUpperCp(cp);
            previousCased = true;
        } else {
            previousCased = false;
        }
        return r;
    });
}

std::string formatPyFloat(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    // sci looks like "-1.2345e+06" or "5e-324".
    bool negative = false;
    size_t p = 0;
    if (sci[p] == '-') {
        negative = true;
        ++p;
    }
    size_t ePos = sci.find('e');
    std::string digits;
    for (size_t i = p; i < ePos; ++i)
        if (sci[i] != '.') digits.push_back(sci[i]);
    int exp = std::atoi(sci.c_str() + ePos + 1);
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();

    std::string out = negative ? "-" : "";
    if (exp < -4 || exp >= 16) {
        out += digits[0];
        if (digits.size() > 1) {
            out += '.';
            out.append(digits, 1, std::string::npos);
        }
        char e[16];
        std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        out += e;
    } else if (exp >= 0) {
        const auto intDigits = static_cast<size_t>(exp) + 1;
        if (digits.size() <= intDigits) {
            out += digits;
            out.append(intDigits - digits.size(), '0');
            out += ".0";
        } else {
            out.append(digits, 0, intDigits);
            out += '.';
            out.append(digits, intDigits, std::string::npos);
        }
    } else {
        out += "0.";
        out.append(static_cast<size_t>(-exp - 1), '0');
        out += digits;
    }
    return out;
}

std::string pyStringRepr(std::string_view s) {
    const bool hasSingle = s.find('\'') != std::string_view::npos;
    const bool hasDouble = s.find('"') != std::string_view::npos;
    const char quote = (hasSingle && !hasDouble) ? '"' : '\'';
    std::string out(1, quote);
    char buf[16];
    for (size_t i = 0; i < s.size();) {
        Utf8Char c = decodeUtf8(s, i);
        if (!c.valid) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i]));
            out += buf;
        } else if (c.cp == static_cast<char32_t>(quote) || c.cp == '\\') {
            out += '\\';
            out += static_cast<char>(c.cp);
        } else if (c.cp == '\n') {
            out += "\\n";
        } else if (c.cp == '\r') {
            out += "\\r";
        } else if (c.cp == '\t') {
            out += "\\t";
        } else if (!isPyPrintable(c.cp)) {
            if (c.cp < 0x100)
                std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c.cp));
            else if (c.cp < 0x10000)
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c.cp));
            else
                std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c.cp));
            out += buf;
        } else {
            out.append(s.substr(i, c.len));
        }
        i += c.len;
    }
    out += quote;
    return out;
}

namespace {

// Trims Python whitespace and removes single underscores between digits; false when malformed.
bool cleanNumber(std::string_view s, std::string& out) {
    std::string t = pyStrip(s, nullptr, true, true);
    out.clear();
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '_') {
            const bool ok = i > 0 && i + 1 < t.size() && std::isalnum(static_cast<unsigned char>(t[i - 1])) &&
                            std::isalnum(static_cast<unsigned char>(t[i + 1]));
            if (!ok) return false;
            continue;
        }
        out.push_back(t[i]);
    }
    return !out.empty();
}

} // namespace

bool parsePyInt(std::string_view s, int base, int64_t& out) {
    std::string t;
    if (!cleanNumber(s, t)) return false;
    bool negative = false;
    size_t p = 0;
    if (t[0] == '+' || t[0] == '-') {
        negative = t[0] == '-';
        p = 1;
    }
    if (p >= t.size()) return false;
    // Prefixes are allowed when they match the base; base 0 takes the base from the prefix.
    if (p + 1 < t.size() && t[p] == '0') {
        const char x = static_cast<char>(std::tolower(static_cast<unsigned char>(t[p + 1])));
        const int prefixBase = x == 'x' ? 16 : (x == 'o' ? 8 : (x == 'b' ? 2 : 0));
        if (prefixBase && (base == 0 || base == prefixBase)) {
            base = prefixBase;
            p += 2;
        }
    }
    if (base == 0) {
        if (t.size() - p > 1 && t[p] == '0') return false; // Python refuses leading zeros here
        base = 10;
    }
    if (p >= t.size() || t[p] == '+' || t[p] == '-') return false;
    uint64_t magnitude = 0;
    auto res = std::from_chars(t.data() + p, t.data() + t.size(), magnitude, base);
    if (res.ec != std::errc() || res.ptr != t.data() + t.size()) return false;
    if (negative) {
        if (magnitude > uint64_t(INT64_MAX) + 1) return false;
        out = magnitude == uint64_t(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(magnitude);
    } else {
        if (magnitude > uint64_t(INT64_MAX)) return false;
        out = static_cast<int64_t>(magnitude);
    }
    return true;
}

bool parsePyFloat(std::string_view s, double& out) {
    std::string t;
    if (!cleanNumber(s, t)) return false;
    bool negative = false;
    size_t p = 0;
    if (t[0] == '+' || t[0] == '-') {
        negative = t[0] == '-';
        p = 1;
    }
    std::string rest = pyLower(std::string_view(t).substr(p));
    if (rest == "inf" || rest == "infinity") {
        out = negative ? -HUGE_VAL : HUGE_VAL;
        return true;
    }
    if (rest == "nan") {
        out = std::nan("");
        return true;
    }
    if (rest.empty() || !(std::isdigit(static_cast<unsigned char>(rest[0])) || rest[0] == '.'))
        return false;
    double v = 0;
    auto res = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (res.ec == std::errc::result_out_of_range) {
        v = HUGE_VAL; // huge magnitudes overflow to infinity (tiny ones were set to 0 already)
        if (rest.find("e-") != std::string::npos) v = 0;
    } else if (res.ec != std::errc() || res.ptr != rest.data() + rest.size()) {
        return false;
    }
    out = negative ? -v : v;
    return true;
}

} // namespace hearth::tmpl
