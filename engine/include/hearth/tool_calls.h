// Tool calls in a model's output, in the formats common chat templates teach: Hermes / Qwen
// <tool_call>{...}</tool_call>, Mistral [TOOL_CALLS][{...}] (and [TOOL_CALLS]name[ARGS]{...}), and
// Llama 3.x bare JSON ({"name", "parameters"}). The API server reads replies with it, and so can
// the app, to run a model's calls with MCP tools.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hearth {

struct ToolCall {
    std::string id;        // "call_" + 24 random letters and digits
    std::string name;
    std::string arguments; // JSON text, as OpenAI sends it
};

struct ToolCallParse {
    std::string content;          // text outside the calls (trimmed)
    std::vector<ToolCall> calls;  // empty: no tool call found, content is the whole text
};

// Parses `text`. A bare JSON object (Llama 3.x) counts only when its name is one of
// `knownNames` (or knownNames is empty), so ordinary JSON answers stay content. A call cut short
// by the token limit is returned as far as written; a last Hermes call that does not read leaves
// the calls before it; text ending inside a `<tool_call>` opening tag is not content.
ToolCallParse parseToolCalls(std::string_view text, const std::vector<std::string>& knownNames);

} // namespace hearth
