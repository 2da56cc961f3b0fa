// JSON Schema to GBNF (hearth::grammar::jsonSchemaToGbnf): the walker's dispatch over keywords,
// $ref into the document, allOf / anyOf / oneOf, enum and const, the primitive JSON rules, and
// the final checks on the grammar (termination, size).
#include "sample/json_schema_converter.h"

#include <set>

namespace hearth::grammar {

namespace schema {

size_t nestingDepth(const OJson& doc);

namespace {

constexpr size_t kMaxVisits = 50000; // subschemas walked per conversion

} // namespace

std::string hintFor(const std::string& ptr) {
    static const std::set<std::string> kSkip = {"properties", "$defs", "definitions", "allOf",
                                                "anyOf", "oneOf", "prefixItems"};
    std::vector<std::string> tokens;
    size_t start = 1;
    while (start <= ptr.size() && !ptr.empty()) {
        size_t end = ptr.find('/', start);
        if (end == std::string::npos) end = ptr.size();
        std::string t = ptr.substr(start, end - start);
        if (t == "items") t = "item";
        else if (t == "additionalProperties") t = "additional";
        if (!kSkip.count(t)) tokens.push_back(t);
        start = end + 1;
    }
    std::string hint;
    for (size_t i = tokens.size() > 2 ? tokens.size() - 2 : 0; i < tokens.size(); ++i)
        hint += (hint.empty() ? "" : "-") + tokens[i];
    return hint.empty() || hint == "root" ? "schema" : hint;
}

// The deepest nesting of arrays and objects in a document, found without recursion (the JSON
// library's copy and dump recurse, so a hostile document is refused before either runs).
size_t nestingDepth(const OJson& doc) {
    size_t deepest = 0;
    std::vector<std::pair<const OJson*, size_t>> stack{{&doc, 1}};
    while (!stack.empty()) {
        auto [node, depth] = stack.back();
        stack.pop_back();
        deepest = std::max(deepest, depth);
        if (node->is_structured())
            for (auto& child : *node) stack.emplace_back(&child, depth + 1);
    }
    return deepest;
}

// A library message with bytes that are not printable ASCII (the bad input it quotes) as '?'.
std::string printable(std::string_view text) {
    std::string out;
    for (char c : text) out += (c >= 0x20 && c < 0x7F) ? c : '?';
    return out;
}

namespace {

std::string compact(const OJson& v) {
    return v.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

} // namespace

void Converter::definePrimitives() {
    auto def = [this](const char* name, Expr body) { m_rules.define(name, std::move(body), ""); };
    Expr ws = prim("ws");
    Expr digit = cls('0', '9');
    // Bounded whitespace: nothing, a space, or a newline and some indentation.
    def("ws", alt({empty(), lit(" "), seq({lit("\n"), rep(cls([] {
                                                              CharSet s = CharSet::of(' ', ' ');
                                                              s.add('\t', '\t');
                                                              return s;
                                                          }()),
                                                          0, 20)})}));
    def("char", jsonStringChar());
    def("string", seq({lit("\""), star(prim("char")), lit("\"")}));
    Expr intPart = alt({lit("0"), seq({cls('1', '9'), rep(digit, 0, kMaxIntDigits - 1)})});
    def("integer", seq({opt(lit("-")), intPart}));
    def("number", seq({opt(lit("-")), intPart, opt(seq({lit("."), rep(digit, 1, kMaxFracDigits)})),
                       opt(seq({cls([] {
                                    CharSet s = CharSet::of('e', 'e');
                                    s.add('E', 'E');
                                    return s;
                                }()),
                                opt(cls([] {
                                    CharSet s = CharSet::of('+', '+');
                                    s.add('-', '-');
                                    return s;
                                }())),
                                rep(digit, 1, kMaxExpDigits)}))}));
    def("boolean", alt({lit("true"), lit("false")}));
    def("null", lit("null"));
    def("value", alt({prim("object"), prim("array"), prim("string"), prim("number"), prim("boolean"),
                      prim("null")}));
    Expr member = seq({prim("string"), ws, lit(":"), ws, prim("value")});
    def("object", seq({lit("{"), ws,
                       opt(seq({member, star(seq({ws, lit(","), ws, member})), ws})), lit("}")}));
    def("array", seq({lit("["), ws,
                      opt(seq({prim("value"), star(seq({ws, lit(","), ws, prim("value")})), ws})),
                      lit("]")}));
}

Expr Converter::named(const std::string& ptr, Expr body) {
    if (body.kind == Expr::Kind::Ref || body.isNothing() || body.kind == Expr::Kind::Literal)
        return body;
    return m_rules.add(hintFor(ptr), std::move(body), ptr);
}

Result<std::string> Converter::run() {
    definePrimitives();
    m_rules.reserve("root");
    m_refRules[""] = "root";
    HEARTH_ASSIGN_OR_RETURN(Expr body, walk(m_root, "", 0));
    m_rules.define("root", std::move(body), "");
    HEARTH_RETURN_IF_ERROR(m_rules.check("root"));
    size_t used = m_rules.reachableCount("root");
    if (used > m_limits.maxRules)
        return invalidArgument("the grammar needs " + std::to_string(used) + " rules, above the limit of " +
                               std::to_string(m_limits.maxRules));
    GrammarLimits parserLimits;
    Expansion size = m_rules.expansion("root");
    if (size.rules > double(parserLimits.maxRules) || size.elements > double(parserLimits.maxElements))
        return invalidArgument("the grammar would be too large once its repetitions are expanded "
                               "(about " +
                               std::to_string(int64_t(size.rules)) + " rules and " +
                               std::to_string(int64_t(size.elements)) +
                               " symbols); lower the schema's length and count bounds");
    std::string text = m_rules.render("root");
    if (text.size() > m_limits.maxGrammarBytes)
        return invalidArgument("the grammar is " + std::to_string(text.size()) +
                               " bytes, above the limit of " + std::to_string(m_limits.maxGrammarBytes));
    return text;
}

Result<Expr> Converter::walk(const OJson& s, const std::string& ptr, int depth) {
    if (depth > m_limits.maxDepth)
        return errorAt(ptr, "schemas nest deeper than " + std::to_string(m_limits.maxDepth));
    if (++m_visits > kMaxVisits)
        return errorAt(ptr, "the schema is too complex (more than " + std::to_string(kMaxVisits) +
                                " subschemas to walk)");
    if (m_rules.size() > m_limits.maxRules)
        return errorAt(ptr, "the grammar needs more than " + std::to_string(m_limits.maxRules) + " rules");
    if (s.is_boolean()) return s.get<bool>() ? prim("value") : nothing();
    if (!s.is_object()) return errorAt(ptr, "a schema must be an object or a boolean");
    std::string key = compact(s);
    auto cached = m_cache.find(key);
    if (cached != m_cache.end()) return cached->second;
    HEARTH_ASSIGN_OR_RETURN(Expr e, walkUncached(s, ptr, depth));
    m_cache.emplace(std::move(key), e);
    return e;
}

Result<const OJson*> Converter::resolve(const std::string& ref, const std::string& ptr) {
    if (ref.empty() || ref[0] != '#')
        return errorAt(ptr + "/$ref", "only references into this document (\"#...\") are supported");
    const OJson* node = &m_root;
    std::string path = ref.substr(1);
    if (!path.empty() && path[0] != '/')
        return errorAt(ptr + "/$ref", "anchors (\"" + ref + "\") are not supported");
    size_t start = 1;
    while (start <= path.size() && !path.empty()) {
        size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        std::string token;
        std::string raw = path.substr(start, end - start);
        for (size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
                token += raw[i + 1] == '0' ? '~' : '/';
                ++i;
            } else if (raw[i] == '%' && i + 2 < raw.size() && std::isxdigit(uint8_t(raw[i + 1])) &&
                       std::isxdigit(uint8_t(raw[i + 2]))) {
                token += char(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
                i += 2;
            } else {
                token += raw[i];
            }
        }
        if (node->is_object() && node->contains(token)) {
            node = &(*node)[token];
        } else if (node->is_array() && !token.empty() &&
                   token.find_first_not_of("0123456789") == std::string::npos && token.size() < 10 &&
                   std::stoul(token) < node->size()) {
            node = &(*node)[std::stoul(token)];
        } else {
            return errorAt(ptr + "/$ref", "\"" + ref + "\" points at nothing");
        }
        start = end + 1;
    }
    return node;
}

Result<Expr> Converter::refRule(const std::string& ref, const std::string& ptr, int depth) {
    HEARTH_ASSIGN_OR_RETURN(const OJson* target, resolve(ref, ptr));
    std::string pointer = ref.substr(1);
    auto known = m_refRules.find(pointer);
    if (known != m_refRules.end()) return schema::ref(known->second);
    std::string name = m_rules.reserve(hintFor(pointer));
    m_refRules[pointer] = name;
    HEARTH_ASSIGN_OR_RETURN(Expr body, walk(*target, pointer, depth + 1));
    m_rules.define(name, std::move(body), pointer);
    return schema::ref(name);
}

Status Converter::flattenMember(const OJson& member, const std::string& ptr, int chain,
                                std::vector<OJson>& out) {
    if (chain > m_limits.maxDepth)
        return errorAt(ptr, "allOf / $ref chain deeper than " + std::to_string(m_limits.maxDepth) +
                                " (a cycle?)");
    if (!member.is_object()) {
        if (!member.is_boolean()) return errorAt(ptr, "a schema must be an object or a boolean");
        out.push_back(member);
        return Status::ok();
    }
    OJson rest = member;
    if (member.contains("$ref")) {
        if (!member["$ref"].is_string()) return errorAt(ptr + "/$ref", "must be a string");
        std::string ref = member["$ref"].get<std::string>();
        HEARTH_ASSIGN_OR_RETURN(const OJson* target, resolve(ref, ptr));
        HEARTH_RETURN_IF_ERROR(flattenMember(*target, ref.substr(1), chain + 1, out));
        rest.erase("$ref");
    }
    if (rest.contains("allOf")) {
        const OJson& list = rest["allOf"];
        if (!list.is_array() || list.empty()) return errorAt(ptr + "/allOf", "must be a non-empty array");
        for (size_t i = 0; i < list.size(); ++i)
            HEARTH_RETURN_IF_ERROR(
                flattenMember(list[i], ptr + "/allOf/" + std::to_string(i), chain + 1, out));
        rest.erase("allOf");
    }
    for (auto& [k, v] : rest.items())
        if (isUnsupportedKeyword(k, v)) return errorAt(ptr + "/" + pointerToken(k), "not supported");
    if (hasConstraints(rest)) out.push_back(std::move(rest));
    return Status::ok();
}

Result<Expr> Converter::walkAllOf(const OJson& s, const std::string& ptr, int depth) {
    std::vector<OJson> members;
    HEARTH_RETURN_IF_ERROR(flattenMember(s, ptr, 0, members));
    HEARTH_ASSIGN_OR_RETURN(OJson merged, mergeSchemas(members, ptr + "/allOf"));
    if (merged.is_object() && merged.empty()) return prim("value");
    // A merged schema met again while it is being built (a $ref back to a schema with keywords
    // beside the $ref) refers to its rule: recursion instead of endless inlining.
    std::string key = compact(merged);
    auto known = m_mergedRules.find(key);
    if (known != m_mergedRules.end()) return schema::ref(known->second);
    std::string name = m_rules.reserve(hintFor(ptr));
    m_mergedRules.emplace(key, name);
    HEARTH_ASSIGN_OR_RETURN(Expr e, walk(merged, ptr + "/allOf", depth + 1));
    if (e.isNothing()) return errorAt(ptr + "/allOf", "no value satisfies every member");
    m_rules.define(name, std::move(e), ptr + "/allOf");
    return schema::ref(name);
}

Result<Expr> Converter::walkAnyOf(const OJson& s, const std::string& ptr, int depth) {
    if (s.contains("anyOf") && s.contains("oneOf")) {
        OJson rewritten = s;
        rewritten.erase("anyOf");
        rewritten.erase("oneOf");
        rewritten["allOf"] = OJson::array({OJson{{"anyOf", s["anyOf"]}}, OJson{{"oneOf", s["oneOf"]}}});
        return walkAllOf(rewritten, ptr, depth);
    }
    const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
    const OJson& list = s[key];
    if (!list.is_array() || list.empty())
        return errorAt(ptr + "/" + key, "must be a non-empty array");
    constexpr size_t kMaxAlternatives = 256; // a matcher follows a few thousand parses at once
    if (list.size() > kMaxAlternatives)
        return errorAt(ptr + "/" + key, "has " + std::to_string(list.size()) + " alternatives, above the limit of " +
                                            std::to_string(kMaxAlternatives));
    // Keywords beside the list apply to every alternative.
    OJson rest = s;
    rest.erase(key);
    bool shared = hasConstraints(rest);
    std::vector<Expr> alts;
    for (size_t i = 0; i < list.size(); ++i) {
        std::string at = ptr + "/" + key + "/" + std::to_string(i);
        OJson sub = shared ? OJson{{"allOf", OJson::array({rest, list[i]})}} : list[i];
        HEARTH_ASSIGN_OR_RETURN(Expr e, shared ? walkAllOf(sub, at, depth + 1)
                                               : walk(sub, at, depth + 1));
        alts.push_back(std::move(e));
    }
    Expr e = alt(std::move(alts));
    if (e.isNothing()) return errorAt(ptr + "/" + key, "no alternative accepts any value");
    return named(ptr, std::move(e));
}

Result<Expr> Converter::walkEnum(const OJson& s, const std::string& ptr) {
    OJson values = OJson::array();
    if (s.contains("enum")) {
        const OJson& e = s["enum"];
        if (!e.is_array()) return errorAt(ptr + "/enum", "must be an array");
        if (e.size() > m_limits.maxEnumValues)
            return errorAt(ptr + "/enum", "has " + std::to_string(e.size()) + " values, above the limit of " +
                                              std::to_string(m_limits.maxEnumValues));
        values = e;
    }
    if (s.contains("const")) {
        const OJson& c = s["const"];
        if (s.contains("enum") && std::find(values.begin(), values.end(), c) == values.end())
            return errorAt(ptr + "/const", "is not one of the enum values");
        values = OJson::array({c});
    }
    // The values must also satisfy the keywords beside them.
    OJson rest = s;
    rest.erase("enum");
    rest.erase("const");
    bool constrained = hasConstraints(rest);
    std::vector<std::pair<std::string, Expr>> alts;
    size_t bytes = 0;
    for (auto& v : values) {
        if (constrained) {
            HEARTH_ASSIGN_OR_RETURN(bool ok, satisfies(v, rest, ptr, 0));
            if (!ok) continue;
        }
        std::string text = compact(v);
        bytes += text.size();
        if (bytes > m_limits.maxGrammarBytes)
            return errorAt(ptr + "/enum", "the values are too large for the grammar");
        alts.emplace_back(std::move(text), empty());
    }
    if (alts.empty()) return errorAt(ptr, "no enum / const value satisfies the schema's other keywords");
    return named(ptr, factorByPrefix(alts, m_rules, hintFor(ptr) + "-values", ptr));
}

Result<Expr> Converter::walkUncached(const OJson& s, const std::string& ptr, int depth) {
    for (auto& [k, v] : s.items())
        if (isUnsupportedKeyword(k, v)) return errorAt(ptr + "/" + pointerToken(k), "not supported");
    if (s.contains("$ref")) {
        if (!s["$ref"].is_string()) return errorAt(ptr + "/$ref", "must be a string");
        OJson rest = s;
        rest.erase("$ref");
        if (hasConstraints(rest)) return walkAllOf(s, ptr, depth);
        return refRule(s["$ref"].get<std::string>(), ptr, depth);
    }
    if (s.contains("allOf")) return walkAllOf(s, ptr, depth);
    if (s.contains("anyOf") || s.contains("oneOf")) return walkAnyOf(s, ptr, depth);
    if (s.contains("enum") || s.contains("const")) return walkEnum(s, ptr);

    std::vector<std::string> types;
    if (s.contains("type")) {
        const OJson& t = s["type"];
        if (t.is_string()) {
            types.push_back(t.get<std::string>());
        } else if (t.is_array() && !t.empty()) {
            for (auto& x : t) {
                if (!x.is_string()) return errorAt(ptr + "/type", "must name types as strings");
                types.push_back(x.get<std::string>());
            }
        } else {
            return errorAt(ptr + "/type", "must be a type name or a non-empty list of them");
        }
    } else {
        // No type: the types the keywords describe (none: any value).
        auto any = [&s](std::initializer_list<const char*> keys) {
            for (const char* k : keys)
                if (s.contains(k)) return true;
            return false;
        };
        if (any({"properties", "required", "additionalProperties"})) types.push_back("object");
        if (any({"items", "prefixItems", "minItems", "maxItems", "additionalItems"}))
            types.push_back("array");
        if (any({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
        if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}))
            types.push_back("number");
        if (types.empty()) return prim("value");
    }
    if (s.contains("nullable") && !s["nullable"].is_boolean())
        return errorAt(ptr + "/nullable", "must be a boolean");
    if (s.value("nullable", false)) types.push_back("null");
    std::vector<Expr> alts;
    for (auto& t : types) {
        if (t == "string") {
            HEARTH_ASSIGN_OR_RETURN(Expr e, walkString(s, ptr));
            alts.push_back(std::move(e));
        } else if (t == "number" || t == "integer") {
            HEARTH_ASSIGN_OR_RETURN(Expr e, walkNumber(s, ptr, t == "integer"));
            alts.push_back(std::move(e));
        } else if (t == "boolean") {
            alts.push_back(prim("boolean"));
        } else if (t == "null") {
            alts.push_back(prim("null"));
        } else if (t == "object") {
            HEARTH_ASSIGN_OR_RETURN(Expr e, walkObject(s, ptr, depth));
            alts.push_back(std::move(e));
        } else if (t == "array") {
            HEARTH_ASSIGN_OR_RETURN(Expr e, walkArray(s, ptr, depth));
            alts.push_back(std::move(e));
        } else {
            return errorAt(ptr + "/type", "unknown type '" + t + "'");
        }
    }
    bool several = alts.size() > 1;
    Expr e = alt(std::move(alts));
    return several ? named(ptr, std::move(e)) : e;
}

} // namespace schema

Result<std::string> jsonSchemaToGbnf(std::string_view schemaJson, const SchemaLimits& limits) {
    try {
        schema::OJson doc = schema::OJson::parse(schemaJson.begin(), schemaJson.end(), nullptr, true,
                                                 /*ignore_comments=*/false);
        size_t maxNesting = std::max<size_t>(256, size_t(std::max(limits.maxDepth, 0)) * 4);
        if (schema::nestingDepth(doc) > maxNesting)
            return invalidArgument("the schema nests arrays and objects deeper than " +
                                   std::to_string(maxNesting));
        if (!limits.strict) doc = schema::withoutUnenforcedKeywords(doc);
        schema::Converter converter(doc, limits);
        return converter.run();
    } catch (const nlohmann::json::parse_error& e) {
        return invalidArgument("the schema is not valid JSON: " + schema::printable(e.what()));
    } catch (const nlohmann::json::exception& e) {
        return invalidArgument("the schema could not be read: " + schema::printable(e.what()));
    } catch (const std::exception& e) {
        return invalidArgument("the schema could not be converted: " + schema::printable(e.what()));
    }
}

std::string anyJsonObjectGbnf() {
    auto r = jsonSchemaToGbnf(R"({"type":"object"})");
    return r ? *r : std::string();
}

} // namespace hearth::grammar
