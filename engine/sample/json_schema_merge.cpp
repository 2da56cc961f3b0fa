// The JSON Schema converter's keyword tables (annotations, unsupported constraints) and allOf:
// merging several schemas into one that accepts what all of them accept.
#include "sample/json_schema.h"

#include <algorithm>
#include <set>

namespace hearth::grammar::schema {

namespace {

std::string inQuotes(const std::string& k) { return "'" + k + "'"; }

// The listed types of a schema ("integer" counted inside "number").
std::vector<std::string> typeList(const OJson& t) {
    std::vector<std::string> out;
    if (t.is_string()) out.push_back(t.get<std::string>());
    if (t.is_array())
        for (auto& x : t)
            if (x.is_string()) out.push_back(x.get<std::string>());
    return out;
}

Result<OJson> intersectTypes(const OJson& a, const OJson& b, const std::string& where) {
    std::vector<std::string> la = typeList(a), lb = typeList(b);
    auto has = [](const std::vector<std::string>& l, const std::string& t) {
        return std::find(l.begin(), l.end(), t) != l.end();
    };
    OJson out = OJson::array();
    for (auto& t : la) {
        if (has(lb, t) || (t == "integer" && has(lb, "number"))) out.push_back(t);
        else if (t == "number" && has(lb, "integer")) out.push_back("integer");
    }
    if (out.empty()) return invalidArgument(where + ": the members' types have nothing in common");
    if (out.size() == 1) return OJson(out[0]);
    return out;
}

bool isLowerBound(const std::string& k) {
    return k == "minLength" || k == "minItems" || k == "minimum" || k == "exclusiveMinimum";
}
bool isUpperBound(const std::string& k) {
    return k == "maxLength" || k == "maxItems" || k == "maximum" || k == "exclusiveMaximum";
}

} // namespace

bool isAnnotationKeyword(const std::string& key) {
    static const std::set<std::string> kAnnotations = {
        "title",    "description", "default",  "examples",         "example",
        "$schema",  "$id",         "$comment", "deprecated",       "readOnly",
        "writeOnly", "$anchor",    "$vocabulary", "contentMediaType", "contentEncoding",
        "discriminator", "xml",    "externalDocs", "$defs",         "definitions"};
    return kAnnotations.count(key) > 0 || key.rfind("x-", 0) == 0;
}

bool isUnsupportedKeyword(const std::string& key, const OJson& value) {
    static const std::set<std::string> kUnsupported = {
        "multipleOf",       "minProperties",    "maxProperties",     "patternProperties",
        "propertyNames",    "dependentRequired", "dependentSchemas", "dependencies",
        "not",              "if",               "then",              "else",
        "contains",         "minContains",      "maxContains",       "unevaluatedProperties",
        "unevaluatedItems", "$dynamicRef",      "$recursiveRef",     "contentSchema"};
    if (key == "uniqueItems") return value.is_boolean() && value.get<bool>();
    return kUnsupported.count(key) > 0;
}

OJson withoutUnenforcedKeywords(const OJson& schema) {
    if (!schema.is_object()) return schema;
    OJson out = OJson::object();
    for (auto& [k, v] : schema.items()) {
        if (isUnsupportedKeyword(k, v) && k != "$dynamicRef" && k != "$recursiveRef") continue;
        if (k == "properties" || k == "$defs" || k == "definitions") { // maps of schemas
            if (!v.is_object()) {
                out[k] = v;
                continue;
            }
            OJson map = OJson::object();
            for (auto& [name, sub] : v.items()) map[name] = withoutUnenforcedKeywords(sub);
            out[k] = std::move(map);
        } else if (k == "items" || k == "prefixItems" || k == "anyOf" || k == "oneOf" || k == "allOf" ||
                   k == "additionalProperties" || k == "additionalItems") { // a schema or a list of them
            if (v.is_array()) {
                OJson list = OJson::array();
                for (const OJson& sub : v) list.push_back(withoutUnenforcedKeywords(sub));
                out[k] = std::move(list);
            } else {
                out[k] = withoutUnenforcedKeywords(v);
            }
        } else {
            out[k] = v; // a value (enum, const, required...) or an annotation
        }
    }
    return out;
}

bool hasConstraints(const OJson& schema) {
    if (!schema.is_object()) return schema.is_boolean() && !schema.get<bool>();
    for (auto& [k, v] : schema.items())
        if (!isAnnotationKeyword(k)) return true;
    return false;
}

Status errorAt(const std::string& ptr, const std::string& what) {
    constexpr size_t kMaxShown = 160;
    std::string where = ptr.empty() ? std::string("(root)") : ptr;
    if (where.size() > kMaxShown)
        where = where.substr(0, kMaxShown / 2 - 2) + "/.../" + where.substr(where.size() - kMaxShown / 2 + 3);
    return invalidArgument(where + ": " + what);
}

std::string pointerToken(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

Result<OJson> mergeSchemas(const std::vector<OJson>& members, const std::string& where) {
    constexpr size_t kMaxDistributed = 256; // a matcher follows a few thousand parses at once
    OJson out = OJson::object();
    std::vector<const OJson*> objects;
    for (auto& m : members) {
        if (m.is_boolean()) {
            if (!m.get<bool>()) return OJson(false);
            continue;
        }
        if (!m.is_object()) return invalidArgument(where + ": a member is not a schema");
        objects.push_back(&m);
    }
    bool allNullable = !objects.empty();
    for (const OJson* m : objects) {
        allNullable = allNullable && m->value("nullable", false);
        for (auto& [k, v] : m->items()) {
            if (isAnnotationKeyword(k) || k == "properties" || k == "additionalProperties" ||
                k == "nullable")
                continue;
            if (k == "$ref" || k == "allOf")
                return internalError(where + ": merge expects resolved members");
            if (!out.contains(k)) {
                out[k] = v;
                continue;
            }
            OJson& cur = out[k];
            if (cur == v) continue;
            if (k == "required") {
                if (!v.is_array() || !cur.is_array()) return invalidArgument(where + ": 'required' must be an array");
                for (auto& r : v)
                    if (std::find(cur.begin(), cur.end(), r) == cur.end()) cur.push_back(r);
            } else if (k == "type") {
                HEARTH_ASSIGN_OR_RETURN(OJson t, intersectTypes(cur, v, where));
                cur = t;
            } else if ((isLowerBound(k) || isUpperBound(k)) && cur.is_number() && v.is_number()) {
                bool takeNew = isLowerBound(k) ? v.get<double>() > cur.get<double>()
                                               : v.get<double>() < cur.get<double>();
                if (takeNew) cur = v;
            } else if (k == "enum" && cur.is_array() && v.is_array()) {
                OJson both = OJson::array();
                for (auto& x : cur)
                    if (std::find(v.begin(), v.end(), x) != v.end()) both.push_back(x);
                cur = both;
            } else if ((k == "anyOf" || k == "oneOf") && cur.is_array() && v.is_array()) {
                if (cur.size() * v.size() > kMaxDistributed)
                    return invalidArgument(where + ": combining these anyOf lists gives more than " +
                                           std::to_string(kMaxDistributed) + " alternatives");
                OJson product = OJson::array();
                for (auto& a : cur)
                    for (auto& b : v) product.push_back(OJson{{"allOf", OJson::array({a, b})}});
                cur = product;
            } else if (k == "items") {
                cur = OJson{{"allOf", OJson::array({cur, v})}};
            } else if (k == "const") {
                return invalidArgument(where + ": the members' 'const' values differ");
            } else {
                return invalidArgument(where + ": cannot combine the members' different " + inQuotes(k));
            }
        }
    }
    if (out.contains("anyOf") && out.contains("oneOf")) {
        // Both lists must hold: distribute them into one.
        OJson a = out["anyOf"], b = out["oneOf"];
        out.erase("oneOf");
        if (a.is_array() && b.is_array()) {
            if (a.size() * b.size() > kMaxDistributed)
                return invalidArgument(where + ": combining anyOf and oneOf gives too many alternatives");
            OJson product = OJson::array();
            for (auto& x : a)
                for (auto& y : b) product.push_back(OJson{{"allOf", OJson::array({x, y})}});
            out["anyOf"] = product;
        }
    }
    if (allNullable) out["nullable"] = true;

    // Properties: a key's value must satisfy every member that says something about it (its
    // own properties entry, or its additionalProperties).
    std::vector<std::string> keys;
    for (const OJson* m : objects) {
        auto it = m->find("properties");
        if (it == m->end()) continue;
        if (!it->is_object()) return invalidArgument(where + ": 'properties' must be an object");
        for (auto& [k, v] : it->items())
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    std::set<std::string> required;
    if (out.contains("required") && out["required"].is_array())
        for (auto& r : out["required"])
            if (r.is_string()) required.insert(r.get<std::string>());
    OJson props = OJson::object();
    for (auto& key : keys) {
        OJson schemas = OJson::array();
        bool forbidden = false;
        for (const OJson* m : objects) {
            auto p = m->find("properties");
            if (p != m->end() && p->contains(key)) {
                schemas.push_back((*p)[key]);
                continue;
            }
            auto ap = m->find("additionalProperties");
            if (ap == m->end()) continue;
            if (ap->is_boolean() && !ap->get<bool>()) forbidden = true;
            else schemas.push_back(*ap);
        }
        if (forbidden) {
            if (required.count(key))
                return invalidArgument(where + ": " + inQuotes(key) +
                                       " is required but a member's additionalProperties is false");
            continue;
        }
        props[key] = schemas.size() == 1 ? schemas[0] : OJson{{"allOf", schemas}};
    }
    if (!keys.empty()) out["properties"] = props;
    OJson extra = OJson::array();
    bool extraForbidden = false;
    for (const OJson* m : objects) {
        auto ap = m->find("additionalProperties");
        if (ap == m->end() || (ap->is_boolean() && ap->get<bool>())) continue;
        if (ap->is_boolean()) extraForbidden = true;
        else extra.push_back(*ap);
    }
    if (extraForbidden) out["additionalProperties"] = false;
    else if (extra.size() == 1) out["additionalProperties"] = extra[0];
    else if (extra.size() > 1) out["additionalProperties"] = OJson{{"allOf", extra}};
    return out;
}

} // namespace hearth::grammar::schema
