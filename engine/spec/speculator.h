// One sequence's speculative decoding: its drafters (the request's prediction first, then the
// context n-grams), its draft-length policy, synthetic acceptance when benchmarking, and counts
// of what was drafted and accepted. The engine asks it for a draft before each step and tells it
// the outcome after; verifyDrafts() is the acceptance rule itself.
#pragma once

#include "hearth/engine.h"
#include "sample/sampler.h"
#include "spec/draft_policy.h"
#include "spec/ngram_drafter.h"
#include "spec/ngram_pool.h"
#include "spec/prediction_drafter.h"

#include <functional>
#include <memory>
#include <optional>

namespace hearth::spec {

struct SpeculatorConfig {
    bool ngram = false;
    std::vector<int32_t> prediction;
    int maxDraft = 8;
    int minDraft = 1;
    bool adaptive = true; // false: always up to maxDraft (DraftLength bypassed)
    bool draftModel = false; // the engine's draft model drafts where the others do not
    float pMin = 0.0f;       // the draft model stops below this probability (SpeculationConfig::pMin)
    const NgramPool* pool = nullptr; // n-grams of earlier requests (with ngram), owned by the engine
    std::vector<double> synthAccept; // per draft position (synthetic acceptance); empty: real
    uint64_t seed = 0;               // synthetic acceptance's draws
};

class Speculator {
public:
    explicit Speculator(SpeculatorConfig config);

    // Whether it can ever draft (some drafter, or synthetic acceptance).
    bool active() const;
    // How many tokens to draft for the next step: the policy's length (DraftLength::next with
    // `cost` and `others`), maxDraft when not adaptive or synthetic; 0: none this step.
    int length(std::span<const double> cost, double others);
    // The draft for the next step from the prediction or the n-grams (empty: neither has one; a
    // draft model, if any, is asked next): at most k tokens, exactly k when synthetic.
    std::vector<int32_t> propose(std::span<const int32_t> tokens, int promptLength, int k,
                                 std::span<const int32_t> stopTokens);
    // The length for a draft model's draft, where `cost` includes the draft model's own time
    // (the policy as length(), without counting a step without drafts twice).
    int modelLength(std::span<const double> cost, double others) const;
    // A step without a draft (old evidence fades: DraftLength::idle).
    void idle() { m_length.idle(); }
    // Whether a draft model drafts for this sequence where the other drafters have nothing.
    bool usesDraftModel() const { return m_config.draftModel; }
    // The draft model's least probability to go on drafting (0 with synthetic acceptance: its
    // drafts are then not judged by their tokens).
    float pMin() const { return m_config.synthAccept.empty() ? m_config.pMin : 0.0f; }
    // The draft model's proposal is the one verified next (for the counts by source).
    void proposedByModel() { m_lastFromPrediction = false; }
    // Synthetic acceptance: whether draft j (0-based) is accepted, drawn at random; nullopt when
    // acceptance is real (the token sampled must equal the draft).
    std::optional<bool> synthAccept(int j);
    // The outcome of the last proposal's verification.
    void record(int drafted, int accepted);

    int drafted() const { return m_drafted; }
    int accepted() const { return m_accepted; }
    int predictionDrafted() const { return m_predictionDrafted; }
    int predictionAccepted() const { return m_predictionAccepted; }
    const DraftLength& length() const { return m_length; }

private:
    SpeculatorConfig m_config;
    std::optional<PredictionDrafter> m_prediction;
    std::optional<NgramDrafter> m_ngram;
    DraftLength m_length;
    sample::Rng m_rng;
    bool m_lastFromPrediction = false;
    int m_drafted = 0, m_accepted = 0, m_predictionDrafted = 0, m_predictionAccepted = 0;
};

// The verification of drafts against the target model, row by row: `draw(j)` draws the target's
// token at row j (the position after the first j drafts, which it may assume accepted), exactly
// as an ordinary decode step would. A draft is accepted when it equals the token drawn (or, with
// synthetic acceptance, when `forced(j)` says so); the first token that differs ends the run.
// Returns the emitted tokens: the accepted drafts, then the token drawn after them. Drawing each
// token from the target's own distribution is the rejection rule for drafts that are one token
// each (a deterministic drafter): a draft d is accepted with probability p(d), and otherwise the
// token comes from p without d, renormalized, so the output's distribution is the target's.
// `draw` may return -1 to stop (a grammar's dead end): nothing more is emitted.
std::vector<int32_t> verifyDrafts(std::span<const int32_t> drafts, const std::function<int32_t(int)>& draw,
                                  const std::function<std::optional<bool>(int)>& forced = {});

} // namespace hearth::spec
