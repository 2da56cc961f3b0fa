// JSON Schema `pattern` (an ECMAScript regex subset) to a grammar expression over the string's
// JSON-encoded content: literals, escapes, classes, groups, alternation, quantifiers, and ^ $ at
// the ends of top-level alternatives. Anything else (backreferences, lookaround, \b) is an error.
#include "sample/json_schema.h"

namespace hearth::grammar::schema {

namespace {

// Caps on a pattern: a quantifier's count, and the size once all repetitions are expanded.
constexpr int64_t kMaxQuantifier = 10000;
constexpr double kMaxExpandedElements = 200000;
constexpr int kMaxGroupDepth = 64;

CharSet digitSet() { return CharSet::of('0', '9'); }
CharSet wordSet() {
    CharSet s = CharSet::of('0', '9');
    s.add('a', 'z');
    s.add('A', 'Z');
    s.add('_', '_');
    return s;
}
CharSet spaceSet() { // ECMAScript \s: white space and line terminators
    CharSet s = CharSet::of('\t', '\r');
    s.add(' ', ' ');
    s.add(0xA0, 0xA0);
    s.add(0x1680, 0x1680);
    s.add(0x2000, 0x200A);
    s.add(0x2028, 0x2029);
    s.add(0x202F, 0x202F);
    s.add(0x205F, 0x205F);
    s.add(0x3000, 0x3000);
    s.add(0xFEFF, 0xFEFF);
    return s;
}
CharSet dotSet() { // any character but a line terminator
    CharSet s = CharSet::of(0, 0x10FFFF);
    s.remove('\n', '\n');
    s.remove('\r', '\r');
    s.remove(0x2028, 0x2029);
    return s;
}

class RegexParser {
public:
    RegexParser(const std::string& pattern, std::string where, const Expr& anyChar)
        : m_where(std::move(where)), m_anyChar(anyChar) {
        for (size_t i = 0; i < pattern.size();) {
            auto b = static_cast<unsigned char>(pattern[i]);
            int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
            uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
            for (int k = 1; k < n && i + k < pattern.size(); ++k)
                c = (c << 6) | (static_cast<unsigned char>(pattern[i + k]) & 0x3F);
            i += n;
            m_cps.push_back(c);
        }
    }

    Result<Expr> parse(PatternShape* shape) {
        // Top level: alternatives, each anchored or not at either end.
        std::vector<Expr> alts;
        while (true) {
            bool anchoredStart = peek('^');
            if (anchoredStart) ++m_pos;
            size_t bodyStart = m_pos;
            m_lastOneChar = false;
            HEARTH_ASSIGN_OR_RETURN(Expr body, parseSequence(true));
            bool oneAtom = m_lastOneChar && m_lastAtomStart == bodyStart;
            bool anchoredEnd = peek('$');
            if (anchoredEnd) ++m_pos;
            if (m_error) return *m_error;
            alts.push_back(seq({anchoredStart ? empty() : star(m_anyChar), std::move(body),
                                anchoredEnd ? empty() : star(m_anyChar)}));
            if (atEnd()) {
                if (shape && alts.size() == 1 && anchoredStart && anchoredEnd && oneAtom) {
                    shape->oneCharRepeat = true;
                    shape->oneChar = m_lastAtom;
                    shape->min = m_lastMin;
                    shape->max = m_lastMax;
                }
                break;
            }
            if (peek('|')) {
                ++m_pos;
                continue;
            }
            return fail(std::string("unexpected '") + utf8(m_cps[m_pos]) + "'");
        }
        Expr e = alt(std::move(alts));
        if (expansion(e).elements > kMaxExpandedElements)
            return fail("too large once its repetitions are expanded");
        return e;
    }

private:
    bool atEnd() const { return m_pos >= m_cps.size(); }
    bool peek(uint32_t c) const { return !atEnd() && m_cps[m_pos] == c; }
    Status fail(const std::string& what) const {
        return invalidArgument(m_where + ": pattern " + what + " (at offset " + std::to_string(m_pos) +
                               ")");
    }

    // Concatenated quantified atoms until '|', ')' or the end (or a final '$' at top level).
    Result<Expr> parseSequence(bool topLevel) {
        std::vector<Expr> items;
        while (!atEnd() && !peek('|') && !peek(')')) {
            if (peek('$')) {
                if (topLevel && (m_pos + 1 == m_cps.size() || m_cps[m_pos + 1] == '|')) break;
                return fail("'$' is supported only at the end");
            }
            if (peek('^')) return fail("'^' is supported only at the start");
            bool oneChar = !peek('(');
            if (topLevel && items.empty()) m_lastAtomStart = m_pos;
            else if (topLevel) m_lastAtomStart = size_t(-1);
            HEARTH_ASSIGN_OR_RETURN(Expr atom, parseAtom());
            m_quantMin = m_quantMax = 1;
            if (topLevel) m_lastAtom = atom;
            HEARTH_ASSIGN_OR_RETURN(Expr quantified, parseQuantifier(std::move(atom)));
            if (topLevel) {
                m_lastOneChar = oneChar;
                m_lastMin = m_quantMin;
                m_lastMax = m_quantMax;
            }
            if (expansion(quantified).elements > kMaxExpandedElements)
                return fail("too large once its repetitions are expanded");
            items.push_back(std::move(quantified));
        }
        if (peek(')') && topLevel) return fail("has an unmatched ')'");
        return seq(std::move(items));
    }

    Result<Expr> parseAlternation() {
        std::vector<Expr> alts;
        while (true) {
            HEARTH_ASSIGN_OR_RETURN(Expr s, parseSequence(false));
            alts.push_back(std::move(s));
            if (!peek('|')) break;
            ++m_pos;
        }
        return alt(std::move(alts));
    }

    // Reads digits at m_pos; false when there are none.
    bool readNumber(int64_t& out) {
        size_t start = m_pos;
        out = 0;
        while (!atEnd() && m_cps[m_pos] >= '0' && m_cps[m_pos] <= '9') {
            out = std::min<int64_t>(out * 10 + (m_cps[m_pos] - '0'), int64_t(1) << 40);
            ++m_pos;
        }
        return m_pos > start;
    }

    Result<Expr> parseQuantifier(Expr atom) {
        if (atEnd()) return atom;
        int64_t min = 0, max = 0;
        uint32_t c = m_cps[m_pos];
        if (c == '*' || c == '+' || c == '?') {
            ++m_pos;
            min = c == '+' ? 1 : 0;
            max = c == '?' ? 1 : -1;
        } else if (c == '{') {
            size_t save = m_pos++;
            if (!readNumber(min)) { // not a quantifier: '{' is a literal, read as an atom next
                m_pos = save;
                return atom;
            }
            max = min;
            if (peek(',')) {
                ++m_pos;
                if (!readNumber(max)) max = -1;
            }
            if (!peek('}')) {
                m_pos = save;
                return atom;
            }
            ++m_pos;
            if (max >= 0 && max < min) return fail("has a quantifier {m,n} with n < m");
            if (min > kMaxQuantifier || max > kMaxQuantifier)
                return fail("has a repetition count above " + std::to_string(kMaxQuantifier));
        } else {
            return atom;
        }
        m_quantMin = min;
        m_quantMax = max;
        if (peek('?')) ++m_pos; // lazy: the same language
        if (!atEnd() && (peek('*') || peek('+') || peek('?') || peek('{'))) {
            if (!peek('{')) return fail("has a quantifier that follows a quantifier");
        }
        return rep(std::move(atom), min, max);
    }

    Result<Expr> parseAtom() {
        uint32_t c = m_cps[m_pos];
        if (c == '(') {
            ++m_pos;
            if (++m_groupDepth > kMaxGroupDepth) return fail("nests groups too deeply");
            if (peek('?')) {
                ++m_pos;
                if (peek(':')) {
                    ++m_pos;
                } else if (peek('<') && m_pos + 1 < m_cps.size() && m_cps[m_pos + 1] != '=' &&
                           m_cps[m_pos + 1] != '!') {
                    while (!atEnd() && !peek('>')) ++m_pos; // a named group
                    if (atEnd()) return fail("has an unterminated group name");
                    ++m_pos;
                } else {
                    return fail("uses lookaround or group flags, which are not supported");
                }
            }
            HEARTH_ASSIGN_OR_RETURN(Expr inner, parseAlternation());
            if (!peek(')')) return fail("has an unclosed '('");
            ++m_pos;
            --m_groupDepth;
            return inner;
        }
        if (c == '[') return parseClass();
        if (c == '.') {
            ++m_pos;
            return jsonChars(dotSet());
        }
        if (c == '*' || c == '+' || c == '?') return fail("has a quantifier with nothing to repeat");
        if (c == '\\') {
            CharSet set;
            HEARTH_RETURN_IF_ERROR(parseEscape(false, set));
            return jsonChars(set);
        }
        ++m_pos;
        return lit(jsonEncodeChar(c));
    }

    // After '\\' (at m_pos): one character or a class escape into `set`.
    Status parseEscape(bool inClass, CharSet& set) {
        ++m_pos;
        if (atEnd()) return fail("ends with a lone '\\'");
        uint32_t c = m_cps[m_pos++];
        auto hexDigits = [&](int n, uint32_t& out) {
            out = 0;
            for (int k = 0; k < n; ++k) {
                if (atEnd()) return false;
                uint32_t h = m_cps[m_pos];
                int v = h >= '0' && h <= '9' ? int(h - '0')
                        : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                        : h >= 'A' && h <= 'F' ? int(h - 'A' + 10)
                                               : -1;
                if (v < 0) return false;
                out = out * 16 + uint32_t(v);
                ++m_pos;
            }
            return true;
        };
        switch (c) {
        case 'd': set.add(digitSet()); return Status::ok();
        case 'D': set.add(digitSet().complement()); return Status::ok();
        case 'w': set.add(wordSet()); return Status::ok();
        case 'W': set.add(wordSet().complement()); return Status::ok();
        case 's': set.add(spaceSet()); return Status::ok();
        case 'S': set.add(spaceSet().complement()); return Status::ok();
        case 't': set.add('\t', '\t'); return Status::ok();
        case 'n': set.add('\n', '\n'); return Status::ok();
        case 'r': set.add('\r', '\r'); return Status::ok();
        case 'f': set.add('\f', '\f'); return Status::ok();
        case 'v': set.add('\v', '\v'); return Status::ok();
        case '0': set.add(0, 0); return Status::ok();
        case 'x':
        case 'u': {
            uint32_t v = 0;
            if (!hexDigits(c == 'x' ? 2 : 4, v)) return fail("has a malformed \\x or \\u escape");
            set.add(v, v);
            return Status::ok();
        }
        case 'b':
            if (inClass) {
                set.add('\b', '\b');
                return Status::ok();
            }
            return fail("uses \\b (word boundary), which is not supported");
        default: break;
        }
        if (c >= '1' && c <= '9') return fail("uses a backreference, which is not supported");
        bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (letter) return fail(std::string("uses the unsupported escape \\") + char(c));
        set.add(c, c); // an escaped punctuation or other character stands for itself
        return Status::ok();
    }

    // One class member (a character or a class escape) at m_pos; `single` when it is one character.
    Status parseClassMember(CharSet& set, bool& single, uint32_t& ch) {
        if (peek('\\')) {
            CharSet one;
            HEARTH_RETURN_IF_ERROR(parseEscape(true, one));
            single = one.ranges().size() == 1 && one.ranges()[0].first == one.ranges()[0].second;
            ch = single ? one.ranges()[0].first : 0;
            set = one;
            return Status::ok();
        }
        ch = m_cps[m_pos++];
        single = true;
        set = CharSet::of(ch, ch);
        return Status::ok();
    }

    Result<Expr> parseClass() {
        ++m_pos; // '['
        bool negate = peek('^');
        if (negate) ++m_pos;
        CharSet set;
        while (!atEnd() && !peek(']')) {
            CharSet first;
            bool single = false;
            uint32_t lo = 0;
            HEARTH_RETURN_IF_ERROR(parseClassMember(first, single, lo));
            if (single && peek('-') && m_pos + 1 < m_cps.size() && m_cps[m_pos + 1] != ']') {
                ++m_pos;
                CharSet second;
                bool single2 = false;
                uint32_t hi = 0;
                HEARTH_RETURN_IF_ERROR(parseClassMember(second, single2, hi));
                if (!single2) return fail("has a class range that ends in a class escape");
                if (hi < lo) return fail("has a class range out of order");
                set.add(lo, hi);
            } else {
                set.add(first);
            }
        }
        if (atEnd()) return fail("has an unclosed '['");
        ++m_pos; // ']'
        return jsonChars(negate ? set.complement() : set);
    }

    std::string m_where;
    const Expr& m_anyChar;
    std::vector<uint32_t> m_cps;
    size_t m_pos = 0;
    int m_groupDepth = 0;
    // The last top-level atom (for PatternShape): where the sequence's first atom started (or
    // -1 after a second), whether it is one character, its quantifier.
    size_t m_lastAtomStart = size_t(-1);
    bool m_lastOneChar = false;
    Expr m_lastAtom;
    int64_t m_lastMin = 1, m_lastMax = 1;
    int64_t m_quantMin = 1, m_quantMax = 1;
    std::optional<Status> m_error;
};

} // namespace

Result<Expr> regexToExpr(const std::string& pattern, const std::string& where, const Expr& anyChar,
                         size_t maxPatternBytes, PatternShape* shape) {
    if (pattern.size() > maxPatternBytes)
        return invalidArgument(where + ": pattern longer than " + std::to_string(maxPatternBytes) +
                               " bytes");
    RegexParser parser(pattern, where, anyChar);
    return parser.parse(shape);
}

} // namespace hearth::grammar::schema
