// /v1/chat/completions and /v1/completions: the request prepared for the generation driver, and
// the reply in OpenAI's shape, either whole or streamed as server-sent events (n choices,
// logprobs, tool calls, reasoning_content, usage).
#include "server/generation_setup.h"
#include "server/openai_convert.h"
#include "server/openai_response.h"

namespace hearth::server {

namespace {

// The shape of an OpenAI reply: chat.completion(.chunk) or text_completion.
struct OpenAiReply {
    bool chat = false;
    ResponseMeta meta;
    bool logprobs = false;
    bool includeUsage = false;
    std::string echo; // completions with echo: the prompt text, sent first
};

OJson logprobsFor(const OpenAiReply& reply, const std::vector<TokenLogprob>& lps) {
    if (!reply.logprobs) return nullptr;
    return reply.chat ? chatLogprobsJson(lps) : completionLogprobsJson(lps, 0);
}

// OpenAI's stream: a chunk per piece of each choice (the assistant role first for chat, the
// echoed prompt for completions), a chunk with each choice's finish_reason, the usage chunk
// when asked for, then [DONE].
class OpenAiFormatter final : public StreamFormatter {
public:
    explicit OpenAiFormatter(OpenAiReply reply) : m_reply(std::move(reply)) {}

    std::string begin(const GenerationJob& job) override {
        std::string out;
        for (size_t i = 0; i < job.choices.size(); ++i) {
            if (m_reply.chat)
                out += sseEvent(chatChunkJson(m_reply.meta, int32_t(i), {{"role", "assistant"}, {"content", ""}},
                                              nullptr));
            else if (!m_reply.echo.empty())
                out += sseEvent(completionChunkJson(m_reply.meta, int32_t(i), m_reply.echo, nullptr));
        }
        return out;
    }

    std::string reasoning(const GenerationJob&, int32_t choice, const std::string& piece) override {
        return sseEvent(chatChunkJson(m_reply.meta, choice, {{"reasoning_content", piece}}, nullptr));
    }

    std::string text(const GenerationJob&, int32_t choice, const std::string& piece,
                     const std::vector<TokenLogprob>& lps) override {
        if (m_reply.chat)
            return sseEvent(chatChunkJson(m_reply.meta, choice, {{"content", piece}}, nullptr, logprobsFor(m_reply, lps)));
        return sseEvent(completionChunkJson(m_reply.meta, choice, piece, nullptr, logprobsFor(m_reply, lps)));
    }

    std::string toolCall(const GenerationJob&, int32_t choice, const ToolCallDelta& d) override {
        return sseEvent(chatChunkJson(m_reply.meta, choice, toolCallDelta(d), nullptr));
    }

    std::string choiceEnd(const GenerationJob& job, int32_t choice, const ChoiceOutput& rest, bool calls) override {
        std::string out;
        if (!rest.calls.empty()) {
            if (!rest.content.empty()) out += text(job, choice, rest.content, {});
            out += sseEvent(chatChunkJson(m_reply.meta, choice, toolCallsDelta(rest.calls), nullptr));
        } else if (!rest.content.empty() || !rest.logprobs.empty()) {
            out += text(job, choice, rest.content, rest.logprobs);
        }
        const char* why = finishReasonText(rest.reason, calls);
        if (m_reply.chat) out += sseEvent(chatChunkJson(m_reply.meta, choice, OJson::object(), why));
        else out += sseEvent(completionChunkJson(m_reply.meta, choice, "", why));
        return out;
    }

    std::string end(const GenerationJob& job) override {
        std::string out;
        if (m_reply.includeUsage)
            out += sseEvent(usageChunkJson(m_reply.meta, m_reply.chat ? "chat.completion.chunk" : "text_completion",
                                           job.usage));
        return out + kSseDone;
    }

    std::string fail(const GenerationJob&, const Status& error) override {
        return sseEvent(errorJson(apiErrorFromStatus(error))) + kSseDone;
    }

private:
    OpenAiReply m_reply;
};

} // namespace

// Submits and answers; shared by both endpoints once the request is prepared.
static void answerOpenAi(Server::Impl& server, OpenAiReply reply, PreparedGeneration prepared, bool stream,
                         httplib::Response& res) {
    auto job = submitGeneration(prepared.model.engine, std::move(prepared.request), std::move(prepared.options),
                                stream, "max_tokens");
    if (!job) return server.sendError(res, job.error());
    if (stream) return streamGeneration(server, *job, std::make_shared<OpenAiFormatter>(std::move(reply)), res);
    if (auto e = waitForGeneration(server, **job)) return server.sendError(res, *e);
    std::vector<ChoiceOutput> out = (*job)->outputs();
    if (reply.chat)
        return Server::Impl::sendJson(res, 200, chatCompletionJson(reply.meta, out, (*job)->usage, reply.logprobs));
    for (ChoiceOutput& o : out) o.text = reply.echo + o.text;
    Server::Impl::sendJson(res, 200,
                           completionJson(reply.meta, out, (*job)->usage, reply.logprobs, reply.echo.size()));
}

void Server::Impl::handleChat(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseChatCompletionRequest(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    ChatCompletionRequest& chat = parsed.value();
    auto prepared = prepareChat(*this, chat, chatTemplateRequest(chat), ChatFieldNames{});
    if (!prepared) return sendError(res, prepared.error());
    OpenAiReply reply;
    reply.chat = true;
    reply.meta = {newResponseId("chatcmpl-"), unixNow(), prepared->model.modelId};
    reply.logprobs = chat.common.logprobs;
    reply.includeUsage = chat.common.includeUsage;
    answerOpenAi(*this, std::move(reply), std::move(*prepared), chat.common.stream, res);
}

void Server::Impl::handleCompletions(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseCompletionRequest(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    CompletionRequest& body = parsed.value();
    auto ref = engineFor(body.common.model);
    if (!ref) return sendError(res, ref.error());
    OpenAiReply reply;
    reply.meta = {newResponseId("cmpl-"), unixNow(), ref->modelId};
    reply.logprobs = body.common.logprobs;
    reply.includeUsage = body.common.includeUsage;
    const tokenizer::Tokenizer& tok = ref->engine->tokenizer();
    std::vector<int32_t> prompt;
    if (body.promptIsTokens) {
        prompt = body.promptTokens;
        if (body.echo) {
            auto text = tok.decode(prompt);
            if (text) reply.echo = *text;
        }
    } else {
        auto ids = tok.encode(body.promptText, true, true);
        if (!ids) return sendError(res, apiErrorFromStatus(ids.status(), "prompt"));
        prompt = std::move(*ids);
        if (body.echo) reply.echo = body.promptText;
    }
    ModelLimits limits{ref->engine->model().nVocab, ref->engine->model().contextLength,
                       m_config.defaultMaxTokens};
    auto gen = generationRequest(body.common, std::move(prompt), limits);
    if (!gen) return sendError(res, gen.error());
    if (auto e = applySpeculation(body.common, tok, limits, *gen)) return sendError(res, *e);
    auto output = outputGrammar(body.common);
    if (!output) return sendError(res, output.error());
    gen->grammar = *output;
    PreparedGeneration prepared;
    prepared.model = std::move(*ref);
    prepared.request = std::move(*gen);
    prepared.options.splitReasoning = false; // a completion is text as written
    prepared.options.logprobs = body.common.logprobs;
    answerOpenAi(*this, std::move(reply), std::move(prepared), body.common.stream, res);
}

} // namespace hearth::server
