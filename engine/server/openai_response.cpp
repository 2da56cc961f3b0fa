// Builders for OpenAI response bodies and streamed chunks.
#include "server/openai_response.h"

#include "server/api_error.h"

#include <chrono>
#include <mutex>
#include <random>

namespace hearth::server {

namespace {

OJson bytesArray(const std::string& s) {
    OJson a = OJson::array();
    for (unsigned char c : s) a.push_back(int(c));
    return a;
}

OJson toolCallsJson(const std::vector<ToolCall>& calls, bool withIndex) {
    OJson a = OJson::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        OJson c = OJson::object();
        if (withIndex) c["index"] = i;
        c["id"] = calls[i].id;
        c["type"] = "function";
        c["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
        a.push_back(std::move(c));
    }
    return a;
}

} // namespace

std::string newResponseId(const char* prefix) {
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}() ^
                               uint64_t(std::chrono::steady_clock::now().time_since_epoch().count())};
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string id = prefix;
    std::lock_guard<std::mutex> lock(mu);
    for (int i = 0; i < 24; ++i) id += alphabet[rng() % (sizeof alphabet - 1)];
    return id;
}

int64_t unixNow() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A reply cut by max_tokens says "length" even with tool calls (the last may be cut short), as
// OpenAI's does.
const char* finishReasonText(FinishReason reason, bool toolCalls) {
    if (reason == FinishReason::Error) return "error"; // e.g. a grammar the vocabulary cannot continue
    if (reason == FinishReason::Length) return "length";
    return toolCalls ? "tool_calls" : "stop";
}

OJson usageJson(const Usage& usage) {
    OJson u = OJson::object();
    u["prompt_tokens"] = usage.promptTokens;
    u["completion_tokens"] = usage.completionTokens;
    u["total_tokens"] = usage.promptTokens + usage.completionTokens;
    u["prompt_tokens_details"] = {{"cached_tokens", usage.cachedPromptTokens}};
    // Predicted outputs: prediction tokens drafted and accepted, and drafted and rejected (those
    // cost compute like generated ones). Speculation's own counts follow, as Hearth's extension.
    u["completion_tokens_details"] = {
        {"accepted_prediction_tokens", usage.acceptedPredictionTokens},
        {"rejected_prediction_tokens", usage.predictionDraftTokens - usage.acceptedPredictionTokens}};
    if (usage.draftTokens > 0)
        u["speculative"] = {{"draft_tokens", usage.draftTokens}, {"accepted_draft_tokens", usage.acceptedDraftTokens}};
    return u;
}

OJson chatLogprobsJson(const std::vector<TokenLogprob>& tokens) {
    OJson content = OJson::array();
    for (const TokenLogprob& t : tokens) {
        OJson e = OJson::object();
        e["token"] = t.token;
        e["logprob"] = t.logprob;
        e["bytes"] = bytesArray(t.token);
        OJson top = OJson::array();
        for (const auto& [tok, lp] : t.top)
            top.push_back({{"token", tok}, {"logprob", lp}, {"bytes", bytesArray(tok)}});
        e["top_logprobs"] = std::move(top);
        content.push_back(std::move(e));
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
}

OJson completionLogprobsJson(const std::vector<TokenLogprob>& tokens, size_t textOffset) {
    OJson toks = OJson::array(), lps = OJson::array(), tops = OJson::array(),
          offsets = OJson::array();
    size_t offset = textOffset;
    for (const TokenLogprob& t : tokens) {
        toks.push_back(t.token);
        lps.push_back(t.logprob);
        OJson top = OJson::object();
        for (const auto& [tok, lp] : t.top) top[tok] = lp;
        tops.push_back(std::move(top));
        offsets.push_back(offset);
        offset += t.token.size();
    }
    OJson o = OJson::object();
    o["tokens"] = std::move(toks);
    o["token_logprobs"] = std::move(lps);
    o["top_logprobs"] = std::move(tops);
    o["text_offset"] = std::move(offsets);
    return o;
}

OJson chatCompletionJson(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                         const Usage& usage, bool withLogprobs) {
    OJson r = OJson::object();
    r["id"] = meta.id;
    r["object"] = "chat.completion";
    r["created"] = meta.created;
    r["model"] = meta.model;
    OJson list = OJson::array();
    for (size_t i = 0; i < choices.size(); ++i) {
        const ChoiceOutput& c = choices[i];
        const bool calls = !c.calls.empty();
        OJson msg = OJson::object();
        msg["role"] = "assistant";
        if (calls) {
            msg["content"] = c.content.empty() ? OJson(nullptr) : OJson(c.content);
            msg["tool_calls"] = toolCallsJson(c.calls, false);
        } else {
            msg["content"] = c.content;
        }
        if (!c.reasoning.empty()) msg["reasoning_content"] = c.reasoning;
        msg["refusal"] = nullptr;
        OJson choice = OJson::object();
        choice["index"] = i;
        choice["message"] = std::move(msg);
        choice["logprobs"] = withLogprobs ? chatLogprobsJson(c.logprobs) : OJson(nullptr);
        choice["finish_reason"] = finishReasonText(c.reason, calls);
        list.push_back(std::move(choice));
    }
    r["choices"] = std::move(list);
    r["usage"] = usageJson(usage);
    r["system_fingerprint"] = "hearth-" HEARTH_VERSION;
    return r;
}

OJson completionJson(const ResponseMeta& meta, const std::vector<ChoiceOutput>& choices,
                     const Usage& usage, bool withLogprobs, size_t textOffset) {
    OJson r = OJson::object();
    r["id"] = meta.id;
    r["object"] = "text_completion";
    r["created"] = meta.created;
    r["model"] = meta.model;
    OJson list = OJson::array();
    for (size_t i = 0; i < choices.size(); ++i) {
        const ChoiceOutput& c = choices[i];
        OJson choice = OJson::object();
        choice["index"] = i;
        choice["text"] = c.text;
        choice["logprobs"] =
            withLogprobs ? completionLogprobsJson(c.logprobs, textOffset) : OJson(nullptr);
        choice["finish_reason"] = finishReasonText(c.reason, false);
        list.push_back(std::move(choice));
    }
    r["choices"] = std::move(list);
    r["usage"] = usageJson(usage);
    r["system_fingerprint"] = "hearth-" HEARTH_VERSION;
    return r;
}

OJson chatChunkJson(const ResponseMeta& meta, int32_t index, OJson delta,
                    const char* finishReason, OJson logprobs) {
    OJson r = OJson::object();
    r["id"] = meta.id;
    r["object"] = "chat.completion.chunk";
    r["created"] = meta.created;
    r["model"] = meta.model;
    r["system_fingerprint"] = "hearth-" HEARTH_VERSION;
    OJson choice = OJson::object();
    choice["index"] = index;
    choice["delta"] = std::move(delta);
    choice["logprobs"] = std::move(logprobs);
    choice["finish_reason"] = finishReason ? OJson(finishReason) : OJson(nullptr);
    r["choices"] = OJson::array({std::move(choice)});
    return r;
}

OJson completionChunkJson(const ResponseMeta& meta, int32_t index, const std::string& text,
                          const char* finishReason, OJson logprobs) {
    OJson r = OJson::object();
    r["id"] = meta.id;
    r["object"] = "text_completion";
    r["created"] = meta.created;
    r["model"] = meta.model;
    r["system_fingerprint"] = "hearth-" HEARTH_VERSION;
    OJson choice = OJson::object();
    choice["index"] = index;
    choice["text"] = text;
    choice["logprobs"] = std::move(logprobs);
    choice["finish_reason"] = finishReason ? OJson(finishReason) : OJson(nullptr);
    r["choices"] = OJson::array({std::move(choice)});
    return r;
}

OJson usageChunkJson(const ResponseMeta& meta, const char* object, const Usage& usage) {
    OJson r = OJson::object();
    r["id"] = meta.id;
    r["object"] = object;
    r["created"] = meta.created;
    r["model"] = meta.model;
    r["system_fingerprint"] = "hearth-" HEARTH_VERSION;
    r["choices"] = OJson::array();
    r["usage"] = usageJson(usage);
    return r;
}

OJson toolCallsDelta(const std::vector<ToolCall>& calls) {
    return {{"tool_calls", toolCallsJson(calls, true)}};
}

OJson toolCallDelta(const ToolCallDelta& delta) {
    OJson c = OJson::object();
    c["index"] = delta.index;
    if (!delta.id.empty()) {
        c["id"] = delta.id;
        c["type"] = "function";
        c["function"] = {{"name", delta.name}, {"arguments", delta.arguments}};
    } else {
        c["function"] = {{"arguments", delta.arguments}};
    }
    return {{"tool_calls", OJson::array({std::move(c)})}};
}

std::string sseEvent(const OJson& json) { return "data: " + dumpJson(json) + "\n\n"; }

} // namespace hearth::server
