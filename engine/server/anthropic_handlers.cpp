// /v1/messages and /v1/messages/count_tokens (Anthropic Messages API): the request prepared for
// the generation driver, and the message, either whole or as Anthropic's stream events
// (message_start, content_block_*, ping, message_delta, message_stop).
#include "server/anthropic_request.h"
#include "server/generation_setup.h"
#include "server/image_parts.h"
#include "server/openai_convert.h"
#include "server/openai_response.h"
#include "server/tool_calls.h"

namespace hearth::server {

namespace {

struct MessageMeta {
    std::string id;
    std::string model;
    int32_t promptTokens = 0;
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

AnthropicUsage anthropicUsageOf(const Usage& u) {
    AnthropicUsage a;
    a.cachedTokens = u.cachedPromptTokens;
    a.inputTokens = u.promptTokens - u.cachedPromptTokens;
    a.outputTokens = u.completionTokens;
    return a;
}

OJson textBlock(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

// Reasoning as Anthropic's thinking block (no signature: nothing here is signed).
OJson thinkingBlock(const std::string& text) {
    return {{"type", "thinking"}, {"thinking", text}, {"signature", ""}};
}

OJson messageJson(const MessageMeta& meta, const GenerationJob& job) {
    const ChoiceOutput out = job.output(0);
    const bool toolUse = !out.calls.empty();
    OJson content = OJson::array();
    if (!out.reasoning.empty()) content.push_back(thinkingBlock(out.reasoning));
    if (!out.content.empty() || !toolUse) content.push_back(textBlock(out.content));
    for (const ToolCall& c : out.calls) content.push_back(toolUseBlock(c));
    const bool stop = !toolUse && !out.stopString.empty();
    OJson m = OJson::object();
    m["id"] = meta.id;
    m["type"] = "message";
    m["role"] = "assistant";
    m["model"] = meta.model;
    m["content"] = std::move(content);
    m["stop_reason"] = anthropicStopReason(out.reason == FinishReason::Length, toolUse, stop);
    m["stop_sequence"] = stop ? OJson(out.stopString) : OJson(nullptr);
    m["usage"] = anthropicUsageJson(anthropicUsageOf(job.usage));
    return m;
}

// Anthropic's stream: message_start and ping, then one block at a time (thinking, text,
// tool_use) each as content_block_start, deltas and content_block_stop, then message_delta and
// message_stop.
class AnthropicFormatter final : public StreamFormatter {
public:
    explicit AnthropicFormatter(MessageMeta meta) : m_meta(std::move(meta)) {}

    std::string begin(const GenerationJob&) override {
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
        return namedSseEvent("message_start", {{"type", "message_start"}, {"message", msg}}) + keepAlive();
    }

    std::string reasoning(const GenerationJob&, int32_t, const std::string& piece) override {
        std::string out = open(Block::Thinking, thinkingBlock(""));
        return out + delta({{"type", "thinking_delta"}, {"thinking", piece}});
    }

    std::string text(const GenerationJob&, int32_t, const std::string& piece,
                     const std::vector<TokenLogprob>&) override {
        if (piece.empty()) return {};
        std::string out = open(Block::Text, textBlock(""));
        return out + delta({{"type", "text_delta"}, {"text", piece}});
    }

    std::string toolCall(const GenerationJob&, int32_t, const ToolCallDelta& d) override {
        std::string out;
        if (!d.name.empty()) { // a new call
            out += close();
            out += open(Block::Tool, {{"type", "tool_use"},
                                      {"id", newResponseId("toolu_")},
                                      {"name", d.name},
                                      {"input", OJson::object()}});
        }
        if (!d.arguments.empty() && m_open == Block::Tool)
            out += delta({{"type", "input_json_delta"}, {"partial_json", d.arguments}});
        return out;
    }

    std::string choiceEnd(const GenerationJob& job, int32_t choice, const ChoiceOutput& rest, bool) override {
        std::string out = text(job, choice, rest.content, {});
        for (const ToolCall& c : rest.calls) {
            OJson block = toolUseBlock(c);
            const std::string input = dumpJson(block["input"]);
            block["input"] = OJson::object();
            out += close();
            out += open(Block::Tool, std::move(block));
            out += delta({{"type", "input_json_delta"}, {"partial_json", input}});
        }
        if (m_next == 0 && m_open == Block::None) out += open(Block::Text, textBlock(""));
        out += close();
        m_reason = rest.reason;
        m_stop = rest.stopString;
        return out;
    }

    std::string end(const GenerationJob& job) override {
        std::string out;
        const bool toolUse = m_toolBlocks > 0;
        const bool stop = !toolUse && !m_stop.empty();
        OJson d = OJson::object();
        d["stop_reason"] = anthropicStopReason(m_reason == FinishReason::Length, toolUse, stop);
        d["stop_sequence"] = stop ? OJson(m_stop) : OJson(nullptr);
        const AnthropicUsage u = anthropicUsageOf(job.usage);
        OJson usage = OJson::object();
        usage["input_tokens"] = u.inputTokens;
        usage["cache_read_input_tokens"] = u.cachedTokens;
        usage["output_tokens"] = u.outputTokens;
        out += namedSseEvent("message_delta",
                             {{"type", "message_delta"}, {"delta", std::move(d)}, {"usage", std::move(usage)}});
        out += namedSseEvent("message_stop", {{"type", "message_stop"}});
        return out;
    }

    std::string fail(const GenerationJob&, const Status& error) override {
        return namedSseEvent("error", anthropicErrorJson(apiErrorFromStatus(error)));
    }

    std::string keepAlive() override { return namedSseEvent("ping", {{"type", "ping"}}); }

private:
    enum class Block { None, Thinking, Text, Tool };

    // Opens a block of `kind` unless one is open already (closing another kind first).
    std::string open(Block kind, OJson block) {
        if (m_open == kind && kind != Block::Tool) return {};
        std::string out = close();
        m_open = kind;
        if (kind == Block::Tool) ++m_toolBlocks;
        return out + namedSseEvent("content_block_start", {{"type", "content_block_start"},
                                                           {"index", m_next},
                                                           {"content_block", std::move(block)}});
    }
    std::string delta(OJson d) {
        return namedSseEvent("content_block_delta",
                             {{"type", "content_block_delta"}, {"index", m_next}, {"delta", std::move(d)}});
    }
    std::string close() {
        if (m_open == Block::None) return {};
        m_open = Block::None;
        return namedSseEvent("content_block_stop", {{"type", "content_block_stop"}, {"index", m_next++}});
    }

    MessageMeta m_meta;
    Block m_open = Block::None;
    int m_next = 0; // index of the open block, or of the next one
    int m_toolBlocks = 0;
    FinishReason m_reason = FinishReason::Stop;
    std::string m_stop; // the stop string that ended the message
};

} // namespace

void Server::Impl::handleAnthropicMessages(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseAnthropicRequest(req.body, m_limits, false);
    if (!parsed) return sendErrorFor(req, res, parsed.error());
    ChatCompletionRequest& chat = parsed->chat;
    // tool_choice any / tool: the model must write a call (constrained decoding).
    auto prepared = prepareChat(*this, chat, templateRequest(chat), ChatFieldNames{"messages", "format"});
    if (!prepared) return sendErrorFor(req, res, prepared.error());
    MessageMeta meta;
    meta.id = newResponseId("msg_");
    meta.model = prepared->model.modelId;
    meta.promptTokens = int32_t(prepared->request.prompt.size());
    const bool stream = chat.common.stream;
    auto job = submitGeneration(prepared->model.engine, std::move(prepared->request), std::move(prepared->options),
                                stream, "max_tokens");
    if (!job) return sendErrorFor(req, res, job.error());
    if (stream)
        return streamGeneration(*this, *job, std::make_shared<AnthropicFormatter>(std::move(meta)), res);
    if (auto e = waitForGeneration(*this, **job)) return sendErrorFor(req, res, *e);
    sendJson(res, 200, messageJson(meta, **job));
}

void Server::Impl::handleAnthropicCountTokens(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseAnthropicRequest(req.body, m_limits, true);
    if (!parsed) return sendErrorFor(req, res, parsed.error());
    ChatCompletionRequest& chat = parsed->chat;
    auto ref = engineFor(chat.common.model);
    if (!ref) return sendErrorFor(req, res, ref.error());
    std::vector<PromptImage> images; // an image counts as the tokens it becomes
    auto prompt = chatPrompt(*ref->engine, templateRequest(chat), chat.images, images);
    if (!prompt) return sendErrorFor(req, res, prompt.error());
    sendJson(res, 200, {{"input_tokens", prompt.value().size()}});
}

} // namespace hearth::server
