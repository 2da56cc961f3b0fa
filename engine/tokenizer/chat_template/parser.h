// The template parser: tokens -> syntax tree, with Jinja2's grammar and operator precedence and a
// bound on nesting so that hostile input cannot exhaust the stack.
#pragma once

#include "hearth/status.h"
#include "tokenizer/chat_template/ast.h"

#include <string>
#include <string_view>

namespace hearth::tmpl::detail {

struct Program {
    std::string source;
    Body body;
};

} // namespace hearth::tmpl::detail

namespace hearth::tmpl {

// Parses a template; errors are invalidFormat with "line N: ...".
Result<std::shared_ptr<detail::Program>> parseTemplate(std::string_view source, int maxNestingDepth);

} // namespace hearth::tmpl
