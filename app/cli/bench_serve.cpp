// bench-serve's workload: synthetic prompts, requests kept C in flight, per-token timestamps, and
// the statistics (percentiles, aggregate and sequential throughput, prefill work, KV use).
#include "bench_serve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

namespace hearth::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t k = size_t(std::max(0.0, std::ceil(p * double(v.size())) - 1.0));
    return v[std::min(k, v.size() - 1)];
}

// Shared by every request of a phase: wakes the driver when anything finishes.
struct Phase {
    std::mutex mu;
    std::condition_variable cv;
    int finished = 0;
    int streaming = 0; // requests that produced their first token
    Status error;
};

class TimingSink : public TokenSink {
public:
    explicit TimingSink(Phase& phase) : m_phase(phase) {}
    void onToken(const TokenInfo& t) override {
        if (t.id < 0) return;
        const auto now = Clock::now();
        std::lock_guard<std::mutex> lock(m_phase.mu);
        if (times.empty()) ++m_phase.streaming;
        times.push_back(now);
        m_phase.cv.notify_all();
    }
    void onFinish(FinishReason, const Usage& u) override {
        std::lock_guard<std::mutex> lock(m_phase.mu);
        usage = u;
        ++m_phase.finished;
        m_phase.cv.notify_all();
    }
    void onError(const Status& s) override {
        std::lock_guard<std::mutex> lock(m_phase.mu);
        m_phase.error = s;
        ++m_phase.finished;
        m_phase.cv.notify_all();
    }
    Clock::time_point submitted;
    std::vector<Clock::time_point> times;
    Usage usage;

private:
    Phase& m_phase;
};

struct PhaseResult {
    double wallMs = 0.0;
    int generated = 0;
    std::vector<double> ttft, tpot, itl;
    uint64_t prefill = 0;
    double longTtftMs = 0.0;
    int kvBlocksPeak = 0;
    int64_t kvTokensPeak = 0;
    double kvWastePerSeqMax = 0.0;
};

std::vector<int32_t> randomTokens(std::mt19937_64& rng, int n, int32_t nVocab) {
    const int32_t lo = std::min<int32_t>(300, nVocab / 2);
    std::uniform_int_distribution<int32_t> dist(lo, nVocab - 1);
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (int32_t& t : v) t = dist(rng);
    return v;
}

void waitIdle(Engine& e) {
    for (int i = 0; i < 2000; ++i) {
        const EngineStats s = e.stats();
        if (s.running == 0 && s.waiting == 0) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// Runs `prompts` keeping `c` in flight; optionally admits one long prompt once all are streaming.
Result<PhaseResult> runPhase(Engine& e, const std::vector<std::vector<int32_t>>& prompts, int c,
                             int genLen, const std::vector<int32_t>& longPrompt) {
    waitIdle(e);
    Phase phase;
    PhaseResult r;
    const uint64_t prefill0 = e.stats().prefillTokensComputed;
    std::vector<std::shared_ptr<TimingSink>> sinks;
    std::shared_ptr<TimingSink> longSink;
    auto submit = [&](const std::vector<int32_t>& prompt, int maxTokens) -> Result<std::shared_ptr<TimingSink>> {
        auto sink = std::make_shared<TimingSink>(phase);
        GenerationRequest req;
        req.prompt = prompt;
        req.sampling.temperature = 0.0f;
        req.maxTokens = maxTokens;
        req.ignoreEos = true;
        req.sink = sink;
        sink->submitted = Clock::now();
        HEARTH_ASSIGN_OR_RETURN(RequestId id, e.submit(std::move(req)));
        (void)id;
        return sink;
    };
    std::atomic<bool> sampling{true};
    std::thread sampler([&] {
        while (sampling.load()) {
            const EngineStats s = e.stats();
            r.kvBlocksPeak = std::max(r.kvBlocksPeak, s.kvBlocksUsed);
            r.kvTokensPeak = std::max(r.kvTokensPeak, s.kvTokensHeld);
            if (s.running > 0)
                r.kvWastePerSeqMax = std::max(r.kvWastePerSeqMax,
                    double(int64_t(s.kvBlocksUsed) * e.model().kvBlockSize - s.kvTokensHeld) / s.running);
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    });
    const auto t0 = Clock::now();
    size_t next = 0;
    Status failure;
    {
        std::unique_lock<std::mutex> lock(phase.mu);
        while (true) {
            while (next < prompts.size() && int(next) - phase.finished < c) {
                lock.unlock();
                auto s = submit(prompts[next], genLen);
                lock.lock();
                if (!s) {
                    failure = s.status();
                    break;
                }
                sinks.push_back(*s);
                ++next;
            }
            if (!failure.isOk()) break;
            if (!longPrompt.empty() && !longSink && phase.streaming >= std::min<int>(c, int(prompts.size()))) {
                lock.unlock();
                auto s = submit(longPrompt, 1);
                lock.lock();
                if (!s) {
                    failure = s.status();
                    break;
                }
                longSink = *s;
            }
            const int expected = int(prompts.size()) + (longSink ? 1 : 0);
            if (phase.finished >= expected && next >= prompts.size() && (longPrompt.empty() || longSink)) break;
            phase.cv.wait(lock);
        }
        if (failure.isOk() && !phase.error.isOk()) failure = phase.error;
    }
    const auto t1 = Clock::now();
    sampling = false;
    sampler.join();
    if (!failure.isOk()) return failure;
    waitIdle(e);
    r.wallMs = ms(t0, t1);
    r.prefill = e.stats().prefillTokensComputed - prefill0;
    for (const auto& s : sinks) {
        r.generated += int(s->times.size());
        if (s->times.empty()) continue;
        r.ttft.push_back(ms(s->submitted, s->times.front()));
        if (s->times.size() > 1) r.tpot.push_back(ms(s->times.front(), s->times.back()) / double(s->times.size() - 1));
        for (size_t i = 1; i < s->times.size(); ++i) r.itl.push_back(ms(s->times[i - 1], s->times[i]));
    }
    if (longSink && !longSink->times.empty()) r.longTtftMs = ms(longSink->submitted, longSink->times.front());
    return r;
}

} // namespace

Result<nlohmann::ordered_json> runOne(Engine& e, const BenchOptions& o, int c, uint64_t& seed) {
    const int32_t nVocab = e.model().nVocab;
    const int R = o.requests > 0 ? o.requests : c;
    std::mt19937_64 rng(seed++ * 0x9E3779B97F4A7C15ull);
    const int32_t bos = e.model().bosToken;
    auto makePrompts = [&](bool sharedPrefix, const std::vector<int32_t>& prefix) {
        std::vector<std::vector<int32_t>> prompts;
        for (int i = 0; i < R; ++i) {
            std::vector<int32_t> p;
            if (bos >= 0) p.push_back(bos);
            const std::vector<int32_t> pre = sharedPrefix ? prefix : randomTokens(rng, o.sharedPrefix, nVocab);
            p.insert(p.end(), pre.begin(), pre.end());
            const auto own = randomTokens(rng, o.promptLen, nVocab);
            p.insert(p.end(), own.begin(), own.end());
            prompts.push_back(std::move(p));
        }
        return prompts;
    };
    const std::vector<int32_t> prefix = randomTokens(rng, o.sharedPrefix, nVocab);
    std::vector<int32_t> longPrompt;
    if (o.longPrompt > 0) longPrompt = randomTokens(rng, o.longPrompt, nVocab);

    HEARTH_ASSIGN_OR_RETURN(PhaseResult conc, runPhase(e, makePrompts(true, prefix), c, o.genLen, longPrompt));
    nlohmann::ordered_json run;
    run["concurrency"] = c;
    run["requests"] = R;
    run["generated_tokens"] = conc.generated;
    run["wall_ms"] = conc.wallMs;
    run["aggregate_tok_s"] = conc.wallMs > 0 ? 1000.0 * conc.generated / conc.wallMs : 0.0;
    run["ttft_ms_p50"] = percentile(conc.ttft, 0.5);
    run["ttft_ms_p99"] = percentile(conc.ttft, 0.99);
    run["tpot_ms_p50"] = percentile(conc.tpot, 0.5);
    run["itl_ms_p50"] = percentile(conc.itl, 0.5);
    run["itl_ms_p99"] = percentile(conc.itl, 0.99);
    run["step_ms_p50"] = percentile(conc.itl, 0.5);
    run["prefill_tokens_computed"] = conc.prefill;
    run["prompt_tokens_total"] = int64_t(R) * (o.sharedPrefix + o.promptLen + (bos >= 0 ? 1 : 0));
    if (o.longPrompt > 0) run["long_prompt_ttft_ms"] = conc.longTtftMs;
    run["kv_blocks_used_peak"] = conc.kvBlocksPeak;
    run["kv_tokens_held_peak"] = conc.kvTokensPeak;
    run["kv_waste_tokens_per_seq_max"] = conc.kvWastePerSeqMax;
    if (o.sharedPrefix > 0) {
        HEARTH_ASSIGN_OR_RETURN(PhaseResult distinct, runPhase(e, makePrompts(false, prefix), c, o.genLen, {}));
        run["distinct_prefix_ttft_ms_p50"] = percentile(distinct.ttft, 0.5);
        run["distinct_prefix_prefill_tokens_computed"] = distinct.prefill;
        run["distinct_prefix_aggregate_tok_s"] =
            distinct.wallMs > 0 ? 1000.0 * distinct.generated / distinct.wallMs : 0.0;
    }
    if (o.sequential) {
        HEARTH_ASSIGN_OR_RETURN(PhaseResult seq, runPhase(e, makePrompts(true, prefix), 1, o.genLen, {}));
        const double seqTokS = seq.wallMs > 0 ? 1000.0 * seq.generated / seq.wallMs : 0.0;
        run["sequential_tok_s"] = seqTokS;
        run["sequential_ttft_ms_p50"] = percentile(seq.ttft, 0.5);
        run["speedup_vs_sequential"] = seqTokS > 0 ? run["aggregate_tok_s"].get<double>() / seqTokS : 0.0;
    }
    return run;
}

nlohmann::ordered_json kvCapacity(const Engine& e, int seqLen) {
    const ModelSummary& m = e.model();
    const EngineStats s = e.stats();
    const int bs = std::max(1, m.kvBlockSize);
    const double bytesPerToken = s.kvBlocksTotal > 0 ? double(m.kvBytes) / (double(s.kvBlocksTotal) * bs) : 0.0;
    const int blocksPerSeq = (seqLen + bs - 1) / bs;
    nlohmann::ordered_json kv;
    kv["type"] = m.kvType;
    kv["bytes"] = m.kvBytes;
    kv["block_size"] = bs;
    kv["blocks"] = s.kvBlocksTotal;
    kv["bytes_per_token"] = bytesPerToken;
    kv["context_length"] = m.contextLength;
    kv["seq_len"] = seqLen;
    kv["paged_seqs_that_fit"] = s.kvBlocksTotal / blocksPerSeq;
    kv["contiguous_max_context_seqs_that_fit"] =
        bytesPerToken > 0 ? int64_t(double(m.kvBytes) / (bytesPerToken * m.contextLength)) : 0;
    return kv;
}

void printTableHeader(const nlohmann::ordered_json& r) {
    const auto& kv = r["kv"];
    std::printf("model %s (%s), %d threads, prompt %d + shared prefix %d, generate %d\n",
                r["model"].get<std::string>().c_str(), r["architecture"].get<std::string>().c_str(),
                r["threads"].get<int>(), r["prompt_len"].get<int>(), r["shared_prefix"].get<int>(),
                r["gen_len"].get<int>());
    std::printf("KV cache %s, %.1f MiB in %d blocks of %d: %d sequences of %d tokens fit paged, %lld "
                "with contiguous %d-token allocation\n",
                kv["type"].get<std::string>().c_str(), kv["bytes"].get<double>() / 1048576.0,
                kv["blocks"].get<int>(), kv["block_size"].get<int>(), kv["paged_seqs_that_fit"].get<int>(),
                kv["seq_len"].get<int>(), (long long)kv["contiguous_max_context_seqs_that_fit"].get<int64_t>(),
                kv["context_length"].get<int>());
    std::printf("%5s %9s %9s %7s %10s %10s %9s %9s %9s %9s\n", "conc", "agg_tok/s", "seq_tok/s", "ratio",
                "ttft_p50", "ttft_p99", "tpot_p50", "itl_p99", "prefill", "kv_waste");
}

void printTableRow(const nlohmann::ordered_json& run) {
    auto num = [&](const char* k) { return run.contains(k) ? run[k].get<double>() : 0.0; };
    std::printf("%5d %9.1f %9.1f %6.2fx %8.0fms %8.0fms %7.1fms %7.1fms %9llu %9.1f\n",
                run["concurrency"].get<int>(), num("aggregate_tok_s"), num("sequential_tok_s"),
                num("speedup_vs_sequential"), num("ttft_ms_p50"), num("ttft_ms_p99"), num("tpot_ms_p50"),
                num("itl_ms_p99"), (unsigned long long)run["prefill_tokens_computed"].get<uint64_t>(),
                num("kv_waste_tokens_per_seq_max"));
    if (run.contains("distinct_prefix_ttft_ms_p50"))
        std::printf("      shared prefix: ttft p50 %.0f ms vs %.0f ms with distinct prefixes (%.0f%%); prefill "
                    "%llu vs %llu tokens\n",
                    num("ttft_ms_p50"), num("distinct_prefix_ttft_ms_p50"),
                    100.0 * num("ttft_ms_p50") / std::max(1e-9, num("distinct_prefix_ttft_ms_p50")),
                    (unsigned long long)run["prefill_tokens_computed"].get<uint64_t>(),
                    (unsigned long long)run["distinct_prefix_prefill_tokens_computed"].get<uint64_t>());
    if (run.contains("long_prompt_ttft_ms"))
        std::printf("      long prompt admitted mid-run: its ttft %.0f ms; streams' itl p99 %.1f ms = %.2fx "
                    "their median step %.1f ms\n",
                    num("long_prompt_ttft_ms"), num("itl_ms_p99"),
                    num("itl_ms_p99") / std::max(1e-9, num("step_ms_p50")), num("step_ms_p50"));
    std::fflush(stdout);
}

} // namespace hearth::cli
