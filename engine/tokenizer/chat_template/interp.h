// The template evaluator's shared interface: scopes, the interpreter (statements, expressions,
// limits), and the builtin filters, tests, methods, operators and globals it dispatches to.
#pragma once

#include "hearth/chat_template.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/parser.h"
#include "tokenizer/chat_template/value.h"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hearth::tmpl {

// Variables of one frame; lookups walk to the parent.
class Scope {
public:
    explicit Scope(std::shared_ptr<Scope> parent) : m_parent(std::move(parent)) {}
    const Value* lookup(const std::string& name) const {
        for (const Scope* s = this; s; s = s->m_parent.get()) {
            auto it = s->m_vars.find(name);
            if (it != s->m_vars.end()) return &it->second;
        }
        return nullptr;
    }
    void set(const std::string& name, Value v) { m_vars[name] = std::move(v); }
    void clear() {
        m_vars.clear();
        m_parent.reset();
    }

private:
    std::shared_ptr<Scope> m_parent;
    std::unordered_map<std::string, Value> m_vars;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

class Interp {
public:
    explicit Interp(const RenderOptions& options);
    ~Interp();
    Interp(const Interp&) = delete;
    Interp& operator=(const Interp&) = delete;

    Result<std::string> render(const detail::Program& program, const nlohmann::ordered_json& variables);

    // ---- services for builtins ----
    Result<Value> callValue(const Value& callee, CallArgs& args);
    Result<Value> applyFilter(const std::string& name, const Value& input, CallArgs& args);
    Result<bool> applyTest(const std::string& name, const Value& input, CallArgs& args);
    // Counts work; fails once the step budget is spent.
    Status charge(uint64_t steps);
    // Refuses strings and lists larger than the limits (also charges the bytes as work).
    Status checkSize(size_t bytes);
    Status checkItems(size_t items);
    const RenderLimits& limits() const { return m_options.limits; }
    DateTime now() const;
    // Namespaces are tracked so that cycles through them are broken after the render.
    void track(const std::shared_ptr<NamespaceData>& ns) { m_namespaces.push_back(ns); }
    // Marks the error as carrying its final message (raise_exception): no "line N:" prefix.
    Status raised(std::string message);

    // Macro support (used by MacroCallable).
    struct MacroInfo {
        std::string name;
        const std::vector<MacroParam>* params = nullptr;
        const Body* body = nullptr;
        ScopePtr closure;
        bool usesVarargs = false;
        bool usesKwargs = false;
    };
    Result<Value> callMacro(const MacroInfo& macro, CallArgs& args);

private:
    friend class NestingGuard;
    Status execBody(const Body& body, const ScopePtr& scope, std::string& out, Flow& flow);
    Status execStmt(const Stmt& stmt, const ScopePtr& scope, std::string& out, Flow& flow);
    Status execFor(const ForStmt& stmt, const ScopePtr& scope, std::string& out);
    Status assign(const Target& target, const Value& value, const ScopePtr& scope);
    Status emit(std::string& out, std::string_view text);

    Result<Value> eval(const Expr& expr, const ScopePtr& scope);
    Result<Value> evalInner(const Expr& expr, const ScopePtr& scope);
    Result<Value> evalCompare(const CompareExpr& expr, const ScopePtr& scope);
    Result<Value> evalGetItem(const GetItemExpr& expr, const ScopePtr& scope);
    Status evalArgs(const CallArgsExpr& in, const ScopePtr& scope, CallArgs& out);
    Result<Value> applyFilterChain(const std::vector<std::unique_ptr<FilterExpr>>& filters, Value input,
                                   const ScopePtr& scope);
    Status locate(const Status& status, int line);

    const RenderOptions& m_options;
    uint64_t m_steps = 0;
    uint64_t m_iterations = 0;
    int m_callDepth = 0;
    int m_nesting = 0;
    bool m_errorLocated = false;
    std::vector<std::shared_ptr<NamespaceData>> m_namespaces;
    std::vector<ScopePtr> m_capturedScopes;
    ScopePtr m_globals;
};

// RAII guard for the evaluator's nesting depth.
class NestingGuard {
public:
    explicit NestingGuard(Interp& interp) : m_interp(interp) { ++m_interp.m_nesting; }
    ~NestingGuard() { --m_interp.m_nesting; }
    bool exceeded() const { return m_interp.m_nesting > m_interp.limits().maxNestingDepth; }

private:
    Interp& m_interp;
};

// ---- argument binding for builtins ----

// Reads a builtin's arguments by position or name, Python style.
class ArgReader {
public:
    ArgReader(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> names);
    const Status& status() const { return m_status; }
    bool has(size_t i) const { return i < m_values.size() && m_present[i]; }
    const Value& get(size_t i) const { return m_values[i]; }
    Value getOr(size_t i, Value fallback) const { return has(i) ? m_values[i] : std::move(fallback); }
    // Positional arguments beyond the named ones (for *args builtins).
    const std::vector<Value>& extra() const { return m_extra; }

private:
    Status m_status;
    std::vector<Value> m_values;
    std::vector<bool> m_present;
    std::vector<Value> m_extra;
};
// Like ArgReader, but extra positional arguments are an error.
Status checkNoExtra(std::string_view function, const ArgReader& reader);

// ---- builtins (filters.cpp, tests.cpp, methods.cpp, operators.cpp, globals.cpp) ----

using FilterFn = Result<Value> (*)(Interp&, const Value& input, CallArgs& args);
using TestFn = Result<bool> (*)(Interp&, const Value& input, CallArgs& args);
FilterFn findFilter(std::string_view name);
TestFn findTest(std::string_view name);

// Methods of str, dict, list and tuple as bound callables (methods.cpp). True when `name` is one;
// a mutating method (list.append, dict.update, ...) yields an undefined that refuses to be called.
bool findMethod(const Value& self, const std::string& name, Value& out);
// `loop.index`, `loop.first`, `loop.cycle`, ... (methods.cpp).
Value loopAttribute(const Value& loop, const std::string& name);

// Attribute access `obj.name`: methods first, then items (undefined when absent).
Result<Value> getAttribute(const Value& obj, const std::string& name);
// Item access `obj[key]`: items first, then attributes for string keys (undefined when absent).
Result<Value> getItem(const Value& obj, const Value& key);
// obj[start:stop:step] for lists, tuples and strings.
Result<Value> sliceValue(Interp& interp, const Value& obj, const Value& start, const Value& stop, const Value& step);

// The error an undefined value raises when it is used (its hint, or a generic message).
Status undefinedError(const Value& undefinedValue);
Result<Value> binaryOp(Interp& interp, BinaryOp op, const Value& a, const Value& b);
Result<Value> unaryOp(UnaryOp op, const Value& a);
// Python `item in container`.
Result<bool> containsValue(const Value& container, const Value& item);
// Items of an iterable: list/tuple items, generator items (consumed), dict keys, string
// characters; undefined iterates as empty. Errors for none, numbers and other objects.
Result<std::vector<Value>> iterateValue(const Value& v);
// Python len(); errors for kinds without a length.
Result<int64_t> lengthOf(const Value& v);

// Python `%` formatting and str.format.
// With `escape` (a Markup format string) the arguments are HTML-escaped as markupsafe does.
Result<std::string> percentFormat(Interp& interp, const std::string& format, const Value& args, bool escape = false);
Result<std::string> braceFormat(Interp& interp, const std::string& format, const CallArgs& args, bool escape = false);

// json.dumps for tojson.
struct JsonDumpOptions {
    bool ensureAscii = false;
    int indent = -1;           // < 0: one line
    std::string indentString;  // used when set (indent given as a string)
    bool hasIndentString = false;
    std::string itemSeparator; // default ", " or "," with indent
    std::string keySeparator = ": ";
    bool customSeparators = false;
    bool sortKeys = false;
};
Result<std::string> jsonDumps(const Value& v, const JsonDumpOptions& options);

// Global functions and their table.
ScopePtr makeGlobals();
std::string formatStrftime(const std::string& format, const DateTime& t);

} // namespace hearth::tmpl
