// The Anthropic Messages API (/v1/messages, /v1/messages/count_tokens): the request parser,
// which turns a body into the chat-completion form the rest of the server knows (messages for
// chat templates, tools, sampling settings), and the builders of its responses, stream events
// and errors ({"type": "error", "error": {"type", "message"}}).
#pragma once

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

struct AnthropicRequest {
    // model, max_tokens, temperature, top_p, top_k, stop (stop_sequences), stream; messages
    // normalised for chat templates (system first, tool_use as tool_calls, tool_result as tool
    // messages); tools and tool_choice.
    ChatCompletionRequest chat;
};

// Parses and validates a Messages body. `countTokens`: the count_tokens form (max_tokens and
// stream are not needed there). Every failure is a 4xx ApiError.
ApiResult<AnthropicRequest> parseAnthropicRequest(std::string_view body, const ParseLimits& limits,
                                                  bool countTokens);

// {"type": "error", "error": {"type": "invalid_request_error", "message": ...}}, the error type
// chosen by HTTP status as Anthropic does (401 authentication_error, 404 not_found_error, ...).
nlohmann::ordered_json anthropicErrorJson(const ApiError& error);

// Whether a path is one of the Anthropic endpoints (their errors use Anthropic's shape).
bool isAnthropicPath(std::string_view path);

struct AnthropicUsage {
    int32_t inputTokens = 0;  // prompt tokens not read from the cache
    int32_t cachedTokens = 0; // prompt tokens read from the prefix cache
    int32_t outputTokens = 0;
};
nlohmann::ordered_json anthropicUsageJson(const AnthropicUsage& usage);

// "end_turn", "max_tokens", "stop_sequence" or "tool_use".
const char* anthropicStopReason(bool lengthCut, bool toolUse, bool stopSequence);

// A tool_use block {"type": "tool_use", "id": "toolu_...", "name", "input": {...}} from a parsed
// call (arguments that are not a JSON object become {}).
nlohmann::ordered_json toolUseBlock(const ToolCall& call);

} // namespace hearth::server
