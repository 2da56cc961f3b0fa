// The template parser, statements: if/for/set/macro/call/filter/with/print, loop controls, the
// generation tag, block bodies, and the entry point that turns source into a Program.
#include "tokenizer/chat_template/parser.h"
#include "tokenizer/chat_template/parser_impl.h"

namespace hearth::tmpl {

Result<Body> Parser::parseTemplateBody() {
    HEARTH_ASSIGN_OR_RETURN(Body body, subparse({}));
    if (cur().type != TokenType::Eof) return fail(cur().line, "unexpected " + describe(cur()));
    return body;
}

Status Parser::exprToTarget(const Expr& e, Target& out) {
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

Result<Target> Parser::parseAssignTarget(bool withNamespace, std::initializer_list<std::string_view> extraEnd) {
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

Result<Body> Parser::parseStatements(std::initializer_list<std::string_view> endTokens, bool dropNeedle,
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

Result<Body> Parser::subparse(const std::vector<std::string_view>& endTokens) {
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

Result<StmtPtr> Parser::parseStatement(const std::vector<std::string_view>& endTokens) {
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

Result<StmtPtr> Parser::parseIf() {
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

Result<StmtPtr> Parser::parseFor() {
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

Result<StmtPtr> Parser::parseSet() {
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

Status Parser::parseSignature(std::vector<MacroParam>& params) {
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

Result<Body> Parser::parseDetachedBody(std::initializer_list<std::string_view> endTokens, const std::string& opener, int line) {
    const int savedLoopDepth = m_loopDepth;
    m_loopDepth = 0;
    Result<Body> body = parseStatements(endTokens, true, opener, line);
    m_loopDepth = savedLoopDepth;
    return body;
}

Result<StmtPtr> Parser::parseMacro() {
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

Result<StmtPtr> Parser::parseCallBlock() {
    auto node = std::make_unique<CallBlockStmt>(cur().line);
    advance();
    if (isOp("(")) HEARTH_RETURN_IF_ERROR(parseSignature(node->params));
    HEARTH_ASSIGN_OR_RETURN(ExprPtr call, parseExpression());
    if (call->kind != ExprKind::Call) return fail(node->line, "expected call");
    node->call.reset(static_cast<CallExpr*>(call.release()));
    HEARTH_ASSIGN_OR_RETURN(node->body, parseDetachedBody({"endcall"}, "call", node->line));
    return StmtPtr(std::move(node));
}

Result<StmtPtr> Parser::parseFilterBlock() {
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

Result<StmtPtr> Parser::parseWith() {
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

Result<StmtPtr> Parser::parsePrint() {
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
