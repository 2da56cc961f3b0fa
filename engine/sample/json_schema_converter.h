// The JSON Schema walker: one Converter per jsonSchemaToGbnf call, turning each (sub)schema into
// a grammar expression and the grammar's named rules. json_schema.cpp holds the dispatch,
// $ref, combinators and enums; json_schema_types.cpp the per-type builders.
#pragma once

#include "sample/json_schema.h"

#include <map>
#include <string>

namespace hearth::grammar::schema {

class Converter {
public:
    Converter(const OJson& root, const SchemaLimits& limits) : m_root(root), m_limits(limits) {}

    // The GBNF text for the whole document, or the first error.
    Result<std::string> run();

    // A schema at JSON pointer `ptr` ("" for the root), nested `depth` deep.
    Result<Expr> walk(const OJson& schema, const std::string& ptr, int depth);

private:
    Result<Expr> walkUncached(const OJson& s, const std::string& ptr, int depth);
    Result<Expr> refRule(const std::string& ref, const std::string& ptr, int depth);
    Result<const OJson*> resolve(const std::string& ref, const std::string& ptr);
    // allOf members with $ref resolved and nested allOf flattened.
    Status flattenMember(const OJson& member, const std::string& ptr, int depth,
                         std::vector<OJson>& out);
    Result<Expr> walkAllOf(const OJson& s, const std::string& ptr, int depth);
    Result<Expr> walkAnyOf(const OJson& s, const std::string& ptr, int depth);
    Result<Expr> walkEnum(const OJson& s, const std::string& ptr);

    // json_schema_types.cpp
    Result<Expr> walkString(const OJson& s, const std::string& ptr);
    Result<Expr> walkNumber(const OJson& s, const std::string& ptr, bool integer);
    Result<Expr> walkObject(const OJson& s, const std::string& ptr, int depth);
    Result<Expr> walkArray(const OJson& s, const std::string& ptr, int depth);
    // An object key that is none of `declared` (for additional properties).
    Expr keyNotIn(const std::vector<std::string>& declared);
    // A count (length, items) of [min, max] with the converter's caps: a lower bound above
    // GrammarLimits::maxRepeat is an error; an upper bound above it becomes unbounded.
    Result<std::pair<int64_t, int64_t>> counts(const OJson& s, const std::string& ptr,
                                               const char* minKey, const char* maxKey);

    // Named building blocks: ws, value, object, array, string, char, number, integer, boolean,
    // null (defined up front; only those used are rendered).
    Expr prim(const char* name) const { return ref(name); }
    void definePrimitives();
    Expr named(const std::string& ptr, Expr body);

    const OJson& m_root;
    SchemaLimits m_limits;
    RuleSet m_rules;
    std::map<std::string, std::string> m_refRules; // JSON pointer -> rule name
    std::map<std::string, Expr> m_cache;           // schema text -> its expression
    size_t m_visits = 0;
};

} // namespace hearth::grammar::schema
