// The template lexer, following Jinja2's lexing rules for the environment transformers uses
// (trim_blocks, lstrip_blocks, keep_trailing_newline off) without regular expressions.
#include "tokenizer/chat_template/lexer.h"

#include "tokenizer/chat_template/text_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace hearth::tmpl {

namespace {

// Newlines become "\n"; one trailing newline is dropped (keep_trailing_newline=False).
std::string normalizeSource(std::string_view src) {
    std::string out;
    out.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\r') {
            out.push_back('\n');
            if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
        } else {
            out.push_back(src[i]);
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

bool isIdentStart(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool isIdentChar(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

class Lexer {
public:
    explicit Lexer(std::string src) : m_src(std::move(src)) {
        for (size_t i = 0; i < m_src.size(); ++i)
            if (m_src[i] == '\n') m_newlines.push_back(i);
    }

    Result<std::vector<Token>> run();

private:
    int lineAt(size_t pos) const {
        return 1 + static_cast<int>(std::lower_bound(m_newlines.begin(), m_newlines.end(), pos) -
                                    m_newlines.begin());
    }
    Status error(size_t pos, const std::string& msg) const {
        return invalidFormat("line " + std::to_string(lineAt(pos)) + ": " + msg);
    }
    // Length of Python whitespace at pos (0 if none).
    size_t spaceAt(size_t pos) const {
        if (pos >= m_src.size()) return 0;
        Utf8Char c = decodeUtf8(m_src, pos);
        return (c.valid && isPySpace(c.cp)) ? c.len : 0;
    }
    size_t skipSpace(size_t pos) const {
        while (size_t n = spaceAt(pos)) pos += n;
        return pos;
    }
    bool startsWith(size_t pos, std::string_view s) const {
        return m_src.compare(pos, s.size(), s) == 0;
    }
    void emitData(std::string text, size_t pos) {
        if (text.empty()) return;
        Token t;
        t.type = TokenType::Data;
        t.text = std::move(text);
        t.line = lineAt(pos);
        m_tokens.push_back(std::move(t));
    }
    void emit(TokenType type, std::string text, size_t pos) {
        Token t;
        t.type = type;
        t.text = std::move(text);
        t.line = lineAt(pos);
        m_tokens.push_back(std::move(t));
    }
    // Text before a tag, with the tag's whitespace control applied.
    std::string stripBefore(std::string_view text, char sign, bool isVariable) const;
    // Matches "{%[-+]? raw [-]%}" at pos; returns the end or npos.
    size_t matchRawBegin(size_t pos) const;
    Status lexRaw(size_t& pos);
    Status lexComment(size_t& pos);
    Status lexTag(size_t& pos, bool isVariable);
    Status lexString(size_t& pos);
    bool lexNumber(size_t& pos);

    std::string m_src;
    std::vector<size_t> m_newlines;
    std::vector<Token> m_tokens;
    bool m_lineStarting = true;
};

std::string Lexer::stripBefore(std::string_view text, char sign, bool isVariable) const {
    if (sign == '-') return pyStrip(text, nullptr, false, true);
    if (sign != '+' && !isVariable) {
        size_t lpos = text.rfind('\n');
        lpos = (lpos == std::string_view::npos) ? 0 : lpos + 1;
        if ((lpos > 0 || m_lineStarting) && lpos < text.size()) {
            bool allSpace = true;
            for (size_t i = lpos; i < text.size();) {
                Utf8Char c = decodeUtf8(text, i);
                if (!c.valid || !isPySpace(c.cp)) {
                    allSpace = false;
                    break;
                }
                i += c.len;
            }
            if (allSpace) return std::string(text.substr(0, lpos));
        }
    }
    return std::string(text);
}

size_t Lexer::matchRawBegin(size_t pos) const {
    size_t q = pos + 2;
    if (q < m_src.size() && (m_src[q] == '-' || m_src[q] == '+')) ++q;
    q = skipSpace(q);
    if (!startsWith(q, "raw")) return std::string::npos;
    q = skipSpace(q + 3);
    if (startsWith(q, "-%}")) return skipSpace(q + 3);
    if (startsWith(q, "%}")) return q + 2;
    return std::string::npos;
}

Status Lexer::lexRaw(size_t& pos) {
    const size_t start = pos;
    for (size_t q = m_src.find("{%", start); q != std::string::npos; q = m_src.find("{%", q + 1)) {
        size_t j = q + 2;
        char sign = 0;
        if (j < m_src.size() && (m_src[j] == '-' || m_src[j] == '+')) sign = m_src[j++];
        j = skipSpace(j);
        if (!startsWith(j, "endraw")) continue;
        j = skipSpace(j + 6);
        size_t end;
        if (startsWith(j, "+%}")) {
            end = j + 3;
        } else if (startsWith(j, "-%}")) {
            end = skipSpace(j + 3);
        } else if (startsWith(j, "%}")) {
            end = j + 2;
            if (end < m_src.size() && m_src[end] == '\n') ++end;
        } else {
            continue;
        }
        emitData(stripBefore(std::string_view(m_src).substr(start, q - start), sign, false), start);
        pos = end;
        m_lineStarting = end > 0 && m_src[end - 1] == '\n';
        return Status::ok();
    }
    return error(start, "missing end of raw directive");
}

Status Lexer::lexComment(size_t& pos) {
    const size_t start = pos;
    size_t k = m_src.find("#}", start);
    if (k == std::string::npos) return error(start, "missing end of comment tag");
    size_t end = k + 2;
    if (k > start && m_src[k - 1] == '-') {
        end = skipSpace(end);
    } else if (k > start && m_src[k - 1] == '+') {
        // no trimming
    } else if (end < m_src.size() && m_src[end] == '\n') {
        ++end;
    }
    pos = end;
    m_lineStarting = m_src[end - 1] == '\n';
    return Status::ok();
}

Status Lexer::lexString(size_t& pos) {
    const char quote = m_src[pos];
    size_t q = pos + 1;
    std::string out;
    while (true) {
        if (q >= m_src.size()) return error(pos, std::string("unexpected char '") + quote + "'");
        const char c = m_src[q];
        if (c == quote) break;
        if (c != '\\') {
            out.push_back(c);
            ++q;
            continue;
        }
        if (q + 1 >= m_src.size()) return error(pos, std::string("unexpected char '") + quote + "'");
        const char e = m_src[q + 1];
        q += 2;
        auto hexDigits = [&](size_t count, uint32_t& value) {
            value = 0;
            for (size_t i = 0; i < count; ++i) {
                if (q + i >= m_src.size() || !std::isxdigit(static_cast<unsigned char>(m_src[q + i])))
                    return false;
                char h = m_src[q + i];
                value = value * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
            }
            q += count;
            return true;
        };
        uint32_t v = 0;
        switch (e) {
        case '\n': break; // line continuation
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'v': out.push_back('\v'); break;
        case 'x':
            if (!hexDigits(2, v)) return error(pos, "truncated \\xXX escape");
            appendUtf8(out, v);
            break;
        case 'u':
            if (!hexDigits(4, v)) return error(pos, "truncated \\uXXXX escape");
            appendUtf8(out, (v >= 0xD800 && v <= 0xDFFF) ? 0xFFFD : v);
            break;
        case 'U':
            if (!hexDigits(8, v)) return error(pos, "truncated \\UXXXXXXXX escape");
            if (v > 0x10FFFF) return error(pos, "illegal Unicode character");
            appendUtf8(out, (v >= 0xD800 && v <= 0xDFFF) ? 0xFFFD : v);
            break;
        case 'N': return error(pos, "\\N{...} escapes are not supported");
        default:
            if (e >= '0' && e <= '7') {
                v = static_cast<uint32_t>(e - '0');
                for (int i = 0; i < 2 && q < m_src.size() && m_src[q] >= '0' && m_src[q] <= '7'; ++i)
                    v = v * 8 + static_cast<uint32_t>(m_src[q++] - '0');
                appendUtf8(out, v);
            } else if (static_cast<unsigned char>(e) >= 0x80) {
                // Python escapes the non-ASCII character first ("\xe9"), so the backslash
                // escapes that escape's backslash: the result is the escape spelled out.
                Utf8Char ch = decodeUtf8(m_src, q - 1);
                char buf[16];
                if (ch.cp < 0x100)
                    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(ch.cp));
                else if (ch.cp < 0x10000)
                    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(ch.cp));
                else
                    std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(ch.cp));
                out += buf;
                q = q - 1 + ch.len;
            } else {
                out.push_back('\\');
                out.push_back(e);
            }
        }
    }
    Token t;
    t.type = TokenType::String;
    t.text = std::move(out);
    t.line = lineAt(pos);
    m_tokens.push_back(std::move(t));
    pos = q + 1;
    return Status::ok();
}

bool Lexer::lexNumber(size_t& pos) {
    const std::string& s = m_src;
    auto digitsRun = [&](size_t p, auto isDigit) {
        // (digits '_')* digits ; returns end or p when no digit
        size_t q = p;
        if (q >= s.size() || !isDigit(s[q])) return p;
        while (q < s.size()) {
            if (isDigit(s[q])) {
                ++q;
            } else if (s[q] == '_' && q + 1 < s.size() && isDigit(s[q + 1])) {
                ++q;
            } else {
                break;
            }
        }
        return q;
    };
    auto dec = [](char c) { return c >= '0' && c <= '9'; };
    const size_t start = pos;
    // Float: digits ( (.digits)? e[+-]digits | .digits ), not right after a '.'.
    if (!(start > 0 && s[start - 1] == '.')) {
        size_t q = digitsRun(start, dec);
        if (q > start) {
            size_t end = std::string::npos;
            size_t f = q;
            if (f < s.size() && s[f] == '.') {
                size_t g = digitsRun(f + 1, dec);
                if (g > f + 1) f = g;
            }
            if (f < s.size() && (s[f] == 'e' || s[f] == 'E')) {
                size_t g = f + 1;
                if (g < s.size() && (s[g] == '+' || s[g] == '-')) ++g;
                size_t h = digitsRun(g, dec);
                if (h > g) end = h;
            }
            if (end == std::string::npos && f > q) end = f;
            if (end != std::string::npos) {
                std::string text;
                for (size_t i = start; i < end; ++i)
                    if (s[i] != '_') text.push_back(s[i]);
                double v = 0;
                auto res = std::from_chars(text.data(), text.data() + text.size(), v);
                if (res.ec == std::errc::result_out_of_range)
                    v = (text.find("e-") != std::string::npos || text.find("E-") != std::string::npos) ? 0.0 : HUGE_VAL;
                Token t;
                t.type = TokenType::Float;
                t.floatValue = v;
                t.text = s.substr(start, end - start);
                t.line = lineAt(start);
                m_tokens.push_back(std::move(t));
                pos = end;
                return true;
            }
        }
    }
    // Integer: 0b / 0o / 0x prefixes, decimal without leading zeros, or zeros.
    int base = 10;
    size_t q = start;
    size_t end = start;
    if (s[q] == '0' && q + 1 < s.size() && std::strchr("bBoOxX", s[q + 1]) && s[q + 1] != 0) {
        const char p = static_cast<char>(std::tolower(s[q + 1]));
        base = p == 'b' ? 2 : (p == 'o' ? 8 : 16);
        auto ok = [base](char c) {
            if (base == 2) return c == '0' || c == '1';
            if (base == 8) return c >= '0' && c <= '7';
            return std::isxdigit(static_cast<unsigned char>(c)) != 0;
        };
        size_t r = q + 2;
        while (r < s.size() && (ok(s[r]) || (s[r] == '_' && r + 1 < s.size() && ok(s[r + 1])))) ++r;
        if (r > q + 2) end = r;
    }
    if (end == start) {
        base = 10;
        if (s[q] == '0') {
            size_t r = q + 1;
            while (r < s.size() && (s[r] == '0' || (s[r] == '_' && r + 1 < s.size() && s[r + 1] == '0'))) ++r;
            end = r;
        } else {
            end = digitsRun(q, dec);
        }
    }
    std::string digits;
    for (size_t i = (base == 10 ? start : start + 2); i < end; ++i)
        if (s[i] != '_') digits.push_back(s[i]);
    uint64_t v = 0;
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
    Token t;
    t.line = lineAt(start);
    t.text = s.substr(start, end - start);
    if (res.ec != std::errc() || v > uint64_t(INT64_MAX)) {
        // Beyond 64 bits: keep it as a float, as close as we can get.
        t.type = TokenType::Float;
        double d = 0;
        for (char c : digits) d = d * base + (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10);
        t.floatValue = d;
    } else {
        t.type = TokenType::Integer;
        t.intValue = static_cast<int64_t>(v);
    }
    m_tokens.push_back(std::move(t));
    pos = end;
    return true;
}

Status Lexer::lexTag(size_t& pos, bool isVariable) {
    std::vector<char> balance;
    size_t q = pos;
    static const char* const kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*",
                                             "%",  "~",  "[",  "]",  "(",  ")",  "{", "}", ">", "<",
                                             "=",  ".",  ":",  "|",  ",",  ";"};
    while (true) {
        if (q >= m_src.size()) {
            pos = q;
            return Status::ok(); // the parser reports the missing end
        }
        if (balance.empty()) {
            size_t end = std::string::npos;
            if (isVariable) {
                if (startsWith(q, "-}}"))
                    end = skipSpace(q + 3);
                else if (startsWith(q, "}}"))
                    end = q + 2;
            } else {
                if (startsWith(q, "+%}")) {
                    end = q + 3;
                } else if (startsWith(q, "-%}")) {
                    end = skipSpace(q + 3);
                } else if (startsWith(q, "%}")) {
                    end = q + 2;
                    if (end < m_src.size() && m_src[end] == '\n') ++end;
                }
            }
            if (end != std::string::npos) {
                emit(isVariable ? TokenType::VariableEnd : TokenType::BlockEnd, {}, q);
                pos = end;
                m_lineStarting = m_src[end - 1] == '\n';
                return Status::ok();
            }
        }
        if (size_t n = spaceAt(q)) {
            q += n;
            continue;
        }
        const auto c = static_cast<unsigned char>(m_src[q]);
        if (std::isdigit(c)) {
            lexNumber(q);
            continue;
        }
        if (isIdentStart(c)) {
            size_t r = q + 1;
            while (r < m_src.size() && isIdentChar(static_cast<unsigned char>(m_src[r]))) ++r;
            emit(TokenType::Name, m_src.substr(q, r - q), q);
            q = r;
            continue;
        }
        if (c == '\'' || c == '"') {
            HEARTH_RETURN_IF_ERROR(lexString(q));
            continue;
        }
        bool matched = false;
        for (const char* op : kOperators) {
            if (!startsWith(q, op)) continue;
            const std::string text(op);
            if (text == "(" || text == "[" || text == "{") {
                balance.push_back(text == "(" ? ')' : (text == "[" ? ']' : '}'));
            } else if (text == ")" || text == "]" || text == "}") {
                if (balance.empty()) return error(q, "unexpected '" + text + "'");
                if (balance.back() != text[0])
                    return error(q, "unexpected '" + text + "', expected '" + std::string(1, balance.back()) + "'");
                balance.pop_back();
            }
            emit(TokenType::Operator, text, q);
            q += text.size();
            matched = true;
            break;
        }
        if (!matched) {
            Utf8Char ch = decodeUtf8(m_src, q);
            return error(q, "unexpected char '" + m_src.substr(q, ch.len) + "'");
        }
    }
}

Result<std::vector<Token>> Lexer::run() {
    size_t pos = 0;
    const size_t n = m_src.size();
    while (pos < n) {
        size_t p = pos;
        while (true) {
            p = m_src.find('{', p);
            if (p == std::string::npos || p + 1 >= n) {
                p = std::string::npos;
                break;
            }
            const char c = m_src[p + 1];
            if (c == '%' || c == '{' || c == '#') break;
            ++p;
        }
        if (p == std::string::npos) {
            emitData(m_src.substr(pos), pos);
            break;
        }
        const char kind = m_src[p + 1];
        const char sign = (p + 2 < n && (m_src[p + 2] == '-' || m_src[p + 2] == '+')) ? m_src[p + 2] : 0;
        const std::string_view text = std::string_view(m_src).substr(pos, p - pos);
        if (kind == '%') {
            size_t rawEnd = matchRawBegin(p);
            if (rawEnd != std::string::npos) {
                emitData(stripBefore(text, sign, false), pos);
                m_lineStarting = m_src[rawEnd - 1] == '\n';
                pos = rawEnd;
                HEARTH_RETURN_IF_ERROR(lexRaw(pos));
                continue;
            }
        }
        emitData(stripBefore(text, sign, kind == '{'), pos);
        m_lineStarting = false;
        pos = p + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            HEARTH_RETURN_IF_ERROR(lexComment(pos));
            continue;
        }
        emit(kind == '{' ? TokenType::VariableBegin : TokenType::BlockBegin, {}, p);
        HEARTH_RETURN_IF_ERROR(lexTag(pos, kind == '{'));
    }
    Token eof;
    eof.type = TokenType::Eof;
    eof.line = lineAt(n);
    m_tokens.push_back(std::move(eof));
    return std::move(m_tokens);
}

} // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
    Lexer lexer(normalizeSource(source));
    return lexer.run();
}

} // namespace hearth::tmpl
