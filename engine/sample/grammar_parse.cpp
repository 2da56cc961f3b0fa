// The GBNF parser: rule text to the flat Grammar the matcher walks, with repetitions expanded into
// helper rules, every reference checked, and left recursion (which would never consume a
// character) refused.
#include "sample/grammar.h"

#include <algorithm>
#include <unordered_map>

namespace hearth::grammar {

namespace {

using Sequence = std::vector<Element>;
using Alternatives = std::vector<Sequence>;

bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

class Parser {
public:
    Parser(std::string_view text, const GrammarLimits& limits) : m_text(text), m_limits(limits) {}

    Result<std::shared_ptr<const Grammar>> run();

private:
    Status fail(const std::string& what) const {
        return invalidArgument("grammar line " + std::to_string(lineAt(m_pos)) + ": " + what);
    }
    int lineAt(size_t pos) const {
        return 1 + int(std::count(m_text.begin(), m_text.begin() + long(std::min(pos, m_text.size())), '\n'));
    }
    bool atEnd() const { return m_pos >= m_text.size(); }
    char peek() const { return atEnd() ? '\0' : m_text[m_pos]; }
    void skipSpace();
    // Whether a `name ::=` starts at the current position (the next rule's head).
    bool atRuleHead() const;
    std::string_view readName();
    Result<uint32_t> ruleId(std::string_view name);
    Result<uint32_t> newRule(const std::string& base);
    Status parseAlternatives(uint32_t rule, Alternatives& out, int depth);
    Status parseSequence(uint32_t rule, Sequence& out, int depth);
    Status applyRepeat(uint32_t rule, Sequence& item, int64_t min, int64_t max);
    Result<Element> wrap(uint32_t rule, Sequence item);
    Result<uint32_t> readCodePoint(bool inClass);
    Status parseLiteral(Sequence& out);
    Status parseClass(Sequence& out);
    Status countElements(size_t n);
    Status checkLeftRecursion() const;

    std::string_view m_text;
    GrammarLimits m_limits;
    size_t m_pos = 0;
    size_t m_elements = 0;
    std::shared_ptr<Grammar> m_g = std::make_shared<Grammar>();
    std::vector<Alternatives> m_rules;
    std::vector<bool> m_defined;
    std::vector<size_t> m_firstUse; // text position of a rule's first reference
    std::unordered_map<std::string, uint32_t> m_ids;
};

void Parser::skipSpace() {
    while (!atEnd()) {
        const char c = peek();
        if (c == '#') {
            while (!atEnd() && peek() != '\n') ++m_pos;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            ++m_pos;
        } else {
            break;
        }
    }
}

bool Parser::atRuleHead() const {
    size_t p = m_pos;
    while (p < m_text.size() && isNameChar(m_text[p])) ++p;
    if (p == m_pos) return false;
    while (p < m_text.size() && (m_text[p] == ' ' || m_text[p] == '\t')) ++p;
    return m_text.substr(p, 3) == "::=";
}

std::string_view Parser::readName() {
    const size_t start = m_pos;
    while (!atEnd() && isNameChar(peek())) ++m_pos;
    return m_text.substr(start, m_pos - start);
}

Result<uint32_t> Parser::ruleId(std::string_view name) {
    auto it = m_ids.find(std::string(name));
    if (it != m_ids.end()) return it->second;
    if (m_rules.size() >= m_limits.maxRules)
        return fail("more than " + std::to_string(m_limits.maxRules) + " rules");
    const uint32_t id = uint32_t(m_rules.size());
    m_ids.emplace(std::string(name), id);
    m_rules.emplace_back();
    m_defined.push_back(false);
    m_firstUse.push_back(m_pos);
    m_g->ruleNames.emplace_back(name);
    return id;
}

Result<uint32_t> Parser::newRule(const std::string& base) {
    std::string name;
    for (size_t n = m_rules.size();; ++n) {
        name = base + "-" + std::to_string(n);
        if (!m_ids.count(name)) break;
    }
    HEARTH_ASSIGN_OR_RETURN(uint32_t id, ruleId(name));
    m_defined[id] = true;
    return id;
}

Status Parser::countElements(size_t n) {
    m_elements += n;
    if (m_elements > m_limits.maxElements)
        return fail("the grammar expands to more than " + std::to_string(m_limits.maxElements) +
                    " symbols");
    return Status::ok();
}

Result<uint32_t> Parser::readCodePoint(bool inClass) {
    if (atEnd()) return fail(inClass ? "unterminated character class" : "unterminated string");
    const unsigned char c = static_cast<unsigned char>(m_text[m_pos]);
    if (c == '\\') {
        ++m_pos;
        if (atEnd()) return fail("an escape at the end of the text");
        const char e = m_text[m_pos++];
        int digits = 0;
        switch (e) {
        case 'n': return uint32_t('\n');
        case 't': return uint32_t('\t');
        case 'r': return uint32_t('\r');
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'':
            return uint32_t(static_cast<unsigned char>(e));
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        default: return fail(std::string("unknown escape \\") + e);
        }
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const char h = peek();
            int d = -1;
            if (h >= '0' && h <= '9') d = h - '0';
            else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
            if (d < 0) return fail(std::string("\\") + e + " needs " + std::to_string(digits) + " hex digits");
            v = v * 16 + uint32_t(d);
            ++m_pos;
        }
        if (v > 0x10FFFF) return fail("code point beyond U+10FFFF");
        return v;
    }
    // A UTF-8 character of the grammar text.
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || m_pos + size_t(len) > m_text.size()) return fail("invalid UTF-8 in the grammar");
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < len; ++i) {
        const unsigned char k = static_cast<unsigned char>(m_text[m_pos + size_t(i)]);
        if ((k & 0xC0) != 0x80) return fail("invalid UTF-8 in the grammar");
        cp = (cp << 6) | (k & 0x3F);
    }
    m_pos += size_t(len);
    return cp;
}

Status Parser::parseLiteral(Sequence& out) {
    ++m_pos; // the opening quote
    for (;;) {
        if (atEnd()) return fail("unterminated string");
        if (peek() == '"') {
            ++m_pos;
            return Status::ok();
        }
        if (peek() == '\n') return fail("a newline inside a string (write \\n)");
        HEARTH_ASSIGN_OR_RETURN(uint32_t cp, readCodePoint(false));
        Element e;
        e.kind = ElementKind::Char;
        e.rangeBegin = uint32_t(m_g->ranges.size());
        m_g->ranges.push_back({cp, cp});
        e.rangeEnd = uint32_t(m_g->ranges.size());
        HEARTH_RETURN_IF_ERROR(countElements(1));
        out.push_back(e);
    }
}

Status Parser::parseClass(Sequence& out) {
    ++m_pos; // [
    Element e;
    e.kind = ElementKind::Char;
    if (peek() == '^') {
        e.negated = true;
        ++m_pos;
    }
    e.rangeBegin = uint32_t(m_g->ranges.size());
    for (;;) {
        if (atEnd()) return fail("unterminated character class");
        if (peek() == ']') {
            ++m_pos;
            break;
        }
        HEARTH_ASSIGN_OR_RETURN(uint32_t lo, readCodePoint(true));
        uint32_t hi = lo;
        if (peek() == '-' && m_pos + 1 < m_text.size() && m_text[m_pos + 1] != ']') {
            ++m_pos;
            HEARTH_ASSIGN_OR_RETURN(hi, readCodePoint(true));
            if (hi < lo) return fail("a character range runs backwards");
        }
        m_g->ranges.push_back({lo, hi});
        if (m_g->ranges.size() - e.rangeBegin > 4096) return fail("a character class has over 4096 ranges");
    }
    e.rangeEnd = uint32_t(m_g->ranges.size());
    HEARTH_RETURN_IF_ERROR(countElements(1));
    out.push_back(e);
    return Status::ok();
}

Result<Element> Parser::wrap(uint32_t rule, Sequence item) {
    if (item.size() == 1) return item[0];
    HEARTH_ASSIGN_OR_RETURN(uint32_t id, newRule(m_g->ruleNames[rule]));
    m_rules[id].push_back(std::move(item));
    Element e;
    e.kind = ElementKind::Rule;
    e.rule = id;
    HEARTH_RETURN_IF_ERROR(countElements(1));
    return e;
}

// item{min,max} (max < 0: unbounded), rewritten with helper rules:
//   x* -> R ::= x R | ""        x{0,k} -> R1 ::= x R2 | "", ..., Rk ::= x | ""
Status Parser::applyRepeat(uint32_t rule, Sequence& item, int64_t min, int64_t max) {
    if (item.empty()) return fail("nothing to repeat");
    HEARTH_ASSIGN_OR_RETURN(Element x, wrap(rule, std::move(item)));
    Sequence out;
    HEARTH_RETURN_IF_ERROR(countElements(size_t(min)));
    out.assign(size_t(min), x);
    Element ref;
    ref.kind = ElementKind::Rule;
    if (max < 0) {
        HEARTH_ASSIGN_OR_RETURN(uint32_t r, newRule(m_g->ruleNames[rule]));
        ref.rule = r;
        m_rules[r].push_back({x, ref});
        m_rules[r].push_back({});
        HEARTH_RETURN_IF_ERROR(countElements(3));
        out.push_back(ref);
    } else if (max > min) {
        // Built from the innermost optional outwards.
        bool haveInner = false;
        Element inner = ref;
        for (int64_t k = 0; k < max - min; ++k) {
            HEARTH_ASSIGN_OR_RETURN(uint32_t r, newRule(m_g->ruleNames[rule]));
            Sequence first{x};
            if (haveInner) first.push_back(inner);
            m_rules[r].push_back(std::move(first));
            m_rules[r].push_back({});
            HEARTH_RETURN_IF_ERROR(countElements(3));
            inner.rule = r;
            haveInner = true;
        }
        out.push_back(inner);
    }
    item = std::move(out);
    return Status::ok();
}

Status Parser::parseSequence(uint32_t rule, Sequence& out, int depth) {
    for (;;) {
        skipSpace();
        if (atEnd() || peek() == '|' || peek() == ')' || atRuleHead()) return Status::ok();
        Sequence item;
        const char c = peek();
        if (c == '"') {
            HEARTH_RETURN_IF_ERROR(parseLiteral(item));
        } else if (c == '[') {
            HEARTH_RETURN_IF_ERROR(parseClass(item));
        } else if (c == '.') {
            ++m_pos;
            Element e;
            e.kind = ElementKind::Char;
            e.negated = true; // outside no range: any code point
            e.rangeBegin = e.rangeEnd = uint32_t(m_g->ranges.size());
            HEARTH_RETURN_IF_ERROR(countElements(1));
            item.push_back(e);
        } else if (c == '(') {
            if (depth > 200) return fail("groups nested over 200 deep");
            ++m_pos;
            HEARTH_ASSIGN_OR_RETURN(uint32_t g, newRule(m_g->ruleNames[rule]));
            Alternatives alts;
            HEARTH_RETURN_IF_ERROR(parseAlternatives(g, alts, depth + 1));
            skipSpace();
            if (peek() != ')') return fail("missing ')'");
            ++m_pos;
            m_rules[g] = std::move(alts);
            Element e;
            e.kind = ElementKind::Rule;
            e.rule = g;
            HEARTH_RETURN_IF_ERROR(countElements(1));
            item.push_back(e);
        } else if (isNameChar(c)) {
            const std::string_view name = readName();
            HEARTH_ASSIGN_OR_RETURN(uint32_t id, ruleId(name));
            Element e;
            e.kind = ElementKind::Rule;
            e.rule = id;
            HEARTH_RETURN_IF_ERROR(countElements(1));
            item.push_back(e);
        } else {
            return fail(std::string("unexpected '") + c + "'");
        }
        // Quantifiers bind to the item just read (a literal of several characters as a whole).
        for (;;) {
            const char q = peek();
            if (q == '*') {
                ++m_pos;
                HEARTH_RETURN_IF_ERROR(applyRepeat(rule, item, 0, -1));
            } else if (q == '+') {
                ++m_pos;
                HEARTH_RETURN_IF_ERROR(applyRepeat(rule, item, 1, -1));
            } else if (q == '?') {
                ++m_pos;
                HEARTH_RETURN_IF_ERROR(applyRepeat(rule, item, 0, 1));
            } else if (q == '{') {
                ++m_pos;
                auto number = [&](int64_t& v) {
                    skipSpace();
                    if (!(peek() >= '0' && peek() <= '9')) return false;
                    v = 0;
                    while (peek() >= '0' && peek() <= '9') {
                        v = v * 10 + (peek() - '0');
                        if (v > m_limits.maxRepeat) v = int64_t(m_limits.maxRepeat) + 1;
                        ++m_pos;
                    }
                    skipSpace();
                    return true;
                };
                int64_t min = 0, max = 0;
                if (!number(min)) return fail("a repetition needs a count: {m}, {m,} or {m,n}");
                max = min;
                if (peek() == ',') {
                    ++m_pos;
                    if (!number(max)) max = -1;
                }
                if (peek() != '}') return fail("missing '}' in a repetition");
                ++m_pos;
                if (min > m_limits.maxRepeat || max > m_limits.maxRepeat)
                    return fail("a repetition count above " + std::to_string(m_limits.maxRepeat));
                if (max >= 0 && max < min) return fail("a repetition {m,n} with n < m");
                HEARTH_RETURN_IF_ERROR(applyRepeat(rule, item, min, max));
            } else {
                break;
            }
        }
        out.insert(out.end(), item.begin(), item.end());
    }
}

Status Parser::parseAlternatives(uint32_t rule, Alternatives& out, int depth) {
    for (;;) {
        Sequence seq;
        HEARTH_RETURN_IF_ERROR(parseSequence(rule, seq, depth));
        out.push_back(std::move(seq));
        skipSpace();
        if (peek() != '|') return Status::ok();
        ++m_pos;
    }
}

// A rule that can reach itself again before consuming a character would loop forever.
Status Parser::checkLeftRecursion() const {
    const size_t n = m_rules.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < n; ++r) {
            if (nullable[r]) continue;
            for (const Sequence& alt : m_rules[r]) {
                bool all = true;
                for (const Element& e : alt)
                    if (e.kind != ElementKind::Rule || !nullable[e.rule]) {
                        all = false;
                        break;
                    }
                if (all) {
                    nullable[r] = changed = true;
                    break;
                }
            }
        }
    }
    // Left calls: references reachable before any character. One in tail position returns
    // straight to its caller's frame, so a cycle of those only revisits the same stacks (x* of a
    // nullable x); a cycle through a call with something after it grows the stack forever.
    struct Edge {
        uint32_t to;
        bool grows;
    };
    std::vector<std::vector<Edge>> calls(n);
    for (size_t r = 0; r < n; ++r)
        for (const Sequence& alt : m_rules[r])
            for (size_t i = 0; i < alt.size(); ++i) {
                const Element& e = alt[i];
                if (e.kind != ElementKind::Rule) break;
                calls[r].push_back({e.rule, i + 1 < alt.size()});
                if (!nullable[e.rule]) break;
            }
    // Strongly connected components (Tarjan's, iterative); a growing edge inside one is refused.
    std::vector<int32_t> index(n, -1), low(n, 0), component(n, -1);
    std::vector<uint32_t> stack;
    std::vector<bool> onStack(n, false);
    std::vector<std::pair<uint32_t, size_t>> path;
    int32_t counter = 0, components = 0;
    for (uint32_t start = 0; start < n; ++start) {
        if (index[start] >= 0) continue;
        path.push_back({start, 0});
        index[start] = low[start] = counter++;
        stack.push_back(start);
        onStack[start] = true;
        while (!path.empty()) {
            auto& [r, next] = path.back();
            if (next < calls[r].size()) {
                const uint32_t to = calls[r][next++].to;
                if (index[to] < 0) {
                    index[to] = low[to] = counter++;
                    stack.push_back(to);
                    onStack[to] = true;
                    path.push_back({to, 0});
                } else if (onStack[to]) {
                    low[r] = std::min(low[r], index[to]);
                }
                continue;
            }
            const uint32_t done = r;
            path.pop_back();
            if (!path.empty()) low[path.back().first] = std::min(low[path.back().first], low[done]);
            if (low[done] == index[done]) {
                for (;;) {
                    const uint32_t x = stack.back();
                    stack.pop_back();
                    onStack[x] = false;
                    component[x] = components;
                    if (x == done) break;
                }
                ++components;
            }
        }
    }
    for (size_t r = 0; r < n; ++r)
        for (const Edge& e : calls[r])
            if (e.grows && component[e.to] == component[r])
                return invalidArgument("grammar: rule '" + m_g->ruleNames[e.to] +
                                       "' is left-recursive (it can reach itself without "
                                       "matching a character)");
    return Status::ok();
}

Result<std::shared_ptr<const Grammar>> Parser::run() {
    if (m_text.size() > m_limits.maxTextBytes)
        return invalidArgument("grammar: the text is longer than " + std::to_string(m_limits.maxTextBytes) + " bytes");
    for (;;) {
        skipSpace();
        if (atEnd()) break;
        if (!atRuleHead()) return fail("expected a rule: name ::= ...");
        const size_t at = m_pos;
        const std::string_view name = readName();
        HEARTH_ASSIGN_OR_RETURN(uint32_t id, ruleId(name));
        if (m_defined[id]) {
            m_pos = at;
            return fail("rule '" + std::string(name) + "' is defined twice");
        }
        m_defined[id] = true;
        skipSpace();
        m_pos += 3; // ::=
        Alternatives alts;
        HEARTH_RETURN_IF_ERROR(parseAlternatives(id, alts, 0));
        skipSpace();
        if (peek() == ')') return fail("unmatched ')'");
        m_rules[id] = std::move(alts);
    }
    auto root = m_ids.find("root");
    if (root == m_ids.end() || !m_defined[root->second]) return invalidArgument("grammar: no 'root' rule");
    for (size_t r = 0; r < m_rules.size(); ++r)
        if (!m_defined[r]) {
            m_pos = m_firstUse[r];
            return fail("rule '" + m_g->ruleNames[r] + "' is used but not defined");
        }
    HEARTH_RETURN_IF_ERROR(checkLeftRecursion());

    Grammar& g = *m_g;
    g.root = root->second;
    g.alternatives.resize(m_rules.size());
    for (size_t r = 0; r < m_rules.size(); ++r)
        for (const Sequence& alt : m_rules[r]) {
            g.alternatives[r].push_back(uint32_t(g.elements.size()));
            g.elements.insert(g.elements.end(), alt.begin(), alt.end());
            g.elements.push_back(Element{}); // End
        }
    return std::shared_ptr<const Grammar>(m_g);
}

} // namespace

bool Grammar::matchesSome(uint32_t pos, uint32_t lo, uint32_t hi) const {
    const Element& e = elements[pos];
    if (!e.negated) {
        for (uint32_t i = e.rangeBegin; i < e.rangeEnd; ++i)
            if (ranges[i].lo <= hi && ranges[i].hi >= lo) return true;
        return false;
    }
    // Negated: some point of [lo, hi] lies outside every range.
    uint32_t cur = lo;
    for (;;) {
        bool covered = false;
        for (uint32_t i = e.rangeBegin; i < e.rangeEnd; ++i)
            if (ranges[i].lo <= cur && ranges[i].hi >= cur) {
                if (ranges[i].hi >= hi) return false;
                cur = ranges[i].hi + 1;
                covered = true;
                break;
            }
        if (!covered) return true;
    }
}

std::string prefixRuleNames(std::string_view gbnf, std::string_view prefix) {
    std::string out;
    out.reserve(gbnf.size() + gbnf.size() / 4);
    for (size_t i = 0; i < gbnf.size();) {
        const char c = gbnf[i];
        if (c == '"' || c == '[') { // a literal or class, escapes included, copied whole
            const char close = c == '"' ? '"' : ']';
            size_t j = i + 1;
            while (j < gbnf.size() && gbnf[j] != close) j += gbnf[j] == '\\' ? 2 : 1;
            j = std::min(j + 1, gbnf.size());
            out.append(gbnf.substr(i, j - i));
            i = j;
        } else if (c == '#') {
            const size_t j = std::min(gbnf.find('\n', i), gbnf.size());
            out.append(gbnf.substr(i, j - i));
            i = j;
        } else if (isNameChar(c) && !(c >= '0' && c <= '9' && i > 0 && gbnf[i - 1] == '{') &&
                   !(c >= '0' && c <= '9' && i > 0 && gbnf[i - 1] == ',')) {
            size_t j = i;
            while (j < gbnf.size() && isNameChar(gbnf[j])) ++j;
            const std::string_view word = gbnf.substr(i, j - i);
            const bool number = word.find_first_not_of("0123456789") == std::string_view::npos;
            if (!number) out.append(prefix);
            out.append(word);
            i = j;
        } else {
            out.push_back(c);
            ++i;
        }
    }
    return out;
}

Result<std::shared_ptr<const Grammar>> parseGbnf(std::string_view text, const GrammarLimits& limits) {
    Parser p(text, limits);
    return p.run();
}

} // namespace hearth::grammar
