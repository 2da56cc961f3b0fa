// Grammars for structured output: `response_format` and `grammar` compiled for the engine, and
// the grammar that makes the model call a tool, in its own call format, when `tool_choice`
// requires one.
#pragma once

#include "hearth/engine.h"
#include "server/api_error.h"
#include "server/openai_request.h"

#include <memory>
#include <string>
#include <vector>

namespace hearth::server {

using GrammarPtr = std::shared_ptr<const grammar::Grammar>;

// How the model's chat template writes tool calls (what parseToolCalls reads back).
enum class ToolCallStyle {
    Hermes,  // <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Qwen, Hermes; the default)
    Llama,   // {"name": ..., "parameters": {...}} (Llama 3.x)
    Mistral, // [TOOL_CALLS][{"name": ..., "arguments": {...}}]
    Harmony, // <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...} (gpt-oss)
};
// Renders a conversation holding a tool call with the engine's template and looks for the markers.
ToolCallStyle detectToolCallStyle(const Engine& engine);

// The grammar of a JSON Schema; errors are 400s on `param` naming the part of the schema.
// strict: keywords no grammar here enforces (multipleOf, not...) are refused rather than left out.
ApiResult<GrammarPtr> schemaGrammar(const nlohmann::ordered_json& schema, const std::string& param,
                                    bool strict = false);
// The grammar `response_format` / `grammar` ask for; null for free text.
ApiResult<GrammarPtr> outputGrammar(const CommonParams& params);
// With tool_choice "required" or a named function: a call (up to kMaxForcedCalls with
// parallel_tool_calls) whose arguments follow the function's parameter schema; null otherwise.
ApiResult<GrammarPtr> toolCallGrammar(const std::vector<ToolFunction>& tools, const ToolChoice& choice,
                                      ToolCallStyle style);

} // namespace hearth::server
