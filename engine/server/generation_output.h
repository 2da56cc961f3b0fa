// What a generation gave, as every dialect's formatter reads it: a choice's text split into
// reasoning, answer and tool calls, its token logprobs, and how it ended.
#pragma once

#include "hearth/engine.h"
#include "server/tool_calls.h"

#include <string>
#include <utility>
#include <vector>

namespace hearth::server {

struct TokenLogprob {
    std::string token; // the token's text (bytes as the vocabulary has them, UTF-8 repaired)
    float logprob = 0.0f;
    std::vector<std::pair<std::string, float>> top;
};

// One choice's output read whole; or, at a streamed choice's end, what was held back and read
// only then.
struct ChoiceOutput {
    std::string text;              // everything generated, as it came
    std::string reasoning;
    std::string content;           // the answer outside reasoning and tool calls
    std::vector<ToolCall> calls;
    std::vector<TokenLogprob> logprobs;
    FinishReason reason = FinishReason::Stop;
    std::string stopString;        // the request's stop string that ended it, else empty
};

} // namespace hearth::server
