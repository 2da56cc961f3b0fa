// The parsed form of a GBNF grammar: rules of alternatives, each a run of elements (character
// classes and rule references) ending in End, in one flat array the matcher indexes by position.
#pragma once

#include "hearth/grammar.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hearth::grammar {

enum class ElementKind : uint8_t {
    Char, // one code point in [ranges] (or outside them when negated)
    Rule, // a reference to rule `rule`
    End,  // the end of an alternative
};

struct Element {
    ElementKind kind = ElementKind::End;
    bool negated = false;
    uint32_t rule = 0;                         // Rule
    uint32_t rangeBegin = 0, rangeEnd = 0;     // Char: [begin, end) in Grammar::ranges
};

struct CodeRange {
    uint32_t lo = 0, hi = 0; // inclusive
};

class Grammar {
public:
    std::vector<Element> elements;
    std::vector<CodeRange> ranges;
    // Per rule: the positions in `elements` where its alternatives start.
    std::vector<std::vector<uint32_t>> alternatives;
    std::vector<std::string> ruleNames; // for messages; generated rules are named "name-N"
    uint32_t root = 0;

    // Whether element `pos` (a Char) accepts code point `cp`.
    bool matches(uint32_t pos, uint32_t cp) const {
        const Element& e = elements[pos];
        bool in = false;
        for (uint32_t i = e.rangeBegin; i < e.rangeEnd && !in; ++i)
            in = cp >= ranges[i].lo && cp <= ranges[i].hi;
        return in != e.negated;
    }
    // Whether element `pos` (a Char) accepts some code point in [lo, hi].
    bool matchesSome(uint32_t pos, uint32_t lo, uint32_t hi) const;
};

} // namespace hearth::grammar
