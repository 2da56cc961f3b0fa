// /v1/messages and /v1/messages/count_tokens (Anthropic Messages API): prompt building through
// the chat template, generation through the job driver, and the message, either whole or as
// Anthropic's stream events (message_start, content_block_*, ping, message_delta, message_stop).
#include "server/anthropic_request.h"
#include "server/job_driver.h"
#include "server/openai_convert.h"
#include "server/openai_response.h"
#include "server/tool_calls.h"

namespace hearth::server {

namespace {

struct MessageMeta {
    std::string id;
    std::string model;
    int32_t promptTokens = 0;
    bool tools = false;
    std::vector<std::string> toolNames;
};

// The template request: a conversation ending in an assistant turn with text is a prefill that
// the model continues (as Anthropic's API does), otherwise a new assistant turn is started.
tmpl::ChatRequest templateRequest(const ChatCompletionRequest& chat) {
    tmpl::ChatRequest t = chatTemplateRequest(chat);
    const OJson& last = chat.messages.back();
    if (last["role"] == "assistant" && !last.contains("tool_calls") && last["content"].is_string() &&
        !last["content"].get<std::string>().empty()) {
        t.addGenerationPrompt = false;
        t.continueFinalMessage = true;
    }
    return t;
}

AnthropicUsage usageOf(const Usage& u) {
    AnthropicUsage a;
    a.cachedTokens = u.cachedPromptTokens;
    a.inputTokens = u.promptTokens - u.cachedPromptTokens;
    a.outputTokens = u.completionTokens;
    return a;
}

OJson textBlock(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

// The content blocks of a finished text: tool_use blocks when calls were parsed.
OJson contentBlocks(const MessageMeta& meta, const std::string& text, bool& toolUse) {
    OJson content = OJson::array();
    toolUse = false;
    if (meta.tools) {
        ToolCallParse p = parseToolCallsLenient(text, meta.toolNames);
        if (!p.calls.empty()) {
            toolUse = true;
            if (!p.content.empty()) content.push_back(textBlock(p.content));
            for (const ToolCall& c : p.calls) content.push_back(toolUseBlock(c));
            return content;
        }
    }
    content.push_back(textBlock(text));
    return content;
}

OJson messageJson(const MessageMeta& meta, const SingleJob& job) {
    bool toolUse = false;
    OJson content = contentBlocks(meta, job.text, toolUse);
    const std::optional<std::string> stop = toolUse ? std::nullopt : job.matchedStop();
    OJson m = OJson::object();
    m["id"] = meta.id;
    m["type"] = "message";
    m["role"] = "assistant";
    m["model"] = meta.model;
    m["content"] = std::move(content);
    m["stop_reason"] = anthropicStopReason(job.reason == FinishReason::Length, toolUse, stop.has_value());
    m["stop_sequence"] = stop ? OJson(*stop) : OJson(nullptr);
    m["usage"] = anthropicUsageJson(usageOf(job.usage));
    return m;
}

class AnthropicFormatter final : public StreamFormatter {
public:
    explicit AnthropicFormatter(MessageMeta meta) : m_meta(std::move(meta)) {}

    std::string begin(SingleJob&) override {
        OJson msg = OJson::object();
        msg["id"] = m_meta.id;
        msg["type"] = "message";
        msg["role"] = "assistant";
        msg["model"] = m_meta.model;
        msg["content"] = OJson::array();
        msg["stop_reason"] = nullptr;
        msg["stop_sequence"] = nullptr;
        AnthropicUsage u;
        u.inputTokens = m_meta.promptTokens;
        msg["usage"] = anthropicUsageJson(u);
        std::string out = namedSseEvent("message_start", {{"type", "message_start"}, {"message", msg}});
        // Without tools the text block opens at once (as Anthropic's own streams do); with
        // tools it opens when the output turns out not to be a tool call.
        if (!m_meta.tools) out += openText();
        out += keepAlive();
        return out;
    }

    std::string text(SingleJob&, const std::string& piece) override {
        std::string out;
        if (!m_textOpen) out += openText();
        out += textDelta(piece);
        return out;
    }

    std::string end(SingleJob& job) override {
        std::string out;
        bool toolUse = false;
        if (!job.held.empty()) {
            OJson blocks = contentBlocks(m_meta, job.held, toolUse);
            job.held.clear();
            for (const OJson& b : blocks) {
                if (b["type"] == "text") {
                    if (!m_textOpen) out += openText();
                    out += textDelta(b["text"].get<std::string>());
                    continue;
                }
                out += closeText();
                OJson start = b;
                start["input"] = OJson::object();
                out += namedSseEvent("content_block_start", {{"type", "content_block_start"},
                                                             {"index", m_next},
                                                             {"content_block", std::move(start)}});
                OJson delta = {{"type", "input_json_delta"}, {"partial_json", dumpJson(b["input"])}};
                out += namedSseEvent("content_block_delta", {{"type", "content_block_delta"},
                                                             {"index", m_next},
                                                             {"delta", std::move(delta)}});
                out += namedSseEvent("content_block_stop",
                                     {{"type", "content_block_stop"}, {"index", m_next}});
                ++m_next;
            }
        }
        if (m_next == 0 && !m_textOpen) out += openText(); // every message has a block
        out += closeText();
        const std::optional<std::string> stop = toolUse ? std::nullopt : job.matchedStop();
        OJson delta = OJson::object();
        delta["stop_reason"] = anthropicStopReason(job.reason == FinishReason::Length, toolUse,
                                                   stop.has_value());
        delta["stop_sequence"] = stop ? OJson(*stop) : OJson(nullptr);
        const AnthropicUsage u = usageOf(job.usage);
        OJson usage = OJson::object();
        usage["input_tokens"] = u.inputTokens;
        usage["cache_read_input_tokens"] = u.cachedTokens;
        usage["output_tokens"] = u.outputTokens;
        out += namedSseEvent("message_delta",
                             {{"type", "message_delta"}, {"delta", std::move(delta)}, {"usage", std::move(usage)}});
        out += namedSseEvent("message_stop", {{"type", "message_stop"}});
        return out;
    }

    std::string fail(SingleJob&, const Status& error) override {
        return namedSseEvent("error", anthropicErrorJson(apiErrorFromStatus(error)));
    }

    std::string keepAlive() override { return namedSseEvent("ping", {{"type", "ping"}}); }

private:
    std::string openText() {
        m_textOpen = true;
        return namedSseEvent("content_block_start", {{"type", "content_block_start"},
                                                     {"index", m_next},
                                                     {"content_block", textBlock("")}});
    }
    std::string textDelta(const std::string& text) {
        if (text.empty()) return {};
        return namedSseEvent("content_block_delta",
                             {{"type", "content_block_delta"},
                              {"index", m_next},
                              {"delta", {{"type", "text_delta"}, {"text", text}}}});
    }
    std::string closeText() {
        if (!m_textOpen) return {};
        m_textOpen = false;
        return namedSseEvent("content_block_stop", {{"type", "content_block_stop"}, {"index", m_next++}});
    }

    MessageMeta m_meta;
    bool m_textOpen = false;
    int m_next = 0; // index of the open block, or of the next one
};

} // namespace

void Server::Impl::sendErrorFor(const httplib::Request& req, httplib::Response& res,
                                const ApiError& error) const {
    if (!isAnthropicPath(req.path)) return sendError(res, error);
    if (error.status == 429)
        res.set_header("Retry-After", std::to_string(m_config.retryAfterSeconds > 0
                                                         ? m_config.retryAfterSeconds
                                                         : 1));
    sendJson(res, error.status, anthropicErrorJson(error));
}

void Server::Impl::handleAnthropicMessages(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseAnthropicRequest(req.body, m_limits, false);
    if (!parsed) return sendErrorFor(req, res, parsed.error());
    ChatCompletionRequest& chat = parsed->chat;
    auto ref = engineFor(chat.common.model);
    if (!ref) return sendErrorFor(req, res, ref.error());
    auto prompt = ref->engine->encodeChat(templateRequest(chat));
    if (!prompt) return sendErrorFor(req, res, templateError(prompt.status(), "messages"));
    MessageMeta meta;
    meta.id = newResponseId("msg_");
    meta.model = ref->modelId;
    meta.promptTokens = int32_t(prompt->size());
    meta.tools = !chat.tools.empty() && chat.toolChoice.mode != ToolChoiceMode::None;
    for (const ToolFunction& f : chat.tools) meta.toolNames.push_back(f.name);
    const ModelLimits limits{ref->engine->model().nVocab, ref->engine->model().contextLength,
                             m_config.defaultMaxTokens};
    auto gen = generationRequest(chat.common, std::move(*prompt), limits);
    if (!gen) return sendErrorFor(req, res, gen.error());
    // tool_choice any / tool: the model must write a call (constrained decoding).
    auto grammar = requestGrammar(*ref->engine, chat, meta.tools, "format");
    if (!grammar) return sendErrorFor(req, res, grammar.error());
    gen->grammar = *grammar;
    const bool stream = chat.common.stream;
    auto job = submitJob(*this, ref->engine, std::move(gen.value()), meta.tools && stream, "max_tokens");
    if (!job) return sendErrorFor(req, res, job.error());
    if (stream) return streamJob(*this, *job, std::make_shared<AnthropicFormatter>(std::move(meta)), res);
    if (auto e = waitForJob(*this, **job)) return sendErrorFor(req, res, *e);
    sendJson(res, 200, messageJson(meta, **job));
}

void Server::Impl::handleAnthropicCountTokens(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseAnthropicRequest(req.body, m_limits, true);
    if (!parsed) return sendErrorFor(req, res, parsed.error());
    ChatCompletionRequest& chat = parsed->chat;
    auto ref = engineFor(chat.common.model);
    if (!ref) return sendErrorFor(req, res, ref.error());
    auto prompt = ref->engine->encodeChat(templateRequest(chat));
    if (!prompt) return sendErrorFor(req, res, templateError(prompt.status(), "messages"));
    sendJson(res, 200, {{"input_tokens", prompt->size()}});
}

} // namespace hearth::server
