// The queue between an engine request's sink and the HTTP thread serving it.
#include "server/generation_stream.h"

namespace hearth::server {

void GenerationStream::push(StreamEvent event, bool last) {
    {
        std::lock_guard<std::mutex> lock(m_mu);
        if (m_ended) return; // nothing is delivered after the end
        if (event.kind == StreamEvent::Kind::Token) ++m_progress.tokens;
        m_events.push_back(std::move(event));
        if (last) m_ended = true;
    }
    m_cv.notify_one();
}

void GenerationStream::onToken(const TokenInfo& token) {
    StreamEvent e;
    e.kind = StreamEvent::Kind::Token;
    e.choice = token.choice;
    e.id = token.id;
    e.text = token.text;
    e.logprob = token.logprob;
    e.topLogprobs = token.topLogprobs;
    push(std::move(e), false);
}

void GenerationStream::onChoiceFinish(int32_t choice, FinishReason reason, const std::string& stopString) {
    StreamEvent e;
    e.kind = StreamEvent::Kind::ChoiceFinish;
    e.choice = choice;
    e.reason = reason;
    e.stopString = stopString;
    push(std::move(e), false);
}

void GenerationStream::onFinish(FinishReason reason, const Usage& usage) {
    StreamEvent e;
    e.kind = StreamEvent::Kind::Finish;
    e.reason = reason;
    e.usage = usage;
    push(std::move(e), true);
}

void GenerationStream::onError(const Status& error) {
    StreamEvent e;
    e.kind = StreamEvent::Kind::Error;
    e.error = error;
    push(std::move(e), true);
}

void GenerationStream::onPromptProgress(int32_t done, int32_t total) {
    std::lock_guard<std::mutex> lock(m_mu);
    m_progress.promptDone = done;
    m_progress.promptTotal = total;
}

StreamProgress GenerationStream::progress() const {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_progress;
}

bool GenerationStream::take(std::vector<StreamEvent>& out, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(m_mu);
    if (m_events.empty()) m_cv.wait_for(lock, timeout, [&] { return !m_events.empty(); });
    if (m_events.empty()) return false;
    while (!m_events.empty()) {
        out.push_back(std::move(m_events.front()));
        m_events.pop_front();
    }
    return true;
}

bool GenerationStream::ended() const {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_ended;
}

} // namespace hearth::server
