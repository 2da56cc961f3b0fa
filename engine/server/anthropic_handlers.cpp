// /v1/messages and /v1/messages/count_tokens (Anthropic Messages API): prompt building through
// the chat template, generation through the job driver, and the message, either whole or as
// Anthropic's stream events (message_start, content_block_*, ping, message_delta, message_stop).
#include "server/anthropic_request.h"
#include "server/image_parts.h"
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

OJson messageJson(const MessageMeta& meta, const SingleJob& job) {
    const JobOutput out = job.split();
    const bool toolUse = !out.calls.empty();
    OJson content = OJson::array();
    if (!out.reasoning.empty()) content.push_back(thinkingBlock(out.reasoning));
    if (!out.content.empty() || !toolUse) content.push_back(textBlock(out.content));
    for (const ToolCall& c : out.calls) content.push_back(toolUseBlock(c));
    const std::optional<std::string> stop = toolUse ? std::nullopt : job.matchedStop();
    OJson m = OJson::object();
    m["id"] = meta.id;
    m["type"] = "message";
    m["role"] = "assistant";
    m["model"] = meta.model;
    m["content"] = std::move(content);
    m["stop_reason"] = anthropicStopReason(job.reason == FinishReason::Length, toolUse, stop.has_value());
    m["stop_sequence"] = stop ? OJson(*stop) : OJson(nullptr);
    m["usage"] = anthropicUsageJson(anthropicUsageOf(job.usage));
    return m;
}

// Anthropic's stream: message_start and ping, then one block at a time (thinking, text,
// tool_use) each as content_block_start, deltas and content_block_stop, then message_delta and
// message_stop.
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
        return namedSseEvent("message_start", {{"type", "message_start"}, {"message", msg}}) + keepAlive();
    }

    std::string reasoning(SingleJob&, const std::string& piece) override {
        std::string out = open(Block::Thinking, thinkingBlock(""));
        return out + delta({{"type", "thinking_delta"}, {"thinking", piece}});
    }

    std::string text(SingleJob&, const std::string& piece) override {
        if (piece.empty()) return {};
        std::string out = open(Block::Text, textBlock(""));
        return out + delta({{"type", "text_delta"}, {"text", piece}});
    }

    std::string toolCall(SingleJob&, const ToolCallDelta& d) override {
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

    std::string end(SingleJob& job, const JobOutput& rest) override {
        std::string out = text(job, rest.content);
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
        const bool toolUse = m_toolBlocks > 0;
        const std::optional<std::string> stop = toolUse ? std::nullopt : job.matchedStop();
        OJson d = OJson::object();
        d["stop_reason"] = anthropicStopReason(job.reason == FinishReason::Length, toolUse, stop.has_value());
        d["stop_sequence"] = stop ? OJson(*stop) : OJson(nullptr);
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

    std::string fail(SingleJob&, const Status& error) override {
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
};

} // namespace

void Server::Impl::handleAnthropicMessages(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseAnthropicRequest(req.body, m_limits, false);
    if (!parsed) return sendErrorFor(req, res, parsed.error());
    ChatCompletionRequest& chat = parsed->chat;
    auto ref = engineFor(chat.common.model);
    if (!ref) return sendErrorFor(req, res, ref.error());
    const tmpl::ChatRequest tmplRequest = templateRequest(chat);
    std::vector<PromptImage> images;
    auto prompt = chatPrompt(*ref->engine, tmplRequest, chat.images, images);
    if (!prompt) return sendErrorFor(req, res, prompt.error());
    MessageMeta meta;
    meta.id = newResponseId("msg_");
    meta.model = ref->modelId;
    meta.promptTokens = int32_t(prompt->size());
    JobOptions options;
    options.tools = !chat.tools.empty() && chat.toolChoice.mode != ToolChoiceMode::None;
    for (const ToolFunction& f : chat.tools) options.toolNames.push_back(f.name);
    auto rendered = ref->engine->renderChat(tmplRequest);
    if (rendered) options.renderedPrompt = std::move(*rendered);
    const ModelLimits limits{ref->engine->model().nVocab, ref->engine->model().contextLength,
                             m_config.defaultMaxTokens};
    auto gen = generationRequest(chat.common, std::move(prompt.value()), limits);
    if (!gen) return sendErrorFor(req, res, gen.error());
    gen->images = std::move(images);
    // tool_choice any / tool: the model must write a call (constrained decoding).
    auto grammar = requestGrammar(*ref->engine, chat, options.tools, "format");
    if (!grammar) return sendErrorFor(req, res, grammar.error());
    gen->grammar = *grammar;
    const bool stream = chat.common.stream;
    auto job = submitJob(ref->engine, std::move(gen.value()), std::move(options), stream, "max_tokens");
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
    std::vector<PromptImage> images; // an image counts as the tokens it becomes
    auto prompt = chatPrompt(*ref->engine, templateRequest(chat), chat.images, images);
    if (!prompt) return sendErrorFor(req, res, prompt.error());
    sendJson(res, 200, {{"input_tokens", prompt.value().size()}});
}

} // namespace hearth::server
