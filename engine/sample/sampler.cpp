// Sampling pipeline in llama.cpp's order: penalties, bias, top-k, typical, top-p, min-p,
// temperature, draw. Greedy when temperature <= 0.
#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

namespace hearth {

Status SamplingParams::validate(int32_t vocabSize) const {
    auto bad = [](std::string field, std::string why) {
        return invalidArgument("'" + field + "' " + why);
    };
    if (!std::isfinite(temperature) || temperature < 0.0f || temperature > 100.0f)
        return bad("temperature", "must be between 0 and 100");
    if (topK < 0) return bad("top_k", "must be >= 0");
    if (!(topP > 0.0f && topP <= 1.0f)) return bad("top_p", "must be in (0, 1]");
    if (!(minP >= 0.0f && minP <= 1.0f)) return bad("min_p", "must be in [0, 1]");
    if (!(typicalP > 0.0f && typicalP <= 1.0f)) return bad("typical_p", "must be in (0, 1]");
    if (!(repetitionPenalty > 0.0f && repetitionPenalty <= 10.0f))
        return bad("repeat_penalty", "must be in (0, 10]");
    if (!(presencePenalty >= -2.0f && presencePenalty <= 2.0f))
        return bad("presence_penalty", "must be between -2 and 2");
    if (!(frequencyPenalty >= -2.0f && frequencyPenalty <= 2.0f))
        return bad("frequency_penalty", "must be between -2 and 2");
    if (penaltyLastN < -1) return bad("repeat_last_n", "must be >= -1");
    if (topLogprobs < 0 || topLogprobs > 20) return bad("top_logprobs", "must be between 0 and 20");
    for (const auto& [token, bias] : logitBias) {
        if (token < 0 || token >= vocabSize)
            return bad("logit_bias", "names token " + std::to_string(token) +
                                         " outside the vocabulary (size " +
                                         std::to_string(vocabSize) + ")");
        if (std::isnan(bias) || bias > 100.0f || (bias < -100.0f && !std::isinf(bias)))
            return bad("logit_bias", "values must be between -100 and 100");
    }
    return Status::ok();
}

namespace sample {

namespace {
uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
} // namespace

int32_t argmaxFirst(std::span<const float> values) {
    constexpr size_t L = 16;
    const float* v = values.data();
    const size_t n = values.size(), whole = n - n % L;
    // Lane j sees indices j, j + 16, ...: a strictly greater value replaces its maximum, so each
    // lane holds its first maximum (NaN compares false and is never taken).
    float laneMax[L];
    int32_t laneIdx[L];
    for (size_t j = 0; j < L; ++j) {
        laneMax[j] = -std::numeric_limits<float>::infinity();
        laneIdx[j] = -1;
    }
    for (size_t i = 0; i < whole; i += L)
        for (size_t j = 0; j < L; ++j) {
            const bool more = v[i + j] > laneMax[j];
            laneMax[j] = more ? v[i + j] : laneMax[j];
            laneIdx[j] = more ? int32_t(i + j) : laneIdx[j];
        }
    int32_t best = -1;
    float bestValue = -std::numeric_limits<float>::infinity();
    for (size_t j = 0; j < L; ++j) // the largest lane maximum; on a tie the lower index
        if (laneIdx[j] >= 0 && (laneMax[j] > bestValue || (laneMax[j] == bestValue && laneIdx[j] < best))) {
            bestValue = laneMax[j];
            best = laneIdx[j];
        }
    for (size_t i = whole; i < n; ++i) // the tail comes after every lane's indices
        if (v[i] > bestValue) {
            bestValue = v[i];
            best = int32_t(i);
        }
    return best;
}

int32_t maskedArgmaxFirst(std::span<const float> values, std::span<const uint64_t> allowed) {
    int32_t best = -1;
    float bestValue = -std::numeric_limits<float>::infinity();
    const size_t n = values.size();
    for (size_t w = 0; w < allowed.size() && w * 64 < n; ++w) {
        const size_t base = w * 64;
        if (allowed[w] == ~uint64_t(0) && base + 64 <= n) { // a whole word allowed: its lanes
            const int32_t i = argmaxFirst(values.subspan(base, 64));
            if (i >= 0 && values[base + size_t(i)] > bestValue) {
                bestValue = values[base + size_t(i)];
                best = int32_t(base) + i;
            }
            continue;
        }
        for (uint64_t bits = allowed[w]; bits; bits &= bits - 1) {
            const size_t i = base + size_t(__builtin_ctzll(bits));
            if (i < n && values[i] > bestValue) {
                bestValue = values[i];
                best = int32_t(i);
            }
        }
    }
    return best;
}

Rng::Rng(uint64_t seed) {
    for (uint64_t& s : m_s) s = splitmix64(seed);
}

uint64_t Rng::next() {
    const uint64_t result = rotl(m_s[1] * 5, 7) * 9;
    const uint64_t t = m_s[1] << 17;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 45);
    return result;
}

double Rng::uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }

float logprobOf(std::span<const float> logits, int32_t token) {
    if (token < 0 || size_t(token) >= logits.size()) return -std::numeric_limits<float>::infinity();
    float maxLogit = -std::numeric_limits<float>::infinity();
    for (float l : logits) maxLogit = std::max(maxLogit, l);
    double sum = 0.0;
    for (float l : logits) sum += std::exp(double(l) - maxLogit);
    return float(double(logits[size_t(token)]) - maxLogit - std::log(sum));
}

std::vector<TokenLogprob> topLogprobs(std::span<const float> logits, int k) {
    std::vector<TokenLogprob> out;
    if (k <= 0 || logits.empty()) return out;
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    const size_t n = std::min(size_t(k), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + long(n), ids.end(), [&](int32_t a, int32_t b) {
        return logits[size_t(a)] > logits[size_t(b)] ||
               (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    float maxLogit = logits[size_t(ids[0])];
    double sum = 0.0;
    for (float l : logits) sum += std::exp(double(l) - maxLogit);
    const double logSum = std::log(sum);
    for (size_t i = 0; i < n; ++i)
        out.push_back({ids[i], float(double(logits[size_t(ids[i])]) - maxLogit - logSum)});
    return out;
}

Sampler::Sampler(SamplingParams params) : m_params(std::move(params)), m_rng(m_params.seed) {}

void Sampler::applyPenalties(std::vector<float>& logits, std::span<const int32_t> history) const {
    const SamplingParams& p = m_params;
    const bool any = p.repetitionPenalty != 1.0f || p.presencePenalty != 0.0f ||
                     p.frequencyPenalty != 0.0f;
    if (!any || history.empty() || p.penaltyLastN == 0) return;
    if (p.penaltyLastN > 0 && history.size() > size_t(p.penaltyLastN))
        history = history.subspan(history.size() - size_t(p.penaltyLastN));
    std::unordered_map<int32_t, int> counts;
    for (int32_t t : history)
        if (t >= 0 && size_t(t) < logits.size()) ++counts[t];
    for (const auto& [token, count] : counts) {
        float& l = logits[size_t(token)];
        if (p.repetitionPenalty != 1.0f)
            l = l > 0.0f ? l / p.repetitionPenalty : l * p.repetitionPenalty;
        l -= float(count) * p.frequencyPenalty + p.presencePenalty;
    }
}

void Sampler::filter(std::vector<Candidate>& c) const {
    const SamplingParams& p = m_params;
    // c is sorted by logit, descending. Probabilities at temperature 1 drive the filters.
    auto softmax = [](std::vector<Candidate>& v) {
        const float maxLogit = v.front().logit;
        double sum = 0.0;
        for (Candidate& x : v) sum += (x.p = std::exp(x.logit - maxLogit));
        for (Candidate& x : v) x.p = float(x.p / sum);
    };
    if (p.topK > 0 && c.size() > size_t(p.topK)) c.resize(size_t(p.topK));
    softmax(c);
    if (p.typicalP < 1.0f && c.size() > 1) {
        double entropy = 0.0;
        for (const Candidate& x : c)
            if (x.p > 0.0f) entropy -= double(x.p) * std::log(double(x.p));
        std::vector<std::pair<double, size_t>> shifted; // |-log p - H|, index
        for (size_t i = 0; i < c.size(); ++i)
            shifted.push_back({std::fabs(-std::log(std::max(double(c[i].p), 1e-30)) - entropy), i});
        std::stable_sort(shifted.begin(), shifted.end());
        double cum = 0.0;
        std::vector<Candidate> kept;
        for (const auto& [score, i] : shifted) {
            kept.push_back(c[i]);
            cum += c[i].p;
            if (cum >= p.typicalP) break;
        }
        std::stable_sort(kept.begin(), kept.end(),
                         [](const Candidate& a, const Candidate& b) { return a.logit > b.logit; });
        c = std::move(kept);
        softmax(c);
    }
    if (p.topP < 1.0f) {
        double cum = 0.0;
        size_t keep = c.size();
        for (size_t i = 0; i < c.size(); ++i) {
            cum += c[i].p;
            if (cum >= p.topP) {
                keep = i + 1;
                break;
            }
        }
        c.resize(keep);
        softmax(c);
    }
    if (p.minP > 0.0f) {
        const float threshold = c.front().p * p.minP;
        size_t keep = 1;
        while (keep < c.size() && c[keep].p >= threshold) ++keep;
        c.resize(keep);
    }
}

SampleResult Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                             std::span<const uint64_t> allowed) {
    SampleResult result;
    if (logits.empty()) return result;
    const bool penalties = m_params.repetitionPenalty != 1.0f || m_params.presencePenalty != 0.0f ||
                           m_params.frequencyPenalty != 0.0f;
    auto isAllowed = [&](size_t i) {
        return allowed.empty() || (i / 64 < allowed.size() && (allowed[i / 64] >> (i % 64)) & 1u);
    };
    if (m_params.temperature <= 0.0f && !penalties && m_params.logitBias.empty() &&
        !m_params.logprobs && m_params.topLogprobs <= 0) {
        // Plain greedy: the first maximum (of the allowed tokens), NaN never chosen (as the
        // general path does).
        const int32_t best = allowed.empty() ? argmaxFirst(logits) : maskedArgmaxFirst(logits, allowed);
        if (best >= 0) {
            result.token = best;
            return result;
        }
    }
    m_work.assign(logits.begin(), logits.end());
    applyPenalties(m_work, history);
    for (const auto& [token, bias] : m_params.logitBias)
        if (token >= 0 && size_t(token) < m_work.size()) m_work[size_t(token)] += bias;

    auto better = [](const Candidate& a, const Candidate& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    m_candidates.clear();
    if (allowed.empty()) {
        for (size_t i = 0; i < m_work.size(); ++i)
            if (!std::isnan(m_work[i]) && m_work[i] > -std::numeric_limits<float>::infinity())
                m_candidates.push_back({int32_t(i), m_work[i], 0.0f});
    } else {
        // Only the mask's tokens: walk its set bits.
        for (size_t w = 0; w < allowed.size(); ++w)
            for (uint64_t bits = allowed[w]; bits; bits &= bits - 1) {
                const size_t i = w * 64 + size_t(__builtin_ctzll(bits));
                if (i < m_work.size() && !std::isnan(m_work[i]) &&
                    m_work[i] > -std::numeric_limits<float>::infinity())
                    m_candidates.push_back({int32_t(i), m_work[i], 0.0f});
            }
    }
    if (m_candidates.empty()) { // everything banned: fall back to the raw argmax (of the mask)
        for (size_t i = 0; i < logits.size(); ++i)
            if (isAllowed(i)) m_candidates.push_back({int32_t(i), logits[i], 0.0f});
        if (m_candidates.empty()) return result; // the mask allows nothing
    }

    const bool filters = m_params.topK > 0 || m_params.topP < 1.0f || m_params.minP > 0.0f ||
                         m_params.typicalP < 1.0f;
    if (m_params.temperature <= 0.0f) {
        result.token = std::min_element(m_candidates.begin(), m_candidates.end(), better)->id;
        if (!m_params.logprobs && m_params.topLogprobs <= 0) return result;
    } else if (!filters) {
        // Temperature alone: one pass over the candidates in id order, no sort (the same
        // distribution as the filtered path, a different walk of it).
        float maxLogit = -std::numeric_limits<float>::infinity();
        for (const Candidate& c : m_candidates) maxLogit = std::max(maxLogit, c.logit);
        const double invT = 1.0 / double(m_params.temperature);
        m_weights.resize(m_candidates.size());
        double sum = 0.0;
        for (size_t i = 0; i < m_candidates.size(); ++i)
            sum += (m_weights[i] = std::exp(double(m_candidates[i].logit - maxLogit) * invT));
        double u = m_rng.uniform() * sum;
        result.token = m_candidates.back().id;
        for (size_t i = 0; i < m_candidates.size(); ++i) {
            if (u < m_weights[i]) {
                result.token = m_candidates[i].id;
                break;
            }
            u -= m_weights[i];
        }
    } else {
        if (m_params.topK > 0 && m_candidates.size() > size_t(m_params.topK)) {
            std::partial_sort(m_candidates.begin(), m_candidates.begin() + m_params.topK,
                              m_candidates.end(), better);
            m_candidates.resize(size_t(m_params.topK));
        } else {
            std::sort(m_candidates.begin(), m_candidates.end(), better);
        }
        filter(m_candidates);
        // Temperature last, as llama.cpp does, over the surviving candidates.
        const float maxLogit = m_candidates.front().logit;
        double sum = 0.0;
        std::vector<double> weights(m_candidates.size());
        for (size_t i = 0; i < m_candidates.size(); ++i)
            sum += (weights[i] = std::exp(double(m_candidates[i].logit - maxLogit) /
                                          double(m_params.temperature)));
        double u = m_rng.uniform() * sum;
        result.token = m_candidates.back().id;
        for (size_t i = 0; i < m_candidates.size(); ++i) {
            if (u < weights[i]) {
                result.token = m_candidates[i].id;
                break;
            }
            u -= weights[i];
        }
    }
    if (m_params.logprobs || m_params.topLogprobs > 0) {
        result.logprob = logprobOf(logits, result.token);
        result.top = topLogprobs(logits, m_params.topLogprobs);
    }
    return result;
}

} // namespace sample
} // namespace hearth
