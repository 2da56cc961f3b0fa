// The OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions, /v1/models,
// /health, /metrics, /tokenize and /detokenize on localhost, driving a hearth::Engine.
//
// Private by default: it binds 127.0.0.1, refuses Host headers that do not name this machine
// when bound to loopback (DNS rebinding), sends CORS headers only for configured origins, and
// checks an API key (Authorization: Bearer or x-api-key) when one is set. Client mistakes are
// 4xx with OpenAI's error shape, never a 500.
#pragma once

#include "hearth/engine.h"
#include "hearth/status.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hearth::server {

// One finished HTTP request, for the request log.
struct RequestRecord {
    std::string method;
    std::string path;
    std::string remote;     // the client's address
    int status = 0;
    double milliseconds = 0.0; // from routing to the last byte written (a stream's whole life)
    size_t requestBytes = 0;
    size_t responseBytes = 0;  // body bytes of a non-streamed response (0 for a stream)
    bool streamed = false;
    std::string upstream;      // the upstream that served a forwarded request ("" : this server)
};

// "POST /v1/chat/completions 200 1532.4 ms stream 127.0.0.1"
std::string formatRequestRecord(const RequestRecord& record);

// An OpenAI-compatible server this one forwards to (hearth-server --upstream): its models are
// listed beside the local ones and requests naming them are relayed with `apiKey` as Bearer.
struct UpstreamServer {
    std::string url;    // as OpenAI clients take it, e.g. "http://gpu-box:8000/v1"
    std::string apiKey; // empty: none sent
};

struct ServerConfig {
    std::string host = "127.0.0.1";
    int port = 8080;                      // 0: pick a free port (see Server::port())
    std::string apiKey;                   // empty: no key needed
    std::vector<std::string> corsOrigins; // allowed browser origins; "*" allows any
    size_t maxBodyBytes = size_t(8) << 20;
    size_t maxMessages = 1024;
    int32_t maxTokensCap = 1 << 20;       // max_tokens above this is refused (400)
    int32_t defaultMaxTokens = 4096;      // when a request sets none (never beyond the context)
    int readTimeoutSeconds = 60;
    int writeTimeoutSeconds = 60;
    int maxConnections = 128;             // worker threads: connections served at once
    int retryAfterSeconds = 1;            // Retry-After of a 429 when the engine's queue is full
    // Where warnings and the startup line go; default: stderr.
    std::function<void(const std::string&)> log;
    // Called once per finished request, on the thread that served it; null: no request log.
    std::function<void(const RequestRecord&)> requestLog;
    // Upstreams (gateway). A local model and an upstream one with the same id: the local wins.
    std::vector<UpstreamServer> upstreams;
    int upstreamConnectTimeoutSeconds = 5; // connecting longer than this: 502
    int upstreamTimeoutSeconds = 600;      // an upstream silent this long: 504
    int upstreamRefreshSeconds = 60;       // how often the upstreams' model lists are fetched
};

// A model the server can serve, as /v1/models lists it.
struct ModelEntry {
    std::string id;
    bool loaded = false;
    bool vision = false;  // loaded with a vision projector: its prompts may hold images
    bool loading = false; // being loaded now
    uint64_t fileBytes = 0; // its files' bytes (every part of a split model); 0 when not known
    // Loaded: the memory it holds as the provider counts it against its budget (its files'
    // bytes, K/V cache and recurrent state); 0 when not known.
    uint64_t memoryBytes = 0;
    int activeRequests = 0; // loaded: requests holding it now
    // Loaded and idle with a keep-alive: when it will be unloaded if no request comes (Ollama's
    // /api/ps expires_at); nullopt: not scheduled (in use, or kept until evicted).
    std::optional<std::chrono::system_clock::time_point> expiresAt;
};

// One step of pulling a model from the hub, as Ollama's /api/pull streams it.
struct PullProgress {
    std::string status;     // "pulling manifest", "pulling FILE", "verifying sha256 digest", "success", ...
    std::string digest;     // "sha256:..." of the file being downloaded, when the hub publishes one
    uint64_t total = 0;     // bytes of that file (0: not a download step)
    uint64_t completed = 0; // of which on disk
};
// Pulls the hub model `name` ("owner/repo:QUANT") into a library; `progress` is told each step
// and returns false to stop (the client went away: Cancelled, the partial file kept for a
// resume). InvalidArgument for a name that is no repository, NotFound for a missing repository
// or quantization, IoError when the hub or the disk fails.
using ModelPuller =
    std::function<Status(const std::string& name, const std::function<bool(const PullProgress&)>& progress)>;
// A puller that runs `argv` with the name and "--json" appended (hearth-cli pull --data-dir DIR)
// and reads its progress lines.
ModelPuller commandPuller(std::vector<std::string> argv);

// A loaded model and its engine (for /api/ps and /metrics).
struct LoadedModel {
    ModelEntry entry;
    std::shared_ptr<Engine> engine;
};

// Maps the `model` of a request to an engine. The server's default provider serves the one
// engine given to Server::setEngine(); hearth-server's --models-dir uses a router over a folder.
class ModelProvider {
public:
    virtual ~ModelProvider() = default;
    virtual std::vector<ModelEntry> list() = 0;
    // The engine for `model` (empty: the default model), loading it when needed, and the id
    // to report. The model counts as in use while the returned pointer (or a copy) lives.
    // NotFound when no such model exists; OutOfMemory when it cannot fit the memory budget;
    // Busy when room does not come free in time; Internal when its load fails.
    virtual Result<std::shared_ptr<Engine>> acquire(const std::string& model,
                                                    std::string& resolvedId) = 0;
    // The id a request's `model` names, without loading anything; "" when it names none.
    virtual std::string resolve(const std::string& model) {
        for (const ModelEntry& m : list())
            if (m.id == model) return m.id;
        return {};
    }
    // Whether requests can be served now (/health).
    virtual bool ready() const = 0;
    // The engine loaded now (the most recently used one), without loading or counting as a use
    // (for /metrics).
    virtual std::shared_ptr<Engine> loaded() const { return nullptr; }
    // Every loaded model, most recently used first.
    virtual std::vector<LoadedModel> loadedModels() {
        std::vector<LoadedModel> out;
        std::shared_ptr<Engine> engine = loaded();
        if (!engine) return out;
        for (ModelEntry& m : list())
            if (m.loaded) {
                out.push_back({std::move(m), engine});
                break;
            }
        return out;
    }
    // Ollama's keep_alive for the model `id` (as acquire resolved it): once no request holds it,
    // unload it after `seconds` idle (0: at once; < 0: never). Each acquire resets it to the
    // provider's default, so the latest request decides.
    virtual void setKeepAlive(const std::string& /*id*/, double /*seconds*/) {}
    // Unloads `id` as soon as no request holds it, without loading it; false when it is not loaded.
    virtual bool unload(const std::string& /*id*/) { return false; }
    // The server is stopping: requests waiting for room to load a model give up (Busy).
    virtual void stopWaiting() {}
    // A model loaded by someone else (the app's chat model) served as `id`: always loaded, the
    // default for requests naming no model, never unloaded here nor counted against the limits.
    // Replaces the previous one; a null engine ends it.
    virtual void setPinned(const std::string& /*id*/, std::shared_ptr<Engine> /*engine*/) {}
    // Library changes (Ollama's /api/delete and /api/copy). Deleting removes the model's files
    // (every part) and unloads it once no request holds it; copying makes `to` a second name of
    // `from` (its files linked, else copied), refusing a name that exists or is not a plain file
    // name (InvalidArgument with the reason). Unsupported where the provider serves no folder
    // or its library is read-only.
    virtual Status removeModel(const std::string& /*id*/) {
        return Status(ErrorCode::Unsupported, "this server serves one model and has no library to change");
    }
    virtual Status copyModel(const std::string& /*from*/, const std::string& /*to*/) {
        return Status(ErrorCode::Unsupported, "this server serves one model and has no library to change");
    }
    // Ollama's /api/pull: Unsupported where no puller was given (canPull false).
    virtual bool canPull() const { return false; }
    virtual Status pullModel(const std::string& /*name*/, const std::function<bool(const PullProgress&)>& /*progress*/) {
        return Status(ErrorCode::Unsupported, "this server serves one model and does not pull models");
    }
};

// Serves every .gguf in a folder (ids: file names without .gguf, which a request may also add;
// a split model by its first part). A request naming a model that is not loaded loads it beside the others while they fit:
// at most maxLoaded models and memoryBudgetBytes together (estimated from the files and the
// K/V cache before loading, counted exactly once loaded). To make room the least recently used
// idle model is unloaded first; a model some request holds is never unloaded under it (the
// load waits up to waitSeconds for one to come free). Loads run one at a time, so concurrent
// first requests for one model load it once.
struct ModelDirectoryConfig {
    std::string dir;
    EngineConfig engine;       // modelPath is set per model
    int ttlSeconds = 0;        // unload a model idle this long; 0: keep it until room is needed
    int maxLoaded = 3;         // models loaded at once (>= 1)
    // Memory all loaded models may take together; 0: 80% of the memory available when the
    // provider is made (availableSystemMemory), or no limit when that is unknown.
    uint64_t memoryBudgetBytes = 0;
    int waitSeconds = 300;     // how long a load waits for a model in use to come free
    std::string defaultModel;  // for requests naming no model ("": the loaded one, else the first)
    // A model's vision projector lying beside it (findProjectorFor) loads with it. Projector
    // files are never listed as models.
    bool findProjectors = true;
    bool allowChanges = true;  // false: removeModel, copyModel and pullModel refuse (a read-only library)
    ModelPuller puller;        // pulls into `dir` (hearth-server --data-dir); empty: pulls are refused
    std::function<void(const std::string&)> log;
};
std::shared_ptr<ModelProvider> makeDirectoryModelProvider(ModelDirectoryConfig config);

class Server {
public:
    explicit Server(ServerConfig config);
    ~Server(); // stops
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Serve `engine` under `modelId`; until this is called /health answers 503 (loading).
    void setEngine(std::shared_ptr<Engine> engine, std::string modelId);
    // Serve through a provider instead (replaces any engine set before).
    void setModelProvider(std::shared_ptr<ModelProvider> provider);
    // The model could not be loaded: /health and generation endpoints answer 503 with this.
    void setLoadError(std::string message);

    // Binds and starts listening on a background thread. Errors: the address cannot be bound.
    Status start();
    // Stops listening, ends open streams (their requests are cancelled) and joins the thread.
    void stop();
    // The bound port (the chosen one when the config asked for 0); 0 before start().
    int port() const;
    bool running() const;

    class Impl;

private:
    std::unique_ptr<Impl> m_impl;
};

} // namespace hearth::server
