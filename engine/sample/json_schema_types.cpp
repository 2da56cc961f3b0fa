// The JSON Schema walker's builders per type: strings (lengths, pattern, format), numbers and
// integers (bounds), objects (properties in order, required, additionalProperties) and arrays
// (items, prefixItems, counts).
#include "sample/json_schema_converter.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace hearth::grammar::schema {

namespace {

// Key text as it appears in JSON (quoted and escaped).
std::string jsonKey(const std::string& key) {
    return OJson(key).dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

std::vector<uint32_t> codePoints(const std::string& s) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size();) {
        auto b = static_cast<unsigned char>(s[i]);
        int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
        for (int k = 1; k < n && i + k < s.size(); ++k)
            c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        i += n;
        out.push_back(c);
    }
    return out;
}

struct TrieNode {
    std::map<uint32_t, size_t> kids;
    bool terminal = false;
};

} // namespace

Result<std::pair<int64_t, int64_t>> Converter::counts(const OJson& s, const std::string& ptr,
                                                      const char* minKey, const char* maxKey) {
    const int64_t cap = GrammarLimits{}.maxRepeat;
    auto read = [&](const char* key, int64_t& out) -> Status {
        const OJson& v = s[key];
        if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>())
            return errorAt(ptr + "/" + key, "must be a non-negative integer");
        double d = v.get<double>();
        out = d > 1e15 ? int64_t(1e15) : v.is_number_integer() ? v.get<int64_t>() : int64_t(d);
        return Status::ok();
    };
    int64_t min = 0, max = -1;
    if (s.contains(minKey)) {
        HEARTH_RETURN_IF_ERROR(read(minKey, min));
        if (min > cap)
            return errorAt(ptr + "/" + minKey, std::to_string(min) + " is above the " +
                                                   std::to_string(cap) + " a grammar can count");
    }
    if (s.contains(maxKey)) {
        HEARTH_RETURN_IF_ERROR(read(maxKey, max));
        if (max < min)
            return errorAt(ptr + "/" + maxKey, std::string("is below ") + minKey + ": nothing fits");
        if (max > cap) max = -1; // beyond what a grammar counts: unbounded (documented)
    }
    return std::make_pair(min, max);
}

Result<Expr> Converter::walkString(const OJson& s, const std::string& ptr) {
    HEARTH_ASSIGN_OR_RETURN(auto lengths, counts(s, ptr, "minLength", "maxLength"));
    const int64_t min = lengths.first, max = lengths.second;
    bool hasLengths = s.contains("minLength") || s.contains("maxLength");
    Expr content;
    if (s.contains("pattern")) {
        if (!s["pattern"].is_string()) return errorAt(ptr + "/pattern", "must be a string");
        if (s.contains("format") && s["format"].is_string())
            return errorAt(ptr + "/format", "format together with pattern is not supported");
        PatternShape shape;
        HEARTH_ASSIGN_OR_RETURN(content, regexToExpr(s["pattern"].get<std::string>(), ptr + "/pattern",
                                                     prim("char"), m_limits.maxPatternBytes, &shape));
        if (hasLengths) {
            if (!shape.oneCharRepeat)
                return errorAt(ptr + "/pattern",
                               "minLength / maxLength together with a pattern are supported only "
                               "for patterns of one repeated character class like ^[a-z]{1,8}$");
            int64_t lo = std::max(min, shape.min);
            int64_t hi = max < 0 ? shape.max : shape.max < 0 ? max : std::min(max, shape.max);
            if (hi >= 0 && lo > hi)
                return errorAt(ptr + "/pattern", "no string fits both the pattern and the lengths");
            content = rep(shape.oneChar, lo, hi);
        }
    } else if (s.contains("format")) {
        if (!s["format"].is_string()) return errorAt(ptr + "/format", "must be a string");
        bool annotation = false;
        HEARTH_ASSIGN_OR_RETURN(Expr f, formatExpr(s["format"].get<std::string>(), ptr + "/format",
                                                   annotation));
        if (annotation) {
            content = rep(prim("char"), min, max);
        } else if (hasLengths) {
            // Both enforced: the format's parts share the length budget (json_schema_lengths.cpp).
            content = withinLength(f, min, max);
            if (content.isNothing())
                return errorAt(ptr + "/format", "no '" + s["format"].get<std::string>() +
                                                    "' string fits minLength / maxLength");
        } else {
            content = f;
        }
    } else {
        if (!hasLengths) return prim("string");
        content = rep(prim("char"), min, max);
    }
    return named(ptr, seq({lit("\""), content, lit("\"")}));
}

Result<Expr> Converter::walkNumber(const OJson& s, const std::string& ptr, bool integer) {
    struct Raw {
        const OJson* value;
        bool lower;
        bool inclusive;
        std::string where;
    };
    std::vector<Raw> raws;
    auto flag = [&s](const char* key) {
        return s.contains(key) && s[key].is_boolean() && s[key].get<bool>();
    };
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (!s.contains(key)) continue;
        const OJson& v = s[key];
        std::string k = key;
        bool lower = k == "minimum" || k == "exclusiveMinimum";
        if (v.is_boolean()) {
            if (k == "minimum" || k == "maximum") return errorAt(ptr + "/" + k, "must be a number");
            continue; // draft 4: modifies minimum / maximum
        }
        if (!v.is_number()) return errorAt(ptr + "/" + k, "must be a number");
        bool exclusive = k.rfind("exclusive", 0) == 0 ||
                         (k == "minimum" && flag("exclusiveMinimum")) ||
                         (k == "maximum" && flag("exclusiveMaximum"));
        raws.push_back({&v, lower, !exclusive, ptr + "/" + k});
    }
    if (raws.empty()) return prim(integer ? "integer" : "number");

    if (integer) {
        std::optional<int64_t> lo, hi;
        for (auto& r : raws) {
            const OJson& v = *r.value;
            if (!v.is_number_integer()) {
                double d = v.get<double>();
                if (!std::isfinite(d) || std::fabs(d) > 1e18)
                    return errorAt(r.where, "bounds beyond +-1e18 are not supported");
            }
            int64_t bound = 0;
            if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(1e18))
                return errorAt(r.where, "bounds beyond +-1e18 are not supported");
            if (v.is_number_integer()) {
                bound = v.get<int64_t>();
                if (bound > int64_t(1e18) || bound < -int64_t(1e18))
                    return errorAt(r.where, "bounds beyond +-1e18 are not supported");
                if (!r.inclusive) bound += r.lower ? 1 : -1;
            } else {
                double d = v.get<double>();
                double f = r.lower ? std::ceil(d) : std::floor(d);
                if (!r.inclusive && f == d) f += r.lower ? 1 : -1;
                bound = int64_t(f);
            }
            if (r.lower) lo = lo ? std::max(*lo, bound) : bound;
            else hi = hi ? std::min(*hi, bound) : bound;
        }
        Expr e = integerRange(lo, hi);
        if (e.isNothing()) return errorAt(ptr, "no integer lies within the bounds");
        return named(ptr, std::move(e));
    }

    std::optional<Bound> lo, hi;
    std::optional<double> loValue, hiValue;
    for (auto& r : raws) {
        const OJson& v = *r.value;
        double d = v.get<double>();
        HEARTH_ASSIGN_OR_RETURN(Bound b, boundFromJson(d, v.is_number_integer(),
                                                       v.is_number_integer() ? v.get<int64_t>() : 0,
                                                       r.where));
        b.inclusive = r.inclusive;
        auto& slot = r.lower ? lo : hi;
        auto& value = r.lower ? loValue : hiValue;
        bool tighter = !slot || (r.lower ? d > *value : d < *value) || (d == *value && !b.inclusive);
        if (tighter) {
            slot = b;
            value = d;
        }
    }
    Expr e = numberRange(lo, hi);
    if (e.isNothing()) return errorAt(ptr, "no number lies within the bounds");
    return named(ptr, std::move(e));
}

Expr Converter::keyNotIn(const std::vector<std::string>& declared) {
    // A trie of the declared keys: while the key typed so far is a prefix of a declared one, the
    // next character must be written plainly (no escapes) so that the key cannot spell a
    // declared name; once it leaves the trie any string characters follow.
    std::vector<TrieNode> nodes(1);
    std::vector<size_t> depthOf(1, 0);
    for (auto& key : declared) {
        size_t at = 0;
        for (uint32_t c : codePoints(key)) {
            auto it = nodes[at].kids.find(c);
            if (it == nodes[at].kids.end()) {
                nodes.push_back({});
                depthOf.push_back(depthOf[at] + 1);
                it = nodes[at].kids.emplace(c, nodes.size() - 1).first;
            }
            at = it->second;
        }
        nodes[at].terminal = true;
    }
    Expr rest = seq({star(prim("char")), lit("\"")});
    // Build bottom-up (children have larger indices than their parents).
    std::vector<Expr> exprs(nodes.size());
    for (size_t i = nodes.size(); i-- > 0;) {
        CharSet plain = CharSet::of(0x20, 0x10FFFF);
        plain.remove('"', '"');
        plain.remove('\\', '\\');
        std::vector<Expr> alts;
        if (!nodes[i].terminal) alts.push_back(lit("\""));
        for (auto& [c, kid] : nodes[i].kids) {
            plain.remove(c, c);
            alts.push_back(seq({lit(jsonEncodeChar(c)), exprs[kid]}));
        }
        alts.push_back(seq({cls(plain), rest}));
        exprs[i] = alt(std::move(alts));
        // A rule every few levels keeps long keys from nesting groups too deeply for a parser.
        if (depthOf[i] % 16 == 15) exprs[i] = named("/key-part", std::move(exprs[i]));
    }
    return seq({lit("\""), exprs[0]});
}

Result<Expr> Converter::walkObject(const OJson& s, const std::string& ptr, int depth) {
    struct Prop {
        std::string key;
        Expr value;
        bool required;
    };
    std::set<std::string> required;
    if (s.contains("required")) {
        const OJson& r = s["required"];
        if (!r.is_array()) return errorAt(ptr + "/required", "must be an array of names");
        for (auto& k : r) {
            if (!k.is_string()) return errorAt(ptr + "/required", "must be an array of names");
            required.insert(k.get<std::string>());
        }
    }
    // additionalProperties: absent or true = any value; false = none; else its schema.
    std::optional<Expr> extra = prim("value");
    if (s.contains("additionalProperties")) {
        HEARTH_ASSIGN_OR_RETURN(Expr e, walk(s["additionalProperties"], ptr + "/additionalProperties",
                                             depth + 1));
        if (e.isNothing()) extra.reset();
        else extra = e;
    }
    std::vector<Prop> props;
    std::vector<std::string> declared;
    if (s.contains("properties")) {
        const OJson& p = s["properties"];
        if (!p.is_object()) return errorAt(ptr + "/properties", "must be an object");
        for (auto& [key, sub] : p.items()) {
            std::string at = ptr + "/properties/" + pointerToken(key);
            HEARTH_ASSIGN_OR_RETURN(Expr v, walk(sub, at, depth + 1));
            declared.push_back(key);
            bool req = required.count(key) > 0;
            if (v.isNothing()) {
                if (req) return errorAt(at, "is required but its schema accepts nothing");
                continue;
            }
            props.push_back({key, std::move(v), req});
        }
    }
    // Required names without a properties entry take the additionalProperties schema.
    if (s.contains("required")) {
        for (auto& k : s["required"]) {
            std::string key = k.get<std::string>();
            if (std::find(declared.begin(), declared.end(), key) != declared.end()) continue;
            if (!extra)
                return errorAt(ptr + "/required", "'" + key +
                                                      "' is required but additionalProperties is false");
            declared.push_back(key);
            props.push_back({key, *extra, true});
        }
    }
    if (props.empty() && extra && extra->kind == Expr::Kind::Ref && extra->text == "value")
        return prim("object");
    // After a comma any of the optional properties up to the next required one may follow, and a
    // matcher keeps a parse alive for each (it keeps at most a few thousand).
    constexpr size_t kMaxOptionalRun = 400;
    size_t run = 0;
    for (auto& p : props) {
        run = p.required ? 0 : run + 1;
        if (run > kMaxOptionalRun)
            return errorAt(ptr + "/properties", "more than " + std::to_string(kMaxOptionalRun) +
                                                    " optional properties in a row are not supported "
                                                    "(a grammar matcher could not follow them all)");
    }
    Expr ws = prim("ws");
    Expr comma = seq({ws, lit(","), ws});
    auto member = [&ws](const Prop& p) {
        return seq({lit(jsonKey(p.key)), ws, lit(":"), ws, p.value});
    };
    std::optional<Expr> extraMember;
    if (extra)
        extraMember = named(ptr + "/extra",
                            seq({declared.empty() ? prim("string")
                                                  : named(ptr + "/extra-key", keyNotIn(declared)),
                                 ws, lit(":"), ws, *extra}));

    // After the first member: the remaining members in order (optional ones optional), then any
    // extra members. tail[i] covers members i.. and the extras.
    size_t n = props.size();
    size_t firstRequired = n;
    for (size_t i = 0; i < n; ++i)
        if (props[i].required) {
            firstRequired = i;
            break;
        }
    std::vector<Expr> tail(n + 1);
    tail[n] = extraMember ? star(seq({comma, *extraMember})) : empty();
    for (size_t i = n; i-- > 1;) {
        Expr item = seq({comma, member(props[i])});
        Expr body = seq({props[i].required ? item : opt(item), tail[i + 1]});
        // Tails that several first members share get a rule of their own.
        tail[i] = i <= firstRequired + 1 && firstRequired > 0 ? named(ptr + "/rest" + std::to_string(i), body)
                                                              : body;
    }
    // The first member is any of the members up to the first required one (or an extra),
    // factored by key so that a matcher keeps one parse per distinct next character.
    std::vector<std::pair<std::string, Expr>> firsts;
    for (size_t i = 0; i < n; ++i) {
        firsts.emplace_back(jsonKey(props[i].key), seq({ws, lit(":"), ws, props[i].value, tail[i + 1]}));
        if (props[i].required) break;
    }
    Expr members = factorByPrefix(firsts, m_rules, hintFor(ptr) + "-first", ptr);
    if (firstRequired == n && extraMember) members = alt({members, seq({*extraMember, tail[n]})});
    Expr body = firstRequired < n ? seq({lit("{"), ws, members, ws, lit("}")})
                                  : seq({lit("{"), ws, opt(seq({members, ws})), lit("}")});
    return named(ptr, std::move(body));
}

Result<Expr> Converter::walkArray(const OJson& s, const std::string& ptr, int depth) {
    // Tuple items (prefixItems, or items as an array in older drafts) and the rest.
    const OJson* tuple = nullptr;
    std::string tupleKey;
    const OJson* restSchema = nullptr;
    std::string restKey;
    if (s.contains("prefixItems")) {
        tuple = &s["prefixItems"];
        tupleKey = "prefixItems";
        if (s.contains("items")) {
            restSchema = &s["items"];
            restKey = "items";
        }
    } else if (s.contains("items") && s["items"].is_array()) {
        tuple = &s["items"];
        tupleKey = "items";
        if (s.contains("additionalItems")) {
            restSchema = &s["additionalItems"];
            restKey = "additionalItems";
        }
    } else if (s.contains("items")) {
        restSchema = &s["items"];
        restKey = "items";
    }
    if (tuple && !tuple->is_array()) return errorAt(ptr + "/" + tupleKey, "must be an array");
    HEARTH_ASSIGN_OR_RETURN(auto itemCounts, counts(s, ptr, "minItems", "maxItems"));
    const int64_t minItems = itemCounts.first, maxItems = itemCounts.second;
    const int64_t unbounded = -1;

    std::vector<Expr> prefix;
    int64_t longest = maxItems; // -1: unbounded
    auto capLength = [&longest](int64_t n) { longest = longest < 0 ? n : std::min(longest, n); };
    if (tuple) {
        for (size_t i = 0; i < tuple->size(); ++i) {
            HEARTH_ASSIGN_OR_RETURN(Expr e, walk((*tuple)[i], ptr + "/" + tupleKey + "/" + std::to_string(i),
                                                 depth + 1));
            if (e.isNothing()) {
                capLength(int64_t(i));
                break;
            }
            prefix.push_back(std::move(e));
        }
    }
    std::optional<Expr> rest = prim("value");
    if (restSchema) {
        HEARTH_ASSIGN_OR_RETURN(Expr e, walk(*restSchema, ptr + "/" + restKey, depth + 1));
        if (e.isNothing()) rest.reset();
        else rest = e;
    }
    if (!rest) capLength(int64_t(prefix.size()));
    if (longest != unbounded && minItems > longest)
        return errorAt(ptr + "/minItems", "asks for more items than the schema allows");

    Expr ws = prim("ws");
    Expr comma = seq({ws, lit(","), ws});
    auto element = [&](size_t i) { return i < prefix.size() ? prefix[i] : *rest; };
    // Elements after the first: tuple positions one by one (optional past minItems), then the
    // rest as a counted repetition.
    std::function<Expr(size_t)> after = [&](size_t i) -> Expr {
        if (longest != unbounded && int64_t(i) >= longest) return empty();
        if (i < prefix.size()) {
            Expr more = seq({comma, prefix[i], after(i + 1)});
            return int64_t(i) >= minItems ? opt(std::move(more)) : more;
        }
        int64_t need = std::max<int64_t>(0, minItems - int64_t(i));
        int64_t most = longest == unbounded ? unbounded : longest - int64_t(i);
        return rep(seq({comma, *rest}), need, most);
    };
    if (longest == 0) return named(ptr, seq({lit("["), ws, lit("]")}));
    Expr items = seq({element(0), after(1)});
    Expr body = minItems > 0 ? seq({lit("["), ws, items, ws, lit("]")})
                             : seq({lit("["), ws, opt(seq({items, ws})), lit("]")});
    return named(ptr, std::move(body));
}

} // namespace hearth::grammar::schema
