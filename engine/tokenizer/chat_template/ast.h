// The syntax tree of a parsed template: expressions and statements, each with its source line.
#pragma once

#include "tokenizer/chat_template/value.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hearth::tmpl {

// ---- expressions --------------------------------------------------------------------------------

enum class ExprKind : uint8_t {
    Literal,   // a constant
    Name,      // a variable
    List,      // [a, b] or (a, b)
    Dict,      // {k: v}
    Unary,     // not x, -x, +x
    Binary,    // arithmetic, ~, and, or
    Compare,   // a == b < c, in, not in
    Cond,      // a if c else b
    GetAttr,   // a.b
    GetItem,   // a[b]
    Slice,     // a[b:c:d] (only as GetItem's index)
    Call,      // f(args)
    Filter,    // a | f(args)
    Test,      // a is t(args)
};

enum class UnaryOp : uint8_t { Not, Neg, Pos };
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, And, Or };
enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct CallArgsExpr {
    std::vector<ExprPtr> positional;
    std::vector<std::pair<std::string, ExprPtr>> keyword;
    ExprPtr starArgs;   // *args
    ExprPtr starKwargs; // **kwargs
};

struct Expr {
    Expr(ExprKind k, int l) : kind(k), line(l) {}
    virtual ~Expr() = default;
    ExprKind kind;
    int line;
    int depth = 1; // height of this subtree
};

struct LiteralExpr : Expr {
    LiteralExpr(int l, Value v) : Expr(ExprKind::Literal, l), value(std::move(v)) {}
    Value value;
};
struct NameExpr : Expr {
    NameExpr(int l, std::string n) : Expr(ExprKind::Name, l), name(std::move(n)) {}
    std::string name;
};
struct ListExpr : Expr {
    ListExpr(int l, bool t) : Expr(ExprKind::List, l), isTuple(t) {}
    std::vector<ExprPtr> items;
    bool isTuple;
};
struct DictExpr : Expr {
    explicit DictExpr(int l) : Expr(ExprKind::Dict, l) {}
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct UnaryExpr : Expr {
    UnaryExpr(int l, UnaryOp o, ExprPtr e) : Expr(ExprKind::Unary, l), op(o), operand(std::move(e)) {}
    UnaryOp op;
    ExprPtr operand;
};
struct BinaryExpr : Expr {
    BinaryExpr(int l, BinaryOp o, ExprPtr a, ExprPtr b)
        : Expr(ExprKind::Binary, l), op(o), left(std::move(a)), right(std::move(b)) {}
    BinaryOp op;
    ExprPtr left;
    ExprPtr right;
};
struct CompareExpr : Expr {
    explicit CompareExpr(int l) : Expr(ExprKind::Compare, l) {}
    ExprPtr first;
    std::vector<std::pair<CompareOp, ExprPtr>> rest;
};
struct CondExpr : Expr {
    explicit CondExpr(int l) : Expr(ExprKind::Cond, l) {}
    ExprPtr test;
    ExprPtr then;
    ExprPtr otherwise; // may be null: undefined when the test fails
};
struct GetAttrExpr : Expr {
    GetAttrExpr(int l, ExprPtr o, std::string n)
        : Expr(ExprKind::GetAttr, l), object(std::move(o)), name(std::move(n)) {}
    ExprPtr object;
    std::string name;
};
struct GetItemExpr : Expr {
    GetItemExpr(int l, ExprPtr o, ExprPtr i)
        : Expr(ExprKind::GetItem, l), object(std::move(o)), index(std::move(i)) {}
    ExprPtr object;
    ExprPtr index;
};
struct SliceExpr : Expr {
    explicit SliceExpr(int l) : Expr(ExprKind::Slice, l) {}
    ExprPtr start, stop, step; // each may be null
};
struct CallExpr : Expr {
    explicit CallExpr(int l) : Expr(ExprKind::Call, l) {}
    ExprPtr callee;
    CallArgsExpr args;
};
struct FilterExpr : Expr {
    explicit FilterExpr(int l) : Expr(ExprKind::Filter, l) {}
    ExprPtr input; // null inside a {% filter %} block header
    std::string name;
    CallArgsExpr args;
};
struct TestExpr : Expr {
    explicit TestExpr(int l) : Expr(ExprKind::Test, l) {}
    ExprPtr input;
    std::string name;
    CallArgsExpr args;
};

// ---- statements ---------------------------------------------------------------------------------

enum class StmtKind : uint8_t {
    Text, Output, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, With, Break, Continue,
    Scope, // generation tag: renders its body
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    Stmt(StmtKind k, int l) : kind(k), line(l) {}
    virtual ~Stmt() = default;
    StmtKind kind;
    int line;
};

// An assignment target: a name, a tuple of targets, or namespace.attr.
struct Target {
    std::string name;       // plain name, or the namespace variable when attr is set
    std::string attr;       // for `ns.attr`
    std::vector<Target> tuple;
    bool isTuple = false;
};

struct TextStmt : Stmt {
    TextStmt(int l, std::string t) : Stmt(StmtKind::Text, l), text(std::move(t)) {}
    std::string text;
};
struct OutputStmt : Stmt {
    OutputStmt(int l, ExprPtr e) : Stmt(StmtKind::Output, l), expr(std::move(e)) {}
    ExprPtr expr;
};
struct IfStmt : Stmt {
    explicit IfStmt(int l) : Stmt(StmtKind::If, l) {}
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body elseBody;
};
struct ForStmt : Stmt {
    explicit ForStmt(int l) : Stmt(StmtKind::For, l) {}
    Target target;
    ExprPtr iter;
    ExprPtr filter; // may be null
    Body body;
    Body elseBody;
};
struct SetStmt : Stmt {
    explicit SetStmt(int l) : Stmt(StmtKind::Set, l) {}
    Target target;
    ExprPtr value;
};
struct SetBlockStmt : Stmt {
    explicit SetBlockStmt(int l) : Stmt(StmtKind::SetBlock, l) {}
    Target target;
    std::vector<std::unique_ptr<FilterExpr>> filters; // applied to the captured text
    Body body;
};
struct MacroParam {
    std::string name;
    ExprPtr defaultValue; // may be null
};
struct MacroStmt : Stmt {
    explicit MacroStmt(int l) : Stmt(StmtKind::Macro, l) {}
    std::string name;
    std::vector<MacroParam> params;
    Body body;
    bool usesCaller = false;  // the body mentions `caller`
    bool usesVarargs = false; // ... `varargs` (extra positional arguments are accepted)
    bool usesKwargs = false;  // ... `kwargs` (extra keyword arguments are accepted)
};
struct CallBlockStmt : Stmt {
    explicit CallBlockStmt(int l) : Stmt(StmtKind::CallBlock, l) {}
    std::vector<MacroParam> params; // of the caller
    std::unique_ptr<CallExpr> call;
    Body body;
};
struct FilterBlockStmt : Stmt {
    explicit FilterBlockStmt(int l) : Stmt(StmtKind::FilterBlock, l) {}
    std::vector<std::unique_ptr<FilterExpr>> filters;
    Body body;
};
struct WithStmt : Stmt {
    explicit WithStmt(int l) : Stmt(StmtKind::With, l) {}
    std::vector<std::pair<Target, ExprPtr>> assignments;
    Body body;
};
struct ScopeStmt : Stmt {
    explicit ScopeStmt(int l) : Stmt(StmtKind::Scope, l) {}
    Body body;
};
struct LoopControlStmt : Stmt {
    LoopControlStmt(int l, bool isBreak) : Stmt(isBreak ? StmtKind::Break : StmtKind::Continue, l) {}
};

} // namespace hearth::tmpl
