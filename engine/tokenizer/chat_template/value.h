// Values of the template interpreter with Python semantics: none, undefined, bool, int, float,
// str, list/tuple/generator, insertion-ordered dict, callables, namespaces and loop objects.
#pragma once

#include "hearth/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace hearth::tmpl {

class Value;
class Interp;
struct CallArgs;

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Callable, Namespace, Loop };

// A list prints as [..], a tuple as (..); a generator (what select/map/items return in Jinja) is
// always truthy, has no length and can be iterated only once; the dict views (dict.items(),
// keys(), values()) iterate and have a length but cannot be indexed.
enum class ListFlavor : uint8_t { List, Tuple, Generator, ItemsView, KeysView, ValuesView };

// Deepest nesting of lists/dicts a template may build or receive as input.
inline constexpr int kMaxValueDepth = 512;

struct ListData {
    std::vector<Value> items;
    ListFlavor flavor = ListFlavor::List;
    int depth = 1;
    mutable bool consumed = false; // generators only
};

struct DictData {
    std::vector<std::pair<Value, Value>> entries;
    std::unordered_map<std::string, size_t> index; // hash key -> position in entries
    int depth = 1;

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    // Inserts or replaces (keeping the original position). Fails for unhashable keys.
    Status set(Value key, Value value);
};

// Something callable: a builtin, a bound method, a macro, a loop helper.
struct CallableData {
    explicit CallableData(std::string n) : name(std::move(n)) {}
    virtual ~CallableData() = default;
    virtual Result<Value> call(Interp& interp, CallArgs& args) const = 0;
    virtual bool isMacro() const { return false; }
    std::string name;
};

// namespace(): the one mutable object templates get (`set ns.attr = ...`).
struct NamespaceData {
    std::vector<std::pair<std::string, Value>> attrs;
    const Value* find(std::string_view name) const;
    void set(const std::string& name, Value value);
};

// The `loop` variable of a for statement; attributes are computed from the position.
struct LoopData {
    std::shared_ptr<const ListData> items;
    size_t index0 = 0;
    int depth0 = 0;
    std::vector<Value> changedLast; // arguments of the last loop.changed() call
    bool changedSeen = false;
};

class Value {
public:
    Value() = default; // undefined

    static Value undefined(std::string hint = {});
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value floating(double f);
    static Value string(std::string s);
    // A "safe" string (markupsafe.Markup): made by |safe and |escape; `+`, `%` and its methods
    // HTML-escape their plain-string operands.
    static Value markup(std::string s);
    static Value list(std::vector<Value> items, ListFlavor flavor = ListFlavor::List);
    static Value tuple(std::vector<Value> items) { return list(std::move(items), ListFlavor::Tuple); }
    static Value dict(std::shared_ptr<const DictData> d);
    static Value callable(std::shared_ptr<const CallableData> c);
    static Value ns(std::shared_ptr<NamespaceData> n);
    static Value loop(std::shared_ptr<LoopData> l);

    Kind kind() const { return m_kind; }
    bool isUndefined() const { return m_kind == Kind::Undefined; }
    bool isNone() const { return m_kind == Kind::None; }
    bool isBool() const { return m_kind == Kind::Bool; }
    bool isInt() const { return m_kind == Kind::Int; }
    bool isFloat() const { return m_kind == Kind::Float; }
    bool isNumber() const { return m_kind == Kind::Int || m_kind == Kind::Float || m_kind == Kind::Bool; }
    bool isString() const { return m_kind == Kind::String; }
    bool isMarkup() const { return m_kind == Kind::String && m_markup; }
    bool isList() const { return m_kind == Kind::List; }
    bool isDict() const { return m_kind == Kind::Dict; }
    bool isCallable() const { return m_kind == Kind::Callable; }
    bool isNamespace() const { return m_kind == Kind::Namespace; }
    bool isLoop() const { return m_kind == Kind::Loop; }

    bool boolValue() const { return std::get<bool>(m_data); }
    int64_t intValue() const; // Int or Bool
    double numberValue() const; // Int, Float or Bool as a double
    const std::string& str() const;
    const std::string& undefinedHint() const; // "" when none was given
    const ListData& listData() const { return *std::get<ListPtr>(m_data); }
    const std::shared_ptr<const ListData>& listPtr() const { return std::get<ListPtr>(m_data); }
    const std::vector<Value>& items() const { return listData().items; }
    ListFlavor flavor() const { return listData().flavor; }
    const DictData& dictData() const { return *std::get<DictPtr>(m_data); }
    const CallableData& callableData() const { return *std::get<CallablePtr>(m_data); }
    NamespaceData& namespaceData() const { return *std::get<NamespacePtr>(m_data); }
    const std::shared_ptr<NamespaceData>& namespacePtr() const { return std::get<NamespacePtr>(m_data); }
    LoopData& loopData() const { return *std::get<LoopPtr>(m_data); }
    const std::shared_ptr<LoopData>& loopPtr() const { return std::get<LoopPtr>(m_data); }

    // Nesting depth: 0 for scalars, 1 + deepest item for lists and dicts.
    int depth() const;
    // Identity for Python's `is` (same object, or equal scalars of the same kind).
    bool sameAs(const Value& other) const;

private:
    using StrPtr = std::shared_ptr<const std::string>;
    using ListPtr = std::shared_ptr<const ListData>;
    using DictPtr = std::shared_ptr<const DictData>;
    using CallablePtr = std::shared_ptr<const CallableData>;
    using NamespacePtr = std::shared_ptr<NamespaceData>;
    using LoopPtr = std::shared_ptr<LoopData>;

    Kind m_kind = Kind::Undefined;
    bool m_markup = false;
    std::variant<std::monostate, bool, int64_t, double, StrPtr, ListPtr, DictPtr, CallablePtr,
                 NamespacePtr, LoopPtr>
        m_data;
};

// A list or tuple: indexable, sliceable, concatenable (not a generator or a dict view).
inline bool isSequenceList(const Value& v) {
    return v.isList() && (v.flavor() == ListFlavor::List || v.flavor() == ListFlavor::Tuple);
}

// Arguments of one call, already evaluated.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// markupsafe.escape of text: & < > " ' become entities.
std::string htmlEscape(std::string_view text);
// The same string value as Markup (or plain again when `markup` is false).
Value withMarkup(const Value& v, bool markup);

// Python type name for messages: "NoneType", "str", "dict", ...
std::string typeName(const Value& v);
// Python bool(v).
bool truthy(const Value& v);
// Python str(v) (what {{ v }} prints): undefined is "", none is "None".
std::string toStr(const Value& v);
// Python repr(v), as str() of a container shows its items.
std::string repr(const Value& v);
// Python ==, across kinds (1 == 1.0 == True, dicts compared without order).
bool equals(const Value& a, const Value& b);
// Python <, <=, >, >= : -1, 0, 1, or an error for kinds that do not order.
Result<int> compareValues(const Value& a, const Value& b);
// The key a value has in a dict (numbers equal in Python share a key); empty when unhashable.
bool dictKey(const Value& v, std::string& key);

// JSON input -> Value (objects keep their key order).
Result<Value> fromJson(const nlohmann::ordered_json& j);

// Builds a dict from string keys in order.
Value makeDict(std::vector<std::pair<std::string, Value>> entries);

} // namespace hearth::tmpl
