// Builders for OpenAI response bodies: chat.completion, text_completion, their streamed
// chunk forms (chat.completion.chunk), usage, logprobs, and the SSE framing.
#pragma once

#include "hearth/engine.h"
#include "server/generation_output.h"
#include "server/tool_call_stream.h"
#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hearth::server {

using OJson = nlohmann::ordered_json;

struct ResponseMeta {
    std::string id;   // "chatcmpl-..." or "cmpl-..."
    int64_t created = 0;
    std::string model;
};

std::string newResponseId(const char* prefix); // prefix + 24 random characters
int64_t unixNow();

// "stop", "length", or "tool_calls" when calls were parsed.
const char* finishReasonText(FinishReason reason, bool toolCalls);

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}
OJson usageJson(const Usage& usage);

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}
OJson chatLogprobsJson(const std::vector<TokenLogprob>& tokens);
// Completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
OJson completionLogprobsJson(const std::vector<TokenLogprob>& tokens, size_t textOffset);

OJson chatCompletionJson(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                         const Usage& usage, bool withLogprobs);
OJson completionJson(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                     const Usage& usage, bool withLogprobs, size_t textOffset);

// One streamed chat chunk for `index`: delta and finish_reason (nullptr: null), optional
// logprobs (null: omitted as null).
OJson chatChunkJson(const ResponseMeta& meta, int32_t index, OJson delta,
                    const char* finishReason, OJson logprobs = nullptr);
OJson completionChunkJson(const ResponseMeta& meta, int32_t index, const std::string& text,
                          const char* finishReason, OJson logprobs = nullptr);
// The final usage chunk of a stream (choices empty), for stream_options.include_usage.
OJson usageChunkJson(const ResponseMeta& meta, const char* object, const Usage& usage);

// A chat delta carrying complete tool calls (streamed in one piece each).
OJson toolCallsDelta(const std::vector<ToolCall>& calls);
// A chat delta with one piece of a call being streamed: its id, type and name first, then
// fragments of its arguments.
OJson toolCallDelta(const ToolCallDelta& delta);

// "data: <json>\n\n"
std::string sseEvent(const OJson& json);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

} // namespace hearth::server
