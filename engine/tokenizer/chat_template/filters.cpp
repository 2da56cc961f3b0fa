// Builtin filters: Jinja2's filters that chat templates use, with Jinja's semantics (generators
// for select/map/items/unique/reverse, lenient undefined handling) and transformers' tojson.
#include "tokenizer/chat_template/interp.h"
#include "tokenizer/chat_template/text_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth::tmpl {

namespace {

Value generator(std::vector<Value> items) { return Value::list(std::move(items), ListFlavor::Generator); }

// Jinja's make_attrgetter: "a.b.0" looked up item-first, with digits as integers.
Result<Value> attrPath(const Value& item, const std::string& path) {
    Value cur = item;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        Value key = Value::string(part);
        if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            int64_t n = 0;
            if (parsePyInt(part, 10, n)) key = Value::integer(n);
        }
        HEARTH_ASSIGN_OR_RETURN(cur, getItem(cur, key));
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

// Sort / unique key: lower-cased strings unless case sensitive.
Value foldCase(const Value& v, bool caseSensitive) {
    if (!caseSensitive && v.isString()) return Value::string(pyLower(v.str()));
    return v;
}

Result<std::vector<Value>> needIterable(const Value& v) { return iterateValue(v); }

bool optBool(const ArgReader& r, size_t i, bool def) { return r.has(i) ? truthy(r.get(i)) : def; }

Result<std::string> optAttribute(const ArgReader& r, size_t i) {
    if (!r.has(i) || r.get(i).isNone()) return std::string();
    if (r.get(i).isInt()) return std::to_string(r.get(i).intValue());
    if (!r.get(i).isString()) return invalidArgument("attribute must be a string");
    return r.get(i).str();
}

// ---- filters ----

Result<Value> fAbs(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("abs", args, {});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("abs", r));
    if (v.isFloat()) return Value::floating(std::fabs(v.numberValue()));
    if (v.isInt() || v.isBool()) {
        if (v.intValue() == INT64_MIN) return outOfRange("integer result does not fit in 64 bits");
        return Value::integer(v.intValue() < 0 ? -v.intValue() : v.intValue());
    }
    if (v.isUndefined()) return undefinedError(v);
    return invalidArgument("bad operand type for abs(): '" + typeName(v) + "'");
}

Result<Value> fAttr(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("attr", args, {"name"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("attr", r));
    if (!r.has(0)) return invalidArgument("attr() missing the attribute name");
    const std::string name = toStr(r.get(0));
    Value out;
    if (findMethod(v, name, out)) return out;
    if (v.isNamespace()) {
        if (const Value* a = v.namespaceData().find(name)) return *a;
    }
    if (v.isLoop()) return loopAttribute(v, name);
    return Value::undefined("'" + typeName(v) + " object' has no attribute '" + name + "'");
}

Result<Value> fBatch(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("batch", args, {"linecount", "fill_with"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("batch", r));
    if (!r.has(0) || !r.get(0).isInt() || r.get(0).intValue() <= 0) return invalidArgument("batch() needs a positive line count");
    const auto n = static_cast<size_t>(r.get(0).intValue());
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    std::vector<Value> out;
    for (size_t i = 0; i < items.size(); i += n) {
        std::vector<Value> row(items.begin() + static_cast<std::ptrdiff_t>(i),
                               items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), i + n)));
        if (row.size() < n && r.has(1) && !r.get(1).isNone())
            while (row.size() < n) row.push_back(r.get(1));
        out.push_back(Value::list(std::move(row)));
    }
    return generator(std::move(out));
}

// Filters that call a str method keep Markup (soft_str leaves it in place).
Result<Value> fCapitalize(Interp&, const Value& v, CallArgs&) {
    return withMarkup(Value::string(pyCapitalize(toStr(v))), v.isMarkup());
}
Result<Value> fLower(Interp&, const Value& v, CallArgs&) { return withMarkup(Value::string(pyLower(toStr(v))), v.isMarkup()); }
Result<Value> fUpper(Interp&, const Value& v, CallArgs&) { return withMarkup(Value::string(pyUpper(toStr(v))), v.isMarkup()); }

Result<Value> fTitle(Interp&, const Value& v, CallArgs&) {
    // Jinja splits before runs of [-\s({\[<] and capitalizes each piece.
    const std::string s = toStr(v);
    std::string out;
    size_t i = 0;
    auto isSep = [](const Utf8Char& c) {
        return c.valid && (isPySpace(c.cp) || c.cp == '-' || c.cp == '(' || c.cp == '{' || c.cp == '[' || c.cp == '<');
    };
    while (i < s.size()) {
        size_t j = i;
        const bool sepRun = isSep(decodeUtf8(s, i));
        while (j < s.size() && isSep(decodeUtf8(s, j)) == sepRun) j += decodeUtf8(s, j).len;
        const std::string piece = s.substr(i, j - i);
        const size_t firstLen = decodeUtf8(piece, 0).len;
        out += pyUpper(piece.substr(0, firstLen)) + pyLower(piece.substr(firstLen));
        i = j;
    }
    return Value::string(std::move(out));
}

Result<Value> fCenter(Interp& interp, const Value& v, CallArgs& args) {
    ArgReader r("center", args, {"width"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("center", r));
    CallArgs inner;
    inner.positional.push_back(r.getOr(0, Value::integer(80)));
    Value method;
    findMethod(v.isMarkup() ? v : Value::string(toStr(v)), "center", method);
    return interp.callValue(method, inner);
}

Result<Value> fDefault(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("default", args, {"default_value", "boolean"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("default", r));
    const bool boolean = optBool(r, 1, false);
    if (v.isUndefined() || (boolean && !truthy(v))) return r.getOr(0, Value::string(""));
    return v;
}

Result<Value> fDictsort(Interp& interp, const Value& v, CallArgs& args) {
    ArgReader r("dictsort", args, {"case_sensitive", "by", "reverse"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("dictsort", r));
    if (!v.isDict()) return invalidArgument("You can only sort by either \"key\" or \"value\" of a mapping");
    const bool caseSensitive = optBool(r, 0, false);
    int pos = 0;
    if (r.has(1)) {
        const std::string by = toStr(r.get(1));
        if (by == "value")
            pos = 1;
        else if (by != "key")
            return invalidArgument("You can only sort by either \"key\" or \"value\"");
    }
    const bool reverse = optBool(r, 2, false);
    HEARTH_RETURN_IF_ERROR(interp.checkItems(v.dictData().entries.size()));
    std::vector<std::pair<Value, Value>> entries = v.dictData().entries;
    Status st;
    std::stable_sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) {
        Result<int> c = compareValues(foldCase(pos ? a.second : a.first, caseSensitive),
                                      foldCase(pos ? b.second : b.first, caseSensitive));
        if (!c) {
            st = c.status();
            return false;
        }
        return reverse ? *c > 0 : *c < 0;
    });
    HEARTH_RETURN_IF_ERROR(st);
    std::vector<Value> out;
    for (auto& [k, val] : entries) out.push_back(Value::tuple({k, val}));
    return Value::list(std::move(out));
}

Result<Value> fEscape(Interp&, const Value& v, CallArgs&) {
    if (v.isMarkup()) return v; // already safe
    return Value::markup(htmlEscape(toStr(v)));
}
Result<Value> fForceEscape(Interp&, const Value& v, CallArgs&) { return Value::markup(htmlEscape(toStr(v))); }

Result<Value> fFirst(Interp&, const Value& v, CallArgs&) {
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

Result<Value> fLast(Interp&, const Value& v, CallArgs&) {
    if (v.isList() && v.flavor() == ListFlavor::Generator)
        return invalidArgument("'generator' object is not reversible");
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Result<Value> fFloat(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("float", args, {"default"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("float", r));
    const Value def = r.getOr(0, Value::floating(0.0));
    if (v.isUndefined()) return undefinedError(v);
    if (v.isNumber()) return Value::floating(v.numberValue());
    if (v.isString()) {
        double d = 0;
        if (parsePyFloat(v.str(), d)) return Value::floating(d);
    }
    return def;
}

Result<Value> fInt(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("int", args, {"default", "base"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("int", r));
    const Value def = r.getOr(0, Value::integer(0));
    int base = 10;
    if (r.has(1) && r.get(1).isInt()) base = static_cast<int>(r.get(1).intValue());
    if (v.isUndefined()) return undefinedError(v);
    if (v.isInt() || v.isBool()) return Value::integer(v.intValue());
    if (v.isFloat()) {
        const double d = v.numberValue();
        if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return def;
        return Value::integer(static_cast<int64_t>(d));
    }
    if (v.isString()) {
        int64_t i = 0;
        if ((base == 0 || (base >= 2 && base <= 36)) && parsePyInt(v.str(), base, i)) return Value::integer(i);
        double d = 0;
        if (parsePyFloat(v.str(), d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
            return Value::integer(static_cast<int64_t>(d));
    }
    return def;
}

Result<Value> fIndent(Interp& interp, const Value& v, CallArgs& args) {
    if (v.isUndefined()) return undefinedError(v);
    if (!v.isString()) return invalidArgument("unsupported operand type(s) for +=: '" + typeName(v) + "' and 'str'");
    ArgReader r("indent", args, {"width", "first", "blank"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("indent", r));
    std::string indention = "    ";
    if (r.has(0)) {
        if (r.get(0).isString()) {
            indention = r.get(0).str();
        } else if (r.get(0).isInt() || r.get(0).isBool()) {
            const int64_t w = r.get(0).intValue();
            HEARTH_RETURN_IF_ERROR(interp.checkSize(static_cast<size_t>(std::max<int64_t>(w, 0))));
            indention.assign(static_cast<size_t>(std::max<int64_t>(w, 0)), ' ');
        } else {
            return invalidArgument("indent width must be an integer or a string");
        }
    }
    const bool first = optBool(r, 1, false);
    const bool blank = optBool(r, 2, false);
    CallArgs none;
    Value splitter;
    findMethod(Value::string(toStr(v) + "\n"), "splitlines", splitter);
    HEARTH_ASSIGN_OR_RETURN(Value linesValue, interp.callValue(splitter, none));
    const auto& lines = linesValue.items();
    std::string rv;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i].str();
        if (i > 0) {
            rv += "\n";
            if (blank || !line.empty()) rv += indention;
        }
        rv += line;
        HEARTH_RETURN_IF_ERROR(interp.checkSize(rv.size()));
    }
    if (first) rv = indention + rv;
    return withMarkup(Value::string(std::move(rv)), v.isMarkup());
}

Result<Value> fItems(Interp& interp, const Value& v, CallArgs&) {
    if (v.isUndefined()) return generator({});
    if (!v.isDict()) return invalidArgument("Can only get item pairs from a mapping.");
    HEARTH_RETURN_IF_ERROR(interp.checkItems(v.dictData().entries.size()));
    std::vector<Value> out;
    for (const auto& [k, val] : v.dictData().entries) out.push_back(Value::tuple({k, val}));
    return generator(std::move(out));
}

Result<Value> fJoin(Interp& interp, const Value& v, CallArgs& args) {
    ArgReader r("join", args, {"d", "attribute"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("join", r));
    const std::string sep = r.has(0) ? toStr(r.get(0)) : std::string();
    HEARTH_ASSIGN_OR_RETURN(std::string attribute, optAttribute(r, 1));
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += sep;
        if (attribute.empty()) {
            out += toStr(items[i]);
        } else {
            HEARTH_ASSIGN_OR_RETURN(Value a, attrPath(items[i], attribute));
            out += toStr(a);
        }
        HEARTH_RETURN_IF_ERROR(interp.checkSize(out.size()));
    }
    return Value::string(std::move(out));
}

Result<Value> fLength(Interp&, const Value& v, CallArgs&) {
    HEARTH_ASSIGN_OR_RETURN(int64_t n, lengthOf(v));
    return Value::integer(n);
}

Result<Value> fList(Interp&, const Value& v, CallArgs&) {
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    return Value::list(std::move(items));
}

Result<Value> fMap(Interp& interp, const Value& v, CallArgs& args) {
    if (!truthy(v)) return generator({}); // as Jinja: a falsy input maps to nothing
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    std::string attribute;
    Value def;
    bool hasDefault = false;
    for (const auto& [k, val] : args.keyword) {
        if (k == "attribute") {
            attribute = toStr(val);
        } else if (k == "default") {
            def = val;
            hasDefault = true;
        } else if (attribute.empty()) {
            return invalidArgument("map() got an unexpected keyword argument '" + k + "'");
        }
    }
    std::vector<Value> out;
    out.reserve(items.size());
    if (!attribute.empty()) {
        for (const Value& item : items) {
            HEARTH_ASSIGN_OR_RETURN(Value a, attrPath(item, attribute));
            out.push_back(a.isUndefined() && hasDefault ? def : a);
        }
        return generator(std::move(out));
    }
    if (args.positional.empty()) return invalidArgument("map requires a filter argument");
    const std::string name = toStr(args.positional[0]);
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value& item : items) {
        CallArgs copy = rest;
        HEARTH_ASSIGN_OR_RETURN(Value mapped, interp.applyFilter(name, item, copy));
        out.push_back(std::move(mapped));
    }
    return generator(std::move(out));
}

Result<Value> minMax(const Value& v, CallArgs& args, bool wantMax) {
    const char* name = wantMax ? "max" : "min";
    ArgReader r(name, args, {"case_sensitive", "attribute"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra(name, r));
    const bool caseSensitive = optBool(r, 0, false);
    HEARTH_ASSIGN_OR_RETURN(std::string attribute, optAttribute(r, 1));
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
    size_t best = 0;
    Value bestKey;
    for (size_t i = 0; i < items.size(); ++i) {
        Value key = items[i];
        if (!attribute.empty()) {
            HEARTH_ASSIGN_OR_RETURN(key, attrPath(items[i], attribute));
        }
        key = foldCase(key, caseSensitive);
        if (i == 0) {
            bestKey = key;
            continue;
        }
        HEARTH_ASSIGN_OR_RETURN(int c, compareValues(key, bestKey));
        if (wantMax ? c > 0 && c != 2 : c < 0) {
            best = i;
            bestKey = key;
        }
    }
    return items[best];
}
Result<Value> fMax(Interp&, const Value& v, CallArgs& a) { return minMax(v, a, true); }
Result<Value> fMin(Interp&, const Value& v, CallArgs& a) { return minMax(v, a, false); }

Result<Value> selectImpl(Interp& interp, const Value& v, CallArgs& args, bool byAttr, bool keep) {
    if (!truthy(v)) return generator({}); // Jinja skips a falsy input without iterating it
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    size_t next = 0;
    std::string attribute;
    if (byAttr) {
        if (args.positional.empty()) return invalidArgument("missing parameter for attribute name");
        attribute = toStr(args.positional[0]);
        next = 1;
    }
    std::string test;
    CallArgs testArgs;
    if (args.positional.size() > next) {
        test = toStr(args.positional[next]);
        testArgs.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next + 1), args.positional.end());
        testArgs.keyword = args.keyword;
    }
    std::vector<Value> out;
    for (const Value& item : items) {
        Value probe = item;
        if (byAttr) {
            HEARTH_ASSIGN_OR_RETURN(probe, attrPath(item, attribute));
        }
        bool pass;
        if (test.empty()) {
            pass = truthy(probe);
        } else {
            CallArgs copy = testArgs;
            HEARTH_ASSIGN_OR_RETURN(pass, interp.applyTest(test, probe, copy));
        }
        if (pass == keep) out.push_back(item);
    }
    return generator(std::move(out));
}
Result<Value> fSelect(Interp& i, const Value& v, CallArgs& a) { return selectImpl(i, v, a, false, true); }
Result<Value> fReject(Interp& i, const Value& v, CallArgs& a) { return selectImpl(i, v, a, false, false); }
Result<Value> fSelectattr(Interp& i, const Value& v, CallArgs& a) { return selectImpl(i, v, a, true, true); }
Result<Value> fRejectattr(Interp& i, const Value& v, CallArgs& a) { return selectImpl(i, v, a, true, false); }

Result<Value> fReplace(Interp& interp, const Value& v, CallArgs& args) {
    ArgReader r("replace", args, {"old", "new", "count"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("replace", r));
    CallArgs inner;
    inner.positional.push_back(Value::string(r.has(0) ? toStr(r.get(0)) : std::string()));
    inner.positional.push_back(Value::string(r.has(1) ? toStr(r.get(1)) : std::string()));
    if (r.has(2) && !r.get(2).isNone()) inner.positional.push_back(r.get(2));
    if (!r.has(0) || !r.has(1)) return invalidArgument("replace() takes at least 2 arguments");
    Value method;
    findMethod(Value::string(toStr(v)), "replace", method);
    return interp.callValue(method, inner);
}

Result<Value> fReverse(Interp&, const Value& v, CallArgs&) {
    if (v.isString()) {
        const std::vector<size_t> off = utf8Offsets(v.str());
        std::string out;
        for (size_t k = off.size() - 1; k > 0; --k) out.append(v.str(), off[k - 1], off[k] - off[k - 1]);
        return withMarkup(Value::string(std::move(out)), v.isMarkup());
    }
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    std::reverse(items.begin(), items.end());
    if (v.isList() && v.flavor() == ListFlavor::Generator) return Value::list(std::move(items));
    return generator(std::move(items));
}

Result<Value> fRound(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("round", args, {"precision", "method"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("round", r));
    const int64_t precision = r.has(0) && (r.get(0).isInt() || r.get(0).isBool()) ? r.get(0).intValue() : 0;
    const std::string method = r.has(1) ? toStr(r.get(1)) : "common";
    if (method != "common" && method != "ceil" && method != "floor")
        return invalidArgument("method must be common, ceil or floor");
    if (!v.isNumber()) return invalidArgument("type " + typeName(v) + " doesn't define __round__ method");
    if (method == "common" && !v.isFloat() && precision >= 0) return Value::integer(v.intValue());
    const double x = v.numberValue();
    const double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(precision, -308, 308)));
    double result;
    if (method == "ceil") {
        result = std::ceil(x * scale) / scale;
    } else if (method == "floor") {
        result = std::floor(x * scale) / scale;
    } else {
        result = std::nearbyint(x * scale) / scale; // round half to even, like Python
        if (!std::isfinite(result)) result = x;
    }
    return Value::floating(result);
}

Result<Value> fSafe(Interp&, const Value& v, CallArgs&) { return Value::markup(toStr(v)); }
Result<Value> fString(Interp&, const Value& v, CallArgs&) { return v.isString() ? v : Value::string(toStr(v)); }

Result<Value> fSort(Interp& interp, const Value& v, CallArgs& args) {
    ArgReader r("sort", args, {"reverse", "case_sensitive", "attribute"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("sort", r));
    const bool reverse = optBool(r, 0, false);
    const bool caseSensitive = optBool(r, 1, false);
    HEARTH_ASSIGN_OR_RETURN(std::string attribute, optAttribute(r, 2));
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    HEARTH_RETURN_IF_ERROR(interp.checkItems(items.size() * 4));
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& item : items) {
        Value key = item;
        if (!attribute.empty()) {
            HEARTH_ASSIGN_OR_RETURN(key, attrPath(item, attribute));
        }
        keyed.emplace_back(foldCase(key, caseSensitive), item);
    }
    Status st;
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        Result<int> c = compareValues(a.first, b.first);
        if (!c) {
            st = c.status();
            return false;
        }
        return reverse ? (*c > 0 && *c != 2) : *c < 0;
    });
    HEARTH_RETURN_IF_ERROR(st);
    std::vector<Value> out;
    for (auto& [k, item] : keyed) out.push_back(std::move(item));
    return Value::list(std::move(out));
}

Result<Value> fSum(Interp& interp, const Value& v, CallArgs& args) {
    ArgReader r("sum", args, {"attribute", "start"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("sum", r));
    HEARTH_ASSIGN_OR_RETURN(std::string attribute, optAttribute(r, 0));
    Value total = r.getOr(1, Value::integer(0));
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    for (const Value& item : items) {
        Value x = item;
        if (!attribute.empty()) {
            HEARTH_ASSIGN_OR_RETURN(x, attrPath(item, attribute));
        }
        HEARTH_ASSIGN_OR_RETURN(total, binaryOp(interp, BinaryOp::Add, total, x));
    }
    return total;
}

Result<Value> fToJson(Interp& interp, const Value& v, CallArgs& args) {
    ArgReader r("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("tojson", r));
    JsonDumpOptions o;
    o.ensureAscii = optBool(r, 0, false);
    if (r.has(1) && !r.get(1).isNone()) {
        const Value& ind = r.get(1);
        if (ind.isString()) {
            o.indentString = ind.str();
            o.hasIndentString = true;
        } else if (ind.isInt() || ind.isBool()) {
            o.indent = static_cast<int>(std::clamp<int64_t>(ind.intValue(), 0, 1024));
        } else {
            return invalidArgument("tojson indent must be an integer or a string");
        }
    }
    if (r.has(2) && !r.get(2).isNone()) {
        const Value& sep = r.get(2);
        if (!sep.isList() || sep.items().size() != 2 || !sep.items()[0].isString() || !sep.items()[1].isString())
            return invalidArgument("tojson separators must be a pair of strings");
        o.customSeparators = true;
        o.itemSeparator = sep.items()[0].str();
        o.keySeparator = sep.items()[1].str();
    }
    o.sortKeys = optBool(r, 3, false);
    HEARTH_ASSIGN_OR_RETURN(std::string s, jsonDumps(v, o));
    HEARTH_RETURN_IF_ERROR(interp.checkSize(s.size()));
    return Value::string(std::move(s));
}

Result<Value> fTrim(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("trim", args, {"chars"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("trim", r));
    if (r.has(0) && !r.get(0).isNone()) {
        const std::string chars = toStr(r.get(0));
        return withMarkup(Value::string(pyStrip(toStr(v), &chars, true, true)), v.isMarkup());
    }
    return withMarkup(Value::string(pyStrip(toStr(v), nullptr, true, true)), v.isMarkup());
}

Result<Value> fTruncate(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("truncate", args, {"length", "killwords", "end", "leeway"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("truncate", r));
    const int64_t length = r.has(0) && r.get(0).isInt() ? r.get(0).intValue() : 255;
    if (!v.isString()) {
        // Jinja measures the value itself: short sequences pass through unchanged.
        HEARTH_ASSIGN_OR_RETURN(int64_t n, lengthOf(v));
        const int64_t leewayArg = r.has(3) && r.get(3).isInt() ? r.get(3).intValue() : 5;
        if (n <= length + leewayArg) return v;
        return invalidArgument("can only truncate strings");
    }
    const std::string s = v.str();
    const bool killwords = optBool(r, 1, false);
    const std::string end = r.has(2) ? toStr(r.get(2)) : "...";
    const int64_t leeway = r.has(3) && r.get(3).isInt() ? r.get(3).intValue() : 5;
    const auto endLen = static_cast<int64_t>(utf8Length(end));
    if (length < endLen) return invalidArgument("expected length >= " + std::to_string(endLen) + ", got " + std::to_string(length));
    if (leeway < 0) return invalidArgument("expected leeway >= 0, got " + std::to_string(leeway));
    const std::vector<size_t> off = utf8Offsets(s);
    const auto n = static_cast<int64_t>(off.size() - 1);
    if (n <= length + leeway) return Value::string(s);
    std::string head = s.substr(0, off[static_cast<size_t>(length - endLen)]);
    if (killwords) return Value::string(head + end);
    const size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head = head.substr(0, sp);
    return Value::string(head + end);
}

Result<Value> fUnique(Interp&, const Value& v, CallArgs& args) {
    ArgReader r("unique", args, {"case_sensitive", "attribute"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("unique", r));
    const bool caseSensitive = optBool(r, 0, false);
    HEARTH_ASSIGN_OR_RETURN(std::string attribute, optAttribute(r, 1));
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, needIterable(v));
    std::vector<Value> out;
    std::unordered_map<std::string, bool> seen;
    for (const Value& item : items) {
        Value key = item;
        if (!attribute.empty()) {
            HEARTH_ASSIGN_OR_RETURN(key, attrPath(item, attribute));
        }
        key = foldCase(key, caseSensitive);
        std::string k;
        if (!dictKey(key, k)) return invalidArgument("unhashable type: '" + typeName(key) + "'");
        if (seen.emplace(k, true).second) out.push_back(item);
    }
    return generator(std::move(out));
}

Result<Value> fWordcount(Interp&, const Value& v, CallArgs&) {
    const std::string s = toStr(v);
    int64_t n = 0;
    bool inWord = false;
    for (size_t i = 0; i < s.size();) {
        Utf8Char c = decodeUtf8(s, i);
        const bool wordChar = c.valid && (isAlphaCp(c.cp) || isDigitCp(c.cp) || c.cp == '_');
        if (wordChar && !inWord) ++n;
        inWord = wordChar;
        i += c.len;
    }
    return Value::integer(n);
}

Result<Value> fFormat(Interp& interp, const Value& v, CallArgs& args) {
    if (!args.positional.empty() && !args.keyword.empty())
        return invalidArgument("can't handle positional and keyword arguments at the same time");
    Value params;
    if (!args.keyword.empty()) {
        std::vector<std::pair<std::string, Value>> kw(args.keyword.begin(), args.keyword.end());
        params = makeDict(std::move(kw));
    } else {
        params = Value::tuple(args.positional);
    }
    HEARTH_ASSIGN_OR_RETURN(std::string s, percentFormat(interp, toStr(v), params, v.isMarkup()));
    return withMarkup(Value::string(std::move(s)), v.isMarkup());
}

struct FilterEntry {
    const char* name;
    FilterFn fn;
};

const FilterEntry kFilters[] = {
    {"abs", fAbs}, {"attr", fAttr}, {"batch", fBatch}, {"capitalize", fCapitalize}, {"center", fCenter},
    {"count", fLength}, {"d", fDefault}, {"default", fDefault}, {"dictsort", fDictsort}, {"e", fEscape},
    {"escape", fEscape}, {"first", fFirst}, {"float", fFloat}, {"forceescape", fForceEscape}, {"format", fFormat},
    {"indent", fIndent}, {"int", fInt}, {"items", fItems}, {"join", fJoin}, {"last", fLast},
    {"length", fLength}, {"list", fList}, {"lower", fLower}, {"map", fMap}, {"max", fMax}, {"min", fMin},
    {"reject", fReject}, {"rejectattr", fRejectattr}, {"replace", fReplace}, {"reverse", fReverse},
    {"round", fRound}, {"safe", fSafe}, {"select", fSelect}, {"selectattr", fSelectattr}, {"sort", fSort},
    {"string", fString}, {"sum", fSum}, {"title", fTitle}, {"tojson", fToJson}, {"trim", fTrim},
    {"truncate", fTruncate}, {"unique", fUnique}, {"upper", fUpper}, {"wordcount", fWordcount},
};

} // namespace

FilterFn findFilter(std::string_view name) {
    for (const FilterEntry& e : kFilters)
        if (name == e.name) return e.fn;
    return nullptr;
}

} // namespace hearth::tmpl
