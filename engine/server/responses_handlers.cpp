// /v1/responses (OpenAI Responses API, stateless): the request prepared for the generation
// driver, and the response object, either whole or as the typed stream events
// (response.created ... response.completed) the openai clients assemble.
#include "server/generation_setup.h"
#include "server/openai_convert.h"
#include "server/openai_response.h"
#include "server/responses_request.h"
#include "server/tool_calls.h"

namespace hearth::server {

namespace {

struct ResponsesMeta {
    ResponseHead head;
    std::shared_ptr<const ResponsesRequest> request;
};

OJson responsesUsageOf(const Usage& u) {
    return responsesUsageJson(u.promptTokens, u.cachedPromptTokens, u.completionTokens);
}

const char* finalStatus(FinishReason reason) {
    if (reason == FinishReason::Error) return "failed"; // a dead end of the grammar
    return reason == FinishReason::Length ? "incomplete" : "completed";
}

const char* finalEvent(FinishReason reason) {
    if (reason == FinishReason::Error) return "response.failed";
    return reason == FinishReason::Length ? "response.incomplete" : "response.completed";
}

OJson wholeResponse(const ResponsesMeta& meta, const GenerationJob& job) {
    const ChoiceOutput out = job.output(0);
    OJson output = OJson::array();
    if (!out.reasoning.empty()) output.push_back(reasoningItemJson(newResponseId("rs_"), out.reasoning));
    if (!out.content.empty() || out.calls.empty())
        output.push_back(messageItemJson(newResponseId("msg_"), out.content, "completed"));
    for (const ToolCall& c : out.calls)
        output.push_back(functionCallItemJson(newResponseId("fc_"), c, c.arguments, "completed"));
    // Cut by max_output_tokens: the item it ended in is incomplete, as the response is.
    if (out.reason == FinishReason::Length && !output.empty() && output.back().contains("status"))
        output.back()["status"] = "incomplete";
    return responseObjectJson(meta.head, *meta.request, finalStatus(out.reason),
                              out.reason == FinishReason::Length, std::move(output), responsesUsageOf(job.usage));
}

// The Responses stream: response.created and response.in_progress, then one output item at a
// time (reasoning, message, function_call) with its added / delta / done events, then
// response.completed (or .incomplete / .failed) holding the whole response.
class ResponsesFormatter final : public StreamFormatter {
public:
    explicit ResponsesFormatter(ResponsesMeta meta) : m_meta(std::move(meta)) {}

    std::string begin(const GenerationJob&) override {
        const OJson running = responseObjectJson(m_meta.head, *m_meta.request, "in_progress", false,
                                                 OJson::array(), nullptr);
        std::string out = event("response.created", {{"response", running}});
        out += event("response.in_progress", {{"response", running}});
        return out;
    }

    std::string reasoning(const GenerationJob&, int32_t, const std::string& piece) override {
        std::string out;
        if (m_open != Item::Reasoning) {
            out += close();
            m_open = Item::Reasoning;
            m_itemId = newResponseId("rs_");
            m_text.clear();
            OJson item = reasoningItemJson(m_itemId, "");
            item["content"] = OJson::array();
            out += event("response.output_item.added", {{"output_index", m_output.size()}, {"item", std::move(item)}});
        }
        m_text += piece;
        return out + event("response.reasoning_text.delta", {{"item_id", m_itemId},
                                                             {"output_index", m_output.size()},
                                                             {"content_index", 0},
                                                             {"delta", piece}});
    }

    std::string text(const GenerationJob&, int32_t, const std::string& piece,
                     const std::vector<TokenLogprob>&) override {
        if (piece.empty()) return {};
        std::string out;
        if (m_open != Item::Message) out += openMessage();
        m_text += piece;
        return out + event("response.output_text.delta", {{"item_id", m_itemId},
                                                          {"output_index", m_output.size()},
                                                          {"content_index", 0},
                                                          {"delta", piece},
                                                          {"logprobs", OJson::array()}});
    }

    std::string toolCall(const GenerationJob&, int32_t, const ToolCallDelta& d) override {
        std::string out;
        if (!d.name.empty()) { // a new call
            out += close();
            m_open = Item::Call;
            m_itemId = newResponseId("fc_");
            m_call = ToolCall{d.id, d.name, ""};
            out += event("response.output_item.added",
                         {{"output_index", m_output.size()},
                          {"item", functionCallItemJson(m_itemId, m_call, "", "in_progress")}});
        }
        if (!d.arguments.empty() && m_open == Item::Call) {
            m_call.arguments += d.arguments;
            out += event("response.function_call_arguments.delta",
                         {{"item_id", m_itemId}, {"output_index", m_output.size()}, {"delta", d.arguments}});
        }
        return out;
    }

    std::string choiceEnd(const GenerationJob& job, int32_t choice, const ChoiceOutput& rest, bool) override {
        std::string out = text(job, choice, rest.content, {});
        for (const ToolCall& c : rest.calls) {
            ToolCallDelta first;
            first.id = c.id;
            first.name = c.name;
            first.arguments = c.arguments;
            out += toolCall(job, choice, first);
        }
        if (m_output.empty() && m_open == Item::None) out += openMessage(); // always one item
        m_reason = rest.reason;
        return out + close(m_reason == FinishReason::Length);
    }

    std::string end(const GenerationJob& job) override {
        OJson done = responseObjectJson(m_meta.head, *m_meta.request, finalStatus(m_reason),
                                        m_reason == FinishReason::Length, m_output, responsesUsageOf(job.usage));
        return event(finalEvent(m_reason), {{"response", std::move(done)}});
    }

    std::string fail(const GenerationJob&, const Status& error) override {
        const ApiError e = apiErrorFromStatus(error);
        OJson data = OJson::object();
        data["code"] = e.code.empty() ? OJson(nullptr) : OJson(e.code);
        data["message"] = e.message;
        data["param"] = nullptr;
        return event("error", std::move(data));
    }

private:
    enum class Item { None, Reasoning, Message, Call };

    std::string event(const char* type, OJson fields) {
        OJson data = OJson::object();
        data["type"] = type;
        data["sequence_number"] = m_sequence++;
        for (auto it = fields.begin(); it != fields.end(); ++it) data[it.key()] = std::move(it.value());
        return namedSseEvent(type, data);
    }

    std::string openMessage() {
        std::string out = close();
        m_open = Item::Message;
        m_itemId = newResponseId("msg_");
        m_text.clear();
        OJson item = messageItemJson(m_itemId, "", "in_progress");
        item["content"] = OJson::array();
        out += event("response.output_item.added",
                     {{"output_index", m_output.size()}, {"item", std::move(item)}});
        out += event("response.content_part.added", {{"item_id", m_itemId},
                                                     {"output_index", m_output.size()},
                                                     {"content_index", 0},
                                                     {"part", outputTextPartJson("")}});
        return out;
    }

    // Ends the open item with its done events and adds it to the output (incomplete when the
    // response was cut in it).
    std::string close(bool cut = false) {
        const size_t index = m_output.size();
        std::string out;
        OJson item;
        switch (m_open) {
        case Item::None: return {};
        case Item::Reasoning:
            out += event("response.reasoning_text.done",
                         {{"item_id", m_itemId}, {"output_index", index}, {"content_index", 0}, {"text", m_text}});
            item = reasoningItemJson(m_itemId, m_text);
            break;
        case Item::Message:
            out += event("response.output_text.done", {{"item_id", m_itemId},
                                                      {"output_index", index},
                                                      {"content_index", 0},
                                                      {"text", m_text},
                                                      {"logprobs", OJson::array()}});
            out += event("response.content_part.done", {{"item_id", m_itemId},
                                                        {"output_index", index},
                                                        {"content_index", 0},
                                                        {"part", outputTextPartJson(m_text)}});
            item = messageItemJson(m_itemId, m_text, "completed");
            break;
        case Item::Call:
            out += event("response.function_call_arguments.done", {{"item_id", m_itemId},
                                                                   {"output_index", index},
                                                                   {"name", m_call.name},
                                                                   {"arguments", m_call.arguments}});
            item = functionCallItemJson(m_itemId, m_call, m_call.arguments, "completed");
            break;
        }
        m_open = Item::None;
        if (cut && item.contains("status")) item["status"] = "incomplete";
        out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
        m_output.push_back(std::move(item));
        return out;
    }

    ResponsesMeta m_meta;
    int64_t m_sequence = 0;
    OJson m_output = OJson::array();
    Item m_open = Item::None;
    std::string m_itemId;
    std::string m_text; // the open reasoning or message item's text
    ToolCall m_call;    // the open function call
    FinishReason m_reason = FinishReason::Stop;
};

} // namespace

void Server::Impl::handleResponses(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseResponsesRequest(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    auto request = std::make_shared<ResponsesRequest>(std::move(parsed.value()));
    ChatCompletionRequest& chat = request->chat;
    auto prepared = prepareChat(*this, chat, chatTemplateRequest(chat), ChatFieldNames{"input", "text.format"});
    if (!prepared) {
        ApiError e = prepared.error();
        if (e.param == "max_tokens") e.param = "max_output_tokens";
        if (e.param == "messages") e.param = "input";
        return sendError(res, e);
    }
    ResponsesMeta meta;
    meta.head = {newResponseId("resp_"), unixNow(), prepared->model.modelId};
    meta.request = request;
    const bool stream = chat.common.stream;
    auto job = submitGeneration(prepared->model.engine, std::move(prepared->request), std::move(prepared->options),
                                stream, "max_output_tokens");
    if (!job) return sendError(res, job.error());
    if (stream)
        return streamGeneration(*this, *job, std::make_shared<ResponsesFormatter>(std::move(meta)), res);
    if (auto e = waitForGeneration(*this, **job)) return sendError(res, *e);
    sendJson(res, 200, wholeResponse(meta, **job));
}

} // namespace hearth::server
