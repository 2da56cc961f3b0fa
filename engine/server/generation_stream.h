// The queue between an engine request's sink (engine thread; pushes, never waits) and the HTTP
// thread that turns its events into a response.
#pragma once

#include "hearth/engine.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

namespace hearth::server {

struct StreamEvent {
    enum class Kind { Token, ChoiceFinish, Finish, Error };
    Kind kind = Kind::Token;
    int32_t choice = 0;
    int32_t id = -1;
    std::string text;
    float logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> topLogprobs;
    FinishReason reason = FinishReason::Stop;
    std::string stopString; // ChoiceFinish: the stop string that ended the choice, else empty
    Usage usage;
    Status error;
};

// How far a request is: its prompt read so far (0 of 0 until the engine says; a prompt read in
// one step never says) and the tokens written, all choices together.
struct StreamProgress {
    int32_t promptDone = 0;
    int32_t promptTotal = 0;
    int64_t tokens = 0;
};

class GenerationStream final : public TokenSink {
public:
    void onToken(const TokenInfo& token) override;
    void onChoiceFinish(int32_t choice, FinishReason reason, const std::string& stopString) override;
    void onFinish(FinishReason reason, const Usage& usage) override;
    void onError(const Status& error) override;
    void onPromptProgress(int32_t done, int32_t total) override;
    StreamProgress progress() const;

    // Moves queued events into `out` (appending); waits up to `timeout` when none are queued.
    // Returns whether any were moved.
    bool take(std::vector<StreamEvent>& out, std::chrono::milliseconds timeout);
    // onFinish or onError has been called (their event may still be queued).
    bool ended() const;

private:
    void push(StreamEvent event, bool last);

    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    std::deque<StreamEvent> m_events;
    bool m_ended = false;
    StreamProgress m_progress;
};

} // namespace hearth::server
