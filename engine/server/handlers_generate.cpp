// /v1/chat/completions and /v1/completions: prompt building, submission to the engine, and the
// response, either whole or streamed as server-sent events (a disconnect cancels the request).
#include "server/chunked_stream.h"
#include "server/image_parts.h"
#include "server/server_impl.h"

#include "server/generation_stream.h"
#include "server/openai_convert.h"
#include "server/openai_response.h"
#include "hearth/chat_output.h"
#include "server/structured_output.h"
#include "server/tool_call_stream.h"
#include "server/tool_calls.h"

#include <chrono>

namespace hearth::server {

namespace {

using Clock = std::chrono::steady_clock;

struct ChoiceState {
    std::string text;
    std::vector<TokenLogprob> logprobs;
    bool finished = false;
    FinishReason reason = FinishReason::Stop;
    // Streaming chat with tools: text held back while it may be a tool call, and the calls
    // read from it as they are written.
    bool holding = false;
    std::string held;
    std::vector<TokenLogprob> heldLogprobs;
    std::unique_ptr<ToolCallStreamer> calls;
    bool streamedCalls = false;
    // Streaming chat: the output read into reasoning (<think> blocks, harmony's analysis), the
    // answer, and harmony's tool calls.
    std::unique_ptr<tmpl::ChatOutputReader> reader;
};

// One generation request from submission to the end of its response.
struct Job {
    bool chat = false;
    CommonParams params;
    bool parseTools = false;
    std::vector<std::string> toolNames;
    // Chat: the output is read as the rendered prompt calls for (reasoning_content apart).
    bool splitOutput = false;
    std::string renderedPrompt;
    ResponseMeta meta;
    std::shared_ptr<Engine> engine;
    std::shared_ptr<GenerationStream> stream;
    RequestId id = 0;
    std::string echo; // completions with echo: the prompt text, sent first
    std::vector<ChoiceState> choices;
    Usage usage;
    bool finished = false;
    bool failed = false;
    Status error;
    bool cancelled = false;

    void cancel() {
        if (!cancelled && !finished && !failed) engine->cancel(id);
        cancelled = true;
    }
};

TokenLogprob makeLogprob(const tokenizer::Tokenizer& tok, const StreamEvent& e) {
    TokenLogprob t;
    t.token = tok.tokenPiece(e.id);
    t.logprob = e.logprob;
    for (const auto& [id, lp] : e.topLogprobs) t.top.emplace_back(tok.tokenPiece(id), lp);
    return t;
}

ChoiceState* choiceOf(Job& job, int32_t choice) {
    if (choice < 0 || size_t(choice) >= job.choices.size()) return nullptr;
    return &job.choices[size_t(choice)];
}

// Non-streaming bookkeeping of one event.
void record(Job& job, const StreamEvent& e, Metrics& metrics) {
    switch (e.kind) {
    case StreamEvent::Kind::Token:
        if (ChoiceState* c = choiceOf(job, e.choice)) {
            c->text += e.text;
            if (job.params.logprobs && e.id >= 0)
                c->logprobs.push_back(makeLogprob(job.engine->tokenizer(), e));
        }
        break;
    case StreamEvent::Kind::ChoiceFinish:
        if (ChoiceState* c = choiceOf(job, e.choice)) {
            c->finished = true;
            c->reason = e.reason;
        }
        break;
    case StreamEvent::Kind::Finish:
        job.finished = true;
        job.usage = e.usage;
        for (ChoiceState& c : job.choices)
            if (!c.finished) {
                c.finished = true;
                c.reason = e.reason;
            }
        metrics.observeGeneration(e.usage);
        break;
    case StreamEvent::Kind::Error:
        job.failed = true;
        job.error = e.error;
        break;
    }
}

std::vector<ChoiceOutput> outputs(Job& job) {
    std::vector<ChoiceOutput> out;
    for (ChoiceState& c : job.choices) {
        ChoiceOutput o;
        o.text = job.echo + c.text;
        o.reason = c.reason;
        o.logprobs = std::move(c.logprobs);
        std::string answer = c.text;
        if (job.splitOutput) {
            tmpl::ChatOutputReader reader(job.renderedPrompt);
            tmpl::OutputPiece a = reader.push(c.text), b = reader.finish();
            o.reasoning = a.reasoning + b.reasoning;
            answer = a.content + b.content;
            o.contentOnly = true;
            o.content = answer;
            for (auto* piece : {&a, &b}) // harmony's calls
                for (const tmpl::OutputCall& d : piece->calls) {
                    if (!d.name.empty()) o.toolCalls.push_back({newToolCallId(), d.name, ""});
                    if (!o.toolCalls.empty()) o.toolCalls.back().arguments += d.arguments;
                }
            if (reader.harmony()) {
                out.push_back(std::move(o));
                continue;
            }
        }
        if (job.parseTools) {
            ToolCallParse p = parseToolCalls(answer, job.toolNames);
            o.toolCalls = std::move(p.calls);
            o.content = std::move(p.content);
        }
        out.push_back(std::move(o));
    }
    return out;
}

OJson logprobsFor(const Job& job, const std::vector<TokenLogprob>& lps, size_t offset) {
    if (!job.params.logprobs) return nullptr;
    return job.chat ? chatLogprobsJson(lps) : completionLogprobsJson(lps, offset);
}

// A chat content chunk, or a completion text chunk.
std::string textChunk(const Job& job, int32_t index, const std::string& text,
                      const std::vector<TokenLogprob>& lps) {
    if (job.chat)
        return sseEvent(chatChunkJson(job.meta, index, {{"content", text}}, nullptr,
                                      logprobsFor(job, lps, 0)));
    return sseEvent(completionChunkJson(job.meta, index, text, nullptr, logprobsFor(job, lps, 0)));
}

std::string reasoningChunk(const Job& job, int32_t index, const std::string& text) {
    return sseEvent(chatChunkJson(job.meta, index, {{"reasoning_content", text}}, nullptr));
}

// Streaming: answer text of one choice, held back while it may be a tool call (whose pieces go
// out as they are read).
std::string contentText(Job& job, ChoiceState& c, int32_t index, const std::string& text,
                        std::vector<TokenLogprob> lps) {
    std::string out;
    if (!c.holding) {
        if (text.empty() && lps.empty()) return out;
        return textChunk(job, index, text, lps);
    }
    c.held += text;
    for (TokenLogprob& t : lps) c.heldLogprobs.push_back(std::move(t));
    if (c.calls)
        for (const ToolCallDelta& d : c.calls->push(text)) {
            out += sseEvent(chatChunkJson(job.meta, index, toolCallDelta(d), nullptr));
            c.streamedCalls = true;
        }
    if (!c.streamedCalls && !mightBeToolCall(c.held)) {
        c.holding = false;
        out += textChunk(job, index, c.held, c.heldLogprobs);
        c.held.clear();
        c.heldLogprobs.clear();
    }
    return out;
}

// Streaming chat: a piece of read output as chunks (reasoning, answer, harmony's calls).
std::string outputText(Job& job, ChoiceState& c, int32_t index, const tmpl::OutputPiece& piece,
                       std::vector<TokenLogprob> lps) {
    std::string out;
    if (!piece.reasoning.empty()) out += reasoningChunk(job, index, piece.reasoning);
    out += contentText(job, c, index, piece.content, std::move(lps));
    for (const tmpl::OutputCall& call : piece.calls) {
        const ToolCallDelta d{call.index, call.name.empty() ? "" : newToolCallId(), call.name, call.arguments};
        out += sseEvent(chatChunkJson(job.meta, index, toolCallDelta(d), nullptr));
        c.streamedCalls = true;
    }
    return out;
}

std::string finishChoice(Job& job, int32_t index, FinishReason reason) {
    ChoiceState& c = job.choices[size_t(index)];
    std::string out;
    if (c.reader && !c.finished) out += outputText(job, c, index, c.reader->finish(), {});
    c.finished = true;
    c.reason = reason;
    bool calls = !c.holding && c.streamedCalls; // harmony's, streamed as read
    if (c.holding && c.streamedCalls) {
        calls = true; // the calls went out as they were read
        c.holding = false;
    } else if (c.holding) {
        c.holding = false;
        ToolCallParse p = parseToolCalls(c.held, job.toolNames);
        if (!p.calls.empty()) {
            calls = true;
            if (!p.content.empty()) out += textChunk(job, index, p.content, {});
            out += sseEvent(chatChunkJson(job.meta, index, toolCallsDelta(p.calls), nullptr));
        } else if (!c.held.empty() || !c.heldLogprobs.empty()) {
            out += textChunk(job, index, c.held, c.heldLogprobs);
        }
        c.held.clear();
        c.heldLogprobs.clear();
    }
    const char* why = finishReasonText(reason, calls);
    if (job.chat) out += sseEvent(chatChunkJson(job.meta, index, OJson::object(), why));
    else out += sseEvent(completionChunkJson(job.meta, index, "", why));
    return out;
}

// Streaming: the SSE text for a batch of events.
std::string streamText(Job& job, std::vector<StreamEvent>& events, Metrics& metrics) {
    std::string out;
    for (StreamEvent& e : events) {
        switch (e.kind) {
        case StreamEvent::Kind::Token: {
            ChoiceState* c = choiceOf(job, e.choice);
            if (!c || c->finished) break;
            std::vector<TokenLogprob> lps;
            if (job.params.logprobs && e.id >= 0)
                lps.push_back(makeLogprob(job.engine->tokenizer(), e));
            std::string text = std::move(e.text);
            if (c->reader) {
                out += outputText(job, *c, e.choice, c->reader->push(text), std::move(lps));
                break;
            }
            out += contentText(job, *c, e.choice, text, std::move(lps));
            break;
        }
        case StreamEvent::Kind::ChoiceFinish:
            if (ChoiceState* c = choiceOf(job, e.choice); c && !c->finished)
                out += finishChoice(job, e.choice, e.reason);
            break;
        case StreamEvent::Kind::Finish:
            for (size_t i = 0; i < job.choices.size(); ++i)
                if (!job.choices[i].finished) out += finishChoice(job, int32_t(i), e.reason);
            job.finished = true;
            job.usage = e.usage;
            metrics.observeGeneration(e.usage);
            if (job.params.includeUsage)
                out += sseEvent(usageChunkJson(
                    job.meta, job.chat ? "chat.completion.chunk" : "text_completion", e.usage));
            out += kSseDone;
            break;
        case StreamEvent::Kind::Error:
            job.failed = true;
            out += sseEvent(errorJson(apiErrorFromStatus(e.error)));
            out += kSseDone;
            break;
        }
    }
    return out;
}

// The first chunks of a stream: the assistant role for every chat choice, the echoed prompt.
std::string streamStart(const Job& job) {
    std::string out;
    for (size_t i = 0; i < job.choices.size(); ++i) {
        if (job.chat)
            out += sseEvent(chatChunkJson(job.meta, int32_t(i),
                                          {{"role", "assistant"}, {"content", ""}}, nullptr));
        else if (!job.echo.empty())
            out += sseEvent(completionChunkJson(job.meta, int32_t(i), job.echo, nullptr));
    }
    return out;
}

} // namespace

// Submits and answers; shared by both endpoints once the prompt is known.
static void runJob(Server::Impl& server, std::shared_ptr<Job> job, GenerationRequest request,
                   httplib::Response& res) {
    job->stream = std::make_shared<GenerationStream>();
    request.sink = job->stream;
    job->choices.resize(size_t(request.n));
    for (ChoiceState& c : job->choices) {
        if (job->splitOutput && job->params.stream)
            c.reader = std::make_unique<tmpl::ChatOutputReader>(job->renderedPrompt);
        if (job->parseTools && job->params.stream && !(c.reader && c.reader->harmony())) {
            c.holding = true;
            c.calls = std::make_unique<ToolCallStreamer>(job->toolNames);
        }
    }
    auto id = job->engine->submit(std::move(request));
    if (!id) {
        ApiError e = apiErrorFromStatus(id.status());
        if (id.status().code() == ErrorCode::OutOfRange) e.param = "max_tokens";
        return server.sendError(res, e);
    }
    job->id = *id;

    if (!job->params.stream) {
        const bool ended = awaitWhole(
            server, *job->stream, [&] { return job->finished || job->failed; },
            [&](const StreamEvent& e) { record(*job, e, server.m_metrics); }, [&] { job->cancel(); });
        if (!ended) return server.sendError(res, shuttingDownError());
        if (job->failed) return server.sendError(res, apiErrorFromStatus(job->error));
        std::vector<ChoiceOutput> out = outputs(*job);
        if (job->chat)
            return Server::Impl::sendJson(
                res, 200, chatCompletionJson(job->meta, out, job->usage, job->params.logprobs));
        return Server::Impl::sendJson(
            res, 200,
            completionJson(job->meta, out, job->usage, job->params.logprobs, job->echo.size()));
    }

    Metrics* metrics = &server.m_metrics;
    ChunkedStream stream;
    stream.events = job->stream;
    stream.begin = [job] { return streamStart(*job); };
    stream.text = [job, metrics](std::vector<StreamEvent>& events) { return streamText(*job, events, *metrics); };
    stream.ended = [job] { return job->finished || job->failed; };
    stream.cancel = [job] { job->cancel(); };
    streamChunked(server, res, "text/event-stream", std::move(stream));
}

void Server::Impl::handleChat(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseChatCompletionRequest(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    ChatCompletionRequest& chat = parsed.value();
    auto ref = engineFor(chat.common.model);
    if (!ref) return sendError(res, ref.error());
    auto job = std::make_shared<Job>();
    job->chat = true;
    job->engine = ref->engine;
    job->meta = {newResponseId("chatcmpl-"), unixNow(), ref->modelId};
    job->parseTools = !chat.tools.empty() && chat.toolChoice.mode != ToolChoiceMode::None;
    for (const ToolFunction& f : chat.tools) job->toolNames.push_back(f.name);

    const tmpl::ChatRequest templateRequest = chatTemplateRequest(chat);
    std::vector<PromptImage> images;
    auto prompt = chatPrompt(*job->engine, templateRequest, chat.images, images);
    if (!prompt) return sendError(res, prompt.error());
    if (chat.splitReasoning) {
        auto rendered = job->engine->renderChat(templateRequest);
        job->splitOutput = true;
        if (rendered) job->renderedPrompt = std::move(*rendered);
    }
    ModelLimits limits{job->engine->model().nVocab, job->engine->model().contextLength,
                       m_config.defaultMaxTokens};
    auto gen = generationRequest(chat.common, std::move(prompt.value()), limits);
    if (!gen) return sendError(res, gen.error());
    gen->images = std::move(images);
    if (auto e = applySpeculation(chat.common, job->engine->tokenizer(), limits, *gen)) return sendError(res, *e);
    auto output = outputGrammar(chat.common);
    if (!output) return sendError(res, output.error());
    gen->grammar = *output;
    if (job->parseTools) {
        auto calls = toolCallGrammar(chat.tools, chat.toolChoice, detectToolCallStyle(*job->engine));
        if (!calls) return sendError(res, calls.error());
        if (*calls && gen->grammar)
            return sendError(res, invalidRequest("a required tool call cannot also follow 'response_format' or "
                                                 "'grammar'",
                                                 "tool_choice"));
        if (*calls) gen->grammar = *calls;
    }
    job->params = std::move(chat.common);
    runJob(*this, job, std::move(gen.value()), res);
}

void Server::Impl::handleCompletions(const httplib::Request& req, httplib::Response& res) {
    auto parsed = parseCompletionRequest(req.body, m_limits);
    if (!parsed) return sendError(res, parsed.error());
    CompletionRequest& body = parsed.value();
    auto ref = engineFor(body.common.model);
    if (!ref) return sendError(res, ref.error());
    auto job = std::make_shared<Job>();
    job->engine = ref->engine;
    job->meta = {newResponseId("cmpl-"), unixNow(), ref->modelId};
    const tokenizer::Tokenizer& tok = job->engine->tokenizer();
    std::vector<int32_t> prompt;
    if (body.promptIsTokens) {
        prompt = body.promptTokens;
        if (body.echo) {
            auto text = tok.decode(prompt);
            if (text) job->echo = *text;
        }
    } else {
        auto ids = tok.encode(body.promptText, true, true);
        if (!ids) return sendError(res, apiErrorFromStatus(ids.status(), "prompt"));
        prompt = std::move(*ids);
        if (body.echo) job->echo = body.promptText;
    }
    ModelLimits limits{job->engine->model().nVocab, job->engine->model().contextLength,
                       m_config.defaultMaxTokens};
    auto gen = generationRequest(body.common, std::move(prompt), limits);
    if (!gen) return sendError(res, gen.error());
    if (auto e = applySpeculation(body.common, tok, limits, *gen)) return sendError(res, *e);
    auto output = outputGrammar(body.common);
    if (!output) return sendError(res, output.error());
    gen->grammar = *output;
    job->params = std::move(body.common);
    runJob(*this, job, std::move(gen.value()), res);
}

} // namespace hearth::server
