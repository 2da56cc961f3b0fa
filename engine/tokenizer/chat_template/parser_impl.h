// The template parser's internal class, shared by parser.cpp (expressions) and
// parser_statements.cpp (statements): token-stream helpers, depth guards and the grammar methods.
#pragma once

#include "hearth/status.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/lexer.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tmpl {

// Recursive-descent parser over the token list; every recursion is depth-guarded.
class Parser {
public:
    Parser(std::vector<Token> tokens, int maxDepth) : m_tokens(std::move(tokens)), m_maxDepth(maxDepth) {}

    Result<Body> parseTemplateBody();

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
                               bool explicitParens = false);
    Result<ExprPtr> parseExpression() { return parseCondExpr(); }

    Result<ExprPtr> parseCondExpr();
    Result<ExprPtr> parseBinaryChain(Result<ExprPtr> (Parser::*sub)(),
                                     std::initializer_list<std::pair<std::string_view, BinaryOp>> ops, bool nameOps);
    Result<ExprPtr> parseOr() { return parseBinaryChain(&Parser::parseAnd, {{"or", BinaryOp::Or}}, true); }
    Result<ExprPtr> parseAnd() { return parseBinaryChain(&Parser::parseNot, {{"and", BinaryOp::And}}, true); }

    Result<ExprPtr> parseNot();
    Result<ExprPtr> parseCompare();
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

    Result<ExprPtr> parseUnary(bool withFilter);
    Result<ExprPtr> parsePrimary();
    Result<ExprPtr> parseList();
    Result<ExprPtr> parseDict();
    Result<ExprPtr> parsePostfix(ExprPtr node);
    Result<ExprPtr> parseFilterExpr(ExprPtr node);
    Result<ExprPtr> parseSubscript(ExprPtr node);
    Result<ExprPtr> parseSubscribed();
    Status parseCallArgs(CallArgsExpr& out);
    Result<ExprPtr> parseCall(ExprPtr callee);
    Result<std::string> parseDottedName();

    // One `| name(args)`; the caller loops. `inlineStart`: no leading pipe (filter blocks).
    Result<std::unique_ptr<FilterExpr>> parseOneFilter(ExprPtr input, bool inlineStart);
    Result<ExprPtr> parseFilter(ExprPtr node, bool inlineStart);
    Result<ExprPtr> parseTest(ExprPtr input);

    // ---- assignment targets ----
    Status exprToTarget(const Expr& e, Target& out);
    Result<Target> parseAssignTarget(bool withNamespace, std::initializer_list<std::string_view> extraEnd);

    // ---- statements ----
    Result<Body> parseStatements(std::initializer_list<std::string_view> endTokens, bool dropNeedle,
                                 const std::string& opener, int openLine);
    Result<Body> subparse(const std::vector<std::string_view>& endTokens);
    Result<StmtPtr> parseStatement(const std::vector<std::string_view>& endTokens);
    Result<StmtPtr> parseIf();
    Result<StmtPtr> parseFor();
    Result<StmtPtr> parseSet();
    Status parseSignature(std::vector<MacroParam>& params);

    // Loop controls inside a macro or call body refer to no loop of the caller.
    Result<Body> parseDetachedBody(std::initializer_list<std::string_view> endTokens, const std::string& opener,
                                   int line);
    Result<StmtPtr> parseMacro();
    Result<StmtPtr> parseCallBlock();
    Result<StmtPtr> parseFilterBlock();
    Result<StmtPtr> parseWith();
    Result<StmtPtr> parsePrint();

    std::vector<Token> m_tokens;
    size_t m_pos = 0;
    int m_depth = 0;
    int m_maxDepth;
    int m_loopDepth = 0;
};

} // namespace hearth::tmpl
