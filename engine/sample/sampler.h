// Turns one row of logits into a token: penalties, logit bias, top-k, typical, top-p, min-p,
// temperature, then a draw from a seeded generator; also reports log-probabilities.
#pragma once

#include "hearth/sampling.h"

#include <cstdint>
#include <span>
#include <vector>

namespace hearth::sample {

// xoshiro256** seeded through splitmix64: small, fast, and reproducible across platforms.
class Rng {
public:
    explicit Rng(uint64_t seed = 0);
    uint64_t next();
    double uniform(); // in [0, 1)

private:
    uint64_t m_s[4];
};

struct TokenLogprob {
    int32_t token = -1;
    float logprob = 0.0f;
};

struct SampleResult {
    int32_t token = -1;
    float logprob = 0.0f;              // of the chosen token (when params.logprobs or topLogprobs)
    std::vector<TokenLogprob> top;     // the most likely alternatives (params.topLogprobs)
};

class Sampler {
public:
    explicit Sampler(SamplingParams params);

    const SamplingParams& params() const { return m_params; }

    // logits: [n_vocab] raw scores (left unchanged). history: tokens generated so far (penalties
    // apply to these, as OpenAI defines them). allowed: when not empty, a bitset over the
    // vocabulary (a grammar's mask); other tokens are never chosen. Log-probabilities come from
    // the raw logits.
    SampleResult sample(std::span<const float> logits, std::span<const int32_t> history,
                        std::span<const uint64_t> allowed = {});

private:
    struct Candidate {
        int32_t id;
        float logit;
        float p;
    };

    void applyPenalties(std::vector<float>& logits, std::span<const int32_t> history) const;
    void filter(std::vector<Candidate>& c) const;

    SamplingParams m_params;
    Rng m_rng;
    std::vector<float> m_work;
    std::vector<Candidate> m_candidates;
    std::vector<double> m_weights;
};

// The index of the first maximum, NaN never chosen; -1 when every value is NaN or -inf (or
// there are none). Vectorized: sixteen lanes each keep their first maximum.
int32_t argmaxFirst(std::span<const float> values);
// The same over the tokens whose bit is set in `allowed` (a bitset over the values).
int32_t maskedArgmaxFirst(std::span<const float> values, std::span<const uint64_t> allowed);

// log-softmax of the raw logits for one token, and the k most likely (ties: lower id first).
float logprobOf(std::span<const float> logits, int32_t token);
std::vector<TokenLogprob> topLogprobs(std::span<const float> logits, int k);

} // namespace hearth::sample
