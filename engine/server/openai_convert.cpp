// Turns parsed OpenAI requests into what the engine takes: a chat-template request and a
// GenerationRequest with sampling settings, limits checked against the model.
#include "server/openai_convert.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

namespace hearth::server {

namespace {

uint64_t freshSeed() {
    static std::atomic<uint64_t> counter{0};
    static const uint64_t base = [] {
        std::random_device rd;
        return (uint64_t(rd()) << 32) ^ uint64_t(rd()) ^
               uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    }();
    uint64_t z = base + 0x9e3779b97f4a7c15ull * (counter.fetch_add(1) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

} // namespace

std::vector<tmpl::ChatMessage> templateMessages(const OJson& messages) {
    std::vector<tmpl::ChatMessage> out;
    out.reserve(messages.size());
    for (const OJson& m : messages) {
        const std::string text = dumpJson(m);
        Result<tmpl::ChatMessage> message = tmpl::chatMessageFromJson(text);
        if (message) {
            out.push_back(std::move(*message));
        } else { // not an object: the engine renders it as it is (or reports it)
            tmpl::ChatMessage raw;
            raw.rawJson = text;
            out.push_back(std::move(raw));
        }
    }
    return out;
}

std::string templateKwargsText(const OJson& kwargs) {
    return kwargs.is_object() && !kwargs.empty() ? dumpJson(kwargs) : std::string();
}

tmpl::ChatRequest chatTemplateRequest(const ChatCompletionRequest& request) {
    tmpl::ChatRequest chat;
    chat.messages = templateMessages(request.messages);
    if (request.toolChoice.mode != ToolChoiceMode::None && !request.toolsJson.is_null())
        chat.toolsJson = dumpJson(request.toolsJson);
    chat.addGenerationPrompt = true;
    chat.templateKwargsJson = templateKwargsText(request.templateKwargs);
    return chat;
}

std::optional<ApiError> applySpeculation(const CommonParams& p, const tokenizer::Tokenizer& tokenizer,
                                         const ModelLimits& limits, GenerationRequest& g) {
    if (p.specMaxDraft) g.specMaxDraft = *p.specMaxDraft;
    if (p.specMinDraft) g.specMinDraft = *p.specMinDraft;
    if (p.specPMin) g.specPMin = *p.specPMin;
    if (!p.prediction || p.prediction->empty()) return std::nullopt;
    auto ids = tokenizer.encode(*p.prediction, false, false);
    if (!ids) return invalidRequest("'prediction.content' cannot be tokenized: " + ids.status().message(),
                                    "prediction.content");
    if (limits.contextLength > 0 && int64_t(ids->size()) > limits.contextLength)
        return invalidRequest("'prediction.content' has " + std::to_string(ids->size()) +
                                  " tokens, more than this model's context length of " +
                                  std::to_string(limits.contextLength),
                              "prediction.content");
    g.prediction = std::move(*ids);
    return std::nullopt;
}

ApiResult<GenerationRequest> generationRequest(const CommonParams& p, std::vector<int32_t> prompt,
                                               const ModelLimits& limits) {
    GenerationRequest g;
    if (prompt.empty()) return invalidRequest("the prompt is empty", "prompt");
    for (int32_t id : prompt)
        if (limits.vocabSize > 0 && (id < 0 || id >= limits.vocabSize))
            return invalidRequest("prompt token " + std::to_string(id) +
                                      " is outside the vocabulary (size " +
                                      std::to_string(limits.vocabSize) + ")",
                                  "prompt");
    const int64_t promptLen = int64_t(prompt.size());
    const int64_t room = int64_t(limits.contextLength) - promptLen;
    const std::string ctx = std::to_string(limits.contextLength);
    if (limits.contextLength > 0 && room < 1)
        return invalidRequest("This model's maximum context length is " + ctx +
                                  " tokens; the prompt has " + std::to_string(promptLen) +
                                  " tokens, leaving no room for a completion",
                              "messages", "context_length_exceeded");
    if (p.maxTokens) {
        if (limits.contextLength > 0 && *p.maxTokens > room)
            return invalidRequest("This model's maximum context length is " + ctx +
                                      " tokens. However, you requested " +
                                      std::to_string(promptLen + *p.maxTokens) + " tokens (" +
                                      std::to_string(promptLen) + " in the prompt, " +
                                      std::to_string(*p.maxTokens) +
                                      " for the completion)",
                                  "max_tokens", "context_length_exceeded");
        g.maxTokens = *p.maxTokens;
    } else {
        int64_t m = limits.defaultMaxTokens > 0 ? limits.defaultMaxTokens : 4096;
        if (limits.contextLength > 0) m = std::min(m, room);
        g.maxTokens = int32_t(std::max<int64_t>(1, m));
    }
    for (const auto& [id, bias] : p.logitBias)
        if (limits.vocabSize > 0 && id >= limits.vocabSize)
            return invalidRequest("'logit_bias' names token " + std::to_string(id) +
                                      ", outside the vocabulary (size " +
                                      std::to_string(limits.vocabSize) + ")",
                                  "logit_bias");
    g.prompt = std::move(prompt);
    SamplingParams& s = g.sampling;
    s.temperature = p.temperature;
    s.topK = p.topK;
    s.topP = p.topP;
    s.minP = p.minP;
    s.typicalP = p.typicalP;
    s.repetitionPenalty = p.repeatPenalty;
    s.presencePenalty = p.presencePenalty;
    s.frequencyPenalty = p.frequencyPenalty;
    s.logitBias = p.logitBias;
    s.seed = p.seed ? *p.seed : freshSeed();
    s.logprobs = p.logprobs;
    s.topLogprobs = p.logprobs ? p.topLogprobs : 0;
    const Status valid = s.validate(limits.vocabSize > 0 ? limits.vocabSize : INT32_MAX);
    if (!valid.isOk()) return invalidRequest(valid.message());
    g.n = p.n;
    g.stopStrings = p.stop;
    g.ignoreEos = p.ignoreEos;
    return g;
}

} // namespace hearth::server
