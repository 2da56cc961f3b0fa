// Finds tool calls in model output in the formats common chat templates teach: Llama 3.x JSON
// ({"name", "parameters"}), Hermes/Qwen <tool_call>{...}</tool_call>, and Mistral
// [TOOL_CALLS][{...}], and turns them into OpenAI tool_calls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

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

// While streaming: true when `text` (so far) might still turn into a tool call, so it should be
// held back rather than sent as content.
bool mightBeToolCall(std::string_view text);

std::string newToolCallId();

// Arguments as far as written (a call cut short) closed into a JSON object: the longest prefix
// that ends a value, its open strings and brackets closed, as compact JSON text; "{}" when
// nothing of it reads as an object. Complete arguments come back as they are (compacted). For
// dialects whose calls carry objects (Ollama's arguments, Anthropic's input).
std::string closedJsonObject(std::string_view text);

} // namespace hearth::server
