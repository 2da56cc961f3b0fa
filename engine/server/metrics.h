// Prometheus metrics for /metrics: requests by status code, tokens, time-to-first-token and
// time-per-output-token histograms, plus the engine's live gauges rendered at scrape time.
#pragma once

#include "hearth/engine.h"

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace hearth::server {

class Histogram {
public:
    static constexpr std::array<double, 14> kBucketsSeconds = {
        0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0};
    void observe(double seconds);
    void render(std::string& out, const char* name, const char* help) const;

private:
    std::array<uint64_t, kBucketsSeconds.size()> m_counts{};
    uint64_t m_count = 0;
    double m_sum = 0.0;
};

class Metrics {
public:
    void countRequest(const std::string& path, int status);
    // A generation that ended: its tokens and timings.
    void observeGeneration(const Usage& usage);
    // Everything in Prometheus text format; `stats` may be null when no model is loaded.
    std::string render(const EngineStats* stats, bool modelLoaded) const;

private:
    mutable std::mutex m_mu;
    std::map<std::pair<std::string, int>, uint64_t> m_requests;
    uint64_t m_promptTokens = 0;
    uint64_t m_cachedPromptTokens = 0;
    uint64_t m_generatedTokens = 0;
    uint64_t m_generations = 0;
    Histogram m_ttft;
    Histogram m_tpot;
    Histogram m_queue;
};

} // namespace hearth::server
