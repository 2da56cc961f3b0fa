// `hearth-cli bench`: llama-bench style throughput of one model — prompt processing (pp: a
// P-token prompt computed in one step) and text generation (tg: N tokens decoded one at a
// time from an empty context), each repeated, reported as medians (and every sample in --json).
#include "commands.h"

#include "hearth/engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <sys/resource.h>
#include <thread>

namespace hearth::cli {

namespace {

const char* kHelp =
    "usage: hearth-cli bench MODEL.gguf [-p 512] [-n 128] [--threads N] [--reps R] [--json]\n"
    "  -p N          prompt tokens processed in one batch (pp); 0 skips it (default 512)\n"
    "  -n N          tokens generated one by one (tg); 0 skips it (default 128)\n"
    "  --threads N   compute threads (default: all cores)\n"
    "  --reps R      repetitions; medians are reported (default 3)\n"
    "  --kv-type T   f16 (default), q8_0, f32\n"
    "  --device ID   cpu (default) or a GPU from 'hearth-cli devices' (vulkan:0, ...)\n"
    "  -ngl, --gpu-layers N   with --device: layers on the GPU, the rest on the CPU (default: all)\n"
    "  --cpu-moe     with --device: every layer's MoE expert weights stay in RAM, the experts\n"
    "                run on the CPU (attention and the K/V cache on the GPU)\n"
    "  --n-cpu-moe N the same for the first N layers only\n"
    "  --spec LIST   speculative decoding (ngram, draft, mtp): tg also runs with it, alternating with plain\n"
    "                decoding (A B A B), and the ratio is printed\n"
    "  --draft-model FILE          the draft model (--spec draft)\n"
    "  --spec-fixed                draft spec-max tokens whenever a drafter has them (no adaptation)\n"
    "  --spec-max N --spec-min N   drafts per step at most / fewest worth verifying\n"
    "  --spec-p-min P              a draft or mtp model stops drafting below probability P (default 0)\n"
    "  --mtp-vocab N               the mtp head drafts from the first N token ids (default 32768; 0: all)\n"
    "  --spec-synth-len L          synthetic acceptance of mean length L (llama-server's option)\n"
    "  --predict-self              tg with a prediction: the plain run's own output (OpenAI's\n"
    "                              predicted outputs at full acceptance)\n"
    "  --json        one JSON object: pp_tok_s, tg_tok_s (medians) and the samples\n";

using Clock = std::chrono::steady_clock;

class WaitSink : public TokenSink {
public:
    void onToken(const TokenInfo& t) override {
        if (t.id < 0) return;
        std::lock_guard<std::mutex> lock(m_mu);
        last = Clock::now();
        ++count;
        ids.push_back(t.id);
    }
    void onFinish(FinishReason, const Usage& u) override {
        usage = u;
        done();
    }
    void onError(const Status& s) override {
        std::lock_guard<std::mutex> lock(m_mu);
        error = s;
        m_done = true;
        m_cv.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> lock(m_mu);
        m_cv.wait(lock, [&] { return m_done; });
    }
    Clock::time_point last;
    int count = 0;
    std::vector<int32_t> ids;
    Usage usage;
    Status error;

private:
    void done() {
        std::lock_guard<std::mutex> lock(m_mu);
        m_done = true;
        m_cv.notify_all();
    }
    std::mutex m_mu;
    std::condition_variable m_cv;
    bool m_done = false;
};

struct Timed {
    double seconds = 0.0; // submission to the last token
    std::vector<int32_t> ids;
    Usage usage;
};

// One greedy request: speculation per `specMaxDraft` (0: off), drafting from `prediction`.
Result<Timed> timeRequest(Engine& e, std::vector<int32_t> prompt, int maxTokens, int specMaxDraft = 0,
                          std::vector<int32_t> prediction = {}) {
    auto sink = std::make_shared<WaitSink>();
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = 0.0f;
    r.maxTokens = maxTokens;
    r.ignoreEos = true;
    r.specMaxDraft = specMaxDraft;
    r.prediction = std::move(prediction);
    r.sink = sink;
    const auto t0 = Clock::now();
    HEARTH_ASSIGN_OR_RETURN(RequestId id, e.submit(std::move(r)));
    (void)id;
    sink->wait();
    if (!sink->error.isOk()) return sink->error;
    return Timed{std::chrono::duration<double>(sink->last - t0).count(), std::move(sink->ids), sink->usage};
}

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

} // namespace

int runBench(Args args) {
    std::string modelPath;
    int pp = 512, tg = 128, reps = 3;
    bool json = false, spec = false, predictSelf = false;
    EngineConfig config;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        std::string_view v;
        auto value = [&] {
            if (i + 1 >= args.size()) return false;
            v = args[++i];
            return true;
        };
        bool ok = true;
        if (a == "-h" || a == "--help") {
            std::fputs(kHelp, stdout);
            return 0;
        } else if (a == "-p") ok = value() && parseInt(v, pp, 0, 1 << 16);
        else if (a == "-n") ok = value() && parseInt(v, tg, 0, 1 << 16);
        else if (a == "--reps" || a == "-r") ok = value() && parseInt(v, reps, 1, 1000);
        else if (a == "--threads" || a == "-t") ok = value() && parseInt(v, config.threads, 0, 1024);
        else if (a == "--json") json = true;
        else if (a == "--device") {
            ok = value() && !v.empty();
            config.device = std::string(v);
        } else if (a == "-ngl" || a == "--gpu-layers") ok = value() && parseInt(v, config.gpuLayers, -1, 1 << 16);
        else if (a == "--cpu-moe") config.cpuMoeLayers = -1;
        else if (a == "--n-cpu-moe") ok = value() && parseInt(v, config.cpuMoeLayers, 0, 1 << 16);
        else if (a == "--kv-type") {
            ok = value();
            if (ok) {
                auto t = kvTypeFromName(v);
                ok = t.isOk();
                if (ok) config.kvType = *t;
            }
        } else if (a == "--spec") {
            ok = value();
            if (ok) {
                if (Status st = parseSpecTypes(v, config.speculation); !st.isOk()) {
                    std::fprintf(stderr, "hearth-cli bench: %s\n", st.message().c_str());
                    return 2;
                }
                spec = spec || config.speculation.ngram || config.speculation.draft || config.speculation.mtp;
            }
        } else if (a == "--draft-model" || a == "-md") {
            ok = value() && !v.empty();
            config.speculation.draftModel = std::string(v);
            spec = true;
        } else if (a == "--spec-fixed") config.speculation.adaptive = false;
        else if (a == "--spec-max") ok = value() && parseInt(v, config.speculation.maxDraft, 1, 64);
        else if (a == "--spec-min") ok = value() && parseInt(v, config.speculation.minDraft, 0, 64);
        else if (a == "--spec-p-min" || a == "--draft-p-min") ok = value() && parseReal(v, config.speculation.pMin);
        else if (a == "--mtp-vocab") ok = value() && parseInt(v, config.speculation.mtpVocab, 0, 1 << 24);
        else if (a == "--spec-synth-len") {
            ok = value() && parseReal(v, config.speculation.synthLength);
            spec = spec || ok;
        } else if (a == "--predict-self") {
            predictSelf = spec = true;
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "hearth-cli bench: unknown option '%.*s' (see --help)\n", int(a.size()), a.data());
            return 2;
        } else if (modelPath.empty()) modelPath = std::string(a);
        else ok = false;
        if (!ok) {
            std::fprintf(stderr, "hearth-cli bench: bad or missing value for '%.*s'\n", int(a.size()), a.data());
            return 2;
        }
    }
    if (modelPath.empty()) {
        std::fputs(kHelp, stderr);
        return 2;
    }
    config.modelPath = modelPath;
    config.maxNumSeqs = 1;
    config.maxBatchedTokens = std::max(pp, 256); // the whole prompt in one step, like llama-bench
    config.contextLength = std::max(pp + 1, tg + 1) + 16;
    config.prefixCaching = false;              // every repetition computes its prompt
    auto engine = Engine::create(config);
    if (!engine) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", modelPath.c_str(), engine.status().toString().c_str());
        return 2;
    }
    Engine& e = **engine;
    for (const std::string& note : e.model().deviceNotes) std::fprintf(stderr, "hearth-cli: %s\n", note.c_str());
    std::mt19937_64 rng(42);
    const int32_t nVocab = e.model().nVocab;
    std::uniform_int_distribution<int32_t> dist(std::min<int32_t>(300, nVocab / 2), nVocab - 1);
    if (spec && !e.model().speculationUnavailable.empty()) {
        std::fprintf(stderr, "hearth-cli bench: %s\n", e.model().speculationUnavailable.c_str());
        return 2;
    }
    std::vector<double> ppSamples, tgSamples, specSamples;
    int64_t drafted = 0, accepted = 0;
    bool sameTokens = true;
    // One warm-up of each, then the repetitions; with speculation, plain and speculative tg
    // alternate (A B A B) from the same first token.
    for (int rep = -1; rep < reps; ++rep) {
        if (pp > 0) {
            std::vector<int32_t> prompt(static_cast<size_t>(pp));
            for (int32_t& t : prompt) t = dist(rng);
            auto s = timeRequest(e, prompt, 1);
            if (!s) {
                std::fprintf(stderr, "hearth-cli bench: %s\n", s.status().toString().c_str());
                return 1;
            }
            if (rep >= 0) ppSamples.push_back(pp / s->seconds);
        }
        if (tg > 0) {
            const int32_t first = e.model().bosToken >= 0 ? e.model().bosToken : dist(rng);
            auto s = timeRequest(e, {first}, tg);
            if (!s) {
                std::fprintf(stderr, "hearth-cli bench: %s\n", s.status().toString().c_str());
                return 1;
            }
            if (rep >= 0) tgSamples.push_back(tg / s->seconds);
            if (spec) {
                auto t = timeRequest(e, {first}, tg, -1, predictSelf ? s->ids : std::vector<int32_t>{});
                if (!t) {
                    std::fprintf(stderr, "hearth-cli bench: %s\n", t.status().toString().c_str());
                    return 1;
                }
                if (rep >= 0) {
                    specSamples.push_back(tg / t->seconds);
                    drafted += t->usage.draftTokens;
                    accepted += t->usage.acceptedDraftTokens;
                }
                sameTokens = sameTokens && (config.speculation.synthLength > 0 || t->ids == s->ids);
            }
        }
    }
    const int threads = config.threads > 0 ? config.threads : int(std::thread::hardware_concurrency());
    if (json) {
        nlohmann::ordered_json j;
        j["model"] = modelPath;
        j["device"] = e.model().device;
        j["gpu_layers"] = e.model().gpuLayers;
        j["cpu_moe_layers"] = e.model().cpuMoeLayers;
        j["threads"] = threads;
        j["pp"] = pp;
        j["tg"] = tg;
        j["reps"] = reps;
        j["pp_tok_s"] = median(ppSamples);
        j["tg_tok_s"] = median(tgSamples);
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        j["max_rss_kib"] = ru.ru_maxrss;
        j["pp_samples"] = ppSamples;
        j["tg_samples"] = tgSamples;
        if (spec) {
            j["tg_spec_tok_s"] = median(specSamples);
            j["tg_spec_samples"] = specSamples;
            j["draft_tokens"] = drafted;
            j["accepted_draft_tokens"] = accepted;
            j["same_tokens"] = sameTokens;
        }
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("model %s, %d threads, %d reps (medians)", modelPath.c_str(), threads, reps);
        if (e.model().gpuLayers > 0)
            std::printf(", %d of %d layers on %s", e.model().gpuLayers, e.model().nLayer, e.model().device.c_str());
        if (e.model().cpuMoeLayers > 0) std::printf(" (experts of %d in RAM)", e.model().cpuMoeLayers);
        std::printf("\n");
        if (pp > 0) std::printf("pp%-5d %10.1f tok/s\n", pp, median(ppSamples));
        if (tg > 0) std::printf("tg%-5d %10.1f tok/s\n", tg, median(tgSamples));
        if (tg > 0 && spec) {
            const double plain = median(tgSamples), sp = median(specSamples);
            std::printf("tg%-5d %10.1f tok/s with speculation (%.2fx plain; %lld of %lld drafts accepted%s)\n", tg, sp,
                        plain > 0 ? sp / plain : 0.0, (long long)accepted, (long long)drafted,
                        config.speculation.synthLength > 0 ? ", synthetic"
                        : sameTokens                        ? ", same tokens"
                                                            : ", TOKENS DIFFER");
        }
    }
    return 0;
}

} // namespace hearth::cli
