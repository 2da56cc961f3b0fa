// `hearth-cli bench-serve`: serving benchmark of the engine in-process — C requests at once
// against the same requests one after another, time to first token, time per output token,
// inter-token latency, prefill work saved by the prefix cache, and KV memory use.
#include "bench_serve.h"
#include "commands.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

namespace hearth::cli {

namespace {

const char* kHelp =
    "usage: hearth-cli bench-serve MODEL.gguf [options]\n"
    "  --concurrency LIST    requests in flight at once, e.g. 1,4,16,32 (default 1,4,16)\n"
    "  --prompt-len P        prompt tokens of each request (default 128)\n"
    "  --gen-len G           tokens generated per request (default 64)\n"
    "  --shared-prefix S     the same S tokens open every prompt, before its own P (default 0);\n"
    "                        each run is then repeated with distinct prefixes for comparison\n"
    "  --long-prompt L       once every stream is generating, admit one extra L-token prompt\n"
    "                        (chunked prefill: watch itl_ms_p99 against step_ms_p50)\n"
    "  --requests R          requests per run (default: the concurrency)\n"
    "  --no-sequential       skip the one-at-a-time baseline\n"
    "  --threads N --ctx N --kv-memory SIZE --kv-type T --max-batched-tokens N\n"
    "  --no-prefix-cache     turn prefix caching off\n"
    "  --device ID           cpu (default) or a GPU from 'hearth-cli devices' (vulkan:0, ...)\n"
    "  -ngl, --gpu-layers N  with --device: layers on the GPU, the rest on the CPU (default: all)\n"
    "  --cpu-moe             with --device: every layer's MoE expert weights stay in RAM and the\n"
    "                        experts run on the CPU (attention and the K/V cache on the GPU)\n"
    "  --n-cpu-moe N         the same for the first N layers only\n"
    "  --decode-stall F      a step with prompt tokens may take F times a decode-only step while\n"
    "                        streams decode (default 2.5; 0: only --max-batched-tokens limits)\n"
    "  --json                print one JSON object (runs list) instead of a table\n";

bool parseList(std::string_view s, std::vector<int>& out) {
    out.clear();
    while (!s.empty()) {
        const size_t comma = s.find(',');
        const std::string_view item = s.substr(0, comma);
        int v = 0;
        auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (ec != std::errc() || p != item.data() + item.size() || v < 1 || v > 4096) return false;
        out.push_back(v);
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
    }
    return !out.empty();
}

} // namespace

int runBenchServe(Args args) {
    BenchOptions o;
    std::string modelPath;
    bool json = false;
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
        } else if (a == "--concurrency") ok = value() && parseList(v, o.concurrency);
        else if (a == "--prompt-len") ok = value() && parseInt(v, o.promptLen, 1, 1 << 20);
        else if (a == "--gen-len") ok = value() && parseInt(v, o.genLen, 1, 1 << 20);
        else if (a == "--shared-prefix") ok = value() && parseInt(v, o.sharedPrefix, 0, 1 << 20);
        else if (a == "--long-prompt") ok = value() && parseInt(v, o.longPrompt, 0, 1 << 20);
        else if (a == "--requests") ok = value() && parseInt(v, o.requests, 1, 1 << 16);
        else if (a == "--no-sequential") o.sequential = false;
        else if (a == "--json") json = true;
        else if (a == "--threads" || a == "-t") ok = value() && parseInt(v, config.threads, 0, 1024);
        else if (a == "--ctx") ok = value() && parseInt(v, config.contextLength, 16, 1 << 20);
        else if (a == "--kv-memory") ok = value() && parseByteSize(v, config.kvMemoryBytes);
        else if (a == "--max-batched-tokens") ok = value() && parseInt(v, config.maxBatchedTokens, 1, 1 << 16);
        else if (a == "--no-prefix-cache") config.prefixCaching = false;
        else if (a == "--device") {
            ok = value() && !v.empty();
            config.device = std::string(v);
        } else if (a == "-ngl" || a == "--gpu-layers") ok = value() && parseInt(v, config.gpuLayers, -1, 1 << 16);
        else if (a == "--cpu-moe") config.cpuMoeLayers = -1;
        else if (a == "--n-cpu-moe") ok = value() && parseInt(v, config.cpuMoeLayers, 0, 1 << 16);
        else if (a == "--decode-stall") {
            ok = value();
            if (ok) {
                const std::string text(v);
                char* end = nullptr;
                const float f = std::strtof(text.c_str(), &end);
                ok = end && *end == '\0' && !text.empty() && f >= 0.0f && f <= 1000.0f;
                if (ok) config.decodeStallFactor = f;
            }
        }
        else if (a == "--kv-type") {
            ok = value();
            if (ok) {
                auto t = kvTypeFromName(v);
                ok = t.isOk();
                if (ok) config.kvType = *t;
            }
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "hearth-cli bench-serve: unknown option '%.*s' (see --help)\n", int(a.size()), a.data());
            return 2;
        } else if (modelPath.empty()) {
            modelPath = std::string(a);
        } else ok = false;
        if (!ok) {
            std::fprintf(stderr, "hearth-cli bench-serve: bad or missing value for '%.*s'\n", int(a.size()), a.data());
            return 2;
        }
    }
    if (modelPath.empty()) {
        std::fputs(kHelp, stderr);
        return 2;
    }
    const int maxConc = *std::max_element(o.concurrency.begin(), o.concurrency.end());
    config.modelPath = modelPath;
    config.maxNumSeqs = std::max(maxConc, 1) + (o.longPrompt > 0 ? 1 : 0);
    config.maxWaiting = std::max(256, 2 * o.requests);
    // BOS + prefix + prompt + generated must fit; otherwise the model's default context is used.
    const int needed = 1 + o.sharedPrefix + o.promptLen + o.genLen;
    if (config.contextLength == 0 && std::max(needed, o.longPrompt + 2) > 4096)
        config.contextLength = std::max(needed, o.longPrompt + 2);
    auto engine = Engine::create(config);
    if (!engine) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", modelPath.c_str(), engine.status().toString().c_str());
        return 2;
    }
    Engine& e = **engine;
    for (const std::string& note : e.model().deviceNotes) std::fprintf(stderr, "hearth-cli: %s\n", note.c_str());
    if (needed > e.model().contextLength || o.longPrompt + 2 > e.model().contextLength) {
        std::fprintf(stderr, "hearth-cli bench-serve: prompts do not fit the context of %d\n", e.model().contextLength);
        return 2;
    }

    nlohmann::ordered_json report;
    report["model"] = modelPath;
    report["architecture"] = e.model().architecture;
    report["device"] = e.model().device;
    report["gpu_layers"] = e.model().gpuLayers;
    report["cpu_moe_layers"] = e.model().cpuMoeLayers;
    report["threads"] = config.threads > 0 ? config.threads : int(std::thread::hardware_concurrency());
    report["prompt_len"] = o.promptLen;
    report["gen_len"] = o.genLen;
    report["shared_prefix"] = o.sharedPrefix;
    report["long_prompt"] = o.longPrompt;
    report["kv"] = kvCapacity(e, 512);
    report["runs"] = nlohmann::ordered_json::array();
    if (!json) printTableHeader(report);
    uint64_t seed = 1;
    for (int c : o.concurrency) {
        Result<nlohmann::ordered_json> run = runOne(e, o, c, seed);
        if (!run) {
            std::fprintf(stderr, "hearth-cli bench-serve: %s\n", run.status().toString().c_str());
            return 1;
        }
        if (!json) printTableRow(*run);
        report["runs"].push_back(std::move(*run));
    }
    if (json) std::printf("%s\n", report.dump(2).c_str());
    return 0;
}

} // namespace hearth::cli
