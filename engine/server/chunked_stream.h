// The chunked HTTP body of a streamed generation, shared by every API: each turn of httplib's
// provider takes the queued events (waiting up to a poll interval when nothing else is to be
// written), turns them into the API's text, writes a keep-alive after a second of silence (so a
// vanished client is noticed), cancels the request on a failed write or while the server stops,
// and ends the body once the request has ended.
#pragma once

#include "server/generation_stream.h"
#include "server/server_impl.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hearth::server {

struct ChunkedStream {
    std::shared_ptr<GenerationStream> events;
    std::function<std::string()> begin;                             // the first bytes (may be unset)
    std::function<std::string(std::vector<StreamEvent>&)> text;     // a batch of events as text
    std::function<bool()> ended;                                    // the request finished or failed
    std::function<void()> cancel;
    std::string keepAlive = ": keep-alive\n\n";
};

// Sets `res` up to stream (200, no caching or proxy buffering) with `contentType`.
void streamChunked(Server::Impl& server, httplib::Response& res, const char* contentType, ChunkedStream stream);

// The wait behind every API's whole (not streamed) responses: each queued event given to `apply`
// until `ended`, the request's progress logged as it goes (ProgressLog). False, with the request
// cancelled, when the server began stopping first (the caller answers 503).
bool awaitWhole(Server::Impl& server, GenerationStream& events, const std::function<bool()>& ended,
                const std::function<void(const StreamEvent&)>& apply, const std::function<void()>& cancel);

// The OpenAI-shaped 503 a request gets when the server stops under it.
ApiError shuttingDownError();

} // namespace hearth::server
