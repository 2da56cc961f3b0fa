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
    // Keywords the grammar cannot enforce (multipleOf, not, uniqueItems, minProperties...): left
    // out (the output follows the rest of the schema, as llama.cpp's converter does), or, when
    // strict (a client's "strict": true), refused with an error naming them.
    bool strict = false;
};

// Compiles a JSON Schema (JSON text) into GBNF whose sentences are JSON texts the schema accepts,
// in a compact form: whitespace between tokens is bounded (nothing, one space, or a newline and
// up to 20 spaces / tabs) and none follows the root value; properties come in the schema's order
// (optional ones may be left out; extra properties, where allowed, after the listed ones);
// integer parts have at most 20 digits, fractions 20, exponents 3; bounded numbers have no
// exponent. Keywords: type (lists, nullable; absent: inferred from the keywords present),
// properties / required / additionalProperties (absent = any extra value), items / prefixItems
// (and draft-7 items arrays with additionalItems) / minItems / maxItems, enum and const (values
// also checked against the keywords beside them), anyOf / oneOf (both as alternatives;
// keywords beside them apply to each), allOf (merged: properties, required, bounds, types,
// anyOf lists; a member's additionalProperties: false admits only its own properties), local
// $ref ("#", "#/$defs/x", any JSON pointer; recursion allowed, alternatives that can never end
// are dropped), minLength / maxLength, pattern (ECMAScript subset: literals, escapes, classes,
// groups, |, quantifiers, ^ $ at the ends of top-level alternatives; unanchored means "contains";
// with minLength / maxLength only for ^X{m,n}$ of one character class), format (date, time,
// date-time, email, uuid, ipv4, hostname, uri / uri-reference / iri / iri-reference / url as
// absolute URIs with an authority, json-pointer, relative-json-pointer, byte; binary and password
// are any string; others are errors; formats on non-strings are ignored), and minimum / maximum
// / exclusive bounds, exact for integers and decimals (|bound| <= 1e18, at most 20 decimals).
// Annotations (title, description, default, examples, $schema, $id, x-*...) and unknown
// keywords are ignored. Keywords that constrain values in a way a grammar here cannot follow
// (multipleOf, min/maxProperties, patternProperties, propertyNames, dependent*, dependencies,
// not, if / then / else, contains, min/maxContains, uniqueItems: true, unevaluated*,
// contentSchema) are left out, or with SchemaLimits::strict are an error naming their JSON
// pointer ("/properties/age/multipleOf: not supported"); $dynamicRef and $recursiveRef are
// always an error. Counts: a lower bound
// above GrammarLimits::maxRepeat is an error, an upper bound above it is dropped (unbounded),
// and the grammar's size once repetitions are expanded must fit GrammarLimits; so that the
// matcher can follow every parse, enum values and first properties are factored by prefix, and
// at most 400 optional properties in a row and 256 anyOf / oneOf alternatives (also after allOf
// distributes them) are accepted. A schema with no
// finite value (a $ref cycle that cannot end), a left-recursive $ref cycle, and the limits are
// errors (InvalidArgument); nothing throws.
Result<std::string> jsonSchemaToGbnf(std::string_view schemaJson, const SchemaLimits& limits = {});

// GBNF for any JSON object (response_format {"type": "json_object"}, Ollama's format "json").
std::string anyJsonObjectGbnf();

} // namespace hearth::grammar
