// The template parser: a recursive-descent parser following Jinja2's grammar (precedence from
// `if/else` down to filters and postfix operators), with statement and expression depth limits.
#include "tokenizer/chat_template/parser.h"

#include "tokenizer/chat_template/lexer.h"

#include <algorithm>
#include <initializer_list>

namespace hearth::tmpl {

namespace {

class Parser {
public:
    Parser(std::vector<Token> tokens, int maxDepth) : m_tokens(std::move(tokens)), m_maxDepth(maxDepth) {}

    Result<Body> parseTemplateBody() {
        HEARTH_ASSIGN_OR_RETURN(Body body, subparse({}));
        if (cur().type != TokenType::Eof) return fail(cur().line, "unexpected " + describe(cur()));
        return body;
    }

private:
    // ---- token stream ----
    const Token& cur() const { return m_tokens[m_pos]; }
    const Token& look() const { return m_tokens[std::min(m_pos + 1, m_tokens.size() - 1)]; }
    void advance() {
        if (m_pos + 1 < m_tokens.size()) ++m_pos;
    }
    bool isName(std::string_view name) const { return cur().type == TokenType::Name && cur().text == name; }
    bool isOp(std::string_view op) const { return cur().type == TokenType::Operator && cur().text == op; }
    bool skipName(std::string_view name) {
        if (!isName(name)) return false;
        advance();
        return true;
    }
    bool skipOp(std::string_view op) {
        if (!isOp(op)) return false;
        advance();
        return true;
    }
    static std::string describe(const Token& t) {
        switch (t.type) {
        case TokenType::Data: return "template data";
        case TokenType::BlockBegin: return "begin of statement block";
        case TokenType::BlockEnd: return "end of statement block";
        case TokenType::VariableBegin: return "begin of print statement";
        case TokenType::VariableEnd: return "end of print statement";
        case TokenType::Name: return "'" + t.text + "'";
        case TokenType::String: return "string";
        case TokenType::Integer: return "integer";
        case TokenType::Float: return "float";
        case TokenType::Operator: return "'" + t.text + "'";
        case TokenType::Eof: return "end of template";
        }
        return "token";
    }
    static Status fail(int line, const std::string& msg) {
        return invalidFormat("line " + std::to_string(line) + ": " + msg);
    }
    Status expectOp(std::string_view op) {
        if (skipOp(op)) return Status::ok();
        return fail(cur().line, "expected '" + std::string(op) + "', got " + describe(cur()));
    }
    Status expectType(TokenType type, const char* what) {
        if (cur().type == type) {
            advance();
            return Status::ok();
        }
        return fail(cur().line, std::string("expected ") + what + ", got " + describe(cur()));
    }
    Result<std::string> expectName() {
        if (cur().type != TokenType::Name) return fail(cur().line, "expected a name, got " + describe(cur()));
        std::string n = cur().text;
        advance();
        return n;
    }

    // Depth guard for recursive descent.
    struct DepthGuard {
        explicit DepthGuard(Parser& p) : parser(p) { ++parser.m_depth; }
        ~DepthGuard() { --parser.m_depth; }
        Parser& parser;
    };
    Status checkDepth() const {
        if (m_depth > m_maxDepth) return fail(cur().line, "template nested too deeply");
        return Status::ok();
    }
    // Expression height limit: left-leaning chains (a+b+c+...) are built iteratively.
    template <typename T> Result<ExprPtr> finish(std::unique_ptr<T> node, std::initializer_list<const Expr*> children) {
        int d = 0;
        for (const Expr* c : children)
            if (c) d = std::max(d, c->depth);
        node->depth = d + 1;
        if (node->depth > 4 * m_maxDepth) return fail(node->line, "expression nested too deeply");
        return ExprPtr(std::move(node));
    }
    Status setArgsDepth(Expr& node, const CallArgsExpr& args, int base) {
        int d = base;
        for (const auto& a : args.positional) d = std::max(d, a->depth);
        for (const auto& [k, a] : args.keyword) d = std::max(d, a->depth);
        if (args.starArgs) d = std::max(d, args.starArgs->depth);
        if (args.starKwargs) d = std::max(d, args.starKwargs->depth);
        node.depth = d + 1;
        if (node.depth > 4 * m_maxDepth) return fail(node.line, "expression nested too deeply");
        return Status::ok();
    }

    // ---- expressions ----
    bool isTupleEnd(std::initializer_list<std::string_view> extraEnd) const {
        if (cur().type == TokenType::VariableEnd || cur().type == TokenType::BlockEnd ||
            cur().type == TokenType::Eof || isOp(")"))
            return true;
        for (auto n : extraEnd)
            if (isName(n)) return true;
        return false;
    }

    enum class TupleMode { Simplified, NoCondExpr, Full };

    Result<ExprPtr> parseTuple(TupleMode mode, std::initializer_list<std::string_view> extraEnd = {},
                               bool explicitParens = false) {
        const int line = cur().line;
        std::vector<ExprPtr> args;
        bool isTuple = false;
        while (true) {
            if (!args.empty()) HEARTH_RETURN_IF_ERROR(expectOp(","));
            if (isTupleEnd(extraEnd)) break;
            Result<ExprPtr> e = mode == TupleMode::Simplified ? parsePrimary()
                                : mode == TupleMode::NoCondExpr ? parseOr()
                                                                : parseExpression();
            if (!e) return e.status();
            args.push_back(std::move(e).value());
            if (isOp(",")) {
                isTuple = true;
            } else {
                break;
            }
        }
        if (!isTuple) {
            if (!args.empty()) return std::move(args[0]);
            if (!explicitParens) return fail(cur().line, "expected an expression, got " + describe(cur()));
        }
        auto node = std::make_unique<ListExpr>(line, true);
        int d = 0;
        for (const auto& a : args) d = std::max(d, a->depth);
        node->items = std::move(args);
        node->depth = d + 1;
        return ExprPtr(std::move(node));
    }

    Result<ExprPtr> parseExpression() { return parseCondExpr(); }

    Result<ExprPtr> parseCondExpr() {
        DepthGuard guard(*this);
        HEARTH_RETURN_IF_ERROR(checkDepth());
        HEARTH_ASSIGN_OR_RETURN(ExprPtr expr, parseOr());
        while (isName("if")) {
            const int line = cur().line;
            advance();
            auto node = std::make_unique<CondExpr>(line);
            HEARTH_ASSIGN_OR_RETURN(node->test, parseOr());
            if (skipName("else")) {
                HEARTH_ASSIGN_OR_RETURN(node->otherwise, parseCondExpr());
            }
            node->then = std::move(expr);
            const Expr* t = node->test.get();
            const Expr* a = node->then.get();
            const Expr* b = node->otherwise.get();
            HEARTH_ASSIGN_OR_RETURN(expr, finish(std::move(node), {t, a, b}));
        }
        return expr;
    }

    Result<ExprPtr> parseBinaryChain(Result<ExprPtr> (Parser::*sub)(), std::initializer_list<std::pair<std::string_view, BinaryOp>> ops, bool nameOps) {
        HEARTH_ASSIGN_OR_RETURN(ExprPtr left, (this->*sub)());
        while (true) {
            const BinaryOp* op = nullptr;
            for (const auto& [text, o] : ops) {
                if (nameOps ? isName(text) : isOp(text)) {
                    op = &o;
                    break;
                }
            }
            if (!op) return left;
            const int line = cur().line;
            const BinaryOp chosen = *op;
            advance();
            HEARTH_ASSIGN_OR_RETURN(ExprPtr right, (this->*sub)());
            const Expr* l = left.get();
            const Expr* r = right.get();
            auto node = std::make_unique<BinaryExpr>(line, chosen, std::move(left), std::move(right));
            HEARTH_ASSIGN_OR_RETURN(left, finish(std::move(node), {l, r}));
        }
    }

    Result<ExprPtr> parseOr() { return parseBinaryChain(&Parser::parseAnd, {{"or", BinaryOp::Or}}, true); }
    Result<ExprPtr> parseAnd() { return parseBinaryChain(&Parser::parseNot, {{"and", BinaryOp::And}}, true); }

    Result<ExprPtr> parseNot() {
        if (isName("not")) {
            const int line = cur().line;
            advance();
            DepthGuard guard(*this);
            HEARTH_RETURN_IF_ERROR(checkDepth());
            HEARTH_ASSIGN_OR_RETURN(ExprPtr operand, parseNot());
            const Expr* o = operand.get();
            return finish(std::make_unique<UnaryExpr>(line, UnaryOp::Not, std::move(operand)), {o});
        }
        return parseCompare();
    }

    Result<ExprPtr> parseCompare() {
        HEARTH_ASSIGN_OR_RETURN(ExprPtr expr, parseMath1());
        std::unique_ptr<CompareExpr> node;
        static const std::pair<std::string_view, CompareOp> kOps[] = {
            {"==", CompareOp::Eq}, {"!=", CompareOp::Ne}, {"<", CompareOp::Lt},
            {"<=", CompareOp::Le}, {">", CompareOp::Gt},  {">=", CompareOp::Ge}};
        while (true) {
            std::optional<CompareOp> op;
            for (const auto& [text, o] : kOps)
                if (isOp(text)) op = o;
            if (op) {
                advance();
            } else if (isName("in")) {
                advance();
                op = CompareOp::In;
            } else if (isName("not") && look().type == TokenType::Name && look().text == "in") {
                advance();
                advance();
                op = CompareOp::NotIn;
            } else {
                break;
            }
            if (!node) {
                node = std::make_unique<CompareExpr>(expr->line);
                node->first = std::move(expr);
                node->depth = node->first->depth + 1;
            }
            HEARTH_ASSIGN_OR_RETURN(ExprPtr operand, parseMath1());
            node->depth = std::max(node->depth, operand->depth + 1);
            node->rest.emplace_back(*op, std::move(operand));
        }
        if (!node) return expr;
        if (node->depth > 4 * m_maxDepth) return fail(node->line, "expression nested too deeply");
        return ExprPtr(std::move(node));
    }

    Result<ExprPtr> parseMath1() {
        return parseBinaryChain(&Parser::parseConcat, {{"+", BinaryOp::Add}, {"-", BinaryOp::Sub}}, false);
    }
    Result<ExprPtr> parseConcat() {
        return parseBinaryChain(&Parser::parseMath2, {{"~", BinaryOp::Concat}}, false);
    }
    Result<ExprPtr> parseMath2() {
        return parseBinaryChain(&Parser::parsePow,
                                {{"*", BinaryOp::Mul}, {"/", BinaryOp::Div}, {"//", BinaryOp::FloorDiv}, {"%", BinaryOp::Mod}},
                                false);
    }
    Result<ExprPtr> parsePow() { return parseBinaryChain(&Parser::parseUnaryFiltered, {{"**", BinaryOp::Pow}}, false); }
    Result<ExprPtr> parseUnaryFiltered() { return parseUnary(true); }

    Result<ExprPtr> parseUnary(bool withFilter) {
        ExprPtr node;
        if (isOp("-") || isOp("+")) {
            const int line = cur().line;
            const UnaryOp op = isOp("-") ? UnaryOp::Neg : UnaryOp::Pos;
            advance();
            DepthGuard guard(*this);
            HEARTH_RETURN_IF_ERROR(checkDepth());
            HEARTH_ASSIGN_OR_RETURN(ExprPtr operand, parseUnary(false));
            const Expr* o = operand.get();
            HEARTH_ASSIGN_OR_RETURN(node, finish(std::make_unique<UnaryExpr>(line, op, std::move(operand)), {o}));
        } else {
            HEARTH_ASSIGN_OR_RETURN(node, parsePrimary());
        }
        HEARTH_ASSIGN_OR_RETURN(node, parsePostfix(std::move(node)));
        if (withFilter) {
            HEARTH_ASSIGN_OR_RETURN(node, parseFilterExpr(std::move(node)));
        }
        return node;
    }

    Result<ExprPtr> parsePrimary() {
        DepthGuard guard(*this);
        HEARTH_RETURN_IF_ERROR(checkDepth());
        const Token& t = cur();
        const int line = t.line;
        switch (t.type) {
        case TokenType::Name: {
            ExprPtr node;
            if (t.text == "true" || t.text == "True")
                node = std::make_unique<LiteralExpr>(line, Value::boolean(true));
            else if (t.text == "false" || t.text == "False")
                node = std::make_unique<LiteralExpr>(line, Value::boolean(false));
            else if (t.text == "none" || t.text == "None")
                node = std::make_unique<LiteralExpr>(line, Value::none());
            else
                node = std::make_unique<NameExpr>(line, t.text);
            advance();
            return node;
        }
        case TokenType::String: {
            std::string s;
            while (cur().type == TokenType::String) {
                s += cur().text;
                advance();
            }
            return ExprPtr(std::make_unique<LiteralExpr>(line, Value::string(std::move(s))));
        }
        case TokenType::Integer: {
            auto node = std::make_unique<LiteralExpr>(line, Value::integer(t.intValue));
            advance();
            return ExprPtr(std::move(node));
        }
        case TokenType::Float: {
            auto node = std::make_unique<LiteralExpr>(line, Value::floating(t.floatValue));
            advance();
            return ExprPtr(std::move(node));
        }
        case TokenType::Operator:
            if (t.text == "(") {
                advance();
                HEARTH_ASSIGN_OR_RETURN(ExprPtr node, parseTuple(TupleMode::Full, {}, true));
                HEARTH_RETURN_IF_ERROR(expectOp(")"));
                return node;
            }
            if (t.text == "[") return parseList();
            if (t.text == "{") return parseDict();
            break;
        default: break;
        }
        return fail(line, "unexpected " + describe(t));
    }

    Result<ExprPtr> parseList() {
        auto node = std::make_unique<ListExpr>(cur().line, false);
        advance();
        int d = 0;
        while (!isOp("]")) {
            if (!node->items.empty()) HEARTH_RETURN_IF_ERROR(expectOp(","));
            if (isOp("]")) break;
            HEARTH_ASSIGN_OR_RETURN(ExprPtr item, parseExpression());
            d = std::max(d, item->depth);
            node->items.push_back(std::move(item));
        }
        HEARTH_RETURN_IF_ERROR(expectOp("]"));
        node->depth = d + 1;
        return ExprPtr(std::move(node));
    }

    Result<ExprPtr> parseDict() {
        auto node = std::make_unique<DictExpr>(cur().line);
        advance();
        int d = 0;
        while (!isOp("}")) {
            if (!node->items.empty()) HEARTH_RETURN_IF_ERROR(expectOp(","));
            if (isOp("}")) break;
            HEARTH_ASSIGN_OR_RETURN(ExprPtr key, parseExpression());
            HEARTH_RETURN_IF_ERROR(expectOp(":"));
            HEARTH_ASSIGN_OR_RETURN(ExprPtr value, parseExpression());
            d = std::max({d, key->depth, value->depth});
            node->items.emplace_back(std::move(key), std::move(value));
        }
        HEARTH_RETURN_IF_ERROR(expectOp("}"));
        node->depth = d + 1;
        return ExprPtr(std::move(node));
    }

    Result<ExprPtr> parsePostfix(ExprPtr node) {
        while (true) {
            if (isOp(".") || isOp("[")) {
                HEARTH_ASSIGN_OR_RETURN(node, parseSubscript(std::move(node)));
            } else if (isOp("(")) {
                HEARTH_ASSIGN_OR_RETURN(node, parseCall(std::move(node)));
            } else {
                return node;
            }
        }
    }

    Result<ExprPtr> parseFilterExpr(ExprPtr node) {
        while (true) {
            if (isOp("|")) {
                HEARTH_ASSIGN_OR_RETURN(node, parseFilter(std::move(node), false));
            } else if (isName("is")) {
                HEARTH_ASSIGN_OR_RETURN(node, parseTest(std::move(node)));
            } else if (isOp("(")) {
                HEARTH_ASSIGN_OR_RETURN(node, parseCall(std::move(node)));
            } else {
                return node;
            }
        }
    }

    Result<ExprPtr> parseSubscript(ExprPtr node) {
        const int line = cur().line;
        if (skipOp(".")) {
            const Token& t = cur();
            if (t.type == TokenType::Name) {
                std::string name = t.text;
                advance();
                const Expr* o = node.get();
                return finish(std::make_unique<GetAttrExpr>(line, std::move(node), std::move(name)), {o});
            }
            if (t.type != TokenType::Integer) return fail(t.line, "expected name or number");
            auto index = std::make_unique<LiteralExpr>(line, Value::integer(t.intValue));
            advance();
            const Expr* o = node.get();
            return finish(std::make_unique<GetItemExpr>(line, std::move(node), std::move(index)), {o});
        }
        advance(); // '['
        std::vector<ExprPtr> args;
        while (!isOp("]")) {
            if (!args.empty()) HEARTH_RETURN_IF_ERROR(expectOp(","));
            HEARTH_ASSIGN_OR_RETURN(ExprPtr a, parseSubscribed());
            args.push_back(std::move(a));
        }
        HEARTH_RETURN_IF_ERROR(expectOp("]"));
        if (args.empty()) return fail(line, "expected an index");
        ExprPtr index;
        if (args.size() == 1) {
            index = std::move(args[0]);
        } else {
            auto tuple = std::make_unique<ListExpr>(line, true);
            int d = 0;
            for (const auto& a : args) d = std::max(d, a->depth);
            tuple->items = std::move(args);
            tuple->depth = d + 1;
            index = std::move(tuple);
        }
        const Expr* o = node.get();
        const Expr* i = index.get();
        return finish(std::make_unique<GetItemExpr>(line, std::move(node), std::move(index)), {o, i});
    }

    Result<ExprPtr> parseSubscribed() {
        const int line = cur().line;
        ExprPtr start;
        if (!isOp(":")) {
            HEARTH_ASSIGN_OR_RETURN(start, parseExpression());
            if (!isOp(":")) return start;
        }
        advance(); // ':'
        auto slice = std::make_unique<SliceExpr>(line);
        slice->start = std::move(start);
        if (!isOp(":") && !isOp("]") && !isOp(",")) {
            HEARTH_ASSIGN_OR_RETURN(slice->stop, parseExpression());
        }
        if (skipOp(":")) {
            if (!isOp("]") && !isOp(",")) {
                HEARTH_ASSIGN_OR_RETURN(slice->step, parseExpression());
            }
        }
        const Expr* a = slice->start.get();
        const Expr* b = slice->stop.get();
        const Expr* c = slice->step.get();
        return finish(std::move(slice), {a, b, c});
    }

    Status parseCallArgs(CallArgsExpr& out) {
        const int line = cur().line;
        HEARTH_RETURN_IF_ERROR(expectOp("("));
        bool requireComma = false;
        auto invalid = [&]() { return fail(line, "invalid syntax for function call expression"); };
        while (!isOp(")")) {
            if (requireComma) {
                HEARTH_RETURN_IF_ERROR(expectOp(","));
                if (isOp(")")) break;
            }
            if (isOp("*")) {
                if (out.starArgs || out.starKwargs) return invalid();
                advance();
                HEARTH_ASSIGN_OR_RETURN(out.starArgs, parseExpression());
            } else if (isOp("**")) {
                if (out.starKwargs) return invalid();
                advance();
                HEARTH_ASSIGN_OR_RETURN(out.starKwargs, parseExpression());
            } else if (cur().type == TokenType::Name && look().type == TokenType::Operator && look().text == "=") {
                if (out.starKwargs) return invalid();
                std::string key = cur().text;
                advance();
                advance();
                HEARTH_ASSIGN_OR_RETURN(ExprPtr value, parseExpression());
                out.keyword.emplace_back(std::move(key), std::move(value));
            } else {
                if (out.starArgs || out.starKwargs || !out.keyword.empty()) return invalid();
                HEARTH_ASSIGN_OR_RETURN(ExprPtr value, parseExpression());
                out.positional.push_back(std::move(value));
            }
            requireComma = true;
        }
        return expectOp(")");
    }

    Result<ExprPtr> parseCall(ExprPtr callee) {
        auto node = std::make_unique<CallExpr>(cur().line);
        HEARTH_RETURN_IF_ERROR(parseCallArgs(node->args));
        const int base = callee->depth;
        node->callee = std::move(callee);
        HEARTH_RETURN_IF_ERROR(setArgsDepth(*node, node->args, base));
        return ExprPtr(std::move(node));
    }

    Result<std::string> parseDottedName() {
        HEARTH_ASSIGN_OR_RETURN(std::string name, expectName());
        while (isOp(".")) {
            advance();
            HEARTH_ASSIGN_OR_RETURN(std::string part, expectName());
            name += "." + part;
        }
        return name;
    }

    // One `| name(args)`; the caller loops. `inlineStart`: no leading pipe (filter blocks).
    Result<std::unique_ptr<FilterExpr>> parseOneFilter(ExprPtr input, bool inlineStart) {
        const int line = cur().line;
        if (!inlineStart) advance(); // '|'
        auto node = std::make_unique<FilterExpr>(line);
        HEARTH_ASSIGN_OR_RETURN(node->name, parseDottedName());
        if (isOp("(")) HEARTH_RETURN_IF_ERROR(parseCallArgs(node->args));
        const int base = input ? input->depth : 0;
        node->input = std::move(input);
        HEARTH_RETURN_IF_ERROR(setArgsDepth(*node, node->args, base));
        return node;
    }

    Result<ExprPtr> parseFilter(ExprPtr node, bool inlineStart) {
        do {
            HEARTH_ASSIGN_OR_RETURN(auto f, parseOneFilter(std::move(node), inlineStart));
            node = std::move(f);
            inlineStart = false;
        } while (isOp("|"));
        return node;
    }

    Result<ExprPtr> parseTest(ExprPtr input) {
        const int line = cur().line;
        advance(); // 'is'
        const bool negated = skipName("not");
        auto node = std::make_unique<TestExpr>(line);
        HEARTH_ASSIGN_OR_RETURN(node->name, parseDottedName());
        if (isOp("(")) {
            HEARTH_RETURN_IF_ERROR(parseCallArgs(node->args));
        } else {
            const Token& t = cur();
            const bool startsArg = t.type == TokenType::Name || t.type == TokenType::String ||
                                   t.type == TokenType::Integer || t.type == TokenType::Float ||
                                   (t.type == TokenType::Operator && (t.text == "(" || t.text == "[" || t.text == "{"));
            if (startsArg && !isName("else") && !isName("or") && !isName("and")) {
                if (isName("is")) return fail(t.line, "you cannot chain multiple tests with is");
                HEARTH_ASSIGN_OR_RETURN(ExprPtr arg, parsePrimary());
                HEARTH_ASSIGN_OR_RETURN(arg, parsePostfix(std::move(arg)));
                node->args.positional.push_back(std::move(arg));
            }
        }
        const int base = input->depth;
        node->input = std::move(input);
        HEARTH_RETURN_IF_ERROR(setArgsDepth(*node, node->args, base));
        ExprPtr result = std::move(node);
        if (negated) {
            const Expr* r = result.get();
            return finish(std::make_unique<UnaryExpr>(line, UnaryOp::Not, std::move(result)), {r});
        }
        return result;
    }

    // ---- assignment targets ----
    Status exprToTarget(const Expr& e, Target& out) {
        if (e.kind == ExprKind::Name) {
            out.name = static_cast<const NameExpr&>(e).name;
            return Status::ok();
        }
        if (e.kind == ExprKind::List && static_cast<const ListExpr&>(e).isTuple) {
            out.isTuple = true;
            for (const auto& item : static_cast<const ListExpr&>(e).items) {
                Target t;
                HEARTH_RETURN_IF_ERROR(exprToTarget(*item, t));
                out.tuple.push_back(std::move(t));
            }
            return Status::ok();
        }
        return fail(e.line, "can't assign to this expression");
    }

    Result<Target> parseAssignTarget(bool withNamespace, std::initializer_list<std::string_view> extraEnd) {
        Target target;
        if (withNamespace && cur().type == TokenType::Name && look().type == TokenType::Operator && look().text == ".") {
            target.name = cur().text;
            advance();
            advance();
            HEARTH_ASSIGN_OR_RETURN(target.attr, expectName());
            return target;
        }
        HEARTH_ASSIGN_OR_RETURN(ExprPtr e, parseTuple(TupleMode::Simplified, extraEnd));
        HEARTH_RETURN_IF_ERROR(exprToTarget(*e, target));
        return target;
    }

    // ---- statements ----
    Result<Body> parseStatements(std::initializer_list<std::string_view> endTokens, bool dropNeedle,
                                 const std::string& opener, int openLine) {
        skipOp(":");
        HEARTH_RETURN_IF_ERROR(expectType(TokenType::BlockEnd, "end of statement block"));
        HEARTH_ASSIGN_OR_RETURN(Body body, subparse(std::vector<std::string_view>(endTokens)));
        if (cur().type == TokenType::Eof) {
            std::string expected;
            for (auto e : endTokens) expected += (expected.empty() ? "'" : " or '") + std::string(e) + "'";
            return fail(cur().line, "unexpected end of template: the '" + opener + "' block from line " +
                                        std::to_string(openLine) + " is never closed (expected " + expected + ")");
        }
        if (dropNeedle) advance();
        return body;
    }

    Result<Body> subparse(const std::vector<std::string_view>& endTokens) {
        Body body;
        while (cur().type != TokenType::Eof) {
            const Token& t = cur();
            if (t.type == TokenType::Data) {
                body.push_back(std::make_unique<TextStmt>(t.line, t.text));
                advance();
            } else if (t.type == TokenType::VariableBegin) {
                const int line = t.line;
                advance();
                HEARTH_ASSIGN_OR_RETURN(ExprPtr e, parseTuple(TupleMode::Full));
                HEARTH_RETURN_IF_ERROR(expectType(TokenType::VariableEnd, "end of print statement"));
                body.push_back(std::make_unique<OutputStmt>(line, std::move(e)));
            } else if (t.type == TokenType::BlockBegin) {
                advance();
                for (auto e : endTokens)
                    if (isName(e)) return body;
                HEARTH_ASSIGN_OR_RETURN(StmtPtr s, parseStatement(endTokens));
                if (s) body.push_back(std::move(s));
                HEARTH_RETURN_IF_ERROR(expectType(TokenType::BlockEnd, "end of statement block"));
            } else {
                return fail(t.line, "unexpected " + describe(t));
            }
        }
        return body;
    }

    Result<StmtPtr> parseStatement(const std::vector<std::string_view>& endTokens) {
        DepthGuard guard(*this);
        HEARTH_RETURN_IF_ERROR(checkDepth());
        if (cur().type != TokenType::Name) return fail(cur().line, "tag name expected");
        const std::string tag = cur().text;
        const int line = cur().line;
        if (tag == "if") return parseIf();
        if (tag == "for") return parseFor();
        if (tag == "set") return parseSet();
        if (tag == "macro") return parseMacro();
        if (tag == "call") return parseCallBlock();
        if (tag == "filter") return parseFilterBlock();
        if (tag == "with") return parseWith();
        if (tag == "print") return parsePrint();
        if (tag == "break" || tag == "continue") {
            if (m_loopDepth == 0) return fail(line, "'" + tag + "' outside of a loop");
            advance();
            return StmtPtr(std::make_unique<LoopControlStmt>(line, tag == "break"));
        }
        if (tag == "generation") {
            advance();
            auto node = std::make_unique<ScopeStmt>(line);
            HEARTH_ASSIGN_OR_RETURN(node->body, parseStatements({"endgeneration"}, true, tag, line));
            return StmtPtr(std::move(node));
        }
        if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" || tag == "block")
            return fail(line, "'" + tag + "' is not supported: chat templates cannot load other templates");
        std::string msg = "unknown tag '" + tag + "'";
        if (!endTokens.empty()) {
            msg += " (expected ";
            for (size_t i = 0; i < endTokens.size(); ++i) msg += (i ? " or '" : "'") + std::string(endTokens[i]) + "'";
            msg += ")";
        }
        return fail(line, msg);
    }

    Result<StmtPtr> parseIf() {
        auto node = std::make_unique<IfStmt>(cur().line);
        const int openLine = cur().line;
        advance();
        while (true) {
            HEARTH_ASSIGN_OR_RETURN(ExprPtr test, parseTuple(TupleMode::NoCondExpr));
            HEARTH_ASSIGN_OR_RETURN(Body body, parseStatements({"elif", "else", "endif"}, false, "if", openLine));
            node->branches.emplace_back(std::move(test), std::move(body));
            const std::string which = cur().text;
            advance();
            if (which == "elif") continue;
            if (which == "else") {
                HEARTH_ASSIGN_OR_RETURN(node->elseBody, parseStatements({"endif"}, true, "if", openLine));
            }
            break;
        }
        return StmtPtr(std::move(node));
    }

    Result<StmtPtr> parseFor() {
        auto node = std::make_unique<ForStmt>(cur().line);
        const int openLine = cur().line;
        advance();
        HEARTH_ASSIGN_OR_RETURN(node->target, parseAssignTarget(false, {"in"}));
        if (!skipName("in")) return fail(cur().line, "expected 'in', got " + describe(cur()));
        HEARTH_ASSIGN_OR_RETURN(node->iter, parseTuple(TupleMode::NoCondExpr, {"recursive"}));
        if (skipName("if")) {
            HEARTH_ASSIGN_OR_RETURN(node->filter, parseExpression());
        }
        if (isName("recursive")) return fail(cur().line, "recursive loops are not supported");
        ++m_loopDepth;
        Result<Body> body = parseStatements({"endfor", "else"}, false, "for", openLine);
        --m_loopDepth;
        if (!body) return body.status();
        node->body = std::move(body).value();
        const std::string which = cur().text;
        advance();
        if (which == "else") {
            HEARTH_ASSIGN_OR_RETURN(node->elseBody, parseStatements({"endfor"}, true, "for", openLine));
        }
        return StmtPtr(std::move(node));
    }

    Result<StmtPtr> parseSet() {
        const int line = cur().line;
        advance();
        HEARTH_ASSIGN_OR_RETURN(Target target, parseAssignTarget(true, {}));
        if (skipOp("=")) {
            auto node = std::make_unique<SetStmt>(line);
            node->target = std::move(target);
            HEARTH_ASSIGN_OR_RETURN(node->value, parseTuple(TupleMode::Full));
            return StmtPtr(std::move(node));
        }
        auto node = std::make_unique<SetBlockStmt>(line);
        node->target = std::move(target);
        while (isOp("|")) {
            HEARTH_ASSIGN_OR_RETURN(auto f, parseOneFilter(nullptr, false));
            node->filters.push_back(std::move(f));
        }
        HEARTH_ASSIGN_OR_RETURN(node->body, parseStatements({"endset"}, true, "set", line));
        return StmtPtr(std::move(node));
    }

    Status parseSignature(std::vector<MacroParam>& params) {
        HEARTH_RETURN_IF_ERROR(expectOp("("));
        while (!isOp(")")) {
            if (!params.empty()) HEARTH_RETURN_IF_ERROR(expectOp(","));
            MacroParam p;
            HEARTH_ASSIGN_OR_RETURN(p.name, expectName());
            if (skipOp("=")) {
                HEARTH_ASSIGN_OR_RETURN(p.defaultValue, parseExpression());
            } else if (!params.empty() && params.back().defaultValue) {
                return fail(cur().line, "non-default argument follows default argument");
            }
            params.push_back(std::move(p));
        }
        return expectOp(")");
    }

    // Loop controls inside a macro or call body refer to no loop of the caller.
    Result<Body> parseDetachedBody(std::initializer_list<std::string_view> endTokens, const std::string& opener, int line) {
        const int savedLoopDepth = m_loopDepth;
        m_loopDepth = 0;
        Result<Body> body = parseStatements(endTokens, true, opener, line);
        m_loopDepth = savedLoopDepth;
        return body;
    }

    Result<StmtPtr> parseMacro() {
        auto node = std::make_unique<MacroStmt>(cur().line);
        advance();
        HEARTH_ASSIGN_OR_RETURN(node->name, expectName());
        HEARTH_RETURN_IF_ERROR(parseSignature(node->params));
        const size_t startPos = m_pos;
        HEARTH_ASSIGN_OR_RETURN(node->body, parseDetachedBody({"endmacro"}, "macro", node->line));
        for (size_t i = startPos; i < m_pos; ++i) {
            if (m_tokens[i].type != TokenType::Name) continue;
            const std::string& n = m_tokens[i].text;
            node->usesCaller = node->usesCaller || n == "caller";
            node->usesVarargs = node->usesVarargs || n == "varargs";
            node->usesKwargs = node->usesKwargs || n == "kwargs";
        }
        return StmtPtr(std::move(node));
    }

    Result<StmtPtr> parseCallBlock() {
        auto node = std::make_unique<CallBlockStmt>(cur().line);
        advance();
        if (isOp("(")) HEARTH_RETURN_IF_ERROR(parseSignature(node->params));
        HEARTH_ASSIGN_OR_RETURN(ExprPtr call, parseExpression());
        if (call->kind != ExprKind::Call) return fail(node->line, "expected call");
        node->call.reset(static_cast<CallExpr*>(call.release()));
        HEARTH_ASSIGN_OR_RETURN(node->body, parseDetachedBody({"endcall"}, "call", node->line));
        return StmtPtr(std::move(node));
    }

    Result<StmtPtr> parseFilterBlock() {
        auto node = std::make_unique<FilterBlockStmt>(cur().line);
        advance();
        HEARTH_ASSIGN_OR_RETURN(auto f, parseOneFilter(nullptr, true));
        node->filters.push_back(std::move(f));
        while (isOp("|")) {
            HEARTH_ASSIGN_OR_RETURN(auto g, parseOneFilter(nullptr, false));
            node->filters.push_back(std::move(g));
        }
        HEARTH_ASSIGN_OR_RETURN(node->body, parseStatements({"endfilter"}, true, "filter", node->line));
        return StmtPtr(std::move(node));
    }

    Result<StmtPtr> parseWith() {
        auto node = std::make_unique<WithStmt>(cur().line);
        advance();
        while (cur().type != TokenType::BlockEnd) {
            if (!node->assignments.empty()) HEARTH_RETURN_IF_ERROR(expectOp(","));
            HEARTH_ASSIGN_OR_RETURN(Target t, parseAssignTarget(false, {}));
            HEARTH_RETURN_IF_ERROR(expectOp("="));
            HEARTH_ASSIGN_OR_RETURN(ExprPtr e, parseExpression());
            node->assignments.emplace_back(std::move(t), std::move(e));
        }
        HEARTH_ASSIGN_OR_RETURN(node->body, parseStatements({"endwith"}, true, "with", node->line));
        return StmtPtr(std::move(node));
    }

    Result<StmtPtr> parsePrint() {
        const int line = cur().line;
        advance();
        auto node = std::make_unique<ScopeStmt>(line);
        bool first = true;
        while (cur().type != TokenType::BlockEnd) {
            if (!first) HEARTH_RETURN_IF_ERROR(expectOp(","));
            first = false;
            HEARTH_ASSIGN_OR_RETURN(ExprPtr e, parseExpression());
            node->body.push_back(std::make_unique<OutputStmt>(line, std::move(e)));
        }
        return StmtPtr(std::move(node));
    }

    std::vector<Token> m_tokens;
    size_t m_pos = 0;
    int m_depth = 0;
    int m_maxDepth;
    int m_loopDepth = 0;
};

} // namespace

Result<std::shared_ptr<detail::Program>> parseTemplate(std::string_view source, int maxNestingDepth) {
    HEARTH_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(source));
    Parser parser(std::move(tokens), std::max(maxNestingDepth, 8));
    HEARTH_ASSIGN_OR_RETURN(Body body, parser.parseTemplateBody());
    auto program = std::make_shared<detail::Program>();
    program->source = std::string(source);
    program->body = std::move(body);
    return program;
}

} // namespace hearth::tmpl
