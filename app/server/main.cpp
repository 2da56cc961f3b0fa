// hearth-server: loads a GGUF model into the engine and serves it over the OpenAI-compatible
// HTTP API on localhost until SIGINT or SIGTERM.
#include "hearth/engine.h"
#include "hearth/projector.h"
#include "hearth/server.h"
#include "option_values.h"

#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <pthread.h>
#include <string>
#include <string_view>
#include <thread>

namespace {

const char* kHelp =
    "usage: hearth-server --model MODEL.gguf [options]\n"
    "       hearth-server --upstream URL [--upstream-key KEY] ... [options]\n"
    "\n"
    "Serves a GGUF model over HTTP: the OpenAI API (POST /v1/chat/completions, /v1/completions,\n"
    "/v1/responses, GET /v1/models), Anthropic's (POST /v1/messages, /v1/messages/count_tokens),\n"
    "Ollama's (/api/chat, /api/generate, /api/tags, /api/show, /api/ps, /api/version), and\n"
    "GET /health, GET /metrics, POST /tokenize, POST /detokenize. Structured output (JSON schema,\n"
    "GBNF grammars) and forced tool calls are enforced by a grammar at every token. The listener\n"
    "starts first; /health answers 503 until the model is loaded.\n"
    "\n"
    "  -m, --model FILE        the GGUF model to serve (required)\n"
    "  --model-id NAME         the id /v1/models reports (default: the file name without .gguf)\n"
    "  --host HOST             address to bind (default 127.0.0.1; 0.0.0.0 exposes the server to\n"
    "                          the network: set --api-key too)\n"
    "  --port PORT             port to listen on (default 8080; 0 picks a free one, printed)\n"
    "  --api-key KEY           require 'Authorization: Bearer KEY' or 'x-api-key: KEY'\n"
    "                          (default: the HEARTH_API_KEY environment variable, else none)\n"
    "  --cors-origin ORIGIN    allow browser requests from ORIGIN (repeatable; '*' allows any)\n"
    "  -c, --ctx N             context length per sequence (default: min(model, 4096))\n"
    "  --kv-memory BYTES       KV cache budget, e.g. 2G, 512M or a byte count (default: enough\n"
    "                          for --parallel full contexts, at most a quarter of free memory)\n"
    "  --kv-type TYPE          KV cache storage: f16 (default), q8_0 or f32\n"
    "  --state-memory BYTES    hybrid models (qwen35): memory for prefix-cache snapshots of the\n"
    "                          recurrent state (default: a quarter of the KV budget)\n"
    "  --no-mmap               read the model into memory at load instead of mapping the file\n"
    "  --device ID             cpu (default) or a GPU from 'hearth-cli devices' (vulkan:0, ...)\n"
    "  -ngl, --gpu-layers N    with --device: layers on the GPU, the rest on the CPU (default: all)\n"
    "  --cpu-moe               with --device: every layer's MoE expert weights stay in RAM and the\n"
    "                          experts run on the CPU (attention and the K/V cache on the GPU)\n"
    "  --n-cpu-moe N           the same for the first N layers only\n"
    "  -t, --threads N         compute threads (default: all cores)\n"
    "  -np, --parallel N       sequences decoded together (default 16)\n"
    "  --decode-stall F        while streams decode, a step with prompt tokens may take F times a\n"
    "                          decode-only step (default 2.5: steady inter-token latency; 0: no\n"
    "                          limit, the most throughput)\n"
    "  --spec LIST             speculative decoding: ngram (drafts from each request's own text),\n"
    "                          draft (a draft model), mtp (the model's multi-token-prediction head:\n"
    "                          qwen35 files with nextn layers), or none (default); e.g. ngram,mtp.\n"
    "                          A chat request's 'prediction' always drafts\n"
    "  --mmproj FILE           the model's vision projector (llama.cpp's --mmproj files): chat\n"
    "                          requests may send images; with --model only. Without it a\n"
    "                          projector beside the model (a *mmproj*.gguf that fits it) is used,\n"
    "                          for --models-dir too\n"
    "  --no-mmproj             do not look for projectors beside the models\n"
    "  -md, --draft-model FILE a draft model (a smaller GGUF of the same vocabulary) for\n"
    "                          --spec draft; it drafts where the n-grams and predictions have none\n"
    "  --spec-max N            drafts per step at most (default 8; it adapts below this)\n"
    "  --spec-min N            fewest drafts worth verifying (default 1)\n"
    "  --spec-fixed            draft --spec-max tokens whenever a drafter has them, measured\n"
    "                          gain or not (llama.cpp's behaviour; for comparisons)\n"
    "  --spec-p-min P          a draft or mtp model stops drafting below probability P\n"
    "                          (default 0: never; llama.cpp's --spec-draft-p-min)\n"
    "  --mtp-vocab N           the mtp head drafts from the first N token ids, the vocabulary's\n"
    "                          most frequent (default 32768; 0: all; the output is unchanged)\n"
    "  --spec-synth-len L      synthetic acceptance of mean length L, for benchmarks only: the\n"
    "                          output is then not the model's (llama-server's option)\n"
    "  --max-body BYTES        largest request body accepted (default 8M; larger is 413)\n"
    "  --max-tokens N          default max_tokens when a request sets none (default 4096)\n"
    "  --http-threads N        connections served at once (default 128)\n"
    "  --models-dir DIR        serve every .gguf in DIR (ids: file names without .gguf); a\n"
    "                          request naming a model loads it beside the loaded ones while\n"
    "                          they fit (--models-max, --models-memory), else in place of the\n"
    "                          least recently used idle one. --model, if given, is loaded first\n"
    "  --models-max N          with --models-dir: models loaded at once (default 3)\n"
    "  --models-memory BYTES   with --models-dir: memory loaded models may take together, e.g.\n"
    "                          12G (default: 80% of the memory available at start)\n"
    "  --data-dir DIR          serve the library of the app's data folder DIR (the folder the\n"
    "                          models/folder key of DIR/hearth.ini names, else DIR/models;\n"
    "                          created when missing), as --models-dir does; Ollama's /api/pull\n"
    "                          downloads into it as hearth-cli pull does (from $HEARTH_HUB_URL,\n"
    "                          else the app's hub setting, else huggingface.co)\n"
    "  --no-library-changes    with --models-dir: refuse Ollama's /api/delete, /api/copy and\n"
    "                          /api/pull (501); by default they change the folder\n"
    "  --ttl SECONDS           with --models-dir: unload a model idle this long (default 0:\n"
    "                          only when room is needed); an Ollama request's keep_alive\n"
    "                          sets it for its model (0: unload once idle, -1: never)\n"
    "  --upstream URL          also serve the models of an OpenAI-compatible server, e.g.\n"
    "                          http://gpu-box:8000/v1 (repeatable): /v1/models lists them beside\n"
    "                          the local ones (owned_by: the upstream's host) and requests naming\n"
    "                          them on /v1/chat/completions, /v1/completions, /v1/responses and\n"
    "                          /v1/embeddings are forwarded (streams included; unreachable: 502,\n"
    "                          timed out: 504). A local model with the same id wins. Without\n"
    "                          --model/--models-dir the server only forwards\n"
    "  --upstream-key KEY      the API key sent (as Bearer) to the --upstream given before it;\n"
    "                          clients' own keys to this server are never forwarded\n"
    "  --upstream-timeout S    seconds an upstream may stay silent before a 504 (default 600)\n"
    "  --no-request-log        do not print a line per request (method, path, status, time)\n"
    "  -h, --help              show this help\n"
    "\n"
    "Stops cleanly on SIGINT (Ctrl-C) or SIGTERM.\n";

using hearth::options::parseByteSize;
using hearth::options::parseReal;
using hearth::options::parseWhole;

// The models folder of a data folder shared with the app and hearth-cli: the [models] folder=
// key of DIR/hearth.ini (as QSettings writes it), else DIR/models.
std::string modelsFolderOfDataDir(const std::string& dataDir) {
    const std::filesystem::path dir(dataDir);
    std::ifstream ini(dir / "hearth.ini");
    std::string line, section, folder;
    auto trim = [](std::string t) {
        const size_t b = t.find_first_not_of(" \t\r");
        const size_t e = t.find_last_not_of(" \t\r");
        return b == std::string::npos ? std::string() : t.substr(b, e - b + 1);
    };
    while (std::getline(ini, line)) {
        line = trim(line);
        if (line.size() >= 2 && line.front() == '[' && line.back() == ']') {
            section = line.substr(1, line.size() - 2);
        } else if (section == "models" && line.rfind("folder", 0) == 0) {
            const size_t eq = line.find('=');
            if (eq == std::string::npos || trim(line.substr(6, eq - 6)) != "") continue;
            folder = trim(line.substr(eq + 1));
            if (folder.size() >= 2 && folder.front() == '"' && folder.back() == '"')
                folder = folder.substr(1, folder.size() - 2);
        }
    }
    if (folder.empty()) return (dir / "models").string();
    const std::filesystem::path p(folder);
    return (p.is_absolute() ? p : dir / p).lexically_normal().string();
}

struct Stop {
    std::mutex mu;
    std::condition_variable cv;
    int signal = 0;
};

} // namespace

int main(int argc, char** argv) {
    using hearth::server::ServerConfig;
    hearth::EngineConfig ec;
    ServerConfig sc;
    std::string modelId, modelsDir;
    bool findProjectors = true;
    int ttl = 0;
    int modelsMax = 3;
    std::string dataDir; // --data-dir: the library pulls go into
    bool libraryChanges = true;
    uint64_t modelsMemory = 0;
    bool requestLog = true;
    if (const char* key = std::getenv("HEARTH_API_KEY")) sc.apiKey = key;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&](std::string_view& out) {
            if (i + 1 >= argc) return false;
            out = argv[++i];
            return true;
        };
        std::string_view v;
        bool ok = true;
        if (a == "-h" || a == "--help") {
            std::fputs(kHelp, stdout);
            return 0;
        } else if (a == "-m" || a == "--model") {
            ok = value(v);
            ec.modelPath = std::string(v);
        } else if (a == "--model-id") {
            ok = value(v) && !v.empty();
            modelId = std::string(v);
        } else if (a == "--host") {
            ok = value(v) && !v.empty();
            sc.host = std::string(v);
        } else if (a == "--port") {
            ok = value(v) && parseWhole(v, sc.port) && sc.port >= 0 && sc.port <= 65535;
        } else if (a == "--api-key") {
            ok = value(v);
            sc.apiKey = std::string(v);
        } else if (a == "--cors-origin") {
            ok = value(v) && !v.empty();
            sc.corsOrigins.emplace_back(v);
        } else if (a == "-c" || a == "--ctx") {
            ok = value(v) && parseWhole(v, ec.contextLength) && ec.contextLength >= 0;
        } else if (a == "--kv-memory") {
            ok = value(v) && parseByteSize(v, ec.kvMemoryBytes);
        } else if (a == "--decode-stall") {
            ok = value(v);
            if (ok) {
                const std::string text(v);
                char* end = nullptr;
                const float f = std::strtof(text.c_str(), &end);
                ok = end && *end == '\0' && !text.empty() && f >= 0.0f && f <= 1000.0f;
                if (ok) ec.decodeStallFactor = f;
            }
        } else if (a == "--spec") {
            ok = value(v);
            if (ok) {
                if (hearth::Status st = hearth::parseSpecTypes(v, ec.speculation); !st.isOk()) {
                    std::fprintf(stderr, "hearth-server: %s\n", st.message().c_str());
                    return 2;
                }
            }
        } else if (a == "-md" || a == "--draft-model") {
            ok = value(v) && !v.empty();
            ec.speculation.draftModel = std::string(v);
        } else if (a == "--mmproj") {
            ok = value(v) && !v.empty();
            ec.projectorPath = std::string(v);
        } else if (a == "--no-mmproj") {
            findProjectors = false;
        } else if (a == "--spec-max") {
            ok = value(v) && parseWhole(v, ec.speculation.maxDraft);
        } else if (a == "--spec-fixed") {
            ec.speculation.adaptive = false;
        } else if (a == "--spec-p-min" || a == "--spec-draft-p-min" || a == "--draft-p-min") {
            ok = value(v) && parseReal(v, ec.speculation.pMin);
        } else if (a == "--mtp-vocab") {
            ok = value(v) && parseWhole(v, ec.speculation.mtpVocab);
        } else if (a == "--spec-min") {
            ok = value(v) && parseWhole(v, ec.speculation.minDraft);
        } else if (a == "--spec-synth-len") {
            ok = value(v) && parseReal(v, ec.speculation.synthLength);
        } else if (a == "--state-memory") {
            ok = value(v) && parseByteSize(v, ec.stateMemoryBytes);
        } else if (a == "--kv-type") {
            ok = value(v);
            if (ok) {
                auto t = hearth::kvTypeFromName(v);
                ok = t.isOk();
                if (ok) ec.kvType = *t;
            }
        } else if (a == "-t" || a == "--threads") {
            ok = value(v) && parseWhole(v, ec.threads) && ec.threads >= 0;
        } else if (a == "-np" || a == "--parallel") {
            ok = value(v) && parseWhole(v, ec.maxNumSeqs) && ec.maxNumSeqs >= 1;
        } else if (a == "--max-body") {
            uint64_t b = 0;
            ok = value(v) && parseByteSize(v, b);
            sc.maxBodyBytes = size_t(b);
        } else if (a == "--max-tokens") {
            ok = value(v) && parseWhole(v, sc.defaultMaxTokens) && sc.defaultMaxTokens >= 1;
        } else if (a == "--models-dir") {
            ok = value(v) && !v.empty();
            modelsDir = std::string(v);
        } else if (a == "--data-dir") {
            ok = value(v) && !v.empty();
            if (ok) {
                dataDir = std::string(v);
                modelsDir = modelsFolderOfDataDir(dataDir);
                std::error_code mkdirError;
                std::filesystem::create_directories(modelsDir, mkdirError);
            }
        } else if (a == "--models-max") {
            ok = value(v) && parseWhole(v, modelsMax) && modelsMax >= 1;
        } else if (a == "--models-memory") {
            ok = value(v) && parseByteSize(v, modelsMemory) && modelsMemory > 0;
        } else if (a == "--no-library-changes") {
            libraryChanges = false;
        } else if (a == "--ttl") {
            ok = value(v) && parseWhole(v, ttl) && ttl >= 0;
        } else if (a == "--no-mmap") {
            ec.useMmap = false;
        } else if (a == "--device") {
            ok = value(v) && !v.empty();
            ec.device = std::string(v);
        } else if (a == "-ngl" || a == "--gpu-layers") {
            ok = value(v) && parseWhole(v, ec.gpuLayers) && ec.gpuLayers >= -1;
        } else if (a == "--cpu-moe") {
            ec.cpuMoeLayers = -1;
        } else if (a == "--n-cpu-moe") {
            ok = value(v) && parseWhole(v, ec.cpuMoeLayers) && ec.cpuMoeLayers >= 0;
        } else if (a == "--no-request-log") {
            requestLog = false;
        } else if (a == "--upstream") {
            ok = value(v) && !v.empty();
            sc.upstreams.push_back({std::string(v), {}});
        } else if (a == "--upstream-key") {
            ok = value(v);
            if (ok && sc.upstreams.empty()) {
                std::fputs("hearth-server: --upstream-key applies to the --upstream before it; "
                           "give --upstream URL first\n", stderr);
                return 2;
            }
            if (ok) sc.upstreams.back().apiKey = std::string(v);
        } else if (a == "--upstream-timeout") {
            ok = value(v) && parseWhole(v, sc.upstreamTimeoutSeconds) && sc.upstreamTimeoutSeconds >= 1;
        } else if (a == "--http-threads") {
            ok = value(v) && parseWhole(v, sc.maxConnections) && sc.maxConnections >= 1;
        } else {
            std::fprintf(stderr, "hearth-server: unknown argument '%s' (see --help)\n", argv[i]);
            return 2;
        }
        if (!ok) {
            std::fprintf(stderr, "hearth-server: bad or missing value for '%.*s' (see --help)\n",
                         int(a.size()), a.data());
            return 2;
        }
    }
    if (hearth::Status st = ec.speculation.validate(); !st.isOk()) {
        std::fprintf(stderr, "hearth-server: %s\n", st.message().c_str());
        return 2;
    }
    if (!ec.projectorPath.empty() && (ec.modelPath.empty() || !modelsDir.empty())) {
        std::fputs("hearth-server: --mmproj is the projector of the --model file; give --model without "
                   "--models-dir (which finds each model's projector beside it)\n",
                   stderr);
        return 2;
    }
    if (!ec.projectorPath.empty() && !findProjectors) {
        std::fputs("hearth-server: --mmproj and --no-mmproj contradict each other\n", stderr);
        return 2;
    }
    if (ec.modelPath.empty() && modelsDir.empty() && sc.upstreams.empty()) {
        std::fputs("hearth-server: --model, --models-dir, --data-dir or --upstream is required\n\n", stderr);
        std::fputs(kHelp, stderr);
        return 2;
    }
    if (modelId.empty() && !ec.modelPath.empty())
        modelId = std::filesystem::path(ec.modelPath).stem().string();

    // Signals go to one waiting thread; every other thread (the server's too) blocks them.
    // SIGUSR1 is how main tells that thread to end.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    Stop stop;
    std::thread signalThread([&] {
        int sig = 0;
        while (sigwait(&signals, &sig) == 0 && sig != SIGUSR1) {
            std::lock_guard<std::mutex> lock(stop.mu);
            if (stop.signal != 0) std::_Exit(128 + sig); // a second signal: leave now
            stop.signal = sig;
            stop.cv.notify_all();
        }
    });
    auto endSignalThread = [&] {
        pthread_kill(signalThread.native_handle(), SIGUSR1);
        signalThread.join();
    };

    sc.log = [](const std::string& line) {
        std::fprintf(stderr, "hearth-server: %s\n", line.c_str());
        std::fflush(stderr);
    };
    if (requestLog)
        sc.requestLog = [](const hearth::server::RequestRecord& r) {
            std::fprintf(stderr, "hearth-server: %s\n", hearth::server::formatRequestRecord(r).c_str());
            std::fflush(stderr);
        };
    hearth::server::Server server(sc);
    if (hearth::Status s = server.start(); !s.isOk()) {
        std::fprintf(stderr, "hearth-server: %s\n", s.toString().c_str());
        endSignalThread();
        return 1;
    }
    // The listener is up (/health answers 503); now load the model.
    std::shared_ptr<hearth::Engine> shared;
    if (ec.modelPath.empty() && modelsDir.empty()) {
        std::fprintf(stderr, "hearth-server: no local model; forwarding to %zu upstream%s\n",
                     sc.upstreams.size(), sc.upstreams.size() == 1 ? "" : "s");
    } else if (!modelsDir.empty()) {
        hearth::server::ModelDirectoryConfig dc;
        dc.dir = modelsDir;
        dc.engine = ec;
        dc.ttlSeconds = ttl;
        dc.maxLoaded = modelsMax;
        dc.allowChanges = libraryChanges;
        if (!dataDir.empty()) {
            // Pulls run hearth-cli beside this program, which has the hub and download code.
            std::error_code exeError;
            const auto exe = std::filesystem::read_symlink("/proc/self/exe", exeError);
            const auto cli = exe.parent_path() / "hearth-cli";
            if (!exeError && std::filesystem::exists(cli))
                dc.puller = hearth::server::commandPuller({cli.string(), "pull", "--data-dir", dataDir});
            else
                std::fprintf(stderr, "hearth-server: no hearth-cli beside this program: /api/pull is off\n");
        }
        dc.memoryBudgetBytes = modelsMemory;
        dc.findProjectors = findProjectors;
        dc.log = sc.log;
        if (!ec.modelPath.empty())
            dc.defaultModel = std::filesystem::path(ec.modelPath).stem().string();
        auto provider = hearth::server::makeDirectoryModelProvider(dc);
        if (!dc.defaultModel.empty()) {
            std::string id;
            auto first = provider->acquire(dc.defaultModel, id);
            if (!first) {
                std::fprintf(stderr, "hearth-server: %s\n", first.status().toString().c_str());
                server.stop();
                endSignalThread();
                return 1;
            }
        }
        server.setModelProvider(provider);
        std::fprintf(stderr, "hearth-server: serving the models in %s\n", modelsDir.c_str());
    } else {
        if (findProjectors && ec.projectorPath.empty()) {
            auto projector = hearth::findProjectorFor(ec.modelPath);
            if (projector && !projector->empty()) {
                ec.projectorPath = *projector;
                std::fprintf(stderr, "hearth-server: vision projector %s (found beside the model)\n",
                             ec.projectorPath.c_str());
            }
        }
        std::fprintf(stderr, "hearth-server: loading %s\n", ec.modelPath.c_str());
        auto engine = hearth::Engine::create(ec);
        if (!engine) {
            std::fprintf(stderr, "hearth-server: %s: %s\n", ec.modelPath.c_str(),
                         engine.status().toString().c_str());
            server.stop();
            endSignalThread();
            return 1;
        }
        shared = std::move(*engine);
        const hearth::ModelSummary& m = shared->model();
        for (const std::string& note : m.deviceNotes) std::fprintf(stderr, "hearth-server: %s\n", note.c_str());
        server.setEngine(shared, modelId);
        std::fprintf(stderr,
                     "hearth-server: model '%s' ready (%s, %d layers, context %d, kv %s %.1f MiB)\n",
                     modelId.c_str(), m.architecture.c_str(), m.nLayer, m.contextLength,
                     m.kvType.c_str(), double(m.kvBytes) / (1024.0 * 1024.0));
    }
    std::fflush(stderr);

    int sig = 0;
    {
        std::unique_lock<std::mutex> lock(stop.mu);
        stop.cv.wait(lock, [&] { return stop.signal != 0; });
        sig = stop.signal;
    }
    std::fprintf(stderr, "hearth-server: %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    server.stop();
    shared.reset();
    endSignalThread();
    return 0;
}
