// Whether a concrete JSON value satisfies a schema, for the converter's enum and const values
// (they must also satisfy the keywords beside them): the supported keywords only, with pattern
// and format checked through small grammars built from the same expressions the converter emits.
#include "sample/json_schema_converter.h"

#include <cmath>

namespace hearth::grammar::schema {

namespace {

std::string compactText(const OJson& v) {
    return v.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

size_t codePointCount(const std::string& s) {
    size_t n = 0;
    for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

bool typeMatches(const OJson& v, const std::string& t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "string") return v.is_string();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "number") return v.is_number();
    if (t == "integer")
        return v.is_number_integer() ||
               (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()));
    return false;
}

} // namespace

Result<bool> Converter::textMatches(const std::string& key, const Expr& content, const OJson& value) {
    auto it = m_contentGrammars.find(key);
    if (it == m_contentGrammars.end()) {
        RuleSet rules;
        rules.define("char", jsonStringChar(), "");
        rules.define("root", seq({lit("\""), content, lit("\"")}), "");
        auto g = parseGbnf(rules.render("root"));
        if (!g) return g.status();
        it = m_contentGrammars.emplace(key, *g).first;
    }
    return matchText(*it->second, compactText(value)) == TextMatch::Complete;
}

Result<bool> Converter::satisfies(const OJson& v, const OJson& s, const std::string& ptr, int depth) {
    if (depth > m_limits.maxDepth)
        return errorAt(ptr, "checking the enum values nests deeper than " + std::to_string(m_limits.maxDepth));
    if (s.is_boolean()) return s.get<bool>();
    if (!s.is_object()) return errorAt(ptr, "a schema must be an object or a boolean");
    for (auto& [k, kv] : s.items())
        if (isUnsupportedKeyword(k, kv)) return errorAt(ptr + "/" + pointerToken(k), "not supported");
    auto all = [&](const char* key) -> Result<bool> {
        if (!s.contains(key)) return true;
        const OJson& list = s[key];
        if (!list.is_array()) return errorAt(ptr + "/" + key, "must be an array");
        size_t hits = 0;
        for (size_t i = 0; i < list.size(); ++i) {
            HEARTH_ASSIGN_OR_RETURN(bool ok, satisfies(v, list[i], ptr + "/" + key + "/" + std::to_string(i), depth + 1));
            hits += ok;
        }
        std::string k = key;
        return k == "allOf" ? hits == list.size() : k == "anyOf" ? hits > 0 : hits == 1;
    };
    if (s.contains("$ref")) {
        if (!s["$ref"].is_string()) return errorAt(ptr + "/$ref", "must be a string");
        std::string ref = s["$ref"].get<std::string>();
        HEARTH_ASSIGN_OR_RETURN(const OJson* target, resolve(ref, ptr));
        HEARTH_ASSIGN_OR_RETURN(bool ok, satisfies(v, *target, ref.substr(1), depth + 1));
        if (!ok) return false;
    }
    for (const char* key : {"allOf", "anyOf", "oneOf"}) {
        HEARTH_ASSIGN_OR_RETURN(bool ok, all(key));
        if (!ok) return false;
    }
    if (s.contains("enum") && s["enum"].is_array()) {
        const OJson& e = s["enum"];
        if (std::find(e.begin(), e.end(), v) == e.end()) return false;
    }
    if (s.contains("const") && s["const"] != v) return false;
    if (s.contains("type")) {
        const OJson& t = s["type"];
        bool ok = s.value("nullable", false) && v.is_null();
        if (t.is_string()) ok = ok || typeMatches(v, t.get<std::string>());
        else if (t.is_array())
            for (auto& x : t) ok = ok || (x.is_string() && typeMatches(v, x.get<std::string>()));
        if (!ok) return false;
    }
    if (v.is_number()) {
        double x = v.get<double>();
        auto num = [&](const char* key, double& out) {
            if (!s.contains(key) || !s[key].is_number()) return false;
            out = s[key].get<double>();
            return true;
        };
        auto flag = [&](const char* key) { return s.contains(key) && s[key].is_boolean() && s[key].get<bool>(); };
        double b = 0;
        if (num("minimum", b) && (flag("exclusiveMinimum") ? x <= b : x < b)) return false;
        if (num("maximum", b) && (flag("exclusiveMaximum") ? x >= b : x > b)) return false;
        if (num("exclusiveMinimum", b) && x <= b) return false;
        if (num("exclusiveMaximum", b) && x >= b) return false;
    }
    if (v.is_string()) {
        const std::string& text = v.get_ref<const std::string&>();
        size_t n = codePointCount(text);
        if (s.contains("minLength") && s["minLength"].is_number() && double(n) < s["minLength"].get<double>()) return false;
        if (s.contains("maxLength") && s["maxLength"].is_number() && double(n) > s["maxLength"].get<double>()) return false;
        if (s.contains("pattern") && s["pattern"].is_string()) {
            std::string pattern = s["pattern"].get<std::string>();
            HEARTH_ASSIGN_OR_RETURN(Expr content, regexToExpr(pattern, ptr + "/pattern", prim("char"),
                                                              m_limits.maxPatternBytes));
            HEARTH_ASSIGN_OR_RETURN(bool ok, textMatches("pattern:" + pattern, content, v));
            if (!ok) return false;
        }
        if (s.contains("format") && s["format"].is_string()) {
            std::string format = s["format"].get<std::string>();
            bool annotation = false;
            HEARTH_ASSIGN_OR_RETURN(Expr content, formatExpr(format, ptr + "/format", annotation));
            if (!annotation) {
                HEARTH_ASSIGN_OR_RETURN(bool ok, textMatches("format:" + format, content, v));
                if (!ok) return false;
            }
        }
    }
    if (v.is_array()) {
        if (s.contains("minItems") && s["minItems"].is_number() && double(v.size()) < s["minItems"].get<double>()) return false;
        if (s.contains("maxItems") && s["maxItems"].is_number() && double(v.size()) > s["maxItems"].get<double>()) return false;
        const OJson* tuple = s.contains("prefixItems") ? &s["prefixItems"]
                             : s.contains("items") && s["items"].is_array() ? &s["items"] : nullptr;
        const OJson* rest = s.contains("prefixItems") ? (s.contains("items") ? &s["items"] : nullptr)
                            : tuple ? (s.contains("additionalItems") ? &s["additionalItems"] : nullptr)
                                    : (s.contains("items") ? &s["items"] : nullptr);
        for (size_t i = 0; i < v.size(); ++i) {
            const OJson* sub = tuple && tuple->is_array() && i < tuple->size() ? &(*tuple)[i] : rest;
            if (!sub) continue;
            HEARTH_ASSIGN_OR_RETURN(bool ok, satisfies(v[i], *sub, ptr + "/items", depth + 1));
            if (!ok) return false;
        }
    }
    if (v.is_object()) {
        if (s.contains("required") && s["required"].is_array())
            for (auto& r : s["required"])
                if (r.is_string() && !v.contains(r.get<std::string>())) return false;
        const OJson* props = s.contains("properties") && s["properties"].is_object() ? &s["properties"] : nullptr;
        for (auto& [k, x] : v.items()) {
            const OJson* sub = props && props->contains(k) ? &(*props)[k]
                               : s.contains("additionalProperties") ? &s["additionalProperties"]
                                                                    : nullptr;
            if (!sub) continue;
            HEARTH_ASSIGN_OR_RETURN(bool ok, satisfies(x, *sub, ptr + "/properties/" + pointerToken(k), depth + 1));
            if (!ok) return false;
        }
    }
    return true;
}

} // namespace hearth::grammar::schema
