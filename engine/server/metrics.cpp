// Prometheus metrics: counters and histograms kept by the server, engine gauges at scrape time.
#include "server/metrics.h"

#include <cstdarg>
#include <cstdio>

namespace hearth::server {

namespace {

void line(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void line(std::string& out, const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) out.append(buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
    out += '\n';
}

// Paths are ours (routes) or "other"; escape anyway so a label can never break the format.
std::string labelValue(const std::string& s) {
    std::string r;
    for (char c : s) {
        if (c == '"' || c == '\\') r += '\\';
        if (c == '\n') {
            r += "\\n";
            continue;
        }
        r += c;
    }
    return r;
}

} // namespace

void Histogram::observe(double seconds) {
    for (size_t i = 0; i < kBucketsSeconds.size(); ++i)
        if (seconds <= kBucketsSeconds[i]) ++m_counts[i];
    ++m_count;
    m_sum += seconds;
}

void Histogram::render(std::string& out, const char* name, const char* help) const {
    line(out, "# HELP %s %s", name, help);
    line(out, "# TYPE %s histogram", name);
    for (size_t i = 0; i < kBucketsSeconds.size(); ++i)
        line(out, "%s_bucket{le=\"%g\"} %llu", name, kBucketsSeconds[i],
             static_cast<unsigned long long>(m_counts[i]));
    line(out, "%s_bucket{le=\"+Inf\"} %llu", name, static_cast<unsigned long long>(m_count));
    line(out, "%s_sum %.6f", name, m_sum);
    line(out, "%s_count %llu", name, static_cast<unsigned long long>(m_count));
}

void Metrics::countRequest(const std::string& path, int status) {
    std::lock_guard<std::mutex> lock(m_mu);
    ++m_requests[{path, status}];
}

void Metrics::observeGeneration(const Usage& usage) {
    std::lock_guard<std::mutex> lock(m_mu);
    ++m_generations;
    m_promptTokens += uint64_t(usage.promptTokens > 0 ? usage.promptTokens : 0);
    m_cachedPromptTokens += uint64_t(usage.cachedPromptTokens > 0 ? usage.cachedPromptTokens : 0);
    m_generatedTokens += uint64_t(usage.completionTokens > 0 ? usage.completionTokens : 0);
    m_queue.observe(usage.queueMs / 1000.0);
    if (usage.completionTokens > 0) m_ttft.observe(usage.timeToFirstTokenMs / 1000.0);
    if (usage.completionTokens > 1)
        m_tpot.observe(usage.generationMs / 1000.0 / double(usage.completionTokens - 1));
}

std::string Metrics::render(const EngineStats* stats, bool modelLoaded) const {
    std::string out;
    std::lock_guard<std::mutex> lock(m_mu);
    line(out, "# HELP hearth_http_requests_total HTTP requests answered, by path and status code.");
    line(out, "# TYPE hearth_http_requests_total counter");
    for (const auto& [key, count] : m_requests)
        line(out, "hearth_http_requests_total{path=\"%s\",code=\"%d\"} %llu",
             labelValue(key.first).c_str(), key.second, static_cast<unsigned long long>(count));
    auto counter = [&](const char* name, const char* help, uint64_t v) {
        line(out, "# HELP %s %s", name, help);
        line(out, "# TYPE %s counter", name);
        line(out, "%s %llu", name, static_cast<unsigned long long>(v));
    };
    auto gauge = [&](const char* name, const char* help, double v) {
        line(out, "# HELP %s %s", name, help);
        line(out, "# TYPE %s gauge", name);
        line(out, "%s %g", name, v);
    };
    counter("hearth_generations_total", "Generation requests that finished.", m_generations);
    counter("hearth_prompt_tokens_total", "Prompt tokens of finished generations.", m_promptTokens);
    counter("hearth_prompt_cached_tokens_total", "Prompt tokens served from the prefix cache.",
            m_cachedPromptTokens);
    counter("hearth_generated_tokens_total", "Tokens generated.", m_generatedTokens);
    m_ttft.render(out, "hearth_time_to_first_token_seconds", "Time from submit to first token.");
    m_tpot.render(out, "hearth_time_per_output_token_seconds",
                  "Mean time between generated tokens, per request.");
    m_queue.render(out, "hearth_queue_time_seconds", "Time from submit to first scheduling.");
    gauge("hearth_model_loaded", "1 when a model is loaded and serving.", modelLoaded ? 1 : 0);
    if (stats) {
        gauge("hearth_requests_running", "Sequences being generated.", stats->running);
        gauge("hearth_requests_waiting", "Requests queued for the engine.", stats->waiting);
        gauge("hearth_kv_blocks_used", "KV cache blocks in use.", stats->kvBlocksUsed);
        gauge("hearth_kv_blocks_total", "KV cache blocks in all.", stats->kvBlocksTotal);
        gauge("hearth_kv_cache_usage_ratio", "Fraction of KV blocks in use.",
              stats->kvBlocksTotal > 0 ? double(stats->kvBlocksUsed) / stats->kvBlocksTotal : 0.0);
        counter("hearth_prefill_tokens_computed_total", "Prompt tokens run through the model.",
                stats->prefillTokensComputed);
        counter("hearth_spec_draft_tokens_total", "Speculative decoding: tokens drafted and verified.",
                stats->draftTokens);
        counter("hearth_spec_accepted_tokens_total", "Speculative decoding: drafted tokens accepted.",
                stats->acceptedDraftTokens);
        counter("hearth_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
                stats->prefixQueryTokens);
        counter("hearth_prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
                stats->prefixHitTokens);
        gauge("hearth_prefix_cache_hit_rate", "Prefix cache hits per prompt token looked up.",
              stats->prefixQueryTokens > 0
                  ? double(stats->prefixHitTokens) / double(stats->prefixQueryTokens)
                  : 0.0);
        counter("hearth_engine_steps_total", "Scheduler steps run.", stats->steps);
        counter("hearth_images_encoded_total", "Images encoded by the vision projector.", stats->imagesEncoded);
        line(out, "# HELP hearth_image_encode_seconds_total Time spent encoding images.");
        line(out, "# TYPE hearth_image_encode_seconds_total counter");
        line(out, "hearth_image_encode_seconds_total %g", stats->imageEncodeSeconds);
    }
    return out;
}

} // namespace hearth::server
