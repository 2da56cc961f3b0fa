// Read-only Python methods of str, dict, list and tuple as the immutable sandbox allows them, and
// the attributes of the `loop` object.
#include "tokenizer/chat_template/interp.h"
#include "tokenizer/chat_template/text_util.h"

#include <algorithm>
#include <cstring>

namespace hearth::tmpl {

namespace {

using MethodFn = Result<Value> (*)(Interp&, const Value& self, CallArgs&);

class BoundMethod : public CallableData {
public:
    BoundMethod(std::string name, Value self, MethodFn fn)
        : CallableData(std::move(name)), m_self(std::move(self)), m_fn(fn) {}
    Result<Value> call(Interp& interp, CallArgs& args) const override {
        if (!m_self.isMarkup()) return m_fn(interp, m_self, args);
        return callOnMarkup(interp, args);
    }

private:
    // markupsafe.Markup's methods: string arguments that end up in the result are escaped, and
    // every string result is Markup again.
    Result<Value> callOnMarkup(Interp& interp, CallArgs& args) const {
        auto escapeArg = [](Value& v) {
            if (v.isString() && !v.isMarkup()) v = Value::markup(htmlEscape(v.str()));
        };
        if (name == "replace" && args.positional.size() >= 2) escapeArg(args.positional[1]);
        if ((name == "center" || name == "ljust" || name == "rjust") && args.positional.size() >= 2)
            escapeArg(args.positional[1]);
        if (name == "join" && !args.positional.empty()) {
            HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, iterateValue(args.positional[0]));
            for (Value& item : items) escapeArg(item);
            args.positional[0] = Value::list(std::move(items));
        }
        if (name == "format") {
            HEARTH_ASSIGN_OR_RETURN(std::string s, braceFormat(interp, m_self.str(), args, true));
            return Value::markup(std::move(s));
        }
        HEARTH_ASSIGN_OR_RETURN(Value r, m_fn(interp, m_self, args));
        if (r.isString()) return withMarkup(r, true);
        if (r.isList() && isSequenceList(r)) {
            std::vector<Value> items;
            for (const Value& item : r.items()) items.push_back(withMarkup(item, true));
            return Value::list(std::move(items), r.flavor());
        }
        return r;
    }

    Value m_self;
    MethodFn m_fn;
};

Result<std::string> needString(std::string_view fn, const Value& v) {
    if (!v.isString()) return invalidArgument(std::string(fn) + "() argument must be str, not " + typeName(v));
    return v.str();
}

int64_t cpIndex(const std::string& s, size_t byteIndex) {
    return static_cast<int64_t>(utf8Length(std::string_view(s).substr(0, byteIndex)));
}

// A [start:end] window of s in bytes from optional code point indices (Python semantics).
void window(const std::string& s, const ArgReader& r, size_t startArg, size_t& begin, size_t& end) {
    begin = 0;
    end = s.size();
    if (!r.has(startArg) && !r.has(startArg + 1)) return;
    std::vector<size_t> off = utf8Offsets(s);
    const auto len = static_cast<int64_t>(off.size() - 1);
    auto clampIdx = [&](const Value& v, int64_t def) {
        if (!v.isInt() && !v.isBool()) return def;
        int64_t x = v.intValue();
        if (x < 0) x = std::max<int64_t>(0, x + len);
        return std::min(x, len);
    };
    const int64_t b = r.has(startArg) ? clampIdx(r.get(startArg), 0) : 0;
    const int64_t e = r.has(startArg + 1) ? clampIdx(r.get(startArg + 1), len) : len;
    begin = off[static_cast<size_t>(b)];
    end = off[static_cast<size_t>(std::max(b, e))];
}

// ---- str ----

Result<Value> strStripImpl(const Value& self, CallArgs& args, const char* name, bool left, bool right) {
    ArgReader r(name, args, {"chars"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra(name, r));
    if (!r.has(0) || r.get(0).isNone()) return Value::string(pyStrip(self.str(), nullptr, left, right));
    HEARTH_ASSIGN_OR_RETURN(std::string chars, needString(name, r.get(0)));
    return Value::string(pyStrip(self.str(), &chars, left, right));
}
Result<Value> strStrip(Interp&, const Value& s, CallArgs& a) { return strStripImpl(s, a, "strip", true, true); }
Result<Value> strLstrip(Interp&, const Value& s, CallArgs& a) { return strStripImpl(s, a, "lstrip", true, false); }
Result<Value> strRstrip(Interp&, const Value& s, CallArgs& a) { return strStripImpl(s, a, "rstrip", false, true); }

Result<Value> splitImpl(Interp& interp, const Value& self, CallArgs& args, bool fromRight) {
    const char* name = fromRight ? "rsplit" : "split";
    ArgReader r(name, args, {"sep", "maxsplit"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra(name, r));
    const std::string& s = self.str();
    int64_t maxsplit = -1;
    if (r.has(1)) {
        if (!r.get(1).isInt() && !r.get(1).isBool()) return invalidArgument("maxsplit must be an integer");
        maxsplit = r.get(1).intValue();
    }
    std::vector<std::string> parts;
    if (!r.has(0) || r.get(0).isNone()) {
        // Runs of whitespace separate; no empty strings.
        std::vector<std::pair<size_t, size_t>> words;
        size_t i = 0;
        while (i < s.size()) {
            Utf8Char c = decodeUtf8(s, i);
            if (c.valid && isPySpace(c.cp)) {
                i += c.len;
                continue;
            }
            size_t start = i;
            while (i < s.size()) {
                Utf8Char d = decodeUtf8(s, i);
                if (d.valid && isPySpace(d.cp)) break;
                i += d.len;
            }
            words.emplace_back(start, i);
        }
        if (maxsplit < 0 || static_cast<size_t>(maxsplit) >= words.size()) {
            for (auto [b, e] : words) parts.push_back(s.substr(b, e - b));
        } else if (!fromRight) {
            for (size_t k = 0; k < static_cast<size_t>(maxsplit); ++k) parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
            parts.push_back(pyStrip(std::string_view(s).substr(words[static_cast<size_t>(maxsplit)].first), nullptr, false, true));
        } else {
            const size_t keep = words.size() - static_cast<size_t>(maxsplit);
            parts.push_back(pyStrip(std::string_view(s).substr(0, words[keep - 1].second), nullptr, true, false));
            for (size_t k = keep; k < words.size(); ++k) parts.push_back(s.substr(words[k].first, words[k].second - words[k].first));
        }
    } else {
        HEARTH_ASSIGN_OR_RETURN(std::string sep, needString(name, r.get(0)));
        if (sep.empty()) return invalidArgument("empty separator");
        if (!fromRight) {
            size_t pos = 0;
            int64_t done = 0;
            while (maxsplit < 0 || done < maxsplit) {
                size_t k = s.find(sep, pos);
                if (k == std::string::npos) break;
                parts.push_back(s.substr(pos, k - pos));
                pos = k + sep.size();
                ++done;
            }
            parts.push_back(s.substr(pos));
        } else {
            size_t end = s.size();
            int64_t done = 0;
            std::vector<std::string> rev;
            while (maxsplit < 0 || done < maxsplit) {
                if (end < sep.size()) break;
                size_t k = s.rfind(sep, end - sep.size());
                if (k == std::string::npos) break;
                rev.push_back(s.substr(k + sep.size(), end - k - sep.size()));
                end = k;
                ++done;
            }
            rev.push_back(s.substr(0, end));
            parts.assign(rev.rbegin(), rev.rend());
        }
    }
    HEARTH_RETURN_IF_ERROR(interp.checkItems(parts.size()));
    std::vector<Value> items;
    items.reserve(parts.size());
    for (auto& p : parts) items.push_back(Value::string(std::move(p)));
    return Value::list(std::move(items));
}
Result<Value> strSplit(Interp& i, const Value& s, CallArgs& a) { return splitImpl(i, s, a, false); }
Result<Value> strRsplit(Interp& i, const Value& s, CallArgs& a) { return splitImpl(i, s, a, true); }

Result<Value> strSplitlines(Interp& interp, const Value& self, CallArgs& args) {
    ArgReader r("splitlines", args, {"keepends"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("splitlines", r));
    const bool keep = r.has(0) && truthy(r.get(0));
    const std::string& s = self.str();
    std::vector<Value> items;
    size_t start = 0;
    for (size_t i = 0; i < s.size();) {
        Utf8Char c = decodeUtf8(s, i);
        const bool brk = c.valid && (c.cp == '\n' || c.cp == '\r' || c.cp == 0x0B || c.cp == 0x0C || c.cp == 0x1C ||
                                     c.cp == 0x1D || c.cp == 0x1E || c.cp == 0x85 || c.cp == 0x2028 || c.cp == 0x2029);
        if (!brk) {
            i += c.len;
            continue;
        }
        size_t after = i + c.len;
        if (c.cp == '\r' && after < s.size() && s[after] == '\n') ++after;
        items.push_back(Value::string(s.substr(start, (keep ? after : i) - start)));
        start = i = after;
    }
    if (start < s.size()) items.push_back(Value::string(s.substr(start)));
    HEARTH_RETURN_IF_ERROR(interp.checkItems(items.size()));
    return Value::list(std::move(items));
}

Result<Value> affixImpl(const Value& self, CallArgs& args, const char* name, bool prefix) {
    ArgReader r(name, args, {"prefix", "start", "end"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra(name, r));
    if (!r.has(0)) return invalidArgument(std::string(name) + "() takes at least 1 argument (0 given)");
    size_t begin, end;
    window(self.str(), r, 1, begin, end);
    const std::string_view s = std::string_view(self.str()).substr(begin, end - begin);
    std::vector<Value> candidates;
    if (r.get(0).isList() && r.get(0).flavor() == ListFlavor::Tuple)
        candidates = r.get(0).items();
    else
        candidates.push_back(r.get(0));
    for (const Value& c : candidates) {
        if (!c.isString())
            return invalidArgument(std::string(name) + " first arg must be str or a tuple of str, not " + typeName(c));
        const std::string& a = c.str();
        if (a.size() > s.size()) continue;
        if (prefix ? s.substr(0, a.size()) == a : s.substr(s.size() - a.size()) == a) return Value::boolean(true);
    }
    return Value::boolean(false);
}
Result<Value> strStartswith(Interp&, const Value& s, CallArgs& a) { return affixImpl(s, a, "startswith", true); }
Result<Value> strEndswith(Interp&, const Value& s, CallArgs& a) { return affixImpl(s, a, "endswith", false); }

Result<Value> noArgs(const char* name, CallArgs& args) {
    if (!args.positional.empty() || !args.keyword.empty())
        return invalidArgument(std::string(name) + "() takes no arguments");
    return Value();
}
Result<Value> strUpper(Interp&, const Value& s, CallArgs& a) {
    HEARTH_RETURN_IF_ERROR(noArgs("upper", a).status());
    return Value::string(pyUpper(s.str()));
}
Result<Value> strLower(Interp&, const Value& s, CallArgs& a) {
    HEARTH_RETURN_IF_ERROR(noArgs("lower", a).status());
    return Value::string(pyLower(s.str()));
}
Result<Value> strTitle(Interp&, const Value& s, CallArgs& a) {
    HEARTH_RETURN_IF_ERROR(noArgs("title", a).status());
    return Value::string(pyTitleMethod(s.str()));
}
Result<Value> strCapitalize(Interp&, const Value& s, CallArgs& a) {
    HEARTH_RETURN_IF_ERROR(noArgs("capitalize", a).status());
    return Value::string(pyCapitalize(s.str()));
}
Result<Value> strSwapcase(Interp&, const Value& s, CallArgs& a) {
    HEARTH_RETURN_IF_ERROR(noArgs("swapcase", a).status());
    std::string out;
    const std::string& in = s.str();
    for (size_t i = 0; i < in.size();) {
        Utf8Char c = decodeUtf8(in, i);
        if (!c.valid)
            out.push_back(in[i]);
        else
            appendUtf8(out, isUpperCp(c.cp) ? toLowerCp(c.cp) : toUpperCp(c.cp));
        i += c.len;
    }
    return Value::string(std::move(out));
}

Result<Value> strReplace(Interp& interp, const Value& self, CallArgs& args) {
    ArgReader r("replace", args, {"old", "new", "count"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("replace", r));
    if (!r.has(0) || !r.has(1)) return invalidArgument("replace() takes at least 2 arguments");
    HEARTH_ASSIGN_OR_RETURN(std::string from, needString("replace", r.get(0)));
    HEARTH_ASSIGN_OR_RETURN(std::string to, needString("replace", r.get(1)));
    int64_t count = -1;
    if (r.has(2)) {
        if (!r.get(2).isInt() && !r.get(2).isBool()) return invalidArgument("replace() count must be an integer");
        count = r.get(2).intValue();
    }
    const std::string& s = self.str();
    std::string out;
    int64_t done = 0;
    if (from.empty()) {
        // Python inserts `new` before every character and at the end.
        const std::vector<size_t> off = utf8Offsets(s);
        const size_t chars = off.size() - 1;
        for (size_t k = 0; k <= chars; ++k) {
            if (count < 0 || done < count) {
                out += to;
                ++done;
            }
            if (k < chars) out.append(s, off[k], off[k + 1] - off[k]);
            if (out.size() > interp.limits().maxOutputBytes) break;
        }
        HEARTH_RETURN_IF_ERROR(interp.checkSize(out.size()));
        return Value::string(std::move(out));
    }
    size_t pos = 0;
    while (count < 0 || done < count) {
        size_t k = s.find(from, pos);
        if (k == std::string::npos) break;
        out.append(s, pos, k - pos);
        out += to;
        pos = k + from.size();
        ++done;
        if (out.size() > interp.limits().maxOutputBytes) break;
    }
    out.append(s, pos, std::string::npos);
    HEARTH_RETURN_IF_ERROR(interp.checkSize(out.size()));
    return Value::string(std::move(out));
}

Result<Value> findImpl(const Value& self, CallArgs& args, const char* name, bool reverse, bool raise) {
    ArgReader r(name, args, {"sub", "start", "end"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra(name, r));
    if (!r.has(0)) return invalidArgument(std::string(name) + "() takes at least 1 argument (0 given)");
    HEARTH_ASSIGN_OR_RETURN(std::string sub, needString(name, r.get(0)));
    const std::string& s = self.str();
    size_t begin, end;
    window(s, r, 1, begin, end);
    const std::string_view w = std::string_view(s).substr(begin, end - begin);
    const size_t k = reverse ? w.rfind(sub) : w.find(sub);
    if (k == std::string_view::npos) {
        if (raise) return invalidArgument("substring not found");
        return Value::integer(-1);
    }
    return Value::integer(cpIndex(s, begin + k));
}
Result<Value> strFind(Interp&, const Value& s, CallArgs& a) { return findImpl(s, a, "find", false, false); }
Result<Value> strRfind(Interp&, const Value& s, CallArgs& a) { return findImpl(s, a, "rfind", true, false); }
Result<Value> strIndex(Interp&, const Value& s, CallArgs& a) { return findImpl(s, a, "index", false, true); }
Result<Value> strRindex(Interp&, const Value& s, CallArgs& a) { return findImpl(s, a, "rindex", true, true); }

Result<Value> strCount(Interp&, const Value& self, CallArgs& args) {
    ArgReader r("count", args, {"sub", "start", "end"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("count", r));
    if (!r.has(0)) return invalidArgument("count() takes at least 1 argument (0 given)");
    HEARTH_ASSIGN_OR_RETURN(std::string sub, needString("count", r.get(0)));
    size_t begin, end;
    window(self.str(), r, 1, begin, end);
    const std::string_view w = std::string_view(self.str()).substr(begin, end - begin);
    if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8Length(w)) + 1);
    int64_t n = 0;
    for (size_t k = w.find(sub); k != std::string_view::npos; k = w.find(sub, k + sub.size())) ++n;
    return Value::integer(n);
}

Result<Value> strJoin(Interp& interp, const Value& self, CallArgs& args) {
    ArgReader r("join", args, {"iterable"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("join", r));
    if (!r.has(0)) return invalidArgument("join() takes exactly one argument (0 given)");
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, iterateValue(r.get(0)));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].isString())
            return invalidArgument("sequence item " + std::to_string(i) + ": expected str instance, " +
                                   typeName(items[i]) + " found");
        if (i) out += self.str();
        out += items[i].str();
        HEARTH_RETURN_IF_ERROR(interp.checkSize(out.size()));
    }
    return Value::string(std::move(out));
}

Result<Value> strFormat(Interp& interp, const Value& self, CallArgs& args) {
    HEARTH_ASSIGN_OR_RETURN(std::string s, braceFormat(interp, self.str(), args));
    return Value::string(std::move(s));
}

Result<Value> padImpl(Interp& interp, const Value& self, CallArgs& args, const char* name, int mode) {
    ArgReader r(name, args, {"width", "fillchar"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra(name, r));
    if (!r.has(0) || (!r.get(0).isInt() && !r.get(0).isBool())) return invalidArgument(std::string(name) + "() needs an integer width");
    std::string fill = " ";
    if (r.has(1)) {
        if (!r.get(1).isString() || utf8Length(r.get(1).str()) != 1)
            return invalidArgument("The fill character must be exactly one character long");
        fill = r.get(1).str();
    }
    const int64_t width = r.get(0).intValue();
    const auto len = static_cast<int64_t>(utf8Length(self.str()));
    if (width <= len) return self;
    const auto total = static_cast<size_t>(width - len);
    HEARTH_RETURN_IF_ERROR(interp.checkSize(total * fill.size() + self.str().size()));
    size_t left = 0;
    if (mode == 0) left = total / 2 + (total & static_cast<size_t>(width) & 1); // Python's center rule
    if (mode == 2) left = total;
    std::string out;
    for (size_t i = 0; i < left; ++i) out += fill;
    out += self.str();
    for (size_t i = left; i < total; ++i) out += fill;
    return Value::string(std::move(out));
}
Result<Value> strCenter(Interp& i, const Value& s, CallArgs& a) { return padImpl(i, s, a, "center", 0); }
Result<Value> strLjust(Interp& i, const Value& s, CallArgs& a) { return padImpl(i, s, a, "ljust", 1); }
Result<Value> strRjust(Interp& i, const Value& s, CallArgs& a) { return padImpl(i, s, a, "rjust", 2); }

Result<Value> strZfill(Interp& interp, const Value& self, CallArgs& args) {
    ArgReader r("zfill", args, {"width"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("zfill", r));
    if (!r.has(0) || (!r.get(0).isInt() && !r.get(0).isBool())) return invalidArgument("zfill() needs an integer width");
    const std::string& s = self.str();
    const auto len = static_cast<int64_t>(utf8Length(s));
    const int64_t width = r.get(0).intValue();
    if (width <= len) return self;
    HEARTH_RETURN_IF_ERROR(interp.checkSize(static_cast<size_t>(width)));
    const size_t signLen = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    return Value::string(s.substr(0, signLen) + std::string(static_cast<size_t>(width - len), '0') + s.substr(signLen));
}

template <bool (*Pred)(char32_t)> Result<Value> strIs(Interp&, const Value& self, CallArgs& args) {
    HEARTH_RETURN_IF_ERROR(noArgs("is...", args).status());
    const std::string& s = self.str();
    if (s.empty()) return Value::boolean(false);
    for (size_t i = 0; i < s.size();) {
        Utf8Char c = decodeUtf8(s, i);
        if (!c.valid || !Pred(c.cp)) return Value::boolean(false);
        i += c.len;
    }
    return Value::boolean(true);
}
bool isAlnumCp(char32_t c) { return isAlphaCp(c) || isDigitCp(c); }

template <bool Upper> Result<Value> strIsCase(Interp&, const Value& self, CallArgs& args) {
    HEARTH_RETURN_IF_ERROR(noArgs(Upper ? "isupper" : "islower", args).status());
    bool anyCased = false;
    const std::string& s = self.str();
    for (size_t i = 0; i < s.size();) {
        Utf8Char c = decodeUtf8(s, i);
        i += c.len;
        if (!c.valid) continue;
        if (Upper ? isLowerCp(c.cp) : isUpperCp(c.cp)) return Value::boolean(false);
        if (isCased(c.cp)) anyCased = true;
    }
    return Value::boolean(anyCased);
}

Result<Value> partitionImpl(const Value& self, CallArgs& args, bool reverse) {
    const char* name = reverse ? "rpartition" : "partition";
    ArgReader r(name, args, {"sep"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra(name, r));
    if (!r.has(0)) return invalidArgument(std::string(name) + "() takes exactly one argument (0 given)");
    HEARTH_ASSIGN_OR_RETURN(std::string sep, needString(name, r.get(0)));
    if (sep.empty()) return invalidArgument("empty separator");
    const std::string& s = self.str();
    const size_t k = reverse ? s.rfind(sep) : s.find(sep);
    if (k == std::string::npos) {
        if (reverse) return Value::tuple({Value::string(""), Value::string(""), self});
        return Value::tuple({self, Value::string(""), Value::string("")});
    }
    return Value::tuple({Value::string(s.substr(0, k)), Value::string(sep), Value::string(s.substr(k + sep.size()))});
}
Result<Value> strPartition(Interp&, const Value& s, CallArgs& a) { return partitionImpl(s, a, false); }
Result<Value> strRpartition(Interp&, const Value& s, CallArgs& a) { return partitionImpl(s, a, true); }

Result<Value> removeAffix(const Value& self, CallArgs& args, bool prefix) {
    const char* name = prefix ? "removeprefix" : "removesuffix";
    ArgReader r(name, args, {"affix"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra(name, r));
    if (!r.has(0)) return invalidArgument(std::string(name) + "() takes exactly one argument (0 given)");
    HEARTH_ASSIGN_OR_RETURN(std::string a, needString(name, r.get(0)));
    const std::string& s = self.str();
    if (a.size() <= s.size()) {
        if (prefix && s.compare(0, a.size(), a) == 0) return Value::string(s.substr(a.size()));
        if (!prefix && s.compare(s.size() - a.size(), a.size(), a) == 0) return Value::string(s.substr(0, s.size() - a.size()));
    }
    return self;
}
Result<Value> strRemoveprefix(Interp&, const Value& s, CallArgs& a) { return removeAffix(s, a, true); }
Result<Value> strRemovesuffix(Interp&, const Value& s, CallArgs& a) { return removeAffix(s, a, false); }

// ---- dict ----

Result<Value> dictItems(Interp& interp, const Value& self, CallArgs& args) {
    HEARTH_RETURN_IF_ERROR(noArgs("items", args).status());
    HEARTH_RETURN_IF_ERROR(interp.checkItems(self.dictData().entries.size()));
    std::vector<Value> items;
    for (const auto& [k, v] : self.dictData().entries) items.push_back(Value::tuple({k, v}));
    return Value::list(std::move(items), ListFlavor::ItemsView);
}
Result<Value> dictKeys(Interp&, const Value& self, CallArgs& args) {
    HEARTH_RETURN_IF_ERROR(noArgs("keys", args).status());
    std::vector<Value> items;
    for (const auto& [k, v] : self.dictData().entries) items.push_back(k);
    return Value::list(std::move(items), ListFlavor::KeysView);
}
Result<Value> dictValues(Interp&, const Value& self, CallArgs& args) {
    HEARTH_RETURN_IF_ERROR(noArgs("values", args).status());
    std::vector<Value> items;
    for (const auto& [k, v] : self.dictData().entries) items.push_back(v);
    return Value::list(std::move(items), ListFlavor::ValuesView);
}
Result<Value> dictGet(Interp&, const Value& self, CallArgs& args) {
    ArgReader r("get", args, {"key", "default"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("get", r));
    if (!r.has(0)) return invalidArgument("get expected at least 1 argument, got 0");
    std::string key;
    if (!dictKey(r.get(0), key)) return invalidArgument("unhashable type: '" + typeName(r.get(0)) + "'");
    if (const Value* v = self.dictData().find(r.get(0))) return *v;
    return r.getOr(1, Value::none());
}
Result<Value> copySelf(Interp&, const Value& self, CallArgs& args) {
    HEARTH_RETURN_IF_ERROR(noArgs("copy", args).status());
    if (self.isList()) return Value::list(self.items(), self.flavor());
    return self;
}

// ---- list / tuple ----

Result<Value> seqIndex(Interp&, const Value& self, CallArgs& args) {
    ArgReader r("index", args, {"value"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("index", r));
    if (!r.has(0)) return invalidArgument("index expected at least 1 argument, got 0");
    const auto& items = self.items();
    for (size_t i = 0; i < items.size(); ++i)
        if (equals(items[i], r.get(0))) return Value::integer(static_cast<int64_t>(i));
    return invalidArgument(repr(r.get(0)) + " is not in " + typeName(self));
}
Result<Value> seqCount(Interp&, const Value& self, CallArgs& args) {
    ArgReader r("count", args, {"value"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("count", r));
    if (!r.has(0)) return invalidArgument("count() takes exactly one argument (0 given)");
    int64_t n = 0;
    for (const Value& v : self.items()) n += equals(v, r.get(0)) ? 1 : 0;
    return Value::integer(n);
}

struct MethodEntry {
    const char* name;
    MethodFn fn;
};

const MethodEntry kStrMethods[] = {
    {"strip", strStrip}, {"lstrip", strLstrip}, {"rstrip", strRstrip}, {"split", strSplit},
    {"rsplit", strRsplit}, {"splitlines", strSplitlines}, {"startswith", strStartswith},
    {"endswith", strEndswith}, {"upper", strUpper}, {"lower", strLower}, {"casefold", strLower},
    {"title", strTitle}, {"capitalize", strCapitalize}, {"swapcase", strSwapcase},
    {"replace", strReplace}, {"find", strFind}, {"rfind", strRfind}, {"index", strIndex},
    {"rindex", strRindex}, {"count", strCount}, {"join", strJoin}, {"format", strFormat},
    {"center", strCenter}, {"ljust", strLjust}, {"rjust", strRjust}, {"zfill", strZfill},
    {"isdigit", strIs<isDigitCp>}, {"isdecimal", strIs<isDigitCp>}, {"isnumeric", strIs<isDigitCp>},
    {"isalpha", strIs<isAlphaCp>}, {"isalnum", strIs<isAlnumCp>}, {"isspace", strIs<isPySpace>},
    {"isupper", strIsCase<true>}, {"islower", strIsCase<false>}, {"partition", strPartition},
    {"rpartition", strRpartition}, {"removeprefix", strRemoveprefix}, {"removesuffix", strRemovesuffix},
};
const MethodEntry kDictMethods[] = {
    {"items", dictItems}, {"keys", dictKeys}, {"values", dictValues}, {"get", dictGet}, {"copy", copySelf},
};
const MethodEntry kListMethods[] = {{"index", seqIndex}, {"count", seqCount}, {"copy", copySelf}};
const MethodEntry kTupleMethods[] = {{"index", seqIndex}, {"count", seqCount}};

const char* const kDictUnsafe[] = {"pop", "popitem", "setdefault", "update", "clear"};
const char* const kListUnsafe[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N> const MethodEntry* lookup(const MethodEntry (&table)[N], const std::string& name) {
    for (const MethodEntry& e : table)
        if (name == e.name) return &e;
    return nullptr;
}
template <size_t N> bool contains(const char* const (&table)[N], const std::string& name) {
    for (const char* e : table)
        if (name == e) return true;
    return false;
}

// ---- loop helpers ----

class LoopMethod : public CallableData {
public:
    LoopMethod(std::string name, std::shared_ptr<LoopData> loop) : CallableData(std::move(name)), m_loop(std::move(loop)) {}
    Result<Value> call(Interp&, CallArgs& args) const override {
        if (name == "cycle") {
            if (args.positional.empty()) return invalidArgument("no items for cycling given");
            return args.positional[m_loop->index0 % args.positional.size()];
        }
        // changed(*values): true when the values differ from the previous call's.
        bool differs = !m_loop->changedSeen || m_loop->changedLast.size() != args.positional.size();
        for (size_t i = 0; !differs && i < args.positional.size(); ++i)
            differs = !equals(m_loop->changedLast[i], args.positional[i]);
        m_loop->changedSeen = true;
        m_loop->changedLast = args.positional;
        return Value::boolean(differs);
    }

private:
    std::shared_ptr<LoopData> m_loop;
};

} // namespace

bool findMethod(const Value& self, const std::string& name, Value& out) {
    const MethodEntry* entry = nullptr;
    bool unsafe = false;
    if (self.isString()) {
        entry = lookup(kStrMethods, name);
    } else if (self.isDict()) {
        entry = lookup(kDictMethods, name);
        unsafe = !entry && contains(kDictUnsafe, name);
    } else if (self.isList() && self.flavor() == ListFlavor::List) {
        entry = lookup(kListMethods, name);
        unsafe = !entry && contains(kListUnsafe, name);
    } else if (self.isList() && self.flavor() == ListFlavor::Tuple) {
        entry = lookup(kTupleMethods, name);
    }
    if (entry) {
        out = Value::callable(std::make_shared<BoundMethod>(name, self, entry->fn));
        return true;
    }
    if (unsafe) {
        out = Value::undefined("access to attribute '" + name + "' of '" + typeName(self) + "' object is unsafe.");
        return true;
    }
    return false;
}

Value loopAttribute(const Value& loopValue, const std::string& name) {
    const LoopData& loop = loopValue.loopData();
    const auto length = static_cast<int64_t>(loop.items ? loop.items->items.size() : 0);
    const auto i = static_cast<int64_t>(loop.index0);
    if (name == "index") return Value::integer(i + 1);
    if (name == "index0") return Value::integer(i);
    if (name == "revindex") return Value::integer(length - i);
    if (name == "revindex0") return Value::integer(length - i - 1);
    if (name == "first") return Value::boolean(i == 0);
    if (name == "last") return Value::boolean(i == length - 1);
    if (name == "length") return Value::integer(length);
    if (name == "depth") return Value::integer(loop.depth0 + 1);
    if (name == "depth0") return Value::integer(loop.depth0);
    if (name == "previtem") {
        if (i == 0) return Value::undefined("there is no previous item");
        return loop.items->items[static_cast<size_t>(i - 1)];
    }
    if (name == "nextitem") {
        if (i + 1 >= length) return Value::undefined("there is no next item");
        return loop.items->items[static_cast<size_t>(i + 1)];
    }
    if (name == "cycle" || name == "changed")
        return Value::callable(std::make_shared<LoopMethod>(name, loopValue.loopPtr()));
    return Value::undefined("'LoopContext object' has no attribute '" + name + "'");
}

} // namespace hearth::tmpl
