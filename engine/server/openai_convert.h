// Turns parsed OpenAI requests into what the engine takes: a chat-template request and a
// GenerationRequest with sampling settings, limits checked against the model.
#pragma once

#include "hearth/chat_template.h"
#include "hearth/engine.h"
#include "server/openai_request.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hearth::server {

struct ModelLimits {
    int32_t vocabSize = 0;
    int32_t contextLength = 0;
    int32_t defaultMaxTokens = 4096; // used when the request sets none (and context allows)
};

// Messages in the server's normalised JSON form as the engine's chat messages; the template sees
// each one unchanged (typed where it has their form, its JSON text otherwise).
std::vector<tmpl::ChatMessage> templateMessages(const nlohmann::ordered_json& messages);

// Template kwargs as the request carries them: the object's text, empty when there are none.
std::string templateKwargsText(const nlohmann::ordered_json& kwargs);

// The template request for a chat body (generation prompt added, tools unless tool_choice none).
tmpl::ChatRequest chatTemplateRequest(const ChatCompletionRequest& request);

// Speculative decoding settings of `params` into `request`: the prediction tokenized (refused
// when longer than the context) and the per-request draft limits.
std::optional<ApiError> applySpeculation(const CommonParams& params, const tokenizer::Tokenizer& tokenizer,
                                         const ModelLimits& limits, GenerationRequest& request);

// Sampling settings, stop strings, n and max tokens for `prompt`, checked against the model:
// unknown logit-bias ids and prompts that leave no room are 400s.
ApiResult<GenerationRequest> generationRequest(const CommonParams& params,
                                               std::vector<int32_t> prompt,
                                               const ModelLimits& limits);

} // namespace hearth::server
