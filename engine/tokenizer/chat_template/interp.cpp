// The template evaluator: executes statements (with Jinja's scoping), evaluates expressions, calls
// macros, and enforces the render limits (output size, loop iterations, steps, nesting).
#include "tokenizer/chat_template/interp.h"

#include <algorithm>
#include <ctime>

namespace hearth::tmpl {

namespace {

class MacroCallable : public CallableData {
public:
    explicit MacroCallable(Interp::MacroInfo info) : CallableData(info.name), m_info(std::move(info)) {}
    Result<Value> call(Interp& interp, CallArgs& args) const override { return interp.callMacro(m_info, args); }
    bool isMacro() const override { return true; }

private:
    Interp::MacroInfo m_info;
};

} // namespace

// ---- ArgReader ----------------------------------------------------------------------------------

ArgReader::ArgReader(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> names)
    : m_values(names.size()), m_present(names.size(), false) {
    const std::vector<std::string_view> list(names);
    for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < list.size()) {
            m_values[i] = args.positional[i];
            m_present[i] = true;
        } else {
            m_extra.push_back(args.positional[i]);
        }
    }
    for (const auto& [key, value] : args.keyword) {
        auto it = std::find(list.begin(), list.end(), key);
        if (it == list.end()) {
            m_status = invalidArgument(std::string(function) + "() got an unexpected keyword argument '" + key + "'");
            return;
        }
        const auto idx = static_cast<size_t>(it - list.begin());
        if (m_present[idx]) {
            m_status = invalidArgument(std::string(function) + "() got multiple values for argument '" + key + "'");
            return;
        }
        m_values[idx] = value;
        m_present[idx] = true;
    }
}

Status checkNoExtra(std::string_view function, const ArgReader& reader) {
    HEARTH_RETURN_IF_ERROR(reader.status());
    if (!reader.extra().empty())
        return invalidArgument(std::string(function) + "() got too many positional arguments");
    return Status::ok();
}

// ---- Interp -------------------------------------------------------------------------------------

Interp::Interp(const RenderOptions& options) : m_options(options), m_globals(makeGlobals()) {}

Interp::~Interp() {
    // Break reference cycles (macros capture scopes that hold them; namespaces can hold themselves)
    // iteratively, so no long chain is destroyed recursively.
    for (auto& ns : m_namespaces) ns->attrs.clear();
    for (auto& scope : m_capturedScopes) scope->clear();
    m_namespaces.clear();
    m_capturedScopes.clear();
}

DateTime Interp::now() const {
    if (m_options.clock) return m_options.clock();
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    DateTime d;
    d.year = tm.tm_year + 1900;
    d.month = tm.tm_mon + 1;
    d.day = tm.tm_mday;
    d.hour = tm.tm_hour;
    d.minute = tm.tm_min;
    d.second = tm.tm_sec;
    return d;
}

Status Interp::charge(uint64_t steps) {
    m_steps += steps;
    if (m_steps > m_options.limits.maxSteps)
        return outOfRange("template exceeded its work limit (" + std::to_string(m_options.limits.maxSteps) + " steps)");
    return Status::ok();
}

Status Interp::checkSize(size_t bytes) {
    if (bytes > m_options.limits.maxOutputBytes)
        return outOfRange("template built a string of " + std::to_string(bytes) + " bytes (limit " +
                          std::to_string(m_options.limits.maxOutputBytes) + ")");
    return charge(bytes / 64);
}

Status Interp::checkItems(size_t items) {
    if (items > m_options.limits.maxContainerItems)
        return outOfRange("template built a container of " + std::to_string(items) + " items (limit " +
                          std::to_string(m_options.limits.maxContainerItems) + ")");
    return charge(items);
}

Status Interp::raised(std::string message) {
    m_errorLocated = true;
    return invalidArgument(std::move(message));
}

Status Interp::locate(const Status& status, int line) {
    if (status.isOk() || m_errorLocated) return status;
    m_errorLocated = true;
    return Status(status.code(), "line " + std::to_string(line) + ": " + status.message());
}

Status Interp::emit(std::string& out, std::string_view text) {
    if (out.size() + text.size() > m_options.limits.maxOutputBytes)
        return outOfRange("template output exceeds " + std::to_string(m_options.limits.maxOutputBytes) + " bytes");
    out.append(text);
    return charge(text.size() / 64);
}

Result<std::string> Interp::render(const detail::Program& program, const nlohmann::ordered_json& variables) {
    if (!variables.is_object() && !variables.is_null())
        return invalidArgument("template variables must be a JSON object");
    auto vars = std::make_shared<Scope>(m_globals);
    if (variables.is_object()) {
        for (auto it = variables.begin(); it != variables.end(); ++it) {
            Result<Value> v = fromJson(it.value());
            if (!v) return v.status().withContext("variable '" + it.key() + "'");
            vars->set(it.key(), std::move(v).value());
        }
    }
    auto root = std::make_shared<Scope>(vars);
    m_capturedScopes.push_back(root);
    std::string out;
    Flow flow = Flow::Normal;
    HEARTH_RETURN_IF_ERROR(execBody(program.body, root, out, flow));
    return out;
}

// ---- statements ---------------------------------------------------------------------------------

Status Interp::execBody(const Body& body, const ScopePtr& scope, std::string& out, Flow& flow) {
    for (const StmtPtr& stmt : body) {
        HEARTH_RETURN_IF_ERROR(execStmt(*stmt, scope, out, flow));
        if (flow != Flow::Normal) return Status::ok();
    }
    return Status::ok();
}

Status Interp::assign(const Target& target, const Value& value, const ScopePtr& scope) {
    if (!target.attr.empty()) {
        const Value* ns = scope->lookup(target.name);
        if (!ns || !ns->isNamespace()) return invalidArgument("cannot assign attribute on non-namespace object");
        ns->namespaceData().set(target.attr, value);
        return Status::ok();
    }
    if (!target.isTuple) {
        scope->set(target.name, value);
        return Status::ok();
    }
    HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, iterateValue(value));
    if (items.size() < target.tuple.size())
        return invalidArgument("not enough values to unpack (expected " + std::to_string(target.tuple.size()) +
                               ", got " + std::to_string(items.size()) + ")");
    if (items.size() > target.tuple.size())
        return invalidArgument("too many values to unpack (expected " + std::to_string(target.tuple.size()) + ")");
    for (size_t i = 0; i < items.size(); ++i) HEARTH_RETURN_IF_ERROR(assign(target.tuple[i], items[i], scope));
    return Status::ok();
}

Status Interp::execStmt(const Stmt& stmt, const ScopePtr& scope, std::string& out, Flow& flow) {
    NestingGuard guard(*this);
    if (guard.exceeded()) return locate(outOfRange("template nesting too deep"), stmt.line);
    HEARTH_RETURN_IF_ERROR(locate(charge(1), stmt.line));
    Status st;
    switch (stmt.kind) {
    case StmtKind::Text: st = emit(out, static_cast<const TextStmt&>(stmt).text); break;
    case StmtKind::Output: {
        Result<Value> v = eval(*static_cast<const OutputStmt&>(stmt).expr, scope);
        if (!v) return v.status();
        st = emit(out, toStr(*v));
        break;
    }
    case StmtKind::If: {
        const auto& s = static_cast<const IfStmt&>(stmt);
        for (const auto& [test, body] : s.branches) {
            HEARTH_ASSIGN_OR_RETURN(Value cond, eval(*test, scope));
            if (truthy(cond)) return execBody(body, scope, out, flow);
        }
        return execBody(s.elseBody, scope, out, flow);
    }
    case StmtKind::For: return execFor(static_cast<const ForStmt&>(stmt), scope, out);
    case StmtKind::Set: {
        const auto& s = static_cast<const SetStmt&>(stmt);
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*s.value, scope));
        st = assign(s.target, v, scope);
        break;
    }
    case StmtKind::SetBlock: {
        const auto& s = static_cast<const SetBlockStmt&>(stmt);
        std::string captured;
        HEARTH_RETURN_IF_ERROR(execBody(s.body, scope, captured, flow));
        HEARTH_ASSIGN_OR_RETURN(Value v, applyFilterChain(s.filters, Value::string(std::move(captured)), scope));
        st = assign(s.target, v, scope);
        break;
    }
    case StmtKind::Macro: {
        const auto& s = static_cast<const MacroStmt&>(stmt);
        MacroInfo info{s.name, &s.params, &s.body, scope, s.usesVarargs, s.usesKwargs};
        m_capturedScopes.push_back(scope);
        scope->set(s.name, Value::callable(std::make_shared<MacroCallable>(std::move(info))));
        return Status::ok();
    }
    case StmtKind::CallBlock: {
        const auto& s = static_cast<const CallBlockStmt&>(stmt);
        MacroInfo info{"caller", &s.params, &s.body, scope, true, true};
        m_capturedScopes.push_back(scope);
        Value caller = Value::callable(std::make_shared<MacroCallable>(std::move(info)));
        HEARTH_ASSIGN_OR_RETURN(Value callee, eval(*s.call->callee, scope));
        CallArgs args;
        HEARTH_RETURN_IF_ERROR(evalArgs(s.call->args, scope, args));
        args.keyword.emplace_back("caller", caller);
        Result<Value> r = callValue(callee, args);
        if (!r) return locate(r.status(), stmt.line);
        st = emit(out, toStr(*r));
        break;
    }
    case StmtKind::FilterBlock: {
        const auto& s = static_cast<const FilterBlockStmt&>(stmt);
        std::string captured;
        HEARTH_RETURN_IF_ERROR(execBody(s.body, scope, captured, flow));
        HEARTH_ASSIGN_OR_RETURN(Value v, applyFilterChain(s.filters, Value::string(std::move(captured)), scope));
        st = emit(out, toStr(v));
        break;
    }
    case StmtKind::With: {
        const auto& s = static_cast<const WithStmt&>(stmt);
        auto inner = std::make_shared<Scope>(scope);
        for (const auto& [target, expr] : s.assignments) {
            HEARTH_ASSIGN_OR_RETURN(Value v, eval(*expr, scope));
            HEARTH_RETURN_IF_ERROR(locate(assign(target, v, inner), stmt.line));
        }
        return execBody(s.body, inner, out, flow);
    }
    case StmtKind::Break: flow = Flow::Break; return Status::ok();
    case StmtKind::Continue: flow = Flow::Continue; return Status::ok();
    case StmtKind::Scope: return execBody(static_cast<const ScopeStmt&>(stmt).body, scope, out, flow);
    }
    if (!st.isOk()) return locate(st, stmt.line);
    return Status::ok();
}

Status Interp::execFor(const ForStmt& stmt, const ScopePtr& scope, std::string& out) {
    Result<Value> iterable = eval(*stmt.iter, scope);
    if (!iterable) return iterable.status();
    Result<std::vector<Value>> all = iterateValue(*iterable);
    if (!all) return locate(all.status(), stmt.line);
    std::vector<Value> items = std::move(all).value();
    if (stmt.filter) {
        std::vector<Value> kept;
        for (Value& item : items) {
            auto probe = std::make_shared<Scope>(scope);
            HEARTH_RETURN_IF_ERROR(locate(assign(stmt.target, item, probe), stmt.line));
            HEARTH_ASSIGN_OR_RETURN(Value keep, eval(*stmt.filter, probe));
            if (truthy(keep)) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    auto loop = std::make_shared<LoopData>();
    auto list = std::make_shared<ListData>();
    list->items = std::move(items);
    loop->items = list;
    const Value loopValue = Value::loop(loop);
    const size_t n = list->items.size();
    for (size_t i = 0; i < n; ++i) {
        if (++m_iterations > m_options.limits.maxLoopIterations)
            return locate(outOfRange("template exceeded its loop limit (" +
                                     std::to_string(m_options.limits.maxLoopIterations) + " iterations)"),
                          stmt.line);
        loop->index0 = i;
        auto inner = std::make_shared<Scope>(scope);
        inner->set("loop", loopValue);
        HEARTH_RETURN_IF_ERROR(locate(assign(stmt.target, list->items[i], inner), stmt.line));
        Flow flow = Flow::Normal;
        HEARTH_RETURN_IF_ERROR(execBody(stmt.body, inner, out, flow));
        if (flow == Flow::Break) break;
    }
    if (n == 0) {
        auto inner = std::make_shared<Scope>(scope);
        Flow flow = Flow::Normal;
        HEARTH_RETURN_IF_ERROR(execBody(stmt.elseBody, inner, out, flow));
    }
    return Status::ok();
}

// ---- macros -------------------------------------------------------------------------------------

Result<Value> Interp::callMacro(const MacroInfo& macro, CallArgs& args) {
    if (m_callDepth >= m_options.limits.maxCallDepth)
        return outOfRange("macro calls nested deeper than " + std::to_string(m_options.limits.maxCallDepth));
    const auto& params = *macro.params;
    auto scope = std::make_shared<Scope>(macro.closure);
    std::vector<bool> bound(params.size(), false);
    std::vector<Value> varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < params.size()) {
            scope->set(params[i].name, args.positional[i]);
            bound[i] = true;
        } else if (macro.usesVarargs) {
            varargs.push_back(args.positional[i]);
        } else {
            return invalidArgument("macro '" + macro.name + "' takes not more than " + std::to_string(params.size()) +
                                   " argument(s)");
        }
    }
    auto kwargs = std::make_shared<DictData>();
    Value caller;
    for (auto& [key, value] : args.keyword) {
        bool matched = false;
        for (size_t i = 0; i < params.size(); ++i) {
            if (params[i].name != key) continue;
            if (bound[i]) return invalidArgument("macro '" + macro.name + "' got multiple values for argument '" + key + "'");
            scope->set(key, value);
            bound[i] = true;
            matched = true;
        }
        if (matched) continue;
        if (key == "caller") {
            caller = value;
        } else if (macro.usesKwargs) {
            HEARTH_RETURN_IF_ERROR(kwargs->set(Value::string(key), value));
        } else {
            return invalidArgument("macro '" + macro.name + "' takes no keyword argument '" + key + "'");
        }
    }
    for (size_t i = 0; i < params.size(); ++i) {
        if (bound[i]) continue;
        if (params[i].defaultValue) {
            HEARTH_ASSIGN_OR_RETURN(Value v, eval(*params[i].defaultValue, scope));
            scope->set(params[i].name, std::move(v));
        } else {
            scope->set(params[i].name, Value::undefined("parameter '" + params[i].name + "' was not provided"));
        }
    }
    scope->set("varargs", Value::tuple(std::move(varargs)));
    scope->set("kwargs", Value::dict(std::move(kwargs)));
    if (!caller.isUndefined()) scope->set("caller", caller);

    ++m_callDepth;
    std::string out;
    Flow flow = Flow::Normal;
    Status st = execBody(*macro.body, scope, out, flow);
    --m_callDepth;
    HEARTH_RETURN_IF_ERROR(st);
    return Value::string(std::move(out));
}

Result<Value> Interp::callValue(const Value& callee, CallArgs& args) {
    if (callee.isCallable()) {
        HEARTH_RETURN_IF_ERROR(charge(1 + args.positional.size() + args.keyword.size()));
        return callee.callableData().call(*this, args);
    }
    if (callee.isUndefined()) return undefinedError(callee);
    return invalidArgument("'" + typeName(callee) + "' object is not callable");
}

Result<Value> Interp::applyFilter(const std::string& name, const Value& input, CallArgs& args) {
    FilterFn fn = findFilter(name);
    if (!fn) return invalidArgument("no filter named '" + name + "'");
    return fn(*this, input, args);
}

Result<bool> Interp::applyTest(const std::string& name, const Value& input, CallArgs& args) {
    TestFn fn = findTest(name);
    if (!fn) return invalidArgument("no test named '" + name + "'");
    return fn(*this, input, args);
}

Result<Value> Interp::applyFilterChain(const std::vector<std::unique_ptr<FilterExpr>>& filters, Value input,
                                       const ScopePtr& scope) {
    for (const auto& f : filters) {
        CallArgs args;
        HEARTH_RETURN_IF_ERROR(evalArgs(f->args, scope, args));
        Result<Value> r = applyFilter(f->name, input, args);
        if (!r) return locate(r.status(), f->line);
        input = std::move(r).value();
    }
    return input;
}

// ---- expressions --------------------------------------------------------------------------------

Result<Value> Interp::eval(const Expr& expr, const ScopePtr& scope) {
    NestingGuard guard(*this);
    if (guard.exceeded()) return locate(outOfRange("template nesting too deep"), expr.line);
    Status st = charge(1);
    if (!st.isOk()) return locate(st, expr.line);
    Result<Value> r = evalInner(expr, scope);
    if (!r) return locate(r.status(), expr.line);
    return r;
}

Status Interp::evalArgs(const CallArgsExpr& in, const ScopePtr& scope, CallArgs& out) {
    for (const auto& e : in.positional) {
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*e, scope));
        out.positional.push_back(std::move(v));
    }
    if (in.starArgs) {
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*in.starArgs, scope));
        HEARTH_ASSIGN_OR_RETURN(std::vector<Value> items, iterateValue(v));
        for (Value& item : items) out.positional.push_back(std::move(item));
    }
    for (const auto& [key, e] : in.keyword) {
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*e, scope));
        out.keyword.emplace_back(key, std::move(v));
    }
    if (in.starKwargs) {
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*in.starKwargs, scope));
        if (!v.isDict()) return invalidArgument("argument after ** must be a mapping, not " + typeName(v));
        for (const auto& [k, val] : v.dictData().entries) {
            if (!k.isString()) return invalidArgument("keywords must be strings");
            out.keyword.emplace_back(k.str(), val);
        }
    }
    return Status::ok();
}

Result<Value> Interp::evalCompare(const CompareExpr& expr, const ScopePtr& scope) {
    HEARTH_ASSIGN_OR_RETURN(Value left, eval(*expr.first, scope));
    for (const auto& [op, operandExpr] : expr.rest) {
        HEARTH_ASSIGN_OR_RETURN(Value right, eval(*operandExpr, scope));
        bool ok = false;
        switch (op) {
        case CompareOp::Eq: ok = equals(left, right); break;
        case CompareOp::Ne: ok = !equals(left, right); break;
        case CompareOp::In:
        case CompareOp::NotIn: {
            HEARTH_ASSIGN_OR_RETURN(bool in, containsValue(right, left));
            ok = (op == CompareOp::In) == in;
            break;
        }
        default: {
            if (left.isUndefined()) return undefinedError(left);
            if (right.isUndefined()) return undefinedError(right);
            Result<int> c = compareValues(left, right);
            if (!c) {
                static const char* const kNames[] = {"==", "!=", "<", "<=", ">", ">="};
                std::string msg = c.status().message();
                const auto pos = msg.find("'<'");
                if (pos != std::string::npos) msg.replace(pos, 3, std::string("'") + kNames[static_cast<int>(op)] + "'");
                return invalidArgument(msg);
            }
            const int v = *c;
            if (v == 2) {
                ok = false;
            } else if (op == CompareOp::Lt) {
                ok = v < 0;
            } else if (op == CompareOp::Le) {
                ok = v <= 0;
            } else if (op == CompareOp::Gt) {
                ok = v > 0;
            } else {
                ok = v >= 0;
            }
        }
        }
        if (!ok) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

Result<Value> Interp::evalGetItem(const GetItemExpr& expr, const ScopePtr& scope) {
    HEARTH_ASSIGN_OR_RETURN(Value obj, eval(*expr.object, scope));
    if (expr.index->kind == ExprKind::Slice) {
        const auto& s = static_cast<const SliceExpr&>(*expr.index);
        Value start = Value::none(), stop = Value::none(), step = Value::none();
        if (s.start) {
            HEARTH_ASSIGN_OR_RETURN(start, eval(*s.start, scope));
        }
        if (s.stop) {
            HEARTH_ASSIGN_OR_RETURN(stop, eval(*s.stop, scope));
        }
        if (s.step) {
            HEARTH_ASSIGN_OR_RETURN(step, eval(*s.step, scope));
        }
        if (obj.isUndefined()) return undefinedError(obj);
        return sliceValue(*this, obj, start, stop, step);
    }
    HEARTH_ASSIGN_OR_RETURN(Value key, eval(*expr.index, scope));
    return getItem(obj, key);
}

Result<Value> Interp::evalInner(const Expr& expr, const ScopePtr& scope) {
    switch (expr.kind) {
    case ExprKind::Literal: return static_cast<const LiteralExpr&>(expr).value;
    case ExprKind::Name: {
        const auto& name = static_cast<const NameExpr&>(expr).name;
        if (const Value* v = scope->lookup(name)) return *v;
        return Value::undefined("'" + name + "' is undefined");
    }
    case ExprKind::List: {
        const auto& e = static_cast<const ListExpr&>(expr);
        std::vector<Value> items;
        items.reserve(e.items.size());
        for (const auto& item : e.items) {
            HEARTH_ASSIGN_OR_RETURN(Value v, eval(*item, scope));
            items.push_back(std::move(v));
        }
        Value list = Value::list(std::move(items), e.isTuple ? ListFlavor::Tuple : ListFlavor::List);
        if (list.depth() > kMaxValueDepth) return outOfRange("template built a value nested too deeply");
        return list;
    }
    case ExprKind::Dict: {
        const auto& e = static_cast<const DictExpr&>(expr);
        auto d = std::make_shared<DictData>();
        for (const auto& [k, v] : e.items) {
            HEARTH_ASSIGN_OR_RETURN(Value key, eval(*k, scope));
            HEARTH_ASSIGN_OR_RETURN(Value value, eval(*v, scope));
            HEARTH_RETURN_IF_ERROR(d->set(std::move(key), std::move(value)));
        }
        if (d->depth > kMaxValueDepth) return outOfRange("template built a value nested too deeply");
        return Value::dict(std::move(d));
    }
    case ExprKind::Unary: {
        const auto& e = static_cast<const UnaryExpr&>(expr);
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*e.operand, scope));
        return unaryOp(e.op, v);
    }
    case ExprKind::Binary: {
        const auto& e = static_cast<const BinaryExpr&>(expr);
        HEARTH_ASSIGN_OR_RETURN(Value left, eval(*e.left, scope));
        if (e.op == BinaryOp::And) {
            if (!truthy(left)) return left;
            return eval(*e.right, scope);
        }
        if (e.op == BinaryOp::Or) {
            if (truthy(left)) return left;
            return eval(*e.right, scope);
        }
        HEARTH_ASSIGN_OR_RETURN(Value right, eval(*e.right, scope));
        return binaryOp(*this, e.op, left, right);
    }
    case ExprKind::Compare: return evalCompare(static_cast<const CompareExpr&>(expr), scope);
    case ExprKind::Cond: {
        const auto& e = static_cast<const CondExpr&>(expr);
        HEARTH_ASSIGN_OR_RETURN(Value test, eval(*e.test, scope));
        if (truthy(test)) return eval(*e.then, scope);
        if (e.otherwise) return eval(*e.otherwise, scope);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                " evaluated to false and no else section was defined");
    }
    case ExprKind::GetAttr: {
        const auto& e = static_cast<const GetAttrExpr&>(expr);
        HEARTH_ASSIGN_OR_RETURN(Value obj, eval(*e.object, scope));
        return getAttribute(obj, e.name);
    }
    case ExprKind::GetItem: return evalGetItem(static_cast<const GetItemExpr&>(expr), scope);
    case ExprKind::Slice: return invalidArgument("a slice is only allowed inside []");
    case ExprKind::Call: {
        const auto& e = static_cast<const CallExpr&>(expr);
        HEARTH_ASSIGN_OR_RETURN(Value callee, eval(*e.callee, scope));
        CallArgs args;
        HEARTH_RETURN_IF_ERROR(evalArgs(e.args, scope, args));
        return callValue(callee, args);
    }
    case ExprKind::Filter: {
        const auto& e = static_cast<const FilterExpr&>(expr);
        Value input;
        if (e.input) {
            HEARTH_ASSIGN_OR_RETURN(input, eval(*e.input, scope));
        }
        CallArgs args;
        HEARTH_RETURN_IF_ERROR(evalArgs(e.args, scope, args));
        return applyFilter(e.name, input, args);
    }
    case ExprKind::Test: {
        const auto& e = static_cast<const TestExpr&>(expr);
        HEARTH_ASSIGN_OR_RETURN(Value input, eval(*e.input, scope));
        CallArgs args;
        HEARTH_RETURN_IF_ERROR(evalArgs(e.args, scope, args));
        HEARTH_ASSIGN_OR_RETURN(bool r, applyTest(e.name, input, args));
        return Value::boolean(r);
    }
    }
    return internalError("unknown expression kind");
}

} // namespace hearth::tmpl
