// The engine API used by the CLI, the server and the desktop app: load a model, submit generation
// requests from any thread, and receive their tokens through a sink called on the engine thread.
// One engine thread owns the model, the KV cache and the scheduler; nothing else touches them.
#pragma once

#include "hearth/sampling.h"
#include "hearth/status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hearth {

struct EngineConfig {
    std::string modelPath;
    int32_t contextLength = 0;      // per sequence; 0: min(model's training context, 4096)
    uint64_t kvMemoryBytes = 256ull << 20; // KV cache budget (fp32 on the reference path)
    int32_t blockSize = 16;         // tokens per KV block
    int32_t maxNumSeqs = 16;        // sequences per step
    int32_t maxBatchedTokens = 512; // tokens per step (long prompts are chunked)
    int32_t maxWaiting = 256;       // queued requests beyond which submit() answers Busy
    bool prefixCaching = true;
};

enum class FinishReason { Stop, Length, Cancelled, Error };
const char* finishReasonName(FinishReason r); // "stop", "length", "cancelled", "error"

struct TokenInfo {
    int32_t id = -1;
    float logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> topLogprobs;
    std::vector<float> logits; // the raw row that chose this token, when the request asked
};

struct Usage {
    int32_t promptTokens = 0;
    int32_t cachedPromptTokens = 0; // prompt tokens reused from the prefix cache
    int32_t completionTokens = 0;
    double queueMs = 0.0;           // submit to first scheduling
    double timeToFirstTokenMs = 0.0;
    double generationMs = 0.0;      // first token to finish
};

// Receives one request's output. Called on the engine thread: return quickly, never block.
class TokenSink {
public:
    virtual ~TokenSink() = default;
    virtual void onToken(const TokenInfo& token) = 0;
    virtual void onFinish(FinishReason reason, const Usage& usage) = 0;
    virtual void onError(const Status& error) = 0; // the request ends without onFinish
};

struct GenerationRequest {
    std::vector<int32_t> prompt;
    SamplingParams sampling;
    int32_t maxTokens = 256;
    std::vector<int32_t> stopTokens; // default: the model's end-of-generation tokens
    bool ignoreEos = false;
    bool returnLogits = false; // copy each step's logits row into TokenInfo (for tests, dumps)
    std::shared_ptr<TokenSink> sink;
};

struct ModelSummary {
    std::string architecture;
    std::string name;
    int32_t nVocab = 0;
    int32_t nLayer = 0;
    int32_t contextLength = 0;
    std::vector<int32_t> eogTokens;
    int32_t bosToken = -1;
};

struct EngineStats {
    int32_t running = 0;
    int32_t waiting = 0;
    int32_t kvBlocksUsed = 0;
    int32_t kvBlocksTotal = 0;
    uint64_t prefillTokensComputed = 0;
    uint64_t prefixQueryTokens = 0;
    uint64_t prefixHitTokens = 0;
    uint64_t steps = 0;
};

using RequestId = uint64_t;

class Engine {
public:
    // Loads the model and starts the engine thread.
    static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);
    virtual ~Engine() = default;

    // Queues a request; its sink gets the tokens. Errors: bad parameters (InvalidArgument),
    // prompt + max tokens beyond the context (OutOfRange), queue full (Busy).
    virtual Result<RequestId> submit(GenerationRequest request) = 0;
    // Stops a request; its blocks are freed within one step and its sink gets Cancelled.
    virtual void cancel(RequestId id) = 0;

    virtual const ModelSummary& model() const = 0;
    virtual EngineStats stats() const = 0;
};

} // namespace hearth
