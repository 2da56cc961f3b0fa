// The generation driver: submission, the per-choice bookkeeping of the engine's events, the
// streamed reading of reasoning, answer text and tool calls, and the whole output's split.
#include "server/generation_driver.h"

#include "server/chunked_stream.h"

#include <algorithm>

namespace hearth::server {

namespace {

TokenLogprob logprobOf(const tokenizer::Tokenizer& tok, const StreamEvent& e) {
    TokenLogprob t;
    t.token = tok.tokenPiece(e.id);
    t.logprob = e.logprob;
    for (const auto& [id, lp] : e.topLogprobs) t.top.emplace_back(tok.tokenPiece(id), lp);
    return t;
}

DrivenChoice* choiceOf(GenerationJob& job, int32_t choice) {
    if (choice < 0 || size_t(choice) >= job.choices.size()) return nullptr;
    return &job.choices[size_t(choice)];
}

// Streaming: answer text, held back while it may be a tool call (whose pieces go out as they
// are read).
std::string answerText(GenerationJob& job, int32_t index, const std::string& text,
                       std::vector<TokenLogprob> lps, StreamFormatter& fmt) {
    DrivenChoice& c = job.choices[size_t(index)];
    if (!c.holding) {
        if (text.empty() && lps.empty()) return {};
        return fmt.text(job, index, text, lps);
    }
    std::string out;
    c.held += text;
    for (TokenLogprob& t : lps) c.heldLogprobs.push_back(std::move(t));
    if (c.calls)
        for (const ToolCallDelta& d : c.calls->push(text)) {
            out += fmt.toolCall(job, index, d);
            c.streamedCalls = std::max(c.streamedCalls, d.index + 1);
        }
    if (c.streamedCalls == 0 && !mightBeToolCall(c.held)) {
        c.holding = false;
        out += fmt.text(job, index, c.held, c.heldLogprobs);
        c.held.clear();
        c.heldLogprobs.clear();
    }
    return out;
}

// Streaming: a piece of read output (reasoning, answer, harmony's calls).
std::string outputPiece(GenerationJob& job, int32_t index, const tmpl::OutputPiece& piece,
                        std::vector<TokenLogprob> lps, StreamFormatter& fmt) {
    std::string out;
    if (!piece.reasoning.empty()) out += fmt.reasoning(job, index, piece.reasoning);
    out += answerText(job, index, piece.content, std::move(lps), fmt);
    DrivenChoice& c = job.choices[size_t(index)];
    for (const tmpl::OutputCall& call : piece.calls) {
        out += fmt.toolCall(job, index, {call.index, call.name.empty() ? "" : newToolCallId(), call.name, call.arguments});
        c.streamedCalls = std::max(c.streamedCalls, call.index + 1);
    }
    return out;
}

// The end of a choice: its reason noted; streaming, what the readers held back, then the
// formatter's end of the choice.
std::string endChoice(GenerationJob& job, int32_t index, FinishReason reason, const std::string& stop,
                      StreamFormatter* fmt) {
    DrivenChoice& c = job.choices[size_t(index)];
    if (c.finished) return {};
    std::string out;
    if (fmt && c.reader) out += outputPiece(job, index, c.reader->finish(), {}, *fmt);
    c.finished = true;
    c.reason = reason;
    c.stopString = stop;
    if (!fmt) return out;
    ChoiceOutput rest;
    rest.reason = reason;
    rest.stopString = stop;
    bool calls = c.streamedCalls > 0;
    if (c.holding && c.streamedCalls == 0) {
        ToolCallParse p = parseToolCalls(c.held, job.options.toolNames);
        if (p.calls.empty()) {
            rest.content = std::move(c.held);
            rest.logprobs = std::move(c.heldLogprobs);
        } else {
            rest.content = std::move(p.content);
            rest.calls = std::move(p.calls);
            calls = true;
        }
    }
    c.holding = false;
    c.held.clear();
    c.heldLogprobs.clear();
    out += fmt->choiceEnd(job, index, rest, calls);
    return out;
}

// Bookkeeping of one event; for a stream, the text it releases (through the formatter).
std::string apply(GenerationJob& job, const StreamEvent& e, Metrics& metrics, StreamFormatter* fmt) {
    std::string out;
    switch (e.kind) {
    case StreamEvent::Kind::Token: {
        DrivenChoice* c = choiceOf(job, e.choice);
        if (!c || c->finished) break;
        std::vector<TokenLogprob> lps;
        if (e.id >= 0) {
            c->ids.push_back(e.id);
            if (job.options.logprobs) {
                lps.push_back(logprobOf(job.engine->tokenizer(), e));
                c->logprobs.push_back(lps.back());
            }
        }
        c->text += e.text;
        if (!fmt) break;
        if (c->reader) out += outputPiece(job, e.choice, c->reader->push(e.text), std::move(lps), *fmt);
        else out += answerText(job, e.choice, e.text, std::move(lps), *fmt);
        break;
    }
    case StreamEvent::Kind::ChoiceFinish:
        if (choiceOf(job, e.choice)) out += endChoice(job, e.choice, e.reason, e.stopString, fmt);
        break;
    case StreamEvent::Kind::Finish:
        for (size_t i = 0; i < job.choices.size(); ++i) out += endChoice(job, int32_t(i), e.reason, {}, fmt);
        job.finished = true;
        job.reason = e.reason;
        job.usage = e.usage;
        metrics.observeGeneration(e.usage);
        if (fmt) out += fmt->end(job);
        break;
    case StreamEvent::Kind::Error:
        job.failed = true;
        job.error = e.error;
        if (fmt) out += fmt->fail(job, e.error);
        break;
    }
    return out;
}

} // namespace

void GenerationJob::cancel() {
    if (!cancelled && !finished && !failed && engine) engine->cancel(id);
    cancelled = true;
}

ChoiceOutput GenerationJob::output(size_t index) const {
    const DrivenChoice& c = choices.at(index);
    ChoiceOutput out;
    out.text = c.text;
    out.logprobs = c.logprobs;
    out.reason = c.reason;
    out.stopString = c.stopString;
    std::string answer = c.text;
    if (options.splitReasoning) {
        tmpl::ChatOutputReader reader(options.renderedPrompt);
        tmpl::OutputPiece a = reader.push(c.text), b = reader.finish();
        out.reasoning = a.reasoning + b.reasoning;
        answer = a.content + b.content;
        for (auto* piece : {&a, &b}) // harmony's calls
            for (const tmpl::OutputCall& d : piece->calls) {
                if (!d.name.empty()) out.calls.push_back({newToolCallId(), d.name, ""});
                if (!out.calls.empty()) out.calls.back().arguments += d.arguments;
            }
        if (reader.harmony()) {
            out.content = std::move(answer);
            return out;
        }
    }
    if (options.tools) {
        ToolCallParse p = parseToolCalls(answer, options.toolNames);
        if (!p.calls.empty()) {
            out.content = std::move(p.content);
            out.calls = std::move(p.calls);
            return out;
        }
    }
    out.content = std::move(answer);
    return out;
}

std::vector<ChoiceOutput> GenerationJob::outputs() const {
    std::vector<ChoiceOutput> out;
    for (size_t i = 0; i < choices.size(); ++i) out.push_back(output(i));
    return out;
}

ApiResult<std::shared_ptr<GenerationJob>> submitGeneration(std::shared_ptr<Engine> engine,
                                                           GenerationRequest request, DriveOptions options,
                                                           bool stream, const std::string& maxTokensParam) {
    auto job = std::make_shared<GenerationJob>();
    job->engine = std::move(engine);
    job->stream = std::make_shared<GenerationStream>();
    job->options = std::move(options);
    job->prompt = request.prompt;
    job->choices.resize(size_t(std::max<int32_t>(1, request.n)));
    if (stream)
        for (DrivenChoice& c : job->choices) {
            if (job->options.splitReasoning)
                c.reader = std::make_unique<tmpl::ChatOutputReader>(job->options.renderedPrompt);
            if (job->options.tools && !(c.reader && c.reader->harmony())) {
                c.holding = true;
                c.calls = std::make_unique<ToolCallStreamer>(job->options.toolNames);
            }
        }
    request.sink = job->stream;
    auto id = job->engine->submit(std::move(request));
    if (!id) {
        ApiError e = apiErrorFromStatus(id.status());
        if (id.status().code() == ErrorCode::OutOfRange) e.param = maxTokensParam;
        return e;
    }
    job->id = *id;
    return job;
}

std::optional<ApiError> waitForGeneration(Server::Impl& server, GenerationJob& job) {
    const bool ended = awaitWhole(
        server, *job.stream, [&] { return job.finished || job.failed; },
        [&](const StreamEvent& e) { apply(job, e, server.m_metrics, nullptr); }, [&] { job.cancel(); });
    if (!ended) return shuttingDownError();
    if (job.failed) return apiErrorFromStatus(job.error);
    return std::nullopt;
}

void streamGeneration(Server::Impl& server, std::shared_ptr<GenerationJob> job,
                      std::shared_ptr<StreamFormatter> formatter, httplib::Response& res) {
    Metrics* metrics = &server.m_metrics;
    ChunkedStream stream;
    stream.events = job->stream;
    stream.begin = [job, formatter] { return formatter->begin(*job); };
    stream.text = [job, formatter, metrics](std::vector<StreamEvent>& events) {
        std::string out;
        for (const StreamEvent& e : events) {
            if (job->finished || job->failed) break;
            out += apply(*job, e, *metrics, formatter.get());
        }
        return out;
    };
    stream.ended = [job] { return job->finished || job->failed; };
    stream.cancel = [job] { job->cancel(); };
    stream.keepAlive = formatter->keepAlive();
    streamChunked(server, res, formatter->contentType(), std::move(stream));
}

std::string namedSseEvent(const char* name, const OJson& data) {
    return std::string("event: ") + name + "\ndata: " + dumpJson(data) + "\n\n";
}

} // namespace hearth::server
