// One single-choice generation driven for the Anthropic and Responses endpoints: submission,
// whole or streamed collection, reasoning split, tool calls streamed or held back and parsed,
// and recovery of the matched stop string.
#include "server/job_driver.h"

#include "server/chunked_stream.h"

#include "server/tool_calls.h"

#include <algorithm>

namespace hearth::server {

namespace {

using Clock = std::chrono::steady_clock;

// Streaming: answer text, held back while it may be a tool call (whose pieces go out as they
// are read).
std::string answerText(SingleJob& job, const std::string& text, StreamFormatter& fmt) {
    if (!job.holding) return text.empty() ? std::string() : fmt.text(job, text);
    std::string out;
    job.held += text;
    if (job.calls)
        for (const ToolCallDelta& d : job.calls->push(text)) {
            out += fmt.toolCall(job, d);
            job.streamedCalls = std::max(job.streamedCalls, d.index + 1);
        }
    if (job.streamedCalls == 0 && !mightBeToolCall(job.held)) {
        job.holding = false;
        out += fmt.text(job, job.held);
        job.held.clear();
    }
    return out;
}

// Streaming: a piece of read output (reasoning, answer, harmony's calls).
std::string outputText(SingleJob& job, const tmpl::OutputPiece& piece, StreamFormatter& fmt) {
    std::string out;
    if (!piece.reasoning.empty()) out += fmt.reasoning(job, piece.reasoning);
    out += answerText(job, piece.content, fmt);
    for (const tmpl::OutputCall& call : piece.calls) {
        out += fmt.toolCall(job, {call.index, call.name.empty() ? "" : newToolCallId(), call.name, call.arguments});
        job.streamedCalls = std::max(job.streamedCalls, call.index + 1);
    }
    return out;
}

// Streaming: the end of the output (what the splitters held back, then the formatter's end).
std::string endText(SingleJob& job, StreamFormatter& fmt) {
    std::string out;
    if (job.reader) out += outputText(job, job.reader->finish(), fmt);
    JobOutput rest;
    if (job.holding && job.streamedCalls == 0 && !job.held.empty()) {
        ToolCallParse p = parseToolCalls(job.held, job.options.toolNames);
        if (p.calls.empty()) {
            rest.content = job.held;
        } else {
            rest.content = std::move(p.content);
            rest.calls = std::move(p.calls);
        }
    }
    job.holding = false;
    job.held.clear();
    out += fmt.end(job, rest);
    return out;
}

// Bookkeeping of one event; for a stream, the text it releases (through the formatter).
std::string apply(SingleJob& job, const StreamEvent& e, Metrics& metrics, StreamFormatter* fmt) {
    std::string out;
    switch (e.kind) {
    case StreamEvent::Kind::Token: {
        if (e.choice != 0 || job.finished) break;
        if (e.id >= 0) job.ids.push_back(e.id);
        job.text += e.text;
        if (!fmt || e.text.empty()) break;
        if (job.reader) out += outputText(job, job.reader->push(e.text), *fmt);
        else out += answerText(job, e.text, *fmt);
        break;
    }
    case StreamEvent::Kind::ChoiceFinish:
        if (e.choice == 0) job.reason = e.reason;
        break;
    case StreamEvent::Kind::Finish:
        job.finished = true;
        job.reason = e.reason;
        job.usage = e.usage;
        metrics.observeGeneration(e.usage);
        if (fmt) out += endText(job, *fmt);
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

void SingleJob::cancel() {
    if (!cancelled && !finished && !failed && engine) engine->cancel(id);
    cancelled = true;
}

std::optional<std::string> SingleJob::matchedStop() const {
    if (stops.empty() || reason != FinishReason::Stop || ids.empty()) return std::nullopt;
    // The engine ends the text right before the first stop string in the decoded tokens; an
    // end-of-generation token is never among the ids, so no match means the model ended.
    tokenizer::DecodeOptions o;
    o.stripLeadingSpace = false;
    o.cleanSpaces = false;
    auto decoded = engine->tokenizer().decode(ids, o);
    if (!decoded) return std::nullopt;
    size_t best = std::string::npos;
    std::optional<std::string> which;
    for (const std::string& s : stops) {
        const size_t at = decoded->find(s);
        if (at < best) {
            best = at;
            which = s;
        }
    }
    return which;
}

JobOutput SingleJob::split() const {
    JobOutput out;
    std::string answer = text;
    if (options.splitReasoning) {
        tmpl::ChatOutputReader reader(options.renderedPrompt);
        tmpl::OutputPiece a = reader.push(text), b = reader.finish();
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

ApiResult<std::shared_ptr<SingleJob>> submitJob(std::shared_ptr<Engine> engine,
                                                GenerationRequest request, JobOptions options,
                                                bool stream, const std::string& maxTokensParam) {
    auto job = std::make_shared<SingleJob>();
    job->engine = std::move(engine);
    job->stream = std::make_shared<GenerationStream>();
    job->stops = request.stopStrings;
    job->options = std::move(options);
    if (stream) {
        if (job->options.splitReasoning)
            job->reader = std::make_unique<tmpl::ChatOutputReader>(job->options.renderedPrompt);
        if (job->options.tools && !(job->reader && job->reader->harmony())) {
            job->holding = true;
            job->calls = std::make_unique<ToolCallStreamer>(job->options.toolNames);
        }
    }
    request.n = 1;
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

std::optional<ApiError> waitForJob(Server::Impl& server, SingleJob& job) {
    const bool ended = awaitWhole(
        server, *job.stream, [&] { return job.finished || job.failed; },
        [&](const StreamEvent& e) { apply(job, e, server.m_metrics, nullptr); }, [&] { job.cancel(); });
    if (!ended) return shuttingDownError();
    if (job.failed) return apiErrorFromStatus(job.error);
    return std::nullopt;
}

void streamJob(Server::Impl& server, std::shared_ptr<SingleJob> job,
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
    streamChunked(server, res, "text/event-stream", std::move(stream));
}

std::string namedSseEvent(const char* name, const OJson& data) {
    return std::string("event: ") + name + "\ndata: " + dumpJson(data) + "\n\n";
}

ApiResult<GrammarPtr> requestGrammar(const Engine& engine, const ChatCompletionRequest& chat,
                                     bool tools, const std::string& formatParam) {
    GrammarPtr grammar;
    const ResponseFormat& format = chat.common.responseFormat;
    if (format.kind == ResponseFormat::Kind::JsonSchema) {
        auto g = schemaGrammar(format.schema, formatParam + ".schema");
        if (!g) return g.error();
        grammar = *g;
    } else if (format.kind == ResponseFormat::Kind::JsonObject) {
        auto g = outputGrammar(chat.common);
        if (!g) {
            ApiError e = g.error();
            e.param = formatParam;
            return e;
        }
        grammar = *g;
    }
    if (!tools) return grammar;
    auto calls = toolCallGrammar(chat.tools, chat.toolChoice, detectToolCallStyle(engine));
    if (!calls) return calls.error();
    if (*calls && grammar)
        return invalidRequest("a required tool call cannot also follow '" + formatParam + "'",
                              "tool_choice");
    if (*calls) grammar = *calls;
    return grammar;
}

ApiError templateError(const Status& status, const std::string& param) {
    ApiError e = apiErrorFromStatus(status, param);
    if (e.status >= 500) {
        e.status = 400; // the template refused this conversation
        e.type = "invalid_request_error";
        e.code = "invalid_value";
    }
    return e;
}

} // namespace hearth::server
