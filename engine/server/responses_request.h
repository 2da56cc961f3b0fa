// The OpenAI Responses API (/v1/responses) as a stateless server offers it: the request parser,
// which turns input items and instructions into the chat-completion form the rest of the server
// knows, and the builders of response objects and output items. Anything that needs stored
// state (previous_response_id, store: true, background, conversation, item references) is a 400.
#pragma once

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

struct ResponsesRequest {
    // Messages (instructions first), tools, sampling, stream, and text.format as
    // common.responseFormat (text, json_object, or json_schema with its name and schema).
    ChatCompletionRequest chat;
    // Request fields the response object repeats: instructions, max_output_tokens,
    // temperature, top_p, tool_choice, tools, text, metadata, parallel_tool_calls, user.
    nlohmann::ordered_json echo = nlohmann::ordered_json::object();
};

// Parses and validates a body. Every failure is a 4xx ApiError (OpenAI's shape).
ApiResult<ResponsesRequest> parseResponsesRequest(std::string_view body, const ParseLimits& limits);

struct ResponseHead {
    std::string id; // "resp_..."
    int64_t createdAt = 0;
    std::string model;
};

// The response object: status "in_progress", "completed", "incomplete" (with
// incomplete_details {"reason": "max_output_tokens"} when `lengthCut`) or "failed" (the output
// reached a dead end of its grammar); usage null while running.
nlohmann::ordered_json responseObjectJson(const ResponseHead& head, const ResponsesRequest& request,
                                          const char* status, bool lengthCut,
                                          nlohmann::ordered_json output, const nlohmann::ordered_json& usage);

// {"input_tokens", "input_tokens_details": {"cached_tokens"}, "output_tokens",
//  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens"}
nlohmann::ordered_json responsesUsageJson(int32_t promptTokens, int32_t cachedTokens, int32_t outputTokens);

// Output items: a message with one output_text part, and a function call.
nlohmann::ordered_json messageItemJson(const std::string& id, const std::string& text, const char* status);
nlohmann::ordered_json outputTextPartJson(const std::string& text);
// Reasoning (the model's <think> text): {"type": "reasoning", "id", "summary": [],
// "content": [{"type": "reasoning_text", "text"}]}.
nlohmann::ordered_json reasoningItemJson(const std::string& id, const std::string& text);
nlohmann::ordered_json functionCallItemJson(const std::string& id, const ToolCall& call,
                                            const std::string& arguments, const char* status);

} // namespace hearth::server
