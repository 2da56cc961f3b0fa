// Says in the server's log how a long generation is getting on, so that a request waiting behind
// a long prompt or a slow device is not silent: after kFirstAfter, then every kEvery, a line such
// as "POST /v1/chat/completions · 35 s · reading the prompt: 1024 of 3210 tokens" (or "· 87
// tokens written"). Used by the streamed and the whole-response paths alike.
#pragma once

#include "server/generation_stream.h"

#include <chrono>
#include <string>

namespace hearth::server {

class ProgressLog {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr auto kFirstAfter = std::chrono::seconds(5);
    static constexpr auto kEvery = std::chrono::seconds(10);

    // `label`: what the lines name ("POST /v1/chat/completions"); `start`: when it began.
    explicit ProgressLog(std::string label, Clock::time_point start = Clock::now());

    // The line due at `now` for a request this far, or "" when none is due yet.
    std::string due(const StreamProgress& progress, Clock::time_point now = Clock::now());

private:
    std::string m_label;
    Clock::time_point m_start;
    Clock::time_point m_next;
};

// A ProgressLog for the request the calling worker thread serves (named and timed from when it
// was routed; see http_server.cpp).
ProgressLog requestProgressLog();

} // namespace hearth::server
