// Per-sequence speculation state and the verification rule.
#include "spec/speculator.h"

#include <algorithm>

namespace hearth::spec {

Speculator::Speculator(SpeculatorConfig config)
    : m_config(std::move(config)),
      // A client's prediction is usually close to the answer: it starts trusted.
      m_length(m_config.maxDraft, m_config.minDraft, m_config.prediction.empty() ? 0.5 : 0.8),
      m_rng(m_config.seed ^ 0x5bec) {
    if (!m_config.prediction.empty()) m_prediction.emplace(std::move(m_config.prediction));
    if (m_config.ngram) m_ngram.emplace();
}

bool Speculator::active() const {
    return m_config.maxDraft > 0 && (m_prediction || m_ngram || m_config.draftModel || !m_config.synthAccept.empty());
}

int Speculator::length(std::span<const double> cost, double others) {
    if (!active()) return 0;
    const int k = !m_config.synthAccept.empty() ? std::min<int>(m_config.maxDraft, int(m_config.synthAccept.size()))
                  : m_config.adaptive       ? m_length.next(cost, others)
                                            : m_config.maxDraft;
    if (k <= 0) m_length.idle();
    return k;
}

int Speculator::modelLength(std::span<const double> cost, double others) const {
    if (!m_config.draftModel || m_config.maxDraft <= 0) return 0;
    if (!m_config.synthAccept.empty()) return std::min<int>(m_config.maxDraft, int(m_config.synthAccept.size()));
    return m_config.adaptive ? m_length.next(cost, others) : m_config.maxDraft;
}

std::vector<int32_t> Speculator::propose(std::span<const int32_t> tokens, int promptLength, int k,
                                         std::span<const int32_t> stopTokens) {
    std::vector<int32_t> draft;
    if (k <= 0 || tokens.empty()) return draft;
    m_lastFromPrediction = false;
    if (m_prediction) {
        m_prediction->propose(tokens, promptLength, k, draft);
        m_lastFromPrediction = !draft.empty();
    }
    if (draft.empty() && m_ngram) m_ngram->propose(tokens, promptLength, k, draft);
    if (draft.empty() && m_config.pool) m_config.pool->propose(tokens, k, draft);
    if (!m_config.synthAccept.empty() && !m_config.draftModel) {
        // Every position is drafted; filler where no drafter had a proposal (never a stop token,
        // which would end the output early when accepted). With a draft model, it drafts.
        int32_t filler = tokens.back();
        if (std::find(stopTokens.begin(), stopTokens.end(), filler) != stopTokens.end()) filler = 0;
        while (int(draft.size()) < k) draft.push_back(filler);
        for (int32_t& t : draft)
            if (std::find(stopTokens.begin(), stopTokens.end(), t) != stopTokens.end()) t = filler;
    }
    if (int(draft.size()) < std::max(1, m_config.minDraft)) draft.clear();
    if (draft.empty() && !m_config.draftModel) m_length.idle();
    return draft;
}

std::optional<bool> Speculator::synthAccept(int j) {
    if (m_config.synthAccept.empty()) return std::nullopt;
    const double p = j >= 0 && size_t(j) < m_config.synthAccept.size() ? m_config.synthAccept[size_t(j)] : 0.0;
    return m_rng.uniform() < p;
}

void Speculator::record(int drafted, int accepted) {
    if (drafted <= 0) return;
    m_length.record(drafted, accepted);
    m_drafted += drafted;
    m_accepted += accepted;
    if (m_lastFromPrediction) {
        m_predictionDrafted += drafted;
        m_predictionAccepted += accepted;
    }
}

std::vector<int32_t> verifyDrafts(std::span<const int32_t> drafts, const std::function<int32_t(int)>& draw,
                                  const std::function<std::optional<bool>(int)>& forced) {
    std::vector<int32_t> out;
    for (size_t j = 0; j <= drafts.size(); ++j) {
        const int32_t token = draw(int(j));
        if (token < 0) break;
        if (j == drafts.size()) {
            out.push_back(token);
            break;
        }
        const std::optional<bool> force = forced ? forced(int(j)) : std::nullopt;
        const bool accept = force ? *force : token == drafts[j];
        out.push_back(accept ? drafts[j] : token);
        if (!accept) break;
    }
    return out;
}

} // namespace hearth::spec
