// What a dialect's request becomes before the generation driver takes it: the model's engine,
// the prompt (chat template and images), the engine request with its limits, speculation and
// grammar, and how the output is to be read. The chat dialects (OpenAI chat, Anthropic,
// Responses) share prepareChat; Ollama maps its options itself and then drives the same way.
#pragma once

#include "hearth/chat_template.h"
#include "server/generation_driver.h"
#include "server/structured_output.h"

#include <string>

namespace hearth::server {

struct PreparedGeneration {
    EngineRef model;
    GenerationRequest request;
    DriveOptions options;
};

// Where a dialect's errors point: the prompt's field, and the structured-output field (empty:
// OpenAI's `response_format` and `grammar`).
struct ChatFieldNames {
    std::string prompt = "messages";
    std::string format;
};

// The engine request for a chat request rendered as `templateRequest`.
ApiResult<PreparedGeneration> prepareChat(Server::Impl& server, const ChatCompletionRequest& chat,
                                          const tmpl::ChatRequest& templateRequest, const ChatFieldNames& names);

// The grammar a request's output must follow: its response format (json_object, or json_schema
// whose errors name `formatParam`.schema and the part of the schema; with `formatParam` empty,
// OpenAI's response_format and grammar), or, when `tools` are in play and tool_choice requires a
// call (any / required / a named tool), the call written in the model's own format with
// schema-checked arguments. Null for free text.
ApiResult<GrammarPtr> requestGrammar(const Engine& engine, const ChatCompletionRequest& chat,
                                     bool tools, const std::string& formatParam);

// The text of a chat template failure as a 400 (the template refused this conversation).
ApiError templateError(const Status& status, const std::string& param);

} // namespace hearth::server
