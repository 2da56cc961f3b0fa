// The grammar side of the JSON Schema converter: code point sets, expression building and
// simplification, GBNF rendering, size estimates, and the rule table's termination checks.
#include "sample/json_schema.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

namespace hearth::grammar::schema {

namespace {
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

std::string hex(uint32_t v, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%0*X", digits, v);
    return buf;
}

// Decodes one code point of well-formed UTF-8 (the converter only builds such text).
uint32_t decodeUtf8(const std::string& s, size_t& i) {
    auto b = static_cast<unsigned char>(s[i]);
    int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < n && i + k < s.size(); ++k)
        c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += n;
    return c;
}

std::string escapeCodePoint(uint32_t c) {
    if (c < 0x80) return "\\x" + hex(c, 2);
    if (c <= 0xFFFF) return "\\u" + hex(c, 4);
    return "\\U" + hex(c, 8);
}

std::string classChar(uint32_t c) {
    bool plain = c >= 0x20 && c < 0x7F && c != '\\' && c != ']' && c != '[' && c != '-' &&
                 c != '^' && c != '"';
    return plain ? std::string(1, char(c)) : escapeCodePoint(c);
}

size_t utf8Length(const std::string& s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

bool needsParens(const Expr& e) { return e.kind == Expr::Kind::Seq || e.kind == Expr::Kind::Alt; }
} // namespace

void CharSet::add(uint32_t lo, uint32_t hi) {
    if (lo > hi) return;
    m_ranges.emplace_back(lo, hi);
    std::sort(m_ranges.begin(), m_ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (auto& r : m_ranges) {
        if (!merged.empty() && r.first <= merged.back().second + 1)
            merged.back().second = std::max(merged.back().second, r.second);
        else
            merged.push_back(r);
    }
    m_ranges = std::move(merged);
}

void CharSet::add(const CharSet& other) {
    for (auto& r : other.m_ranges) add(r.first, r.second);
}

void CharSet::remove(uint32_t lo, uint32_t hi) {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (auto& r : m_ranges) {
        if (r.second < lo || r.first > hi) {
            out.push_back(r);
            continue;
        }
        if (r.first < lo) out.emplace_back(r.first, lo - 1);
        if (r.second > hi) out.emplace_back(hi + 1, r.second);
    }
    m_ranges = std::move(out);
}

CharSet CharSet::complement() const {
    CharSet out;
    uint32_t next = 0;
    for (auto& r : m_ranges) {
        if (r.first > next) out.m_ranges.emplace_back(next, r.first - 1);
        next = r.second + 1;
    }
    if (next <= kMaxCodePoint) out.m_ranges.emplace_back(next, kMaxCodePoint);
    return out;
}

bool CharSet::contains(uint32_t c) const { return containsAll(c, c); }

bool CharSet::containsAll(uint32_t lo, uint32_t hi) const {
    for (auto& r : m_ranges)
        if (r.first <= lo && hi <= r.second) return true;
    return false;
}

std::string utf8(uint32_t c) {
    std::string s;
    if (c < 0x80) {
        s += char(c);
    } else if (c < 0x800) {
        s += char(0xC0 | (c >> 6));
        s += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        s += char(0xE0 | (c >> 12));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    } else {
        s += char(0xF0 | (c >> 18));
        s += char(0x80 | ((c >> 12) & 0x3F));
        s += char(0x80 | ((c >> 6) & 0x3F));
        s += char(0x80 | (c & 0x3F));
    }
    return s;
}

Expr empty() { return Expr{}; }

Expr nothing() {
    Expr e;
    e.kind = Expr::Kind::Alt;
    return e;
}

Expr lit(std::string utf8Text) {
    if (utf8Text.empty()) return empty();
    Expr e;
    e.kind = Expr::Kind::Literal;
    e.text = std::move(utf8Text);
    return e;
}

Expr cls(CharSet set) {
    if (set.empty()) return nothing();
    if (set.ranges().size() == 1 && set.ranges()[0].first == set.ranges()[0].second)
        return lit(utf8(set.ranges()[0].first));
    Expr e;
    e.kind = Expr::Kind::Class;
    e.set = std::move(set);
    return e;
}

Expr cls(uint32_t lo, uint32_t hi) { return cls(CharSet::of(lo, hi)); }

Expr ref(std::string rule) {
    Expr e;
    e.kind = Expr::Kind::Ref;
    e.text = std::move(rule);
    return e;
}

Expr seq(std::vector<Expr> items) {
    Expr e;
    e.kind = Expr::Kind::Seq;
    for (auto& x : items) {
        if (x.isNothing()) return nothing();
        if (x.kind == Expr::Kind::Empty) continue;
        auto push = [&e](Expr y) {
            if (y.kind == Expr::Kind::Literal && !e.items.empty() &&
                e.items.back().kind == Expr::Kind::Literal)
                e.items.back().text += y.text;
            else
                e.items.push_back(std::move(y));
        };
        if (x.kind == Expr::Kind::Seq)
            for (auto& y : x.items) push(std::move(y));
        else
            push(std::move(x));
    }
    if (e.items.empty()) return empty();
    if (e.items.size() == 1) return std::move(e.items[0]);
    return e;
}

Expr alt(std::vector<Expr> items) {
    Expr e;
    e.kind = Expr::Kind::Alt;
    bool hasEmpty = false;
    std::set<std::string> seen;
    for (auto& x : items) {
        if (x.isNothing()) continue;
        if (x.kind == Expr::Kind::Empty) {
            hasEmpty = true;
            continue;
        }
        std::vector<Expr> parts;
        if (x.kind == Expr::Kind::Alt)
            parts = std::move(x.items);
        else
            parts.push_back(std::move(x));
        for (auto& p : parts)
            if (seen.insert(render(p)).second) e.items.push_back(std::move(p));
    }
    if (e.items.empty()) return hasEmpty ? empty() : nothing();
    Expr body = e.items.size() == 1 ? std::move(e.items[0]) : std::move(e);
    return hasEmpty ? opt(std::move(body)) : body;
}

Expr rep(Expr x, int64_t min, int64_t max) {
    if (max == 0 || x.kind == Expr::Kind::Empty) return empty();
    if (x.isNothing()) return min == 0 ? empty() : nothing();
    if (min == 1 && max == 1) return x;
    if (x.kind == Expr::Kind::Repeat && x.min == 0 && x.max == 1 && min == 0 && max == 1) return x;
    Expr e;
    e.kind = Expr::Kind::Repeat;
    e.items.push_back(std::move(x));
    e.min = min;
    e.max = max;
    return e;
}

std::string render(const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Empty: return "\"\"";
    case Expr::Kind::Literal: {
        std::string out = "\"";
        for (size_t i = 0; i < e.text.size();) {
            uint32_t c = decodeUtf8(e.text, i);
            if (c == '"') out += "\\\"";
            else if (c == '\\') out += "\\\\";
            else if (c == '\n') out += "\\n";
            else if (c == '\r') out += "\\r";
            else if (c == '\t') out += "\\t";
            else if (c < 0x20 || c >= 0x7F) out += escapeCodePoint(c);
            else out += char(c);
        }
        return out + "\"";
    }
    case Expr::Kind::Class: {
        // The shorter of the set and its negated complement.
        CharSet inverse = e.set.complement();
        bool negate = inverse.ranges().size() < e.set.ranges().size();
        std::string out = negate ? "[^" : "[";
        for (auto& r : (negate ? inverse : e.set).ranges()) {
            out += classChar(r.first);
            if (r.second != r.first) {
                if (r.second > r.first + 1) out += "-";
                out += classChar(r.second);
            }
        }
        return out + "]";
    }
    case Expr::Kind::Ref: return e.text;
    case Expr::Kind::Seq: {
        std::string out;
        for (auto& x : e.items) {
            if (!out.empty()) out += " ";
            out += x.kind == Expr::Kind::Alt ? "(" + render(x) + ")" : render(x);
        }
        return out;
    }
    case Expr::Kind::Alt: {
        if (e.items.empty()) return "[^\\x00-\\U0010FFFF]"; // never rendered by a valid grammar
        std::string out;
        for (auto& x : e.items) {
            if (!out.empty()) out += " | ";
            out += render(x);
        }
        return out;
    }
    case Expr::Kind::Repeat: {
        const Expr& x = e.items[0];
        bool longLiteral = x.kind == Expr::Kind::Literal && utf8Length(x.text) > 1;
        std::string atom = needsParens(x) || x.kind == Expr::Kind::Repeat || longLiteral
                               ? "(" + render(x) + ")"
                               : render(x);
        if (e.min == 0 && e.max == 1) return atom + "?";
        if (e.min == 0 && e.max < 0) return atom + "*";
        if (e.min == 1 && e.max < 0) return atom + "+";
        if (e.max < 0) return atom + "{" + std::to_string(e.min) + ",}";
        if (e.min == e.max) return atom + "{" + std::to_string(e.min) + "}";
        return atom + "{" + std::to_string(e.min) + "," + std::to_string(e.max) + "}";
    }
    }
    return "\"\"";
}

Expansion expansion(const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Empty: return {0, 0};
    case Expr::Kind::Literal: return {double(e.text.size()), 0};
    case Expr::Kind::Class:
    case Expr::Kind::Ref: return {1, 0};
    case Expr::Kind::Seq:
    case Expr::Kind::Alt: {
        Expansion sum{0, e.kind == Expr::Kind::Alt ? 1.0 : 0.0};
        for (auto& x : e.items) {
            Expansion s = expansion(x);
            sum.elements += s.elements;
            sum.rules += s.rules;
        }
        return sum;
    }
    case Expr::Kind::Repeat: {
        // A parser expands x{m,n} into m copies and n-m nested optional copies (a rule each);
        // x{m,} into m copies and one starred rule.
        Expansion s = expansion(e.items[0]);
        double copies = e.max < 0 ? double(e.min) + 1 : double(e.max);
        double extraRules = e.max < 0 ? 1 : double(e.max - e.min);
        return {(s.elements + 2) * copies, s.rules * copies + extraRules + 1};
    }
    }
    return {0, 0};
}

std::string RuleSet::reserve(const std::string& hint) {
    std::string base;
    for (char c : hint) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (ok) base += c;
        else if (!base.empty() && base.back() != '-') base += '-';
    }
    if (base.size() > 40) base.resize(40); // names from long property names stay short
    while (!base.empty() && base.back() == '-') base.pop_back();
    if (base.empty()) base = "r";
    // A GBNF parser names its helper rules "<rule>-<number>": names here never end that way.
    size_t lastDash = base.rfind('-');
    size_t tokenStart = lastDash == std::string::npos ? 0 : lastDash + 1;
    if (base.find_first_not_of("0123456789", tokenStart) == std::string::npos)
        base.insert(tokenStart, "n");
    std::string name = base;
    for (int k = 2; m_index.count(name); ++k) name = base + "-v" + std::to_string(k);
    m_index[name] = m_rules.size();
    m_rules.push_back(Rule{name, Expr{}, {}, false});
    return name;
}

void RuleSet::define(const std::string& name, Expr body, std::string where) {
    auto it = m_index.find(name);
    if (it == m_index.end()) {
        reserve(name);
        it = m_index.find(name);
    }
    Rule& r = m_rules[it->second];
    m_byBody.emplace(::hearth::grammar::schema::render(body), name);
    r.body = std::move(body);
    r.where = std::move(where);
    r.hasBody = true;
}

Expr RuleSet::add(const std::string& hint, Expr body, std::string where) {
    if (body.kind == Expr::Kind::Ref) return body;
    auto found = m_byBody.find(::hearth::grammar::schema::render(body));
    if (found != m_byBody.end()) return ref(found->second);
    std::string name = reserve(hint);
    define(name, std::move(body), std::move(where));
    return ref(name);
}

bool RuleSet::defined(const std::string& name) const {
    auto it = m_index.find(name);
    return it != m_index.end() && m_rules[it->second].hasBody;
}

namespace {
// Whether e can derive a finite text, given which rules can.
bool productive(const Expr& e, const std::map<std::string, size_t>& index,
                const std::vector<bool>& ruleOk) {
    switch (e.kind) {
    case Expr::Kind::Empty:
    case Expr::Kind::Literal:
    case Expr::Kind::Class: return true;
    case Expr::Kind::Ref: {
        auto it = index.find(e.text);
        return it != index.end() && ruleOk[it->second];
    }
    case Expr::Kind::Seq:
        for (auto& x : e.items)
            if (!productive(x, index, ruleOk)) return false;
        return true;
    case Expr::Kind::Alt:
        for (auto& x : e.items)
            if (productive(x, index, ruleOk)) return true;
        return false;
    case Expr::Kind::Repeat: return e.min == 0 || productive(e.items[0], index, ruleOk);
    }
    return false;
}

// Whether e can derive the empty text; collects the rules it can start with (left edges).
bool nullable(const Expr& e, const std::map<std::string, size_t>& index,
              const std::vector<bool>& ruleNullable, std::set<size_t>* firstRules) {
    switch (e.kind) {
    case Expr::Kind::Empty: return true;
    case Expr::Kind::Literal:
    case Expr::Kind::Class: return false;
    case Expr::Kind::Ref: {
        auto it = index.find(e.text);
        if (it == index.end()) return false;
        if (firstRules) firstRules->insert(it->second);
        return ruleNullable[it->second];
    }
    case Expr::Kind::Seq:
        for (auto& x : e.items)
            if (!nullable(x, index, ruleNullable, firstRules)) return false;
        return true;
    case Expr::Kind::Alt: {
        bool any = false;
        for (auto& x : e.items) any = nullable(x, index, ruleNullable, firstRules) || any;
        return any;
    }
    case Expr::Kind::Repeat:
        return nullable(e.items[0], index, ruleNullable, firstRules) || e.min == 0;
    }
    return false;
}

void collectRefs(const Expr& e, std::vector<std::string>& out) {
    if (e.kind == Expr::Kind::Ref) out.push_back(e.text);
    for (auto& x : e.items) collectRefs(x, out);
}
} // namespace

namespace {
// The expression with references to the rules marked dead replaced by nothing, simplified.
Expr withoutDead(const Expr& e, const std::map<std::string, size_t>& index, const std::vector<bool>& ok) {
    switch (e.kind) {
    case Expr::Kind::Ref: {
        auto it = index.find(e.text);
        return it != index.end() && !ok[it->second] ? nothing() : e;
    }
    case Expr::Kind::Seq:
    case Expr::Kind::Alt: {
        std::vector<Expr> items;
        for (auto& x : e.items) items.push_back(withoutDead(x, index, ok));
        return e.kind == Expr::Kind::Seq ? seq(std::move(items)) : alt(std::move(items));
    }
    case Expr::Kind::Repeat: return rep(withoutDead(e.items[0], index, ok), e.min, e.max);
    default: return e;
    }
}
} // namespace

Status RuleSet::check(const std::string& root) {
    size_t n = m_rules.size();
    for (auto& r : m_rules)
        if (!r.hasBody) return internalError("grammar rule '" + r.name + "' has no body");
    // Productive rules: a fixpoint from those that need no rule.
    std::vector<bool> ok(n, false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < n; ++i)
            if (!ok[i] && productive(m_rules[i].body, m_index, ok)) ok[i] = changed = true;
    }
    // When the root cannot end, name a reachable rule that cannot either.
    std::vector<bool> seen(n, false);
    std::vector<size_t> stack;
    auto rootIt = m_index.find(root);
    if (rootIt == m_index.end()) return internalError("grammar has no root rule");
    stack.push_back(rootIt->second);
    seen[rootIt->second] = true;
    // The culprit named is the first such rule that is more than an alias of another, from a
    // schema location (else the root).
    std::optional<size_t> culprit;
    bool rootStuck = !ok[rootIt->second];
    while (!stack.empty()) {
        size_t i = stack.back();
        stack.pop_back();
        if (!ok[i] && !culprit && !m_rules[i].where.empty() && m_rules[i].body.kind != Expr::Kind::Ref)
            culprit = i;
        std::vector<std::string> refs;
        collectRefs(m_rules[i].body, refs);
        for (auto& name : refs) {
            auto it = m_index.find(name);
            if (it != m_index.end() && !seen[it->second]) {
                seen[it->second] = true;
                stack.push_back(it->second);
            }
        }
    }
    if (rootStuck) {
        std::string w = culprit ? m_rules[*culprit].where : std::string("(root)");
        return invalidArgument(w + ": no finite JSON value satisfies this schema (a $ref cycle "
                                   "with no way to end, or contradictory constraints)");
    }
    // Alternatives through rules that cannot end are dropped (they would lead generation into a
    // dead end), e.g. an array whose items can never be finite stays empty.
    for (size_t i = 0; i < n; ++i)
        if (ok[i]) m_rules[i].body = withoutDead(m_rules[i].body, m_index, ok);
    // Left recursion: a rule reachable from itself without consuming a character.
    std::vector<bool> isNullable(n, false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < n; ++i)
            if (!isNullable[i] && nullable(m_rules[i].body, m_index, isNullable, nullptr))
                isNullable[i] = changed = true;
    }
    std::vector<std::set<size_t>> first(n);
    for (size_t i = 0; i < n; ++i) nullable(m_rules[i].body, m_index, isNullable, &first[i]);
    std::vector<int> color(n, 0); // 0 new, 1 on the path, 2 done
    for (size_t s = 0; s < n; ++s) {
        if (color[s] != 0) continue;
        std::vector<std::pair<size_t, std::set<size_t>::const_iterator>> path;
        path.emplace_back(s, first[s].begin());
        color[s] = 1;
        while (!path.empty()) {
            auto& [i, it] = path.back();
            if (it == first[i].end()) {
                color[i] = 2;
                path.pop_back();
                continue;
            }
            size_t j = *it++;
            if (color[j] == 1) {
                const std::string& w = m_rules[j].where;
                return invalidArgument((w.empty() ? std::string("(root)") : w) +
                                       ": a $ref cycle that refers to itself before any "
                                       "character (left recursion)");
            }
            if (color[j] == 0) {
                color[j] = 1;
                path.emplace_back(j, first[j].begin());
            }
        }
    }
    return Status::ok();
}

std::vector<bool> RuleSet::reachable(const std::string& root) const {
    std::vector<bool> seen(m_rules.size(), false);
    auto rootIt = m_index.find(root);
    if (rootIt == m_index.end()) return seen;
    std::vector<size_t> stack{rootIt->second};
    seen[rootIt->second] = true;
    while (!stack.empty()) {
        size_t i = stack.back();
        stack.pop_back();
        std::vector<std::string> refs;
        collectRefs(m_rules[i].body, refs);
        for (auto& name : refs) {
            auto it = m_index.find(name);
            if (it != m_index.end() && !seen[it->second]) {
                seen[it->second] = true;
                stack.push_back(it->second);
            }
        }
    }
    return seen;
}

size_t RuleSet::reachableCount(const std::string& root) const {
    auto seen = reachable(root);
    return size_t(std::count(seen.begin(), seen.end(), true));
}

std::string RuleSet::render(const std::string& root) const {
    std::string out;
    auto seen = reachable(root);
    auto emit = [&out](const Rule& r) {
        out += r.name + " ::= " + ::hearth::grammar::schema::render(r.body) + "\n";
    };
    for (size_t i = 0; i < m_rules.size(); ++i)
        if (m_rules[i].name == root) emit(m_rules[i]);
    for (size_t i = 0; i < m_rules.size(); ++i)
        if (seen[i] && m_rules[i].name != root) emit(m_rules[i]);
    return out;
}

Expansion RuleSet::expansion(const std::string& root) const {
    auto seen = reachable(root);
    Expansion total{0, 0};
    for (size_t i = 0; i < m_rules.size(); ++i) {
        if (!seen[i]) continue;
        Expansion e = ::hearth::grammar::schema::expansion(m_rules[i].body);
        total.elements += e.elements;
        total.rules += e.rules + 1;
    }
    return total;
}

namespace {
struct Prefixed {
    std::vector<uint32_t> cps;
    size_t pos = 0;
    const Expr* rest = nullptr;
};

std::string utf8Of(const std::vector<uint32_t>& cps, size_t from, size_t to) {
    std::string out;
    for (size_t i = from; i < to; ++i) out += utf8(cps[i]);
    return out;
}

Expr factor(std::vector<Prefixed> items, int depth, RuleSet& rules, const std::string& hint,
            const std::string& where) {
    std::vector<Expr> out;
    std::vector<std::pair<uint32_t, std::vector<Prefixed>>> groups; // in first-seen order
    for (auto& it : items) {
        if (it.pos == it.cps.size()) {
            out.push_back(*it.rest);
            continue;
        }
        uint32_t c = it.cps[it.pos];
        auto g = std::find_if(groups.begin(), groups.end(), [c](auto& x) { return x.first == c; });
        if (g == groups.end()) {
            groups.emplace_back(c, std::vector<Prefixed>{});
            g = groups.end() - 1;
        }
        g->second.push_back(std::move(it));
    }
    for (auto& [c, members] : groups) {
        if (members.size() == 1) {
            const Prefixed& m = members[0];
            out.push_back(seq({lit(utf8Of(m.cps, m.pos, m.cps.size())), *m.rest}));
            continue;
        }
        // The characters all members share from here.
        size_t common = 1;
        for (bool same = true; same; ++common) {
            for (auto& m : members)
                if (m.pos + common >= m.cps.size() || m.cps[m.pos + common] != members[0].cps[members[0].pos + common])
                    same = false;
            if (!same) break;
        }
        std::string prefix = utf8Of(members[0].cps, members[0].pos, members[0].pos + common);
        for (auto& m : members) m.pos += common;
        Expr sub = factor(std::move(members), depth + 1, rules, hint, where);
        if (depth % 32 == 31) sub = rules.add(hint, std::move(sub), where);
        out.push_back(seq({lit(prefix), std::move(sub)}));
    }
    return alt(std::move(out));
}
} // namespace

Expr factorByPrefix(const std::vector<std::pair<std::string, Expr>>& alternatives, RuleSet& rules,
                    const std::string& hint, const std::string& where) {
    std::vector<Prefixed> items;
    for (auto& [text, rest] : alternatives) {
        Prefixed p;
        for (size_t i = 0; i < text.size();) p.cps.push_back(decodeUtf8(text, i));
        p.rest = &rest;
        items.push_back(std::move(p));
    }
    return factor(std::move(items), 0, rules, hint, where);
}

std::string jsonEncodeChar(uint32_t c) {
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
    }
    if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        return buf;
    }
    return utf8(c);
}

Expr jsonStringChar() {
    CharSet hex = CharSet::of('0', '9');
    hex.add('a', 'f');
    hex.add('A', 'F');
    CharSet raw = CharSet::of(0x20, 0x10FFFF);
    raw.remove('"', '"');
    raw.remove('\\', '\\');
    CharSet escapes;
    for (char c : std::string("\"\\/bfnrt")) escapes.add(uint8_t(c), uint8_t(c));
    return alt({cls(raw), seq({lit("\\"), alt({cls(escapes), seq({lit("u"), rep(cls(hex), 4, 4)})})})});
}

Expr jsonChars(const CharSet& set) {
    std::vector<Expr> alts;
    CharSet raw = set;
    raw.remove(0, 0x1F);
    raw.remove('"', '"');
    raw.remove('\\', '\\');
    alts.push_back(cls(raw));
    if (set.contains('"')) alts.push_back(lit("\\\""));
    if (set.contains('\\')) alts.push_back(lit("\\\\"));
    if (set.containsAll(0, 0x1F)) {
        alts.push_back(seq({lit("\\"), cls([] {
                                CharSet s;
                                for (char c : std::string("bfnrt")) s.add(c, c);
                                return s;
                            }())}));
        alts.push_back(seq({lit("\\u00"), cls('0', '1'), [] {
                                CharSet h = CharSet::of('0', '9');
                                h.add('a', 'f');
                                h.add('A', 'F');
                                return cls(h);
                            }()}));
    } else {
        for (uint32_t c = 0; c < 0x20; ++c)
            if (set.contains(c)) alts.push_back(lit(jsonEncodeChar(c)));
    }
    return alt(std::move(alts));
}

} // namespace hearth::grammar::schema
