// Constrained decoding: grammars in a GBNF-style text form (as llama.cpp accepts them), JSON Schema
// compiled to such a grammar, and a check of text against a grammar (for tests and tools). The
// engine applies a request's grammar as a token mask per step (GenerationRequest::grammar).
#pragma once

#include "hearth/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace hearth::grammar {

// A parsed grammar: immutable, shared by the requests and choices that use it.
class Grammar;

struct GrammarLimits {
    size_t maxTextBytes = size_t(1) << 20; // grammar text
    size_t maxRules = 200000;              // after repetitions are expanded
    size_t maxElements = size_t(1) << 20;  // symbols in all alternatives together
    int32_t maxRepeat = 10000;             // the m and n of x{m,n}
};

// Parses GBNF: `name ::= alternatives` rules (`root` is the start), "literals" with \n \t \r \\ \"
// \xHH \uHHHH \UHHHHHHHH escapes, [character classes] (ranges, ^ negation), `.` (any character),
// ( groups ), `|`, `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`, and `#` comments. Errors name the line
// and what is wrong: an undefined rule, left recursion, a missing root, limits.
Result<std::shared_ptr<const Grammar>> parseGbnf(std::string_view text, const GrammarLimits& limits = {});

// The same grammar text with every rule name prefixed (`root` becomes prefix + "root"), so several
// grammars can be joined into one without their rules colliding. Literals, classes and comments
// are left as they are.
std::string prefixRuleNames(std::string_view gbnf, std::string_view prefix);

enum class TextMatch {
    Rejected, // no sentence of the grammar starts with the text
    Prefix,   // the text can be continued into a sentence, but is not one yet
    Complete, // the text is a sentence (it may also continue)
};
// Matches UTF-8 text (bytes) against the grammar from its root.
TextMatch matchText(const Grammar& grammar, std::string_view text);

struct SchemaLimits {
    int32_t maxDepth = 64;          // nesting of schemas inside schemas (and of $ref expansion)
    size_t maxEnumValues = 4096;    // enum entries
    size_t maxPatternBytes = 4096;  // a `pattern`'s regex text
    size_t maxRules = 5000;         // rules in the grammar produced
    size_t maxGrammarBytes = size_t(1) << 20;
};

// Compiles a JSON Schema (JSON text) into GBNF whose sentences are exactly the JSON texts (in a
// compact form with bounded whitespace) that the schema accepts, as far as the supported
// keywords go: type (and lists of types, nullable), properties / required /
// additionalProperties, items / prefixItems / minItems / maxItems, enum, const, anyOf / oneOf /
// allOf of objects, $ref into $defs / definitions, minLength / maxLength, pattern (a regex
// subset), format (date, time, date-time, email, uuid), minimum / maximum / exclusive bounds for
// integers and numbers. A keyword it cannot honour is an error naming its JSON pointer
// ("/properties/age/multipleOf: not supported"); so are $ref cycles that cannot end and limits.
Result<std::string> jsonSchemaToGbnf(std::string_view schemaJson, const SchemaLimits& limits = {});

// GBNF for any JSON object (response_format {"type": "json_object"}, Ollama's format "json").
std::string anyJsonObjectGbnf();

} // namespace hearth::grammar
