// Values of the template interpreter: construction, Python truthiness, equality, ordering,
// str()/repr() and conversion from JSON input.
#include "tokenizer/chat_template/value.h"

#include "tokenizer/chat_template/text_util.h"

#include <algorithm>
#include <cmath>

namespace hearth::tmpl {

namespace {
constexpr int kMaxReprDepth = 1000;
const std::string kEmpty;
} // namespace

// ---- containers ---------------------------------------------------------------------------------

const Value* DictData::find(const Value& key) const {
    std::string k;
    if (!dictKey(key, k)) return nullptr;
    auto it = index.find(k);
    return it == index.end() ? nullptr : &entries[it->second].second;
}

const Value* DictData::find(std::string_view key) const {
    std::string k = "s";
    k.append(key);
    auto it = index.find(k);
    return it == index.end() ? nullptr : &entries[it->second].second;
}

Status DictData::set(Value key, Value value) {
    std::string k;
    if (!dictKey(key, k)) return invalidArgument("unhashable type: '" + typeName(key) + "'");
    depth = std::max(depth, std::min(value.depth() + 1, 1 << 16));
    auto it = index.find(k);
    if (it != index.end()) {
        entries[it->second].second = std::move(value);
        return Status::ok();
    }
    index.emplace(std::move(k), entries.size());
    entries.emplace_back(std::move(key), std::move(value));
    return Status::ok();
}

const Value* NamespaceData::find(std::string_view name) const {
    for (const auto& [k, v] : attrs)
        if (k == name) return &v;
    return nullptr;
}

void NamespaceData::set(const std::string& name, Value value) {
    for (auto& [k, v] : attrs) {
        if (k == name) {
            v = std::move(value);
            return;
        }
    }
    attrs.emplace_back(name, std::move(value));
}

// ---- Value --------------------------------------------------------------------------------------

Value Value::undefined(std::string hint) {
    Value v;
    if (!hint.empty()) v.m_data = std::make_shared<const std::string>(std::move(hint));
    return v;
}
Value Value::none() {
    Value v;
    v.m_kind = Kind::None;
    return v;
}
Value Value::boolean(bool b) {
    Value v;
    v.m_kind = Kind::Bool;
    v.m_data = b;
    return v;
}
Value Value::integer(int64_t i) {
    Value v;
    v.m_kind = Kind::Int;
    v.m_data = i;
    return v;
}
Value Value::floating(double f) {
    Value v;
    v.m_kind = Kind::Float;
    v.m_data = f;
    return v;
}
Value Value::string(std::string s) {
    Value v;
    v.m_kind = Kind::String;
    v.m_data = std::make_shared<const std::string>(std::move(s));
    return v;
}
Value Value::markup(std::string s) {
    Value v = string(std::move(s));
    v.m_markup = true;
    return v;
}

Value withMarkup(const Value& v, bool markup) {
    if (!v.isString() || v.isMarkup() == markup) return v;
    return markup ? Value::markup(v.str()) : Value::string(v.str());
}

std::string htmlEscape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out.push_back(c);
        }
    }
    return out;
}

Value Value::list(std::vector<Value> items, ListFlavor flavor) {
    auto data = std::make_shared<ListData>();
    int depth = 0;
    for (const Value& item : items) depth = std::max(depth, item.depth());
    data->depth = std::min(depth + 1, 1 << 16);
    data->items = std::move(items);
    data->flavor = flavor;
    Value v;
    v.m_kind = Kind::List;
    v.m_data = ListPtr(std::move(data));
    return v;
}
Value Value::dict(std::shared_ptr<const DictData> d) {
    Value v;
    v.m_kind = Kind::Dict;
    v.m_data = std::move(d);
    return v;
}
Value Value::callable(std::shared_ptr<const CallableData> c) {
    Value v;
    v.m_kind = Kind::Callable;
    v.m_data = std::move(c);
    return v;
}
Value Value::ns(std::shared_ptr<NamespaceData> n) {
    Value v;
    v.m_kind = Kind::Namespace;
    v.m_data = std::move(n);
    return v;
}
Value Value::loop(std::shared_ptr<LoopData> l) {
    Value v;
    v.m_kind = Kind::Loop;
    v.m_data = std::move(l);
    return v;
}

int64_t Value::intValue() const {
    if (m_kind == Kind::Bool) return std::get<bool>(m_data) ? 1 : 0;
    return std::get<int64_t>(m_data);
}

double Value::numberValue() const {
    if (m_kind == Kind::Float) return std::get<double>(m_data);
    return static_cast<double>(intValue());
}

const std::string& Value::str() const { return *std::get<StrPtr>(m_data); }

const std::string& Value::undefinedHint() const {
    if (auto p = std::get_if<StrPtr>(&m_data)) return **p;
    return kEmpty;
}

int Value::depth() const {
    if (m_kind == Kind::List) return listData().depth;
    if (m_kind == Kind::Dict) return dictData().depth;
    if (m_kind == Kind::Namespace || m_kind == Kind::Loop) return 1;
    return 0;
}

bool Value::sameAs(const Value& other) const {
    if (m_kind != other.m_kind) return false;
    switch (m_kind) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::Bool: return boolValue() == other.boolValue();
    case Kind::Int: return intValue() == other.intValue();
    case Kind::Float: return std::get<double>(m_data) == std::get<double>(other.m_data);
    case Kind::String: return std::get<StrPtr>(m_data) == std::get<StrPtr>(other.m_data);
    case Kind::List: return listPtr() == other.listPtr();
    case Kind::Dict: return std::get<DictPtr>(m_data) == std::get<DictPtr>(other.m_data);
    case Kind::Callable: return std::get<CallablePtr>(m_data) == std::get<CallablePtr>(other.m_data);
    case Kind::Namespace: return namespacePtr() == other.namespacePtr();
    case Kind::Loop: return loopPtr() == other.loopPtr();
    }
    return false;
}

// ---- Python semantics ---------------------------------------------------------------------------

std::string typeName(const Value& v) {
    switch (v.kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return v.isMarkup() ? "Markup" : "str";
    case Kind::List:
        switch (v.flavor()) {
        case ListFlavor::List: return "list";
        case ListFlavor::Tuple: return "tuple";
        case ListFlavor::Generator: return "generator";
        case ListFlavor::ItemsView: return "dict_items";
        case ListFlavor::KeysView: return "dict_keys";
        case ListFlavor::ValuesView: return "dict_values";
        }
        return "list";
    case Kind::Dict: return "dict";
    case Kind::Callable: return v.callableData().isMacro() ? "Macro" : "function";
    case Kind::Namespace: return "Namespace";
    case Kind::Loop: return "LoopContext";
    }
    return "object";
}

bool truthy(const Value& v) {
    switch (v.kind()) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return v.boolValue();
    case Kind::Int: return v.intValue() != 0;
    case Kind::Float: return v.numberValue() != 0.0;
    case Kind::String: return !v.str().empty();
    case Kind::List: return v.flavor() == ListFlavor::Generator || !v.items().empty();
    case Kind::Dict: return !v.dictData().entries.empty();
    case Kind::Callable:
    case Kind::Namespace:
    case Kind::Loop: return true;
    }
    return false;
}

namespace {

void reprInto(std::string& out, const Value& v, int depth) {
    if (depth > kMaxReprDepth) {
        out += "...";
        return;
    }
    switch (v.kind()) {
    case Kind::Undefined: out += "Undefined"; return;
    case Kind::None: out += "None"; return;
    case Kind::Bool: out += v.boolValue() ? "True" : "False"; return;
    case Kind::Int: out += std::to_string(v.intValue()); return;
    case Kind::Float: out += formatPyFloat(v.numberValue()); return;
    case Kind::String:
        if (v.isMarkup()) out += "Markup(";
        out += pyStringRepr(v.str());
        if (v.isMarkup()) out += ")";
        return;
    case Kind::List: {
        if (v.flavor() == ListFlavor::Generator) {
            out += "<generator object>";
            return;
        }
        const bool tuple = v.flavor() == ListFlavor::Tuple;
        const bool view = !tuple && v.flavor() != ListFlavor::List;
        if (view) out += typeName(v) + "(";
        out += tuple ? '(' : '[';
        const auto& items = v.items();
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out += ", ";
            reprInto(out, items[i], depth + 1);
        }
        if (tuple && items.size() == 1) out += ',';
        out += tuple ? ')' : ']';
        if (view) out += ')';
        return;
    }
    case Kind::Dict: {
        out += '{';
        bool first = true;
        for (const auto& [k, val] : v.dictData().entries) {
            if (!first) out += ", ";
            first = false;
            reprInto(out, k, depth + 1);
            out += ": ";
            reprInto(out, val, depth + 1);
        }
        out += '}';
        return;
    }
    case Kind::Callable:
        if (v.callableData().isMacro())
            out += "<Macro '" + v.callableData().name + "'>";
        else
            out += "<function " + v.callableData().name + ">";
        return;
    case Kind::Namespace: {
        out += "<Namespace {";
        bool first = true;
        for (const auto& [k, val] : v.namespaceData().attrs) {
            if (!first) out += ", ";
            first = false;
            out += pyStringRepr(k);
            out += ": ";
            reprInto(out, val, depth + 1);
        }
        out += "}>";
        return;
    }
    case Kind::Loop: {
        const LoopData& l = v.loopData();
        out += "<LoopContext " + std::to_string(l.index0 + 1) + "/" +
               std::to_string(l.items ? l.items->items.size() : 0) + ">";
        return;
    }
    }
}

bool equalsAt(const Value& a, const Value& b, int depth) {
    if (depth > kMaxReprDepth) return false;
    if (a.isNumber() && b.isNumber()) {
        if (a.isFloat() || b.isFloat()) return a.numberValue() == b.numberValue();
        return a.intValue() == b.intValue();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return a.str() == b.str();
    case Kind::List: {
        if (a.flavor() != b.flavor()) return false;
        if (a.flavor() == ListFlavor::Generator || a.flavor() == ListFlavor::ValuesView) return a.sameAs(b);
        const auto& x = a.items();
        const auto& y = b.items();
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i)
            if (!equalsAt(x[i], y[i], depth + 1)) return false;
        return true;
    }
    case Kind::Dict: {
        const DictData& x = a.dictData();
        const DictData& y = b.dictData();
        if (x.entries.size() != y.entries.size()) return false;
        for (const auto& [k, v] : x.entries) {
            const Value* other = y.find(k);
            if (!other || !equalsAt(v, *other, depth + 1)) return false;
        }
        return true;
    }
    default: return a.sameAs(b);
    }
}

Result<int> compareAt(const Value& a, const Value& b, int depth) {
    if (depth > kMaxReprDepth) return invalidArgument("comparison nested too deeply");
    if (a.isNumber() && b.isNumber()) {
        if (a.isFloat() || b.isFloat()) {
            double x = a.numberValue(), y = b.numberValue();
            if (std::isnan(x) || std::isnan(y)) return 2; // unordered: every comparison false
            return x < y ? -1 : (x > y ? 1 : 0);
        }
        int64_t x = a.intValue(), y = b.intValue();
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.isString() && b.isString()) {
        int c = a.str().compare(b.str());
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (isSequenceList(a) && isSequenceList(b) && a.flavor() == b.flavor()) {
        const auto& x = a.items();
        const auto& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equalsAt(x[i], y[i], depth + 1)) continue;
            return compareAt(x[i], y[i], depth + 1);
        }
        return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    }
    return invalidArgument("'<' not supported between instances of '" + typeName(a) + "' and '" +
                           typeName(b) + "'");
}

Result<Value> fromJsonAt(const nlohmann::ordered_json& j, int depth) {
    if (depth > kMaxValueDepth) return invalidArgument("input is nested too deeply");
    switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
        auto u = j.get<uint64_t>();
        if (u > uint64_t(INT64_MAX)) return Value::floating(static_cast<double>(u));
        return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::floating(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
        std::vector<Value> items;
        items.reserve(j.size());
        for (const auto& e : j) {
            HEARTH_ASSIGN_OR_RETURN(Value v, fromJsonAt(e, depth + 1));
            items.push_back(std::move(v));
        }
        return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
        auto d = std::make_shared<DictData>();
        for (auto it = j.begin(); it != j.end(); ++it) {
            HEARTH_ASSIGN_OR_RETURN(Value v, fromJsonAt(it.value(), depth + 1));
            HEARTH_RETURN_IF_ERROR(d->set(Value::string(it.key()), std::move(v)));
        }
        return Value::dict(std::move(d));
    }
    case nlohmann::ordered_json::value_t::binary: return invalidArgument("binary JSON values are not supported");
    case nlohmann::ordered_json::value_t::discarded: return invalidArgument("discarded JSON value");
    }
    return invalidArgument("unknown JSON value");
}

} // namespace

std::string toStr(const Value& v) {
    if (v.isUndefined()) return {};
    if (v.isString()) return v.str();
    std::string out;
    reprInto(out, v, 0);
    return out;
}

std::string repr(const Value& v) {
    std::string out;
    reprInto(out, v, 0);
    return out;
}

bool equals(const Value& a, const Value& b) { return equalsAt(a, b, 0); }

Result<int> compareValues(const Value& a, const Value& b) { return compareAt(a, b, 0); }

bool dictKey(const Value& v, std::string& key) {
    switch (v.kind()) {
    case Kind::String: key = "s" + v.str(); return true;
    case Kind::Bool:
    case Kind::Int: key = "i" + std::to_string(v.intValue()); return true;
    case Kind::Float: {
        double f = v.numberValue();
        if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 9.0e18) {
            key = "i" + std::to_string(static_cast<int64_t>(f));
        } else {
            key = "f" + formatPyFloat(f);
        }
        return true;
    }
    case Kind::None: key = "n"; return true;
    case Kind::List: {
        if (v.flavor() != ListFlavor::Tuple) return false;
        std::string k = "t(";
        for (const Value& item : v.items()) {
            std::string sub;
            if (!dictKey(item, sub)) return false;
            k += std::to_string(sub.size()) + ":" + sub;
        }
        key = k + ")";
        return true;
    }
    default: return false;
    }
}

Result<Value> fromJson(const nlohmann::ordered_json& j) { return fromJsonAt(j, 0); }

Value makeDict(std::vector<std::pair<std::string, Value>> entries) {
    auto d = std::make_shared<DictData>();
    for (auto& [k, v] : entries) (void)d->set(Value::string(k), std::move(v));
    return Value::dict(std::move(d));
}

} // namespace hearth::tmpl
