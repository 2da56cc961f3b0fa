// Draft-length policy and synthetic acceptance rates.
#include "spec/draft_policy.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace hearth::spec {

namespace {

constexpr double kForget = 0.9;      // per trial (one draft's outcome)
constexpr double kIdleForget = 0.95; // per step without drafts
constexpr double kPriorTrials = 2.0; // the prior's weight
constexpr double kMargin = 1.05;     // drafting must beat plain decoding by this factor

} // namespace

DraftLength::DraftLength(int maxDraft, int minDraft, double prior)
    : m_maxDraft(std::max(0, maxDraft)), m_minDraft(std::clamp(minDraft, 0, std::max(0, maxDraft))),
      m_prior(std::clamp(prior, 0.0, 1.0)) {}

double DraftLength::acceptance() const {
    return (m_successes + m_prior * kPriorTrials) / (m_trials + kPriorTrials);
}

int DraftLength::next(std::span<const double> cost, double others) const {
    const double a = acceptance();
    const double plain = others + 1.0;
    int best = 0;
    double bestRate = plain * kMargin, expected = plain, term = 1.0;
    for (int k = 1; k <= m_maxDraft && size_t(k) < cost.size(); ++k) {
        expected += (term *= a);
        if (!(cost[size_t(k)] > 0.0)) break;
        const double rate = expected / cost[size_t(k)];
        if (rate > bestRate) {
            bestRate = rate;
            best = k;
        }
    }
    return best < std::max(1, m_minDraft) ? 0 : best;
}

void DraftLength::record(int drafted, int accepted) {
    if (drafted <= 0) return;
    accepted = std::clamp(accepted, 0, drafted);
    // Each accepted draft is a success and the first rejected one (if any) a failure; older
    // trials fade by kForget per trial, so the last dozen or so decide.
    for (int i = 0; i < accepted; ++i) {
        m_successes = m_successes * kForget + 1.0;
        m_trials = m_trials * kForget + 1.0;
    }
    if (accepted < drafted) {
        m_successes *= kForget;
        m_trials = m_trials * kForget + 1.0;
    }
}

void DraftLength::idle() {
    m_successes *= kIdleForget;
    m_trials *= kIdleForget;
}

Result<std::vector<double>> synthAcceptance(double length, int maxDraft) {
    if (maxDraft < 1) return invalidArgument("synthetic acceptance needs at least one draft token per step");
    if (!std::isfinite(length) || length < 1.0 || length > maxDraft + 1.0)
        return invalidArgument("the synthetic acceptance length must be between 1 and " +
                               std::to_string(maxDraft + 1) + " (drafts per step + 1)");
    // Expected accepted drafts with k drafts each accepted with p: p + p^2 + ... + p^k.
    auto expected = [maxDraft](double p) {
        double sum = 0.0, term = 1.0;
        for (int j = 0; j < maxDraft; ++j) sum += (term *= p);
        return sum;
    };
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 60; ++i) {
        const double mid = 0.5 * (lo + hi);
        (expected(mid) < length - 1.0 ? lo : hi) = mid;
    }
    return std::vector<double>(size_t(maxDraft), length >= maxDraft + 1.0 ? 1.0 : 0.5 * (lo + hi));
}

} // namespace hearth::spec
