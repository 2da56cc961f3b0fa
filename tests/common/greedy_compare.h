// Greedy generation through the public engine API compared with llama.cpp's greedy run of the
// same file (tests/model/ref_logits.cpp): our tokens and the logits rows that chose them, and a
// verdict that tells a real divergence from a near-tie any fp32 summation order may break.
#pragma once

#include "hearth/engine.h"

#include <QString>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hearth::test {

inline constexpr float kNearTie = 1e-3f; // top-2 gap in llama.cpp's row below which a split is a tie

// Collects one request's tokens and logits rows.
class Collector : public TokenSink {
public:
    void onToken(const TokenInfo& t) override {
        std::lock_guard<std::mutex> lock(m_mu);
        if (t.id < 0) return;
        tokens.push_back(t.id);
        rows.push_back(t.logits);
    }
    void onFinish(FinishReason, const Usage&) override { finish({}); }
    void onError(const Status& s) override { finish(s); }
    bool wait(int ms) {
        std::unique_lock<std::mutex> lock(m_mu);
        return m_cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return m_done; });
    }
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> rows;
    Status error;

private:
    void finish(const Status& s) {
        std::lock_guard<std::mutex> lock(m_mu);
        error = s;
        m_done = true;
        m_cv.notify_all();
    }
    std::mutex m_mu;
    std::condition_variable m_cv;
    bool m_done = false;
};

// Our greedy run of `steps` tokens on `device`: its tokens and the rows that chose them; an error
// status on failure. The context is the 256 positions llama.cpp pads its context to, so both
// choose the same LongRoPE factors.
inline Status generate(const QString& path, const std::vector<int32_t>& ids, int steps, const std::string& device,
                Collector& out) {
    EngineConfig c;
    c.modelPath = path.toStdString();
    c.contextLength = 256;
    c.kvType = KvType::F32;
    c.device = device;
    c.threads = 2;
    c.maxNumSeqs = 1;
    auto e = Engine::create(c);
    if (!e.isOk()) return e.status();
    GenerationRequest r;
    r.prompt = ids;
    r.sampling.temperature = 0.0f;
    r.maxTokens = steps;
    r.ignoreEos = true;
    r.returnLogits = true;
    // The sink must outlive the engine's last call into it; `out` does (the engine is destroyed first).
    r.sink = std::shared_ptr<TokenSink>(&out, [](TokenSink*) {});
    auto id = (*e)->submit(r);
    if (!id.isOk()) return id.status();
    if (!out.wait(600000)) return Status(ErrorCode::Internal, "the greedy run did not finish in 10 minutes");
    return out.error;
}

struct Verdict {
    int firstDivergence = -1; // step where the ids first differ; -1: none
    float margin = 0.0f;      // llama.cpp's top-1 minus top-2 logit there
    bool tie = true;          // that margin is a near-tie and our token is llama.cpp's second
    double maxDiff = 0.0;     // max |dlogit| over the steps both saw the same history
    int maxDiffStep = 0;      // where it is
};

// Compares our tokens and rows with llama.cpp's rows [steps][vocab] (its token: each row's argmax).
inline Verdict judge(const std::vector<float>& theirs, size_t vocab, const Collector& ours, float nearTie = kNearTie) {
    Verdict v;
    const size_t steps = theirs.size() / vocab;
    for (size_t s = 0; s < steps && s < ours.tokens.size(); ++s) {
        const float* row = &theirs[s * vocab];
        if (ours.rows[s].size() == vocab) {
            for (size_t i = 0; i < vocab; ++i) {
                const double d = std::fabs(ours.rows[s][i] - row[i]);
                if (d > v.maxDiff) {
                    v.maxDiff = d;
                    v.maxDiffStep = int(s);
                }
            }
        }
        size_t best = 0, second = 1;
        if (row[second] > row[best]) std::swap(best, second);
        for (size_t i = 2; i < vocab; ++i) {
            if (row[i] > row[best]) {
                second = best;
                best = i;
            } else if (row[i] > row[second]) {
                second = i;
            }
        }
        if (int32_t(best) == ours.tokens[s]) continue;
        v.firstDivergence = int(s);
        v.margin = row[best] - row[second];
        v.tie = v.margin < nearTie && int32_t(second) == ours.tokens[s];
        return v;
    }
    if (ours.tokens.size() != steps) {
        v.firstDivergence = int(std::min(steps, ours.tokens.size()));
        v.tie = false;
    }
    return v;
}

inline QString describe(const Verdict& v) {
    if (v.firstDivergence < 0) return QStringLiteral("tokens equal");
    return QStringLiteral("first divergence at step %1, llama.cpp's margin %2 (%3)")
        .arg(v.firstDivergence)
        .arg(double(v.margin), 0, 'e', 2)
        .arg(v.tie ? QStringLiteral("near-tie, accepted") : QStringLiteral("REAL"));
}

} // namespace hearth::test
