// The one generation driver behind every API dialect: a request submitted to the engine, its
// events read per choice into reasoning (<think> blocks, harmony's analysis), answer text, tool
// calls and logprobs, and given to the dialect either whole (after the end) or as it is written,
// through the dialect's formatter of one event stream (a client that goes away cancels the
// request). While streaming, answer text that may be a tool call is held back: a call's name goes
// out first, then its arguments in fragments; held text that was no call goes out at the end.
#pragma once

#include "hearth/chat_output.h"
#include "server/generation_output.h"
#include "server/generation_stream.h"
#include "server/server_impl.h"
#include "server/tool_call_stream.h"
#include "server/tool_calls.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hearth::server {

// How a generation's output is read.
struct DriveOptions {
    bool tools = false;                  // tool calls are looked for in the answer
    std::vector<std::string> toolNames;  // the request's functions
    bool splitReasoning = true;          // reasoning apart from the answer
    std::string renderedPrompt;          // what the reader of the output goes by (hearth/chat_output.h)
    bool logprobs = false;               // each token's logprob (and its alternatives) kept
};

// A choice as it is being generated.
struct DrivenChoice {
    std::string text;
    std::vector<int32_t> ids;
    std::vector<TokenLogprob> logprobs;
    bool finished = false;
    FinishReason reason = FinishReason::Stop;
    std::string stopString;
    // Streaming: the output reader, and answer text held back while it may be a tool call.
    std::unique_ptr<tmpl::ChatOutputReader> reader;
    std::unique_ptr<ToolCallStreamer> calls;
    bool holding = false;
    std::string held;
    std::vector<TokenLogprob> heldLogprobs;
    int streamedCalls = 0; // tool calls announced while streaming
};

struct GenerationJob {
    std::shared_ptr<Engine> engine;
    std::shared_ptr<GenerationStream> stream;
    RequestId id = 0;
    DriveOptions options;
    std::vector<int32_t> prompt; // the prompt's ids as submitted
    std::vector<DrivenChoice> choices;
    FinishReason reason = FinishReason::Stop; // the request's (choice 0's)
    Usage usage;
    bool finished = false;
    bool failed = false;
    Status error;
    bool cancelled = false;

    void cancel();
    // A finished choice read whole: reasoning split off, tool calls parsed out of the answer.
    ChoiceOutput output(size_t choice) const;
    std::vector<ChoiceOutput> outputs() const;
};

// What a dialect's streamed reply is made of; each call returns the bytes to send (maybe none).
class StreamFormatter {
public:
    virtual ~StreamFormatter() = default;
    virtual const char* contentType() const { return "text/event-stream"; }
    virtual std::string begin(const GenerationJob& job) = 0;
    virtual std::string reasoning(const GenerationJob& job, int32_t choice, const std::string& piece) = 0;
    // Answer text; empty with logprobs when a token's text is held back (a possible stop string).
    virtual std::string text(const GenerationJob& job, int32_t choice, const std::string& piece,
                             const std::vector<TokenLogprob>& logprobs) = 0;
    // A tool call being written: its first delta has the id and name, later ones fragments of
    // its arguments' JSON text.
    virtual std::string toolCall(const GenerationJob& job, int32_t choice, const ToolCallDelta& delta) = 0;
    // A choice ended (reason and stop string in `rest`). `rest`: the answer held back as a
    // possible tool call and not streamed as one, read now (content with its logprobs, calls).
    // `madeCalls`: the choice called tools (streamed, or in `rest`).
    virtual std::string choiceEnd(const GenerationJob& job, int32_t choice, const ChoiceOutput& rest,
                                  bool madeCalls) = 0;
    // Every choice has ended; the usage is known.
    virtual std::string end(const GenerationJob& job) = 0;
    virtual std::string fail(const GenerationJob& job, const Status& error) = 0;
    virtual std::string keepAlive() { return ": keep-alive\n\n"; }
};

// Submits `request` (its sink is replaced; n choices as it asks). On failure: the error to send
// (a prompt too long for the context names `maxTokensParam`).
ApiResult<std::shared_ptr<GenerationJob>> submitGeneration(std::shared_ptr<Engine> engine,
                                                           GenerationRequest request, DriveOptions options,
                                                           bool stream, const std::string& maxTokensParam);

// Waits for the end of a job; the error to send when it failed (or the server is stopping).
std::optional<ApiError> waitForGeneration(Server::Impl& server, GenerationJob& job);

// Streams a job through `formatter` as a chunked body.
void streamGeneration(Server::Impl& server, std::shared_ptr<GenerationJob> job,
                      std::shared_ptr<StreamFormatter> formatter, httplib::Response& res);

// "event: NAME\ndata: JSON\n\n"
std::string namedSseEvent(const char* name, const OJson& data);

} // namespace hearth::server
