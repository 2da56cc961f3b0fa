// A TokenSink for the engine tests (each choice's token ids and text, each choice's finish reason,
// the request's reason, usage or error; waits for the end or for choice 0's first tokens), and
// the greedy requests that feed one.
#pragma once

#include "hearth/engine.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hearth::test {

class TokenCollector : public TokenSink {
public:
    void onToken(const TokenInfo& t) override {
        std::lock_guard<std::mutex> lock(m_mu);
        if (size_t(t.choice) >= choiceText.size()) {
            choiceText.resize(size_t(t.choice) + 1);
            choiceTokens.resize(size_t(t.choice) + 1);
        }
        choiceText[size_t(t.choice)] += t.text;
        if (t.id >= 0) choiceTokens[size_t(t.choice)].push_back(t.id);
        m_cv.notify_all();
    }
    void onChoiceFinish(int32_t choice, FinishReason r, const std::string& stop) override {
        std::lock_guard<std::mutex> lock(m_mu);
        choiceReasons.push_back({choice, r});
        if (size_t(choice) >= choiceStops.size()) choiceStops.resize(size_t(choice) + 1);
        choiceStops[size_t(choice)] = stop;
    }
    void onFinish(FinishReason r, const Usage& u) override {
        std::lock_guard<std::mutex> lock(m_mu);
        reason = r;
        usage = u;
        done = true;
        m_cv.notify_all();
    }
    void onError(const Status& s) override {
        std::lock_guard<std::mutex> lock(m_mu);
        error = s;
        done = true;
        m_cv.notify_all();
    }

    // Whether the request ended (finished or failed) within ms.
    bool waitDone(int ms = 120000) {
        std::unique_lock<std::mutex> lock(m_mu);
        return m_cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return done; });
    }
    // Whether choice 0 had n token ids, or the request ended, within ms.
    bool waitTokens(size_t n, int ms = 60000) {
        std::unique_lock<std::mutex> lock(m_mu);
        return m_cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return choice0Tokens() >= n || done; });
    }

    // Choice 0's token ids and text (read once the request has ended).
    const std::vector<int32_t>& tokens() const {
        static const std::vector<int32_t> none;
        return choiceTokens.empty() ? none : choiceTokens[0];
    }
    const std::string& text() const {
        static const std::string none;
        return choiceText.empty() ? none : choiceText[0];
    }

    std::vector<std::vector<int32_t>> choiceTokens;
    std::vector<std::string> choiceText;
    std::vector<std::pair<int32_t, FinishReason>> choiceReasons;
    std::vector<std::string> choiceStops; // per choice: the stop string that ended it, else empty
    FinishReason reason = FinishReason::Error;
    Usage usage;
    Status error; // ok unless onError came (or submit failed, where a test sets it)
    bool done = false;

private:
    size_t choice0Tokens() const { return choiceTokens.empty() ? 0 : choiceTokens[0].size(); }

    std::mutex m_mu;
    std::condition_variable m_cv;
};

// A greedy request of prompt (EOS ignored): n choices of maxTokens each, into sink.
inline GenerationRequest greedyRequest(std::vector<int32_t> prompt, std::shared_ptr<TokenSink> sink, int maxTokens,
                                       int n = 1) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0.0f;
    r.maxTokens = maxTokens;
    r.n = n;
    r.ignoreEos = true;
    r.sink = std::move(sink);
    return r;
}

} // namespace hearth::test
