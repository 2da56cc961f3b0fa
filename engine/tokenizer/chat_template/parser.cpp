// The template parser, expressions: Jinja2's grammar and precedence from `x if c else y` down to
// filters, tests, calls, subscripts and literals, with an expression-height limit.
#include "tokenizer/chat_template/parser_impl.h"

namespace hearth::tmpl {

Result<ExprPtr> Parser::parseTuple(TupleMode mode, std::initializer_list<std::string_view> extraEnd,
                                   bool explicitParens) {
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

Result<ExprPtr> Parser::parseCondExpr() {
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

Result<ExprPtr> Parser::parseBinaryChain(Result<ExprPtr> (Parser::*sub)(), std::initializer_list<std::pair<std::string_view, BinaryOp>> ops, bool nameOps) {
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

Result<ExprPtr> Parser::parseNot() {
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

Result<ExprPtr> Parser::parseCompare() {
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

Result<ExprPtr> Parser::parseUnary(bool withFilter) {
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

Result<ExprPtr> Parser::parsePrimary() {
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

Result<ExprPtr> Parser::parseList() {
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

Result<ExprPtr> Parser::parseDict() {
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

Result<ExprPtr> Parser::parsePostfix(ExprPtr node) {
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

Result<ExprPtr> Parser::parseFilterExpr(ExprPtr node) {
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

Result<ExprPtr> Parser::parseSubscript(ExprPtr node) {
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
    ExprPtr index; // x[] indexes with an empty tuple, as in Jinja
    if (args.empty()) {
        auto empty = std::make_unique<ListExpr>(line, true);
        index = std::move(empty);
    } else if (args.size() == 1) {
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

Result<ExprPtr> Parser::parseSubscribed() {
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

Status Parser::parseCallArgs(CallArgsExpr& out) {
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

Result<ExprPtr> Parser::parseCall(ExprPtr callee) {
    auto node = std::make_unique<CallExpr>(cur().line);
    HEARTH_RETURN_IF_ERROR(parseCallArgs(node->args));
    const int base = callee->depth;
    node->callee = std::move(callee);
    HEARTH_RETURN_IF_ERROR(setArgsDepth(*node, node->args, base));
    return ExprPtr(std::move(node));
}

Result<std::string> Parser::parseDottedName() {
    HEARTH_ASSIGN_OR_RETURN(std::string name, expectName());
    while (isOp(".")) {
        advance();
        HEARTH_ASSIGN_OR_RETURN(std::string part, expectName());
        name += "." + part;
    }
    return name;
}

Result<std::unique_ptr<FilterExpr>> Parser::parseOneFilter(ExprPtr input, bool inlineStart) {
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

Result<ExprPtr> Parser::parseFilter(ExprPtr node, bool inlineStart) {
    do {
        HEARTH_ASSIGN_OR_RETURN(auto f, parseOneFilter(std::move(node), inlineStart));
        node = std::move(f);
        inlineStart = false;
    } while (isOp("|"));
    return node;
}

Result<ExprPtr> Parser::parseTest(ExprPtr input) {
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

} // namespace hearth::tmpl
