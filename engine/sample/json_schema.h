// Internal pieces of the JSON Schema to GBNF converter: a small grammar-expression tree that
// renders to GBNF text, code point sets, the rule table with its termination checks, and the
// builders for regex patterns, string formats and numeric ranges that the schema walker uses.
#pragma once

#include "hearth/grammar.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hearth::grammar::schema {

// A set of Unicode code points as sorted, disjoint, non-adjacent [lo, hi] ranges.
class CharSet {
public:
    CharSet() = default;
    static CharSet of(uint32_t lo, uint32_t hi) {
        CharSet s;
        s.add(lo, hi);
        return s;
    }
    void add(uint32_t lo, uint32_t hi);
    void add(const CharSet& other);
    void remove(uint32_t lo, uint32_t hi);
    CharSet complement() const; // within [0, 0x10FFFF]
    bool contains(uint32_t c) const;
    bool empty() const { return m_ranges.empty(); }
    bool containsAll(uint32_t lo, uint32_t hi) const;
    const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return m_ranges; }

private:
    std::vector<std::pair<uint32_t, uint32_t>> m_ranges;
};

// A grammar expression. Alt with no items is the empty language ("nothing"); Empty is the
// empty string. Build with the helpers below, which flatten and simplify.
struct Expr {
    enum class Kind { Empty, Literal, Class, Ref, Seq, Alt, Repeat };
    Kind kind = Kind::Empty;
    std::string text;        // Literal: UTF-8 bytes; Ref: rule name
    CharSet set;             // Class
    std::vector<Expr> items; // Seq, Alt; Repeat: exactly one
    int64_t min = 0;         // Repeat
    int64_t max = 0;         // Repeat; -1 = unbounded

    bool isNothing() const { return kind == Kind::Alt && items.empty(); }
};

Expr empty();
Expr nothing();
Expr lit(std::string utf8);
Expr cls(CharSet set);
Expr cls(uint32_t lo, uint32_t hi);
Expr ref(std::string rule);
Expr seq(std::vector<Expr> items);
Expr alt(std::vector<Expr> items);
Expr rep(Expr x, int64_t min, int64_t max);
inline Expr opt(Expr x) { return rep(std::move(x), 0, 1); }
inline Expr star(Expr x) { return rep(std::move(x), 0, -1); }

// The lengths, in code points, of an expression's strings: [min, max], max -1 when unbounded
// (a rule other than "char" counts as unbounded).
struct LengthRange {
    int64_t min = 0;
    int64_t max = 0;
};
LengthRange lengthRange(const Expr& e);
// e narrowed to strings of [lo, hi] code points (hi -1: no upper bound): every string it derives
// is one of e's within the bounds, though not every such string is kept (the budget is split
// over e's parts up front). Nothing when no split fits.
Expr withinLength(const Expr& e, int64_t lo, int64_t hi);

// GBNF text of an expression (no rule name).
std::string render(const Expr& e);
// UTF-8 encoding of a code point.
std::string utf8(uint32_t c);

// The estimated size of an expression once a GBNF parser expands its x{m,n} repetitions.
struct Expansion {
    double elements = 0;
    double rules = 0;
};
Expansion expansion(const Expr& e);

// The grammar being built: named rules, deduplicated by body, with the schema location each
// came from (for error messages).
class RuleSet {
public:
    // A fresh rule name from a hint (sanitized to [a-zA-Z0-9-]).
    std::string reserve(const std::string& hint);
    void define(const std::string& name, Expr body, std::string where);
    // A rule with this body (an existing one when some rule already has it), as a reference.
    Expr add(const std::string& hint, Expr body, std::string where);
    bool defined(const std::string& name) const;
    size_t size() const { return m_rules.size(); }

    // The root can end (derive a finite text); drops the alternatives through rules that
    // cannot; and no rule is left-recursive.
    Status check(const std::string& root);
    // "root ::= ..." first, then the rules it uses in definition order.
    std::string render(const std::string& root) const;
    // Over the rules the root uses.
    Expansion expansion(const std::string& root) const;
    size_t reachableCount(const std::string& root) const;

private:
    std::vector<bool> reachable(const std::string& root) const;

    struct Rule {
        std::string name;
        Expr body;
        std::string where;
        bool hasBody = false;
    };
    std::vector<Rule> m_rules;
    std::map<std::string, size_t> m_index;
    std::map<std::string, std::string> m_byBody;
};

// Alternatives that each start with a literal (then a continuation), factored by their common
// leading characters: a matcher then keeps one parse per distinct next character rather than
// one per alternative (it keeps a bounded number alive). Deep factorings get rules of their own.
Expr factorByPrefix(const std::vector<std::pair<std::string, Expr>>& alternatives, RuleSet& rules,
                    const std::string& hint, const std::string& where);

// The JSON encoding (inside a string literal, without quotes) of one code point: the shortest
// form JSON allows (\" \\ \n ... \u00XX for the other control characters).
std::string jsonEncodeChar(uint32_t c);
// One character of a JSON string as JSON allows it: unescaped or any escape.
Expr jsonStringChar();
// The JSON-encoded forms of the characters in a set, one character long in the decoded string.
Expr jsonChars(const CharSet& set);

// A pattern of the form ^X{m,n}$ where X is one character (a class, escape, `.` or literal):
// minLength / maxLength can then be folded into its counts.
struct PatternShape {
    bool oneCharRepeat = false;
    Expr oneChar;
    int64_t min = 1, max = 1; // max -1: unbounded
};

// `pattern` (an ECMAScript regex subset) to an expression for the string's JSON-encoded content
// (without the quotes). `anyChar` is the expression of any one encoded character, used where the
// pattern is not anchored. Errors name `where`.
Result<Expr> regexToExpr(const std::string& pattern, const std::string& where, const Expr& anyChar,
                         size_t maxPatternBytes, PatternShape* shape = nullptr);

// The content (without quotes) of a string in a supported format, or an error for unknown ones.
// Sets `annotation` when the format only annotates (the string is unconstrained).
Result<Expr> formatExpr(const std::string& format, const std::string& where, bool& annotation);

// A bound of a numeric range: a decimal value and whether it is included.
struct Bound {
    bool negative = false;
    std::string intDigits;  // no leading zeros ("0" for zero)
    std::string fracDigits; // no trailing zeros
    bool inclusive = true;
};
// A decimal from a JSON number; errors when it is too large or has too many decimals.
Result<Bound> boundFromJson(double value, bool isInteger, int64_t asInt, const std::string& where);

// Integers in [lo, hi] (either side may be absent; |bounds| <= 1e18) in JSON's form: no leading
// zeros, no "-0". Digits are capped at kMaxIntDigits where a side is open.
Expr integerRange(std::optional<int64_t> lo, std::optional<int64_t> hi);
// Numbers (without exponent) in the range, bounds exact; fraction digits capped.
Expr numberRange(const std::optional<Bound>& lo, const std::optional<Bound>& hi);

using OJson = nlohmann::ordered_json;

// Keywords that only annotate (ignored), and those that constrain values in ways the converter
// does not support (an error names them).
bool isAnnotationKeyword(const std::string& key);
bool isUnsupportedKeyword(const std::string& key, const OJson& value);
// The schema with the unsupported keywords a grammar can do without left out, at every place a
// schema can hold schemas ($dynamicRef / $recursiveRef stay, to be refused).
OJson withoutUnenforcedKeywords(const OJson& schema);
// Whether a schema object has keywords other than annotations (and $defs / definitions).
bool hasConstraints(const OJson& schema);
// An InvalidArgument error "<pointer>: <what>" ("(root)" for the root; a very long pointer is
// shortened in the middle).
Status errorAt(const std::string& ptr, const std::string& what);
// A readable rule name from a JSON pointer: its last meaningful tokens.
std::string hintFor(const std::string& ptr);
// A JSON pointer token with '~' and '/' escaped.
std::string pointerToken(const std::string& key);

// allOf: one schema that accepts what every member accepts. Members are booleans or objects
// without $ref and allOf (the caller resolves and flattens those). Keywords in several members
// combine (properties and required merge, bounds tighten, types intersect, anyOf lists
// distribute); where two members disagree in a way that cannot be combined, an error names
// `where`.
Result<OJson> mergeSchemas(const std::vector<OJson>& members, const std::string& where);

constexpr int kMaxIntDigits = 20;  // integer parts of generated numbers
constexpr int kMaxFracDigits = 20; // fraction parts
constexpr int kMaxExpDigits = 3;   // exponents

} // namespace hearth::grammar::schema
