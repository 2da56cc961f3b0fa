// The cases of test_json_schema: grammar text, errors, hostile schemas, and accept/reject checks
// of concrete documents through parseGbnf and matchText.
#include "test_json_schema_cases.h"

#include "hearth/grammar.h"

#include <QElapsedTimer>
#include <QtTest>

#include <chrono>
#include <cstdio>
#include <random>

using namespace hearth;
using namespace hearth::grammar;

namespace {

std::string gbnfOf(const std::string& schema) {
    auto r = jsonSchemaToGbnf(schema);
    if (!r) qWarning("schema refused: %s", r.status().message().c_str());
    return r ? *r : std::string();
}

// The error message, or "ok" when the schema converts.
std::string errorOf(const std::string& schema, const SchemaLimits& limits = {}) {
    auto r = jsonSchemaToGbnf(schema, limits);
    if (r) return "ok";
    if (r.status().code() != ErrorCode::InvalidArgument) return "wrong code: " + r.status().toString();
    return r.status().message();
}

std::shared_ptr<const Grammar> compiled(const std::string& schema) {
    auto text = jsonSchemaToGbnf(schema);
    if (!text) {
        qWarning("schema refused: %s", text.status().message().c_str());
        return nullptr;
    }
    auto g = parseGbnf(*text);
    if (!g) {
        qWarning("grammar refused: %s\n%s", g.status().message().c_str(), text->c_str());
        return nullptr;
    }
    return *g;
}

// One line of the grammar text: the rule named `name`.
std::string ruleLine(const std::string& text, const std::string& name) {
    size_t at = text.rfind("\n" + name + " ::= ");
    size_t start = text.rfind(name + " ::= ", 0) == 0 ? 0 : at == std::string::npos ? at : at + 1;
    if (start == std::string::npos) return {};
    return text.substr(start, text.find('\n', start) - start);
}

bool complete(const Grammar& g, const std::string& text) {
    return matchText(g, text) == TextMatch::Complete;
}

struct Case {
    const char* schema;
    std::vector<std::string> valid;
    std::vector<std::string> invalid;
};

// Every valid document is a sentence; no invalid one is.
void checkCases(const std::vector<Case>& cases) {
    for (auto& c : cases) {
        auto g = compiled(c.schema);
        QVERIFY2(g, c.schema);
        for (auto& doc : c.valid)
            QVERIFY2(complete(*g, doc), (std::string(c.schema) + "  should accept  " + doc).c_str());
        for (auto& doc : c.invalid)
            QVERIFY2(!complete(*g, doc), (std::string(c.schema) + "  should reject  " + doc).c_str());
    }
}

// Whether the schema converts within `ms` milliseconds, with the error (or "ok").
std::string timedError(const std::string& schema, qint64& elapsedMs, const SchemaLimits& limits = {}) {
    QElapsedTimer t;
    t.start();
    std::string e = errorOf(schema, limits);
    elapsedMs = t.elapsed();
    return e;
}

} // namespace

namespace hearth::test::json_schema {

void textOfAnObject() {
    const std::string text = gbnfOf(
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":20},)"
        R"("tags":{"type":"array","items":{"enum":["a","b"]}}},"required":["name"],)"
        R"("additionalProperties":false})");
    QCOMPARE(ruleLine(text, "root"), std::string("root ::= schema"));
    QCOMPARE(ruleLine(text, "schema"),
             std::string(R"(schema ::= "{" ws "\"name\"" ws ":" ws name (ws "," ws "\"tags\"" ws ":" ws tags)? ws "}")"));
    QCOMPARE(ruleLine(text, "name"), std::string(R"(name ::= "\"" char{0,20} "\"")"));
    // Enum values are factored by their common prefix.
    QCOMPARE(ruleLine(text, "tags-item"), std::string(R"(tags-item ::= "\"" ("a\"" | "b\""))"));
    QCOMPARE(ruleLine(text, "tags"),
             std::string(R"(tags ::= "[" ws (tags-item (ws "," ws tags-item)* ws)? "]")"));
    // Bounded whitespace, and no whitespace after the root value.
    QCOMPARE(ruleLine(text, "ws"), std::string(R"(ws ::= (" " | "\n" [\x09 ]{0,20})?)"));
    QVERIFY(text.rfind("root ::= ", 0) == 0);
}

void textOfRangesAndPatterns() {
    QCOMPARE(ruleLine(gbnfOf(R"({"type":"integer","minimum":-5,"maximum":123})"), "schema"),
             std::string(R"(schema ::= "-" [1-5] | [0-9] | [1-9] [0-9] | "1" ([01] [0-9] | "2" [0-3]))"));
    QCOMPARE(ruleLine(gbnfOf(R"({"type":"string","pattern":"^[a-z]+(-[a-z0-9]+)*$"})"), "schema"),
             std::string(R"(schema ::= "\"" [a-z]+ ("-" [0-9a-z]+)* "\"")"));
    // Unanchored ends allow any characters there.
    QCOMPARE(ruleLine(gbnfOf(R"({"type":"string","pattern":"ab"})"), "schema"),
             std::string(R"(schema ::= "\"" char* "ab" char* "\"")"));
    // A self-referencing tree: the reference becomes a rule reference.
    const std::string tree = gbnfOf(
        R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},)"
        R"("kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v","kids"],)"
        R"("additionalProperties":false}},"$ref":"#/$defs/node"})");
    QCOMPARE(ruleLine(tree, "node-kids"),
             std::string(R"(node-kids ::= "[" ws (node (ws "," ws node)* ws)? "]")"));
    // Rule names never look like a parser's helper rules ("name-<number>").
    const std::string tuple = gbnfOf(R"({"type":"array","prefixItems":[{"type":"string","maxLength":2},)"
                                     R"({"type":"string","maxLength":3}]})");
    QVERIFY2(tuple.find("\nn0 ::= ") != std::string::npos, tuple.c_str());
    QVERIFY2(tuple.find("\nn1 ::= ") != std::string::npos, tuple.c_str());
}

void unsupportedKeywordsNameTheirPointer() {
    SchemaLimits strict;
    strict.strict = true;
    QCOMPARE(errorOf(R"({"type":"object","properties":{"age":{"type":"integer","multipleOf":2}}})", strict),
             std::string("/properties/age/multipleOf: not supported"));
    QCOMPARE(errorOf(R"({"type":"array","uniqueItems":true})", strict), std::string("/uniqueItems: not supported"));
    QCOMPARE(errorOf(R"({"type":"array","uniqueItems":false})", strict), std::string("ok"));
    QCOMPARE(errorOf(R"({"type":"object","minProperties":1})", strict), std::string("/minProperties: not supported"));
    QCOMPARE(errorOf(R"({"patternProperties":{"^a":{}}})", strict), std::string("/patternProperties: not supported"));
    QCOMPARE(errorOf(R"({"not":{"type":"string"}})", strict), std::string("/not: not supported"));
    // Not strict (the default, as llama.cpp's converter): those keywords are left out, wherever a
    // schema holds schemas, and the rest of the schema is what the grammar follows. A property
    // named like a keyword stays.
    const std::pair<const char*, const char*> loose[] = {
        {R"({"type":"object","properties":{"age":{"type":"integer","multipleOf":2}},"required":["age"]})",
         R"({"type":"object","properties":{"age":{"type":"integer"}},"required":["age"]})"},
        {R"({"type":"array","items":{"type":"string","not":{"const":"x"}},"uniqueItems":true,"contains":{"const":"a"}})",
         R"({"type":"array","items":{"type":"string"}})"},
        {R"({"type":"object","minProperties":1,"maxProperties":3,"propertyNames":{"maxLength":3},"additionalProperties":{"type":"integer"}})",
         R"({"type":"object","additionalProperties":{"type":"integer"}})"},
        {R"({"$defs":{"p":{"type":"object","properties":{"not":{"type":"integer","multipleOf":5}},"required":["not"],"dependentRequired":{"not":["x"]}}},"anyOf":[{"$ref":"#/$defs/p"},{"type":"null","if":{"type":"null"},"then":{}}]})",
         R"({"$defs":{"p":{"type":"object","properties":{"not":{"type":"integer"}},"required":["not"]}},"anyOf":[{"$ref":"#/$defs/p"},{"type":"null"}]})"},
    };
    for (const auto& [with, without] : loose) {
        auto a = jsonSchemaToGbnf(with), b = jsonSchemaToGbnf(without);
        QVERIFY2(a, a ? "" : a.status().message().c_str());
        QVERIFY(b);
        QCOMPARE(*a, *b);
    }
    // A reference that cannot be followed is refused either way.
    QCOMPARE(errorOf(R"({"type":"object","properties":{"a":{"$dynamicRef":"#node"}}})"),
             std::string("/properties/a/$dynamicRef: not supported"));
    // A format no string of those lengths can take.
    QCOMPARE(errorOf(R"({"type":"string","format":"date","maxLength":8})"),
             std::string("/format: no 'date' string fits minLength / maxLength"));
    QCOMPARE(errorOf(R"({"type":"string","format":"email","maxLength":5})"),
             std::string("/format: no 'email' string fits minLength / maxLength"));
    QCOMPARE(errorOf(R"({"if":{},"then":{}})", strict), std::string("/if: not supported"));
    QCOMPARE(errorOf(R"({"$defs":{"a":{"dependentRequired":{}}},"$ref":"#/$defs/a"})", strict),
             std::string("/$defs/a/dependentRequired: not supported"));
    QCOMPARE(errorOf(R"({"properties":{"a/b":{"contains":{}}}})", strict),
             std::string("/properties/a~1b/contains: not supported"));
    // Annotations and unknown (non-constraining) keywords are ignored.
    QCOMPARE(errorOf(R"({"title":"t","description":"d","default":1,"examples":[1],"$schema":"x",)"
                     R"("$id":"y","x-vendor":1,"type":"integer"})"),
             std::string("ok"));
}

void badInputIsAnError() {
    QCOMPARE(errorOf("{").rfind("the schema is not valid JSON", 0), size_t(0));
    QVERIFY(errorOf("") != "ok");
    QCOMPARE(errorOf(R"({"type":"string"} x)").rfind("the schema is not valid JSON", 0), size_t(0));
    // Ill-formed UTF-8: refused, and the message quotes none of the bad bytes.
    const std::string badUtf8 = errorOf("{\"enum\":[\"\xff\"]}");
    QCOMPARE(badUtf8.rfind("the schema is not valid JSON", 0), size_t(0));
    for (char c : badUtf8) QVERIFY(c >= 0x20 && c < 0x7F);
    QCOMPARE(errorOf("42"), std::string("(root): a schema must be an object or a boolean"));
    QCOMPARE(errorOf(R"({"type":"strin"})"), std::string("/type: unknown type 'strin'"));
    QCOMPARE(errorOf(R"({"$ref":"http://x/y.json"})"),
             std::string("/$ref: only references into this document (\"#...\") are supported"));
    QCOMPARE(errorOf(R"({"$ref":"#/$defs/missing"})"),
             std::string("/$ref: \"#/$defs/missing\" points at nothing"));
    QCOMPARE(errorOf(R"({"type":"string","format":"ipv6"})"),
             std::string("/format: format 'ipv6' is not supported"));
    QCOMPARE(errorOf(R"({"type":"string","format":"uri"})"), std::string("ok"));
    QCOMPARE(errorOf(R"({"type":"string","format":"regex"})"), std::string("/format: format 'regex' is not supported"));
    QCOMPARE(errorOf(R"({"type":"string","format":"duration"})"),
             std::string("/format: format 'duration' is not supported"));
    QCOMPARE(errorOf(R"({"type":"integer","format":"int64"})"), std::string("ok")); // formats only apply to strings
    QCOMPARE(errorOf(R"({"type":"string","pattern":"^(a)\\1$"})"),
             std::string("/pattern: pattern uses a backreference, which is not supported (at offset 6)"));
    QCOMPARE(errorOf(R"({"type":"string","pattern":"^(?=a)b$"})"),
             std::string("/pattern: pattern uses lookaround or group flags, which are not supported (at offset 3)"));
    QCOMPARE(errorOf(R"({"type":"string","pattern":"a\\bc"})"),
             std::string("/pattern: pattern uses \\b (word boundary), which is not supported (at offset 3)"));
    QCOMPARE(errorOf(R"({"type":"string","pattern":"a^b"})"),
             std::string("/pattern: pattern '^' is supported only at the start (at offset 1)"));
    QCOMPARE(errorOf(R"({"type":"string","pattern":"(ab"})"),
             std::string("/pattern: pattern has an unclosed '(' (at offset 3)"));
    QCOMPARE(errorOf(R"({"allOf":[{"type":"string"},{"type":"integer"}]})"),
             std::string("/allOf: the members' types have nothing in common"));
    QCOMPARE(errorOf(R"({"allOf":[{"pattern":"^a$"},{"pattern":"^b$"}]})"),
             std::string("/allOf: cannot combine the members' different 'pattern'"));
    QCOMPARE(errorOf(R"({"type":"array","minItems":3,"maxItems":2})"),
             std::string("/maxItems: is below minItems: nothing fits"));
    QCOMPARE(errorOf(R"({"type":"integer","minimum":5,"maximum":4})"),
             std::string("(root): no integer lies within the bounds"));
    QCOMPARE(errorOf(R"({"type":"object","required":["a"],"additionalProperties":false})"),
             std::string("/required: 'a' is required but additionalProperties is false"));
    QCOMPARE(errorOf(R"({"format":"date","const":"2024-02-30"})"),
             std::string("(root): no enum / const value satisfies the schema's other keywords"));
    QCOMPARE(errorOf(R"({"type":"string","enum":[1,2]})"),
             std::string("(root): no enum / const value satisfies the schema's other keywords"));
    QCOMPARE(errorOf("false"), std::string("(root): no finite JSON value satisfies this schema (a $ref "
                                           "cycle with no way to end, or contradictory constraints)"));
    QCOMPARE(errorOf(R"({"type":"string","pattern":"^a+$","format":"date"})"),
             std::string("/format: format together with pattern is not supported"));
    QCOMPARE(errorOf(R"({"type":"string","pattern":"^(ab)+$","maxLength":4})")
                 .rfind("/pattern: minLength / maxLength together with a pattern are supported only", 0),
             size_t(0));
    QCOMPARE(errorOf(R"({"type":"integer","maximum":1e30})"),
             std::string("/maximum: bounds beyond +-1e18 are not supported"));
}

void cyclesThatCannotEndAreErrors() {
    QCOMPARE(errorOf(R"({"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]})"),
             std::string("(root): no finite JSON value satisfies this schema (a $ref cycle with no "
                         "way to end, or contradictory constraints)"));
    QCOMPARE(errorOf(R"({"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/b"},"minItems":1},)"
                     R"("b":{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"required":["x"]}},)"
                     R"("$ref":"#/$defs/a"})")
                 .find("no finite JSON value satisfies this schema"),
             size_t(10)); // "/$defs/a: " or "/$defs/b: "
    QCOMPARE(errorOf(R"({"anyOf":[{"$ref":"#"},{"type":"null"}]})"),
             std::string("(root): a $ref cycle that refers to itself before any character (left recursion)"));
    // Alias chains: a -> b -> a, directly and within allOf.
    QVERIFY(errorOf(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})") != "ok");
    QVERIFY(errorOf(R"({"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},)"
                    R"("$ref":"#/$defs/a"})") != "ok");
    // additionalProperties: false beside allOf sees none of the members' properties (as in JSON
    // Schema), so a required member property cannot appear.
    QCOMPARE(errorOf(R"({"allOf":[{"properties":{"id":{"type":"integer"}},"required":["id"]}],)"
                     R"("additionalProperties":false})"),
             std::string("/allOf: 'id' is required but a member's additionalProperties is false"));
    // An optional self-reference can end: fine.
    QCOMPARE(errorOf(R"({"type":"object","properties":{"next":{"$ref":"#"}}})"), std::string("ok"));
}

void hostileSchemasAreBounded() {
    qint64 ms = 0;
    // Deep nesting of schemas.
    std::string deep = "{\"type\":\"string\"}";
    for (int i = 0; i < 100; ++i) deep = "{\"type\":\"array\",\"items\":" + deep + "}";
    std::string e = timedError(deep, ms);
    QVERIFY2(e.find("schemas nest deeper than 64") != std::string::npos, e.c_str());
    QVERIFY2(ms < 500, std::to_string(ms).c_str());
    // Deep nesting of JSON itself (the JSON library's copies and dumps would recurse).
    std::string brackets = "{\"default\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    QCOMPARE(timedError(brackets, ms), std::string("the schema nests arrays and objects deeper than 256"));
    QVERIFY2(ms < 2000, std::to_string(ms).c_str());
    // A huge enum.
    std::string bigEnum = "{\"enum\":[";
    for (int i = 0; i < 5000; ++i) bigEnum += (i ? "," : "") + std::to_string(i);
    bigEnum += "]}";
    QCOMPARE(timedError(bigEnum, ms), std::string("/enum: has 5000 values, above the limit of 4096"));
    QVERIFY2(ms < 500, std::to_string(ms).c_str());
    // Enormous counts: a lower bound beyond what a grammar can count is an error; an upper bound
    // beyond it is dropped (unbounded).
    QCOMPARE(timedError(R"({"type":"string","minLength":1000000000})", ms),
             std::string("/minLength: 1000000000 is above the 10000 a grammar can count"));
    QCOMPARE(timedError(R"({"type":"string","maxLength":1000000000})", ms), std::string("ok"));
    QVERIFY(gbnfOf(R"({"type":"string","maxLength":1000000000})").rfind("root ::= string", 0) == 0);
    QCOMPARE(timedError(R"({"type":"array","maxItems":1e12})", ms), std::string("ok"));
    // Many large bounded repetitions together: the expanded size is checked against the parser's
    // limits (ten such fields fit and parse; thirty do not).
    auto manyFields = [](int n) {
        std::string many = "{\"type\":\"object\",\"properties\":{";
        for (int i = 0; i < n; ++i)
            many += std::string(i ? "," : "") + "\"f" + std::to_string(i) +
                    "\":{\"type\":\"string\",\"maxLength\":" + std::to_string(9000 + i) + "}";
        return many + "}}";
    };
    QVERIFY(compiled(manyFields(10)));
    e = timedError(manyFields(30), ms);
    QVERIFY2(e.rfind("the grammar would be too large once its repetitions are expanded", 0) == 0, e.c_str());
    QVERIFY2(ms < 500, std::to_string(ms).c_str());
    // Catastrophic regexes: nested counted repetitions, huge counts, deep groups, long text.
    e = timedError(R"({"type":"string","pattern":"^((a{100}){100}){100}$"})", ms);
    QVERIFY2(e.rfind("/pattern: pattern too large once its repetitions are expanded", 0) == 0, e.c_str());
    QVERIFY2(ms < 500, std::to_string(ms).c_str());
    QCOMPARE(timedError(R"({"type":"string","pattern":"^a{100000}$"})", ms),
             std::string("/pattern: pattern has a repetition count above 10000 (at offset 2)"));
    std::string groups(1000, '(');
    groups += "a" + std::string(1000, ')');
    QCOMPARE(timedError("{\"pattern\":\"" + groups + "\"}", ms),
             std::string("/pattern: pattern nests groups too deeply (at offset 65)"));
    QCOMPARE(timedError("{\"pattern\":\"" + std::string(5000, 'a') + "\"}", ms),
             std::string("/pattern: pattern longer than 4096 bytes"));
    // Alternatives that multiply: anyOf with shared keywords at every level.
    std::string nested = "{\"type\":\"integer\"}";
    for (int i = 0; i < 30; ++i)
        nested = "{\"type\":\"object\",\"properties\":{\"x\":" + nested +
                 "},\"anyOf\":[{\"required\":[\"x\"]},{\"properties\":{\"y\":{\"type\":\"null\"}}}]}";
    e = timedError(nested, ms);
    QVERIFY2(e.find("schemas nest deeper than 64") != std::string::npos, e.c_str());
    QVERIFY2(ms < 2000, std::to_string(ms).c_str());
    nested = "{\"type\":\"integer\"}";
    for (int i = 0; i < 15; ++i)
        nested = "{\"type\":\"object\",\"properties\":{\"x\":" + nested +
                 "},\"anyOf\":[{\"required\":[\"x\"]},{\"properties\":{\"y\":{\"type\":\"null\"}}}]}";
    QCOMPARE(timedError(nested, ms), std::string("ok"));
    QVERIFY2(ms < 2000, std::to_string(ms).c_str());
    // allOf of many anyOf lists: the product of alternatives is capped.
    auto product = [](int n) {
        std::string s = "{\"allOf\":[";
        for (int i = 0; i < n; ++i)
            s += std::string(i ? "," : "") + "{\"anyOf\":[{\"required\":[\"a" + std::to_string(i) +
                 "\"]},{\"required\":[\"b" + std::to_string(i) + "\"]}]}";
        return s + "]}";
    };
    e = timedError(product(9), ms);
    QVERIFY2(e == "/allOf: combining these anyOf lists gives more than 256 alternatives", e.c_str());
    e = timedError(product(8), ms);
    QCOMPARE(e, std::string("ok"));
    QVERIFY2(ms < 3000, std::to_string(ms).c_str());
    qInfo("allOf of 8 anyOf pairs (256 alternatives): converted in %lld ms", (long long)ms);
    auto g256 = compiled(product(8));
    QVERIFY(g256);
    QVERIFY(complete(*g256, R"({"a0":1,"a1":1,"a2":1,"a3":1,"a4":1,"a5":1,"a6":1,"a7":1})"));
    QVERIFY(complete(*g256, R"({"b0":1,"a1":1,"b2":1,"a3":1,"b4":1,"a5":1,"b6":1,"b7":1})"));
    QVERIFY(!complete(*g256, R"({"b0":1,"a1":1,"b2":1,"a3":1,"b4":1,"a5":1,"b6":1})"));
    // Lots of optional properties: a matcher cannot follow them all; 400 in a row still work.
    auto wideObject = [](int n, bool allRequired) {
        std::string wide = "{\"type\":\"object\",\"properties\":{";
        std::string required;
        for (int i = 0; i < n; ++i) {
            wide += std::string(i ? "," : "") + "\"p" + std::to_string(i) +
                    "\":{\"type\":\"string\",\"maxLength\":" + std::to_string(i + 1) + "}";
            required += std::string(i ? "," : "") + "\"p" + std::to_string(i) + "\"";
        }
        return wide + "}" + (allRequired ? ",\"required\":[" + required + "]" : std::string()) + "}";
    };
    e = timedError(wideObject(3000, false), ms);
    QCOMPARE(e, std::string("/properties: more than 400 optional properties in a row are not supported (a "
                            "grammar matcher could not follow them all)"));
    QVERIFY2(ms < 2000, std::to_string(ms).c_str());
    auto g400 = compiled(wideObject(400, false));
    QVERIFY(g400);
    QVERIFY(complete(*g400, R"({"p0":"a","p399":"b","zz":1})"));
    QVERIFY(complete(*g400, R"({"p398":"a"})"));
    QVERIFY(!complete(*g400, R"({"p399":"a","p0":"b"})"));
    // The rule limit.
    SchemaLimits small;
    small.maxRules = 100;
    e = timedError(wideObject(300, true), ms, small);
    QVERIFY2(e.find("rules") != std::string::npos, e.c_str());
    QVERIFY2(ms < 2000, std::to_string(ms).c_str());
    std::string manyAlternatives = "{\"anyOf\":[";
    for (int i = 0; i < 600; ++i) manyAlternatives += std::string(i ? "," : "") + "{\"const\":" + std::to_string(i) + "}";
    QCOMPARE(timedError(manyAlternatives + "]}", ms), std::string("/anyOf: has 600 alternatives, above the limit of 256"));
    // A 3000-value enum (factored by prefix, so a matcher follows it).
    std::string bigEnumOk = "{\"enum\":[";
    for (int i = 0; i < 3000; ++i) bigEnumOk += std::string(i ? "," : "") + "\"v" + std::to_string(i) + "\"";
    auto gEnum = compiled(bigEnumOk + "]}");
    QVERIFY(gEnum);
    QVERIFY(complete(*gEnum, R"("v0")") && complete(*gEnum, R"("v2999")") && complete(*gEnum, R"("v123")"));
    QVERIFY(!complete(*gEnum, R"("v3000")") && !complete(*gEnum, R"("v")"));
    // A very long property name next to additional properties still parses.
    std::string longKey(300, 'k');
    auto g = compiled("{\"type\":\"object\",\"properties\":{\"" + longKey + "\":{\"type\":\"integer\"}}}");
    QVERIFY(g);
    QVERIFY(complete(*g, "{\"" + longKey + "\":1}"));
    QVERIFY(!complete(*g, "{\"" + longKey + "\":\"x\"}"));
    QVERIFY(complete(*g, "{\"" + longKey + "x\":\"x\"}"));
}

void objectsAndArrays() {
    checkCases({
        {R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},)"
         R"("email":{"type":"string"}},"required":["name","email"],"additionalProperties":false})",
         {R"({"name":"a","email":"b"})", R"({"name":"a","age":3,"email":"b"})",
          "{\n  \"name\": \"a\",\n  \"email\": \"b\"\n}", R"({ "name" : "x\"\\\n\u00e9" , "email":""})"},
         {R"({"name":"a"})", R"({"email":"b","name":"a"})", R"({"name":"a","email":"b","x":1})",
          R"({"name":"a","age":3.5,"email":"b"})", R"({"name":"a","email":"b"} )",
          R"({"name":"a","email":"b",})", "{\"name\":\"a\x01\",\"email\":\"b\"}", R"({"name":"\x","email":""})",
          "{\"name\":\"a\",\"email\":\"b\"\n}x", "{  \"name\":\"a\",\"email\":\"b\"}"}},
        // Optional properties around a required one.
        {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"},)"
         R"("c":{"type":"null"}},"required":["b"],"additionalProperties":false})",
         {R"({"b":true})", R"({"a":1,"b":false})", R"({"b":true,"c":null})", R"({"a":-1,"b":true,"c":null})"},
         {"{}", R"({"a":1})", R"({"a":1,"c":null})", R"({"c":null,"b":true})", R"({"b":1})"}},
        // All optional.
        {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"}},"additionalProperties":false})",
         {"{}", "{ }", R"({"a":1})", R"({"b":true})", R"({"a":1,"b":true})"},
         {R"({"b":true,"a":1})", R"({,"b":true})", R"({"a":1,})"}},
        // additionalProperties absent (any value besides) and as a schema.
        {R"({"type":"object","properties":{"a":{"type":"integer"}}})",
         {"{}", R"({"a":1})", R"({"a":1,"zz":[1,{"q":null}]})", R"({"zz":"x"})", R"({"ab":"x"})", R"({"":0})"},
         {R"({"a":"x"})", R"({"a":1,"a":2})", R"({"zz":})"}},
        {R"({"type":"object","additionalProperties":{"type":"integer"}})",
         {"{}", R"({"x":1,"y":2})"},
         {R"({"x":"1"})", "[]"}},
        // Keys that need escapes or are not ASCII (one beyond the BMP), and extra keys beside them.
        {"{\"type\":\"object\",\"properties\":{\"a\\\"b\":{\"type\":\"integer\"},\"\u00e9\":{\"type\":\"integer\"},"
         "\"\xf0\x9f\x98\x80\":{\"type\":\"null\"}},\"required\":[\"\u00e9\"]}",
         {"{\"\xc3\xa9\":1}", "{\"a\\\"b\":2,\"\xc3\xa9\":1,\"\xf0\x9f\x98\x80\":null}", "{\"\xc3\xa9\":1,\"\xc3\xa9x\":\"y\"}"},
         {"{}", "{\"\xc3\xa9\":\"1\"}", "{\"\xc3\xa9\":1,\"\xf0\x9f\x98\x80\":1}", "{\"\xc3\xa9\":1,\"\xc3\xa9\":2}"}},
        // Nested arrays with counts.
        {R"({"type":"array","items":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2},"maxItems":3})",
         {"[]", "[[1]]", "[[1,2],[3],[4,5]]", "[ [1] , [2, 3] ]"},
         {"[[]]", "[[1,2,3]]", "[[1],[2],[3],[4]]", "[1]", "[[1],]"}},
        // Tuples.
        {R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false,"minItems":1})",
         {"[1]", R"([1,"a"])"},
         {"[]", R"(["a"])", R"([1,"a",2])"}},
        {R"({"type":"array","prefixItems":[{"type":"integer"}],"items":{"type":"boolean"}})",
         {"[]", "[1]", "[1,true,false]"},
         {"[true]", "[1,2]"}},
        {R"({"type":"array","items":[{"type":"integer"}],"additionalItems":false})", {"[]", "[1]"}, {"[1,2]"}},
    });
}

void enumsConstsAndCombinators() {
    checkCases({
        {R"({"enum":["red","green",1,null,{"a":[1,2]},true]})",
         {R"("red")", R"("green")", "1", "null", R"({"a":[1,2]})", "true"},
         {R"("blue")", "2", "false", R"({"a":[1]})", R"("Red")"}},
        {R"({"const":"only"})", {R"("only")"}, {R"("other")", "only"}},
        {R"({"type":["string","null"],"enum":["a",null,3]})", {R"("a")", "null"}, {"3"}},
        {R"({"anyOf":[{"type":"integer","minimum":0},{"type":"string","maxLength":2}]})",
         {"0", "42", R"("")", R"("ab")"},
         {"-1", R"("abc")", "null"}},
        {R"({"oneOf":[{"type":"boolean"},{"type":"null"}]})", {"true", "null"}, {"0"}},
        {R"({"type":["integer","boolean"]})", {"1", "false"}, {"null", "1.5"}},
        // Keywords beside anyOf apply to every alternative.
        {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},)"
         R"("additionalProperties":false,"anyOf":[{"required":["a"]},{"required":["b"]}]})",
         {R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"},
         {"{}", R"({"c":1})"}},
        // allOf merges objects (a base type extended).
        {R"({"$defs":{"base":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}},)"
         R"("allOf":[{"$ref":"#/$defs/base"},{"properties":{"name":{"type":"string"}},"required":["name"]}]})",
         {R"({"id":1,"name":"x"})", R"({"id":1,"name":"x","z":0})"},
         {R"({"id":1})", R"({"name":"x"})", R"({"id":"1","name":"x"})"}},
        // A member's additionalProperties: false limits the keys to its own properties.
        {R"({"allOf":[{"properties":{"id":{"type":"integer"},"name":{}},"additionalProperties":false},)"
         R"({"properties":{"name":{"type":"string"}},"required":["name"]}]})",
         {R"({"name":"x"})", R"({"id":1,"name":"x"})"},
         {R"({"id":1,"name":"x","z":0})", R"({"id":1,"name":2})"}},
        {R"({"allOf":[{"type":"string"},{"minLength":2},{"maxLength":3}]})",
         {R"("ab")", R"("abc")"}, {R"("a")", R"("abcd")"}},
        {R"({"type":"string","nullable":true})", {R"("x")", "null"}, {"1"}},
        // enum / const values must also satisfy the keywords beside them.
        {R"({"type":"number","minimum":0,"enum":[-1,0,5,"x"]})", {"0", "5"}, {"-1", R"("x")"}},
        {R"({"pattern":"^a","maxLength":2,"enum":["ab","ba","abc",7]})", {R"("ab")", "7"}, {R"("ba")", R"("abc")"}},
        {R"({"type":"object","required":["k"],"enum":[{"k":1},{"j":1},[1]]})", {R"({"k":1})"}, {R"({"j":1})", "[1]"}},
        // Empty schemas: any JSON value.
        {"{}", {"1", R"("s")", R"({"a":[null,true,1.5e3]})", "[]", "-0.5"}, {"", "tru", "{", "01"}},
        {"true", {"[1,2]", "false"}, {"[1,]"}},
    });
}

void recursionThroughRefs() {
    // Items that can never be finite leave only the empty array; a dead alternative is dropped.
    QCOMPARE(ruleLine(gbnfOf(R"({"type":"array","items":{"$ref":"#","minItems":1}})"), "schema"),
             std::string(R"(schema ::= "[" ws "]")"));
    checkCases({
        {R"({"anyOf":[{"$ref":"#/$defs/bad"},{"type":"string"}],"$defs":{"bad":{"type":"object",)"
         R"("properties":{"x":{"$ref":"#/$defs/bad"}},"required":["x"]}}})",
         {R"("s")"}, {R"({"x":{}})", "{}"}},
        // A $ref back to the root with keywords beside it: recursion, not endless inlining.
        {R"({"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#","required":["name"]}},)"
         R"("additionalProperties":false})",
         {"{}", R"({"name":"a","child":{"name":"b","child":{"name":"c"}}})"},
         {R"({"child":{}})", R"({"child":{"child":{"name":"x"}}})"}},
    });
    checkCases({
        {R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},)"
         R"("kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v","kids"],)"
         R"("additionalProperties":false}},"$ref":"#/$defs/node"})",
         {R"({"v":1,"kids":[]})", R"({"v":1,"kids":[{"v":2,"kids":[{"v":3,"kids":[]}]},{"v":4,"kids":[]}]})"},
         {R"({"v":1})", R"({"v":1,"kids":[{"v":2}]})", R"({"v":1,"kids":[1]})"}},
        {R"({"type":"object","properties":{"name":{"type":"string"},"next":{"$ref":"#"}},"required":["name"],)"
         R"("additionalProperties":false})",
         {R"({"name":"a"})", R"({"name":"a","next":{"name":"b","next":{"name":"c"}}})"},
         {R"({"name":"a","next":{}})", R"({"next":{"name":"b"}})"}},
        {R"({"definitions":{"list":{"anyOf":[{"type":"null"},{"type":"array","prefixItems":[{"type":"integer"},)"
         R"({"$ref":"#/definitions/list"}],"items":false,"minItems":2}]}},"$ref":"#/definitions/list"})",
         {"null", "[1,null]", "[1,[2,[3,null]]]"},
         {"[1]", "[1,[2]]", "[null]"}},
    });
}

void stringsLengthsPatternsFormats() {
    checkCases({
        {R"({"type":"string","minLength":2,"maxLength":4})",
         {R"("ab")", R"("abcd")", R"("\n\t")", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80x\"", R"("\u00e9\"")"},
         {R"("a")", R"("abcde")", R"("\q")", "\"a\nb\"", R"("\u00g0")"}},
        {R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3,4}$"})",
         {R"("AB-123")", R"("ZZ-0000")"},
         {R"("ab-123")", R"("AB-12")", R"("AB-12345")", R"("xAB-123")"}},
        {R"({"type":"string","pattern":"^(?:foo|ba[rz])+(\\.txt)?$"})",
         {R"("foo")", R"("barbazfoo")", R"("foo.txt")"},
         {R"("")", R"("fo")", R"("foo.text")", R"("foo.")"}},
        {R"({"type":"string","pattern":"[0-9]"})", {R"("a1b")", R"("7")"}, {R"("abc")", R"("")"}},
        {R"({"type":"string","pattern":"^a\"b\\\\c$"})", {R"("a\"b\\c")"}, {R"("a"b\c")", R"("ab\\c")"}},
        {R"({"type":"string","pattern":"^[^a-c\"]+$"})",
         {R"("xyz")", R"("x\\y")", R"("\n")"},
         {R"("ab")", R"("x\"y")", R"("")"}},
        {R"({"type":"string","pattern":"^.{2}$"})", {R"("ab")", R"("\t\\")"}, {R"("\n1")", R"("abc")"}},
        {R"({"type":"string","pattern":"^[a-z]+$","minLength":2,"maxLength":3})",
         {R"("ab")", R"("abc")"}, {R"("a")", R"("abcd")", R"("aB")"}},
        {R"({"type":"string","pattern":"^\\s*\\w+\\S?$"})", {R"("  ab_1!")", R"("x")"}, {R"("a b")", R"("!")"}},
        {R"({"type":"string","format":"date"})",
         {R"("2024-02-29")", R"("2000-02-29")", R"("1999-12-31")", R"("2023-04-30")"},
         {R"("2023-02-29")", R"("1900-02-29")", R"("2023-04-31")", R"("2023-13-01")", R"("2023-1-01")",
          R"("2023-00-10")"}},
        {R"({"type":"string","format":"time"})",
         {R"("23:59:59Z")", R"("00:00:00.123+05:30")"},
         {R"("24:00:00Z")", R"("12:60:00Z")", R"("12:00:00")"}},
        {R"({"type":"string","format":"date-time"})",
         {R"("2024-01-15T10:30:00Z")", R"("2024-01-15T10:30:00.5-08:00")"},
         {R"("2024-01-15 10:30:00Z")", R"("2024-01-15")"}},
        {R"({"type":"string","format":"email"})",
         {R"("a.b+c@example.co.uk")", R"("x@y.io")"},
         {R"("a@b")", R"("@b.com")", R"("a b@c.com")", R"("a..b@c.com")"}},
        {R"({"type":"string","format":"uuid"})",
         {R"("123e4567-e89b-12d3-a456-426614174000")"},
         {R"("123e4567-e89b-12d3-a456-42661417400")", R"("123e4567e89b12d3a456426614174000")"}},
        {R"({"type":"string","format":"ipv4"})", {R"("192.168.0.255")"}, {R"("256.1.1.1")", R"("1.2.3")"}},
        {R"({"type":"string","format":"hostname"})", {R"("a-b.example.com")"}, {R"("-a.com")", R"("a..b")"}},
        {R"({"type":"string","format":"uri"})",
         {R"("https://example.com/a/b?x=1&y=%20#frag")", R"("urn-x+y://h:8080")", R"("http://a/")"},
         {R"("not a uri")", R"("http://a b")", R"("http:/a")", R"("//a.com")", R"("http://a/%zz")"}},
        {R"({"type":"string","format":"json-pointer"})", {R"("")", R"("/a/b~0c/~1")"}, {R"("a")", R"("/a~2")"}},
        {R"({"type":"string","format":"relative-json-pointer"})", {R"("0")", R"("2/a")", R"("1#")"}, {R"("/a")", R"("01")"}},
        {R"({"type":"string","format":"byte"})", {R"("")", R"("aGVsbG8=")", R"("YWJj")"}, {R"("abc")", R"("a===")"}},
        {R"({"type":"string","format":"binary"})", {R"("anything")"}, {"1"}},
        // A format with lengths (Pydantic's EmailStr with max_length): both hold; the format's parts
        // share the budget, so a long local part leaves less room to the domain.
        {R"({"type":"string","format":"email","maxLength":20})",
         {R"("x@y.io")", R"("johnsmith@ab.io")", R"("a@b.ex.io")"},
         {R"("john.smith@example.co.uk")", R"("a@b")", R"("abcdefghijklmnopqrstu@b.io")"}},
        {R"({"type":"string","format":"email","maxLength":64})",
         {R"("john.smith@mail.example.com")", R"("first.last+tag@sub.domain.org")", R"("a_b-c@example.co.uk")"},
         {R"("a.very.long.local.part.with.many.words@a.long.domain.example.com")"}},
        {R"({"type":"string","format":"email","minLength":10,"maxLength":254})",
         {R"("abcdef@example.com")", R"("alice@mail.example.org")"},
         {R"("a@b.io")", R"("ab@c.io")"}},
        {R"({"type":"string","format":"date","minLength":10,"maxLength":10})", {R"("2024-02-29")"}, {R"("2024-2-29")"}},
        {R"({"type":"string","format":"date-time","maxLength":20})",
         {R"("2024-01-15T10:30:00Z")"}, {R"("2024-01-15T10:30:00.5Z")", R"("2024-01-15T10:30:00+01:00")"}},
        {R"({"type":"string","format":"uri","maxLength":2083})", // Pydantic's HttpUrl
         {R"("https://example.com/a/b?x=1&y=2#frag")", R"("http://localhost:8080/")"}, {R"("example.com")"}},
        {R"({"type":"string","format":"hostname","minLength":5,"maxLength":12})",
         {R"("example.com")", R"("hello")"}, {R"("a.bc")", R"("sub.example.com")"}},
    });
}

void numbers() {
    checkCases({
        {R"({"type":"integer"})", {"0", "-7", "123456789012"}, {"1.5", "01", "-", "1e3", "+1"}},
        {R"({"type":"number"})", {"0", "-0.25", "1e10", "2.5E-3", "-12"}, {".5", "1.", "01", "1e", "--1"}},
        {R"({"type":"number","minimum":0,"maximum":1})", {"0", "1", "0.5", "1.0", "0.999"}, {"-0.1", "1.01", "2", "-1"}},
        {R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1})", {"0.5", "0.001"}, {"0", "1", "0.0", "1.000"}},
        {R"({"type":"integer","exclusiveMinimum":-3,"maximum":-1})", {"-2", "-1"}, {"-3", "0", "-0"}},
        {R"({"type":"integer","minimum":1.5,"exclusiveMaximum":4})", {"2", "3"}, {"1", "4"}},
        {R"({"type":"number","minimum":5,"exclusiveMinimum":true,"maximum":6})", {"5.5", "6"}, {"5", "6.5"}},
    });
}

// Integer ranges against arithmetic: every value near zero and the bounds, and a random sample.
void integerRangesExactly() {
    const std::vector<std::pair<int64_t, int64_t>> ranges = {
        {-5, 123}, {10, 999999}, {-1000, -10}, {0, 0}, {-999999, 7}, {-1, 1}, {100, 100}, {19, 2001}};
    std::mt19937_64 rng(7);
    for (auto [lo, hi] : ranges) {
        std::string schema = "{\"type\":\"integer\",\"minimum\":" + std::to_string(lo) +
                             ",\"maximum\":" + std::to_string(hi) + "}";
        auto g = compiled(schema);
        QVERIFY2(g, schema.c_str());
        std::vector<int64_t> probes;
        for (int64_t v = -2100; v <= 2100; ++v) probes.push_back(v);
        for (int64_t b : {lo, hi})
            for (int64_t d = -3; d <= 3; ++d) probes.push_back(b + d);
        for (int i = 0; i < 3000; ++i) probes.push_back(int64_t(rng() % 4000000) - 2000000);
        for (int64_t v : probes) {
            bool in = v >= lo && v <= hi;
            QVERIFY2(complete(*g, std::to_string(v)) == in, (schema + " on " + std::to_string(v)).c_str());
        }
        QVERIFY(!complete(*g, "0" + std::to_string(hi < 0 ? -hi : hi))); // a leading zero
    }
    // One-sided bounds.
    auto above = compiled(R"({"type":"integer","minimum":42})");
    auto below = compiled(R"({"type":"integer","exclusiveMaximum":-42})");
    QVERIFY(above && below);
    for (int64_t v = -3000; v <= 3000; ++v) {
        QVERIFY(complete(*above, std::to_string(v)) == (v >= 42));
        QVERIFY(complete(*below, std::to_string(v)) == (v < -42));
    }
    QVERIFY(complete(*above, "99999999999999999"));
    QVERIFY(complete(*below, "-99999999999999999"));
}

// Decimal ranges against arithmetic on numbers with up to three decimals.
void numberRangesExactly() {
    struct R {
        const char* schema;
        double lo, hi;
        bool loIncl, hiIncl;
    };
    const std::vector<R> ranges = {
        {R"({"type":"number","minimum":-1.5,"exclusiveMaximum":2.25})", -1.5, 2.25, true, false},
        {R"({"type":"number","exclusiveMinimum":0.125,"maximum":10})", 0.125, 10, false, true},
        {R"({"type":"number","minimum":-20.75,"maximum":-0.5})", -20.75, -0.5, true, true},
        {R"({"type":"number","minimum":3.5,"maximum":3.75})", 3.5, 3.75, true, true},
        {R"({"type":"number","exclusiveMinimum":-2,"exclusiveMaximum":0})", -2, 0, false, false},
    };
    std::mt19937 rng(11);
    for (auto& r : ranges) {
        auto g = compiled(r.schema);
        QVERIFY2(g, r.schema);
        for (int i = 0; i < 4000; ++i) {
            int millis = int(rng() % 50000) - 25000; // [-25, 25) in steps of 0.001
            int digits = int(rng() % 4);             // written with 0..3 decimals
            int scale = digits == 0 ? 1000 : digits == 1 ? 100 : digits == 2 ? 10 : 1;
            millis = millis / scale * scale;
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.*f", digits, millis / 1000.0);
            std::string text = buf;
            if (text.rfind("-0", 0) == 0 && text.find_first_not_of("-0.") == std::string::npos)
                continue; // "-0", "-0.00": JSON allows them, the grammar writes zero unsigned
            double v = std::strtod(buf, nullptr);
            bool in = (r.loIncl ? v >= r.lo : v > r.lo) && (r.hiIncl ? v <= r.hi : v < r.hi);
            QVERIFY2(complete(*g, text) == in, (std::string(r.schema) + " on " + text).c_str());
        }
    }
}

// Dates against the calendar.
void datesExactly() {
    auto g = compiled(R"({"type":"string","format":"date"})");
    QVERIFY(g);
    for (int year : {1600, 1700, 1900, 1996, 2000, 2023, 2024, 2100, 2400, 0, 4, 100}) {
        for (unsigned month = 0; month <= 13; ++month) {
            for (unsigned day = 0; day <= 32; ++day) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "\"%04d-%02u-%02u\"", year, month, day);
                bool ok = std::chrono::year_month_day(std::chrono::year(year), std::chrono::month(month),
                                                      std::chrono::day(day))
                              .ok();
                QVERIFY2(complete(*g, buf) == ok, buf);
            }
        }
    }
}

void whitespaceIsBounded() {
    auto g = compiled(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false})");
    QVERIFY(g);
    QVERIFY(complete(*g, R"({"a":1})"));
    QVERIFY(complete(*g, "{ \"a\" : 1 }"));
    QVERIFY(complete(*g, "{\n\t\t\"a\": 1\n}"));
    QVERIFY(!complete(*g, "{  \"a\":1}"));                             // two spaces
    QVERIFY(!complete(*g, "{\n" + std::string(21, ' ') + "\"a\":1}")); // too deep an indent
    QVERIFY(!complete(*g, "{\n\n\"a\":1}"));                           // blank lines
    QCOMPARE(matchText(*g, R"({"a":1} )"), TextMatch::Rejected);      // nothing after the value
    QCOMPARE(matchText(*g, R"({"a":1})"), TextMatch::Complete);
    QCOMPARE(matchText(*g, R"({"a":)"), TextMatch::Prefix);
}

void anyJsonObject() {
    auto text = anyJsonObjectGbnf();
    QVERIFY(!text.empty());
    auto g = parseGbnf(text);
    QVERIFY2(g, g ? "" : g.status().message().c_str());
    for (const char* doc : {"{}", R"({"a":1})", R"({"a":[1,{"b":null}],"c":"x","d":-1.5e-3})", "{ \"a\" : true }"})
        QVERIFY2(complete(**g, doc), doc);
    for (const char* doc : {"[]", R"("x")", "1", "{} ", R"({"a"})", R"({a:1})", "{'a':1}"})
        QVERIFY2(!complete(**g, doc), doc);
}

} // namespace hearth::test::json_schema
