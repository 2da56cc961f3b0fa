// One single-choice generation from submission to its end, shared by the Anthropic Messages and
// OpenAI Responses endpoints: submit, collect the text (whole), or stream it through an API's
// event formatter (chunked SSE; a client that goes away cancels the request). The output is split
// into reasoning (<think> blocks), answer text and tool calls: whole, after the end; streamed, as
// it is written (a tool call's name first, then its arguments in fragments). The stop string that
// ended the text is recovered from the generated token ids.
#pragma once

#include "server/generation_stream.h"
#include "hearth/chat_output.h"
#include "server/server_impl.h"
#include "server/structured_output.h"
#include "server/tool_call_stream.h"
#include "server/tool_calls.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hearth::server {

// How a job's output is read.
struct JobOptions {
    bool tools = false;                  // tool calls are looked for in the answer
    std::vector<std::string> toolNames;  // the request's functions
    bool splitReasoning = true;          // reasoning (<think>, harmony's analysis) apart from the answer
    std::string renderedPrompt;          // what the reader of the output goes by (hearth/chat_output.h)
};

// A finished output, split (or, for a stream, what streaming could not place).
struct JobOutput {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> calls;
};

struct SingleJob {
    std::shared_ptr<Engine> engine;
    std::shared_ptr<GenerationStream> stream;
    RequestId id = 0;
    std::vector<std::string> stops; // the request's stop strings
    JobOptions options;

    std::string text;              // all generated text
    std::vector<int32_t> ids;      // generated token ids (the stop-string check decodes them)
    FinishReason reason = FinishReason::Stop;
    Usage usage;
    bool finished = false;
    bool failed = false;
    Status error;
    bool cancelled = false;

    // Streaming state.
    std::unique_ptr<tmpl::ChatOutputReader> reader;
    std::unique_ptr<ToolCallStreamer> calls;
    std::string held;          // answer text not yet released (a possible tool call)
    bool holding = false;
    int streamedCalls = 0;     // tool calls announced while streaming

    void cancel();
    // The stop string that ended the text, or nothing (end of generation, length, cancel).
    std::optional<std::string> matchedStop() const;
    // The whole output split into reasoning, answer and tool calls.
    JobOutput split() const;
};

// What a streaming API writes for the stages of a job; each returns SSE text (maybe empty).
class StreamFormatter {
public:
    virtual ~StreamFormatter() = default;
    virtual std::string begin(SingleJob& job) = 0;
    virtual std::string reasoning(SingleJob& job, const std::string& piece) = 0;
    virtual std::string text(SingleJob& job, const std::string& piece) = 0;
    // A tool call being written: its first delta has the id and name, later ones fragments of
    // its arguments' JSON text.
    virtual std::string toolCall(SingleJob& job, const ToolCallDelta& delta) = 0;
    // The job finished. `rest`: answer text held back as a possible tool call that was not
    // streamed as one, parsed (content and calls) now.
    virtual std::string end(SingleJob& job, const JobOutput& rest) = 0;
    virtual std::string fail(SingleJob& job, const Status& error) = 0;
    virtual std::string keepAlive() { return ": keep-alive\n\n"; }
};

// Submits `request` (its sink is replaced). On failure: the error to send (a context overflow
// names `maxTokensParam`).
ApiResult<std::shared_ptr<SingleJob>> submitJob(std::shared_ptr<Engine> engine,
                                                GenerationRequest request, JobOptions options,
                                                bool stream, const std::string& maxTokensParam);

// Waits for the end of a job; the error to send when it failed (or the server is stopping).
std::optional<ApiError> waitForJob(Server::Impl& server, SingleJob& job);

// Streams a job as server-sent events through `formatter`.
void streamJob(Server::Impl& server, std::shared_ptr<SingleJob> job,
               std::shared_ptr<StreamFormatter> formatter, httplib::Response& res);

// "event: NAME\ndata: JSON\n\n"
std::string namedSseEvent(const char* name, const OJson& data);

// The grammar a request's output must follow: its response format (json_object, or json_schema
// whose errors name `formatParam`.schema and the part of the schema), or, when `tools` are in
// play and tool_choice requires a call (any / required / a named tool), the call written in the
// model's own format with schema-checked arguments. Null for free text.
ApiResult<GrammarPtr> requestGrammar(const Engine& engine, const ChatCompletionRequest& chat,
                                     bool tools, const std::string& formatParam);

// The text of a chat template failure as a 400 (the template refused this conversation).
ApiError templateError(const Status& status, const std::string& param);

} // namespace hearth::server
