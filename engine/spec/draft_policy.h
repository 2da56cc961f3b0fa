// How many tokens to draft: each sequence keeps an estimate of how often a draft is accepted, and
// drafts only as far as the expected gain outweighs what the extra tokens cost the step (from the
// scheduler's step-time model). Also the synthetic acceptance rates used to benchmark speculation.
#pragma once

#include "hearth/status.h"

#include <span>
#include <vector>

namespace hearth::spec {

class DraftLength {
public:
    // prior: the acceptance assumed before any evidence (weighted as two trials).
    DraftLength(int maxDraft, int minDraft, double prior = 0.5);

    // Drafts worth verifying now. `cost[k]` is the time of the step with k drafts added relative
    // to the step without (cost[0] = 1), and `others` the tokens the other sequences of the step
    // produce: the k maximizing expected tokens per time, (others + 1 + a + ... + a^k) / cost[k]
    // with a the acceptance, where that beats no drafts by a margin. 0 when that k is below
    // minDraft.
    int next(std::span<const double> cost, double others) const;
    // The outcome of a verification: `drafted` tokens proposed, the first `accepted` accepted.
    void record(int drafted, int accepted);
    // A step without drafts: old evidence fades, so a sequence that stopped drafting tries again
    // after a while (its estimate drifts back to the prior).
    void idle();
    // The estimated probability that a draft is accepted given the one before it was.
    double acceptance() const;
    int maxDraft() const { return m_maxDraft; }

private:
    int m_maxDraft, m_minDraft;
    double m_prior = 0.5;
    double m_successes = 0.0, m_trials = 0.0; // exponentially forgotten counts
};

// Per-position conditional acceptance probabilities giving a mean accepted length of `length`
// (counting the token sampled after the drafts, so 1 .. maxDraft + 1) when `maxDraft` tokens are
// drafted: each draft is accepted with the same probability p, found by bisection.
Result<std::vector<double>> synthAcceptance(double length, int maxDraft);

} // namespace hearth::spec
