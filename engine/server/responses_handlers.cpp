// /v1/responses (OpenAI Responses API, stateless): prompt building through the chat template,
// generation through the job driver, and the response object, either whole or as the typed
// stream events (response.created ... response.completed) the openai clients assemble.
#include "server/job_driver.h"
#include "server/openai_convert.h"
#include "server/openai_response.h"
#include "server/responses_request.h"
#include "server/tool_calls.h"

namespace hearth::server {

namespace {

struct ResponsesMeta {
    ResponseHead head;
    std::shared_ptr<const ResponsesRequest> request;
    bool tools = false;
    std::vector<std::string> toolNames;
};

OJson usageOf(const Usage& u) {
    return responsesUsageJson(u.promptTokens, u.cachedPromptTokens, u.completionTokens);
}

// Output items for a finished text: function_call items when calls were parsed.
struct ParsedOutput {
    std::string text;
    bool haveText = true;
    std::vector<ToolCall> calls;
};

ParsedOutput parseOutput(const ResponsesMeta& meta, const std::string& text) {
    ParsedOutput out;
    out.text = text;
    if (!meta.tools) return out;
    ToolCallParse p = parseToolCallsLenient(text, meta.toolNames);
    if (p.calls.empty()) return out;
    out.calls = std::move(p.calls);
    out.text = std::move(p.content);
    out.haveText = !out.text.empty();
    return out;
}

const char* finalStatus(const SingleJob& job) {
    if (job.reason == FinishReason::Error) return "failed"; // a dead end of the grammar
    return job.reason == FinishReason::Length ? "incomplete" : "completed";
}

const char* finalEvent(const SingleJob& job) {
    if (job.reason == FinishReason::Error) return "response.failed";
    return job.reason == FinishReason::Length ? "response.incomplete" : "response.completed";
}

OJson wholeResponse(const ResponsesMeta& meta, const SingleJob& job) {
    ParsedOutput p = parseOutput(meta, job.text);
    OJson output = OJson::array();
    if (p.haveText) output.push_back(messageItemJson(newResponseId("msg_"), p.text, "completed"));
    for (const ToolCall& c : p.calls)
        output.push_back(functionCallItemJson(newResponseId("fc_"), c, c.arguments, "completed"));
    return responseObjectJson(meta.head, *meta.request, finalStatus(job),
                              job.reason == FinishReason::Length, std::move(output), usageOf(job.usage));
}

class ResponsesFormatter final : public StreamFormatter {
public:
    explicit ResponsesFormatter(ResponsesMeta meta) : m_meta(std::move(meta)) {}

    std::string begin(SingleJob&) override {
        const OJson running = responseObjectJson(m_meta.head, *m_meta.request, "in_progress", false,
                                                 OJson::array(), nullptr);
        std::string out = event("response.created", {{"response", running}});
        out += event("response.in_progress", {{"response", running}});
        if (!m_meta.tools) out += openMessage();
        return out;
    }

    std::string text(SingleJob&, const std::string& piece) override {
        std::string out;
        if (!m_messageOpen) out += openMessage();
        out += textDelta(piece);
        return out;
    }

    std::string end(SingleJob& job) override {
        std::string out;
        if (!job.held.empty()) {
            ParsedOutput p = parseOutput(m_meta, job.held);
            job.held.clear();
            if (p.haveText) {
                if (!m_messageOpen) out += openMessage();
                out += textDelta(p.text);
            }
            out += closeMessage();
            for (const ToolCall& c : p.calls) out += functionCall(c);
        }
        if (m_output.empty() && !m_messageOpen) out += openMessage(); // always one item
        out += closeMessage();
        const bool cut = job.reason == FinishReason::Length;
        const char* status = finalStatus(job);
        OJson done = responseObjectJson(m_meta.head, *m_meta.request, status, cut, m_output,
                                        usageOf(job.usage));
        out += event(finalEvent(job), {{"response", std::move(done)}});
        return out;
    }

    std::string fail(SingleJob&, const Status& error) override {
        const ApiError e = apiErrorFromStatus(error);
        OJson data = OJson::object();
        data["code"] = e.code.empty() ? OJson(nullptr) : OJson(e.code);
        data["message"] = e.message;
        data["param"] = nullptr;
        return event("error", std::move(data));
    }

private:
    std::string event(const char* type, OJson fields) {
        OJson data = OJson::object();
        data["type"] = type;
        data["sequence_number"] = m_sequence++;
        for (auto it = fields.begin(); it != fields.end(); ++it) data[it.key()] = std::move(it.value());
        return namedSseEvent(type, data);
    }

    std::string openMessage() {
        m_messageOpen = true;
        m_messageId = newResponseId("msg_");
        m_text.clear();
        OJson item = messageItemJson(m_messageId, "", "in_progress");
        item["content"] = OJson::array();
        std::string out = event("response.output_item.added",
                                {{"output_index", m_output.size()}, {"item", std::move(item)}});
        out += event("response.content_part.added", {{"item_id", m_messageId},
                                                      {"output_index", m_output.size()},
                                                      {"content_index", 0},
                                                      {"part", outputTextPartJson("")}});
        return out;
    }

    std::string textDelta(const std::string& text) {
        if (text.empty()) return {};
        m_text += text;
        return event("response.output_text.delta", {{"item_id", m_messageId},
                                                    {"output_index", m_output.size()},
                                                    {"content_index", 0},
                                                    {"delta", text},
                                                    {"logprobs", OJson::array()}});
    }

    std::string closeMessage() {
        if (!m_messageOpen) return {};
        m_messageOpen = false;
        const size_t index = m_output.size();
        std::string out = event("response.output_text.done", {{"item_id", m_messageId},
                                                              {"output_index", index},
                                                              {"content_index", 0},
                                                              {"text", m_text},
                                                              {"logprobs", OJson::array()}});
        out += event("response.content_part.done", {{"item_id", m_messageId},
                                                    {"output_index", index},
                                                    {"content_index", 0},
                                                    {"part", outputTextPartJson(m_text)}});
        OJson item = messageItemJson(m_messageId, m_text, "completed");
        out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
        m_output.push_back(std::move(item));
        return out;
    }

    std::string functionCall(const ToolCall& call) {
        const std::string id = newResponseId("fc_");
        const size_t index = m_output.size();
        std::string out = event("response.output_item.added",
                                {{"output_index", index},
                                 {"item", functionCallItemJson(id, call, "", "in_progress")}});
        out += event("response.function_call_arguments.delta",
                     {{"item_id", id}, {"output_index", index}, {"delta", call.arguments}});
        out += event("response.function_call_arguments.done", {{"item_id", id},
                                                               {"output_index", index},
                                                               {"name", call.name},
                                                               {"arguments", call.arguments}});
        OJson item = functionCallItemJson(id, call, call.arguments, "completed");
        out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
        m_output.push_back(std::move(item));
        return out;
    }

    ResponsesMeta m_meta;
    int64_t m_sequence = 0;
    OJson m_output = OJson::array();
    bool m_messageOpen = false;
    std::string m_messageId;
    std::string m_text;
};

} // namespace

void Server::Impl::handleResponses(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseResponsesRequest(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    auto request = std::make_shared<ResponsesRequest>(std::move(parsed.value()));
    ChatCompletionRequest& chat = request->chat;
    auto ref = engineFor(chat.common.model);
    if (!ref) return sendError(res, ref.error());
    auto prompt = ref->engine->encodeChat(chatTemplateRequest(chat));
    if (!prompt) return sendError(res, templateError(prompt.status(), "input"));
    ResponsesMeta meta;
    meta.head = {newResponseId("resp_"), unixNow(), ref->modelId};
    meta.tools = !chat.tools.empty() && chat.toolChoice.mode != ToolChoiceMode::None;
    for (const ToolFunction& f : chat.tools) meta.toolNames.push_back(f.name);
    const ModelLimits limits{ref->engine->model().nVocab, ref->engine->model().contextLength,
                             m_config.defaultMaxTokens};
    auto gen = generationRequest(chat.common, std::move(*prompt), limits);
    if (!gen) {
        ApiError e = gen.error();
        if (e.param == "max_tokens") e.param = "max_output_tokens";
        if (e.param == "messages") e.param = "input";
        return sendError(res, e);
    }
    auto grammar = requestGrammar(*ref->engine, chat, meta.tools, "text.format");
    if (!grammar) return sendError(res, grammar.error());
    gen->grammar = *grammar;
    const bool stream = chat.common.stream;
    meta.request = request;
    auto job = submitJob(*this, ref->engine, std::move(gen.value()), meta.tools && stream,
                         "max_output_tokens");
    if (!job) return sendError(res, job.error());
    if (stream) return streamJob(*this, *job, std::make_shared<ResponsesFormatter>(std::move(meta)), res);
    if (auto e = waitForJob(*this, **job)) return sendError(res, *e);
    sendJson(res, 200, wholeResponse(meta, **job));
}

} // namespace hearth::server
