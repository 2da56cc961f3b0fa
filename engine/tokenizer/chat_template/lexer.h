// The template lexer: splits Jinja source into text and tag tokens, applying trim_blocks,
// lstrip_blocks, the -/+ whitespace modifiers, comments, raw blocks and the dropped trailing newline.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tmpl {

enum class TokenType : uint8_t {
    Data,          // literal text between tags
    BlockBegin,    // {%
    BlockEnd,      // %}
    VariableBegin, // {{
    VariableEnd,   // }}
    Name,
    String,        // value already unescaped
    Integer,
    Float,
    Operator,      // text holds the operator: "==", "(", "|", ...
    Eof,
};

struct Token {
    TokenType type = TokenType::Eof;
    std::string text;
    int64_t intValue = 0;
    double floatValue = 0;
    int line = 1;
};

// Tokenizes a whole template. Errors (unterminated comment, raw or string, bad character,
// unbalanced brackets) say "line N: ...". The last token is always Eof.
Result<std::vector<Token>> tokenize(std::string_view source);

} // namespace hearth::tmpl
