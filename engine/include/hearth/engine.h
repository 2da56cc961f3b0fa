// The engine API used by the CLI, the server and the desktop app: load a model, submit generation
// requests from any thread, and receive their tokens through a sink called on the engine thread.
// One engine thread owns the model, the KV cache and the scheduler; nothing else touches them.
#pragma once

#include "hearth/model_chat.h"
#include "hearth/quant.h"
#include "hearth/sampling.h"
#include "hearth/status.h"
#include "hearth/tokenizer.h"
#include "hearth/vision.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

namespace grammar {
class Grammar; // hearth/grammar.h
}

// How K and V are stored in the cache.
enum class KvType { F16, Q8_0, F32 };
const char* kvTypeName(KvType t);                       // "f16", "q8_0", "f32"
Result<KvType> kvTypeFromName(std::string_view name);   // the same names, any case
quant::Type kvElementType(KvType t);                     // the cache's element type (graph tensors, estimateMemory)

// One stage of a model load, for a progress bar.
struct LoadProgress {
    std::string stage;
    float fraction = 0.0f;
};

// Speculative decoding: cheap drafters propose how each sequence continues, and one batched
// step verifies the proposal; at temperature 0 the output is the same as without it, and at any
// temperature its distribution is (each token is still drawn by the request's sampler).
struct SpeculationConfig {
    bool ngram = false;       // draft from n-grams of each sequence's own prompt and output
    // A draft model: a smaller GGUF of the same vocabulary, run greedily on its own K/V cache
    // (on draftDevice, "" = the model's device); it drafts where the n-grams and a request's
    // prediction have nothing. Checked at load: another vocabulary is refused with the reason.
    std::string draftModel;
    std::string draftDevice;
    int32_t maxDraft = 8;     // tokens drafted per step at most (1..64); adapts below this
    int32_t minDraft = 1;     // fewer worth drafting than this: none
    bool draft = false;       // "--spec draft": a draft model is required
    // "--spec mtp": the model file's multi-token-prediction head drafts (qwen35 and qwen35moe
    // files with nextn layers; a file without one is refused at load). Not with a draft model.
    bool mtp = false;
    // The head drafts from the vocabulary's first mtpVocab token ids, its most frequent in
    // byte-pair and unigram vocabularies (0: all of them). Its output matrix is most of what a
    // drafted token reads; drafts only propose, so the output is the model's whatever this is.
    int32_t mtpVocab = 32768;
    // A draft or multi-token-prediction model stops drafting at a token whose probability under
    // it is below this (llama.cpp's --spec-draft-p-min; 0: never): where it is unsure, its next
    // drafts are seldom accepted and cost a step each. Not with synthetic acceptance.
    float pMin = 0.0f;
    // true: each sequence drafts only as far as its measured acceptance and the measured cost of
    // longer steps say it pays (and not at all where it does not); false: whatever the drafters
    // propose, up to maxDraft (llama.cpp's behaviour; for tests and comparisons).
    bool adaptive = true;
    // > 0: synthetic acceptance for benchmarks (llama-server's --spec-synth-len): every decoding
    // sequence drafts maxDraft tokens, each accepted at random so that the mean accepted length
    // (with the token after them) is this. The output is then not the model's.
    double synthLength = 0.0;
    Status validate() const;  // ranges; an error names the field
};

// Sets the drafters of `config` from a list such as "ngram,draft" (the --spec option): "ngram",
// "draft" (needs draftModel, checked by validate()), "mtp", "none". An unknown name is an error.
Status parseSpecTypes(std::string_view list, SpeculationConfig& config);

// Whether the GGUF file at draftPath can draft for the model at modelPath, from the two files'
// metadata only (no weights are read): the checks Engine::create makes of a draft model (the
// same tokenizer, vocabulary texts and BOS; not an embedding or hybrid model; contextLength > 0:
// positions for that many tokens). The error says what differs.
Status checkDraftModel(const std::string& modelPath, const std::string& draftPath, int32_t contextLength = 0);

// checkDraftModel for many candidates of one model: the model's file and tokenizer are read once.
class DraftChecker {
public:
    // Reads the model's metadata and tokenizer (errors name the model).
    static Result<DraftChecker> open(const std::string& modelPath);
    DraftChecker(DraftChecker&&) noexcept;
    DraftChecker& operator=(DraftChecker&&) noexcept;
    ~DraftChecker();
    // checkDraftModel(modelPath, draftPath, contextLength), the same answer.
    Status check(const std::string& draftPath, int32_t contextLength = 0) const;

private:
    DraftChecker();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// Whether the GGUF file at modelPath has a multi-token-prediction head Hearth can draft with
// (SpeculationConfig::mtp), from its metadata and tensor shapes only; the error says why not.
Status checkMtpHead(const std::string& modelPath);

struct EngineConfig {
    std::string modelPath;
    int32_t contextLength = 0;      // per sequence; 0: min(model's training context, 4096)
    // KV cache budget in bytes; 0: enough for maxNumSeqs full contexts, at most a quarter of
    // the memory available now (and never less than one full context).
    uint64_t kvMemoryBytes = 0;
    KvType kvType = KvType::F16;
    int32_t threads = 0;            // compute threads; 0: all cores
    bool referenceForward = false;  // run the slow scalar oracle instead of the optimized kernels
    int32_t blockSize = 16;         // tokens per KV block
    int32_t maxNumSeqs = 16;        // sequences per step
    int32_t maxBatchedTokens = 512; // tokens per step (long prompts are chunked)
    // While sequences decode, a step's prompt tokens are limited so the step takes at most this
    // many times a decode-only step (inter-token latency against throughput); 0: no limit.
    float decodeStallFactor = 2.5f;
    int32_t maxWaiting = 256;       // queued requests beyond which submit() answers Busy
    bool prefixCaching = true;
    // Hybrid models (recurrent layers): memory for prefix-cache snapshots of the recurrent state,
    // beyond the maxNumSeqs live states; 0: a quarter of the KV budget, at least 16 snapshots.
    uint64_t stateMemoryBytes = 0;
    int32_t stateSnapshotEvery = 32; // tokens between snapshots (rounded to whole blocks)
    bool useMmap = true;            // false: read the weights into memory at load (no page faults later)
    std::string device = "cpu";     // "cpu" or a GPU id from listDevices() ("vulkan:0")
    int32_t gpuLayers = -1;         // with a GPU: layers on it, the rest on the CPU (-1: all)
    // With a GPU: of its layers, the first cpuMoeLayers keep their mixture-of-experts weights in
    // RAM and run the experts on the CPU, while attention, the router, shared experts and the K/V
    // cache stay on the GPU (-1: every layer's; llama.cpp's --n-cpu-moe N, --cpu-moe). Dense
    // models ignore it.
    int32_t cpuMoeLayers = 0;
    SpeculationConfig speculation;
    // A vision projector for the model (llama.cpp's --mmproj file): images in prompts
    // (Engine::encodeImage); it must serve the model (checkProjectorFor). Empty: none.
    std::string projectorPath;
    // Told each stage of create() as it starts, on the calling thread ("Reading the model file",
    // "Preparing weights on vulkan:0", ...; fraction 0..1 of the whole load, rising).
    std::function<void(const LoadProgress&)> onLoadProgress;
};

enum class FinishReason { Stop, Length, Cancelled, Error };
const char* finishReasonName(FinishReason r); // "stop", "length", "cancelled", "error"

// One streamed piece of a request's output. `text` is whole UTF-8 characters: bytes of a
// character split across tokens wait for the rest, and text that might be the start of a stop
// string is held back until it cannot be (so `text` can be empty, or carry several tokens' text).
// At the end, held-back text comes out with id -1 (a text-only piece, not a token).
struct TokenInfo {
    int32_t choice = 0; // which of the request's n completions
    int32_t id = -1;
    std::string text;
    float logprob = 0.0f;
    std::vector<std::pair<int32_t, float>> topLogprobs;
    std::vector<float> logits; // the raw row that chose this token, when the request asked
};

struct Usage {
    int32_t promptTokens = 0;
    int32_t cachedPromptTokens = 0; // prompt tokens reused from the prefix cache
    int32_t completionTokens = 0;   // all choices together
    double queueMs = 0.0;           // submit to first scheduling
    double timeToFirstTokenMs = 0.0;
    double generationMs = 0.0;      // first token to finish
    // Speculative decoding, all choices together: tokens drafted and verified, and how many of
    // them were accepted; of those, the ones drafted from the request's prediction.
    int32_t draftTokens = 0;
    int32_t acceptedDraftTokens = 0;
    int32_t predictionDraftTokens = 0;
    int32_t acceptedPredictionTokens = 0;
};

// Receives one request's output. Called on the engine thread: return quickly, never block.
class TokenSink {
public:
    virtual ~TokenSink() = default;
    virtual void onToken(const TokenInfo& token) = 0;
    // One of the n completions ended (called for every choice, before onFinish). `stopString`:
    // the request's stop string that ended it (the text stops right before it), else empty.
    virtual void onChoiceFinish(int32_t /*choice*/, FinishReason /*reason*/, const std::string& /*stopString*/) {}
    // The whole request ended; `reason` is choice 0's.
    virtual void onFinish(FinishReason reason, const Usage& usage) = 0;
    virtual void onError(const Status& error) = 0; // the request ends without onFinish
    // The prompt read so far: `done` of its `total` tokens (those reused from the prefix cache
    // counted as read), after each step that read part of it and did not finish it. A prompt read
    // in one step says nothing; a request preempted and read again counts again from the start.
    virtual void onPromptProgress(int32_t /*done*/, int32_t /*total*/) {}
};

// An image in a prompt: its embeddings (VisionEncoder::encode) take the place of the prompt's
// tokens [at, at + embeddings->tokens), which hold the image's placeholder ids
// (imagePlaceholders: drawn from its content, so the prefix cache tells images apart).
struct PromptImage {
    int32_t at = 0;
    std::shared_ptr<const ImageEmbeddings> embeddings;
};

// The prompt ids standing for an image's tokens: one per embedding, from its content hash, each
// a token id of a vocabulary of nVocab (its row is never read: the embeddings replace it).
std::vector<int32_t> imagePlaceholders(const ImageEmbeddings& embeddings, int32_t nVocab);

// The marker of an image's place in prompt text (llama.cpp's mtmd uses the same).
inline constexpr std::string_view kImageMarker = "<__media__>";

// The ids of `text` with each image marker standing for the next of `images` (their `at` set
// here): the projector's begin text, the image's placeholder ids, its end text
// (ProjectorInfo::imageBegin / imageEnd); markers and images must agree in number. Each piece of
// text is tokenized on its own as llama.cpp's mtmd does (special tokens parsed; BOS first and EOS
// last when addSpecial and the vocabulary adds them). Without images it is
// tokenizer.encode(text, addSpecial, true).
Result<std::vector<int32_t>> encodeWithImages(const tokenizer::Tokenizer& tokenizer, std::string_view text,
                                              bool addSpecial, std::vector<PromptImage>& images,
                                              const ProjectorInfo& projector, int32_t nVocab);

struct GenerationRequest {
    std::vector<int32_t> prompt;
    // Images in the prompt, in order and apart (a model that takes images: ModelSummary::vision).
    std::vector<PromptImage> images;
    SamplingParams sampling;
    int32_t maxTokens = 256;        // per choice
    int32_t n = 1;                  // completions sampled from the one prompt (1..128); choice i
                                    // uses seed + i, and they share the prompt's KV blocks
    std::vector<int32_t> stopTokens; // default: the model's end-of-generation tokens
    std::vector<std::string> stopStrings; // generation ends before the first match (not output)
    bool ignoreEos = false;
    bool returnLogits = false; // copy each step's logits row into TokenInfo (for tests, dumps)
    // Constrained decoding: every choice's text is a sentence of this grammar (hearth/grammar.h).
    // A stop token is allowed only once the text is a sentence, and a choice ends by itself
    // (reason Stop) when nothing may extend it; a vocabulary that cannot continue the grammar
    // ends the choice with reason Error.
    std::shared_ptr<const grammar::Grammar> grammar;
    // Predicted output (OpenAI's `prediction`): tokens the answer is expected to largely repeat;
    // they are drafted from (speculative decoding), which never changes the answer, only its speed.
    std::vector<int32_t> prediction;
    // Per-request speculation: drafts per step at most (-1: the engine's; 0: none for this
    // request, the prediction's included) and the fewest worth verifying (-1: the engine's).
    int32_t specMaxDraft = -1;
    int32_t specMinDraft = -1;
    // The draft models' confidence to go on drafting (SpeculationConfig::pMin; < 0: the engine's).
    float specPMin = -1.0f;
    std::shared_ptr<TokenSink> sink;
};

// How an embedding pools its tokens' final normed hidden states into one vector: the values of
// a GGUF's <arch>.pooling_type (llama.cpp's enum). Model: what the file says, mean when it says
// nothing or "none" (0). Rank (4): a reranker's classification head on the first token (an
// encoder's) or the last (a decoder's: Qwen3-Reranker); its "vector" is the head's outputs
// (ModelSummary::rankOutputs, the first the relevance score: a logit, or for Qwen3 the
// probability of "yes"), neither cut nor normalized, and it is the only pooling such a model has.
enum class Pooling : int32_t { Model = -1, Mean = 1, Cls = 2, Last = 3, Rank = 4 };
const char* poolingName(Pooling p); // "model", "mean", "cls", "last", "rank"

// One embedding request: several inputs computed together (each its own sequence, batched with
// whatever else the engine runs), each pooled, cut to `dimensions` and L2-normalized.
struct EmbeddingResult {
    std::vector<std::vector<float>> vectors; // one per input, in order
    int32_t promptTokens = 0;                // all inputs together
    double queueMs = 0.0;                    // submit to first scheduling
    double computeMs = 0.0;                  // first scheduling to the last vector
};

// Receives an embedding request's result. Called on the engine thread: return quickly.
class EmbeddingSink {
public:
    virtual ~EmbeddingSink() = default;
    virtual void onEmbeddings(EmbeddingResult result) = 0;
    virtual void onError(const Status& error) = 0; // Cancelled after cancel(), or why it failed
};

struct EmbeddingRequest {
    std::vector<std::vector<int32_t>> inputs; // token ids as given: BOS/EOS are the caller's choice
    Pooling pooling = Pooling::Model;
    bool normalize = true;   // L2-normalize each vector (after the cut to `dimensions`)
    int32_t dimensions = 0;  // keep the first this many components (Matryoshka); 0: all of nEmbd
    std::shared_ptr<EmbeddingSink> sink;
};

// A reranker's input for one (query, document) pair, as llama-server builds it: BOS, the query,
// EOS, SEP, the document, EOS, each where the vocabulary adds that token (add_bos_token, ...;
// SEP in place of a missing EOS). The query and document are token ids without special tokens.
std::vector<int32_t> rankingInput(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& query,
                                  const std::vector<int32_t>& document);

struct ModelSummary {
    std::string architecture;
    std::string name;
    int32_t nVocab = 0;
    int32_t nLayer = 0;
    int32_t contextLength = 0;
    std::vector<int32_t> eogTokens;
    int32_t bosToken = -1;
    int32_t nEmbd = 0;
    bool chatTemplateBuiltin = false; // the file has no template; ChatML is used
    Pooling pooling = Pooling::Mean;  // how embeddings pool by default (the file's pooling_type)
    bool embeddings = true;           // false: the file's pooling is not supported
    int32_t rankOutputs = 0;          // > 0: a reranker (pooling Rank): its head's outputs per input
    // A reranker's prompt for a pair (tokenizer.chat_template.rerank: {query} and {document} in
    // it), empty when the file has none (pairs are then built by rankingInput).
    std::string rankTemplate;
    bool embeddingsOnly = false;      // an encoder (bert): embeddings, no generation
    bool takesImages = false;         // reads image embeddings in a prompt (GenerationRequest::images)
    bool vision = false;              // a vision projector is loaded: prompts may hold images
    std::string kvType;               // "f16", ...
    uint64_t kvBytes = 0;             // memory of the KV cache
    uint64_t stateBytes = 0;          // hybrid models: memory of the recurrent state slots
    int32_t stateSlots = 0;           //   live sequences' and prefix snapshots'
    int32_t kvBlockSize = 0;
    std::string device = "cpu";       // where the first gpuLayers layers run
    int32_t gpuLayers = 0;            // layers on that device (0 with the CPU)
    int32_t cpuMoeLayers = 0;         // of those, the first N whose experts run on the CPU
    // Why parts of the model run elsewhere than asked: a GPU that failed its check before use
    // (the model then runs on the CPU), or ops of its layers it lacks ("rope@3"), run on the CPU.
    std::vector<std::string> deviceNotes;
    // Speculative decoding: "" when the model supports it, else why not (hybrid models for now).
    std::string speculationUnavailable;
    std::string draftModel;           // the draft model's file name ("" without one)
};

struct EngineStats {
    int32_t running = 0;
    int32_t waiting = 0;
    int32_t kvBlocksUsed = 0;
    int32_t kvBlocksTotal = 0;
    int64_t kvTokensHeld = 0;       // tokens whose K/V the running sequences hold
    uint64_t prefillTokensComputed = 0;
    uint64_t prefixQueryTokens = 0;
    uint64_t prefixHitTokens = 0;
    uint64_t steps = 0;
    // Hybrid models: recurrent-state slots (live sequences' and prefix snapshots') and their use.
    int32_t stateSlotsTotal = 0;
    int32_t stateSlotsLive = 0;
    int32_t stateSnapshots = 0;
    // Speculative decoding: tokens drafted and verified, and accepted, since the load.
    uint64_t draftTokens = 0;
    uint64_t acceptedDraftTokens = 0;
    int32_t draftKvBlocksUsed = 0;  // the draft model's K/V blocks held (0 without one)
    // Images encoded by the projector (Engine::encodeImage, not counting those kept from before)
    // and the engine thread's time spent on them.
    uint64_t imagesEncoded = 0;
    double imageEncodeSeconds = 0.0;
    // Host memory of the step buffers (activations), grown to the largest step so far: memory
    // the model uses beyond its weights and caches.
    uint64_t stepBufferBytes = 0;
};

using RequestId = uint64_t;

class Engine {
public:
    // Loads the model and starts the engine thread.
    static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);
    virtual ~Engine() = default;

    // Queues a request; its sink gets the tokens. Errors: bad parameters (InvalidArgument),
    // e.g. n outside 1..128 or an empty or invalid-UTF-8 stop string,
    // prompt + max tokens beyond the context (OutOfRange), queue full (Busy).
    virtual Result<RequestId> submit(GenerationRequest request) = 0;
    // Stops a request; its blocks are freed within one step and its sink gets Cancelled.
    virtual void cancel(RequestId id) = 0;
    // Queues an embedding request (cancel() stops it too); its sink gets the vectors. Errors:
    // no inputs, an empty input, a token outside the vocabulary or dimensions outside
    // 0..nEmbd (InvalidArgument), an input longer than the context (OutOfRange), queue full
    // (Busy), a model whose pooling is not supported (Unsupported).
    virtual Result<RequestId> embed(EmbeddingRequest /*request*/) {
        return unsupported("this engine does not compute embeddings");
    }

    virtual const ModelSummary& model() const = 0;
    virtual EngineStats stats() const = 0;

    // The vision projector loaded beside the model (EngineConfig::projectorPath), else nullptr.
    virtual const ProjectorInfo* projector() const { return nullptr; }
    // An image's embeddings from the projector's encoder, for GenerationRequest::images: any
    // thread may ask, and waits while the engine thread encodes it between its steps (one image
    // per step, so that encoding never competes with the running streams for the device). The
    // last few are kept by content, so a follow-up turn about the same image is not encoded
    // again. Unsupported without a projector.
    virtual Result<std::shared_ptr<const ImageEmbeddings>> encodeImage(const Image& /*image*/) {
        return unsupported("no vision projector is loaded for this model");
    }

    // The model's tokenizer (thread-safe, may be used from any thread).
    virtual const tokenizer::Tokenizer& tokenizer() const = 0;
    // Renders a chat with the model's template (any thread). Template errors come back as
    // InvalidArgument (the request does not fit the template) with the template's message.
    virtual Result<std::string> renderChat(const tmpl::ChatRequest& request) const = 0;
    // renderChat, then the ids to submit (special tokens parsed, BOS not doubled).
    virtual Result<std::vector<int32_t>> encodeChat(const tmpl::ChatRequest& request) const = 0;
};

// A chat whose messages hold kImageMarker where its images go, with the images in marker order,
// to the ids to submit: each image encoded by the engine's projector (Engine::encodeImage), the
// rendered chat tokenized around them (encodeWithImages; BOS not doubled). `images` receives the
// PromptImages for GenerationRequest::images. Unsupported when the model takes no images or has
// no projector; errors about one image name it ("image 2: ...").
Result<std::vector<int32_t>> encodeChatWithImages(Engine& engine, const tmpl::ChatRequest& chat,
                                                  const std::vector<Image>& decoded,
                                                  std::vector<PromptImage>& images);

// Runs an embedding request and waits for its result (never call it on the engine thread, i.e.
// from a sink). The request's sink is replaced.
Result<EmbeddingResult> embedAndWait(Engine& engine, EmbeddingRequest request);

} // namespace hearth
