// The generation loops behind every API's responses: the streamed body, and the wait for a whole one.
#include "server/chunked_stream.h"

#include "server/progress_log.h"

#include <chrono>

namespace hearth::server {

namespace {
using Clock = std::chrono::steady_clock;

struct StreamState {
    ChunkedStream stream;
    bool started = false;
    Clock::time_point lastWrite = Clock::now();
    ProgressLog progress = requestProgressLog(); // made on the thread that routed the request
};
} // namespace

void streamChunked(Server::Impl& server, httplib::Response& res, const char* contentType, ChunkedStream stream) {
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    auto state = std::make_shared<StreamState>();
    state->stream = std::move(stream);
    Server::Impl* srv = &server;
    res.set_chunked_content_provider(
        contentType,
        [state, srv](size_t, httplib::DataSink& sink) {
            ChunkedStream& s = state->stream;
            auto fail = [&] {
                s.cancel();
                return false;
            };
            if (srv->m_stopping || !sink.is_writable()) return fail();
            std::string out;
            if (!state->started) {
                state->started = true;
                if (s.begin) out = s.begin();
            }
            std::vector<StreamEvent> events;
            s.events->take(events, out.empty() ? kPoll : std::chrono::milliseconds(0));
            out += s.text(events);
            const auto now = Clock::now();
            if (out.empty() && now - state->lastWrite >= kKeepAlive) out = s.keepAlive;
            if (!out.empty()) {
                if (!sink.write(out.data(), out.size())) return fail();
                state->lastWrite = now;
            }
            if (const std::string line = state->progress.due(s.events->progress(), now); !line.empty())
                srv->log(line);
            if (s.ended()) sink.done();
            return true;
        },
        [state](bool) { state->stream.cancel(); });
}

bool awaitWhole(Server::Impl& server, GenerationStream& events, const std::function<bool()>& ended,
                const std::function<void(const StreamEvent&)>& apply, const std::function<void()>& cancel) {
    std::vector<StreamEvent> batch;
    ProgressLog progress = requestProgressLog();
    while (!ended()) {
        if (const std::string line = progress.due(events.progress()); !line.empty()) server.log(line);
        if (server.m_stopping) {
            cancel();
            return false;
        }
        batch.clear();
        events.take(batch, kPoll);
        for (const StreamEvent& e : batch) apply(e);
    }
    return true;
}

ApiError shuttingDownError() {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.code = "shutting_down";
    e.message = "the server is shutting down";
    return e;
}

} // namespace hearth::server
