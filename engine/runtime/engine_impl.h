// The engine behind hearth::Engine: one thread owning the model, the paged KV cache and the
// scheduler, with the per-request state it keeps beside the scheduler's (samplers, text streams,
// timings, the n choices of a request).
#pragma once

#include "backend/cpu/thread_pool.h"
#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "kv/kv_cache_manager.h"
#include "model/arch.h"
#include "runtime/draft_model.h"
#include "runtime/model_runner.h"
#include "runtime/mtp_drafter.h"
#include "runtime/text_stream.h"
#include "sample/grammar_constraint.h"
#include "sample/sampler.h"
#include "sched/scheduler.h"
#include "spec/speculator.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace hearth::runtime {

using Clock = std::chrono::steady_clock;

inline double msBetween(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

inline constexpr int kMaxChoices = 128;

struct Submitted {
    RequestId id;
    GenerationRequest request;
    Clock::time_point at;
};

// One of a request's n completions.
struct Choice {
    std::unique_ptr<sample::Sampler> sampler;
    std::unique_ptr<TextStream> text;
    std::unique_ptr<grammar::GrammarConstraint> constraint; // with a grammar
    std::unique_ptr<spec::Speculator> spec; // speculative decoding, when on for this request
    std::vector<int32_t> generated;
    bool started = false; // has a scheduler sequence (choice 0 from admission, others once forked)
    bool finished = false;
    FinishReason reason = FinishReason::Stop;
};

// What the engine thread keeps per live request besides the scheduler's records.
struct Live {
    std::shared_ptr<TokenSink> sink;
    std::vector<Choice> choices;
    int numFinished = 0;
    bool returnLogits = false;
    int32_t promptTokens = 0;
    int32_t cachedPromptTokens = 0;
    Clock::time_point submitted, firstScheduled, firstToken;
    bool scheduled = false, produced = false;
    bool speculative = false; // some choice has a speculator
    std::vector<PromptImage> images; // the prompt's, kept while a choice may recompute it
};

// An embedding request on the engine thread: its inputs go to the scheduler a few at a time, each
// as its own sequence; the hidden rows each step returns are pooled into `sums`.
struct EmbedLive {
    EmbeddingRequest request;
    Pooling pooling = Pooling::Mean; // resolved
    int nextInput = 0;               // inputs given to the scheduler so far
    int numDone = 0;
    std::vector<std::vector<double>> sums; // per input: pooled so far [nEmbd]
    std::vector<int32_t> rows;             // per input: rows in the sum
    std::vector<bool> done;
    std::vector<sched::RequestId> active;  // scheduler ids given and not yet done
    Clock::time_point submitted, firstScheduled;
    bool scheduled = false;
};

class EngineImpl final : public Engine {
public:
    ~EngineImpl() override;
    static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);

    Result<RequestId> submit(GenerationRequest request) override;
    const ProjectorInfo* projector() const override { return m_vision ? &m_vision->info() : nullptr; }
    Result<std::shared_ptr<const ImageEmbeddings>> encodeImage(const Image& image) override;
    Status validateImages(const GenerationRequest& request) const;
    void cancel(RequestId id) override;
    Result<RequestId> embed(EmbeddingRequest request) override;
    const ModelSummary& model() const override { return m_summary; }
    EngineStats stats() const override {
        std::lock_guard<std::mutex> lock(m_statsMu);
        return m_stats;
    }
    const tokenizer::Tokenizer& tokenizer() const override { return *m_tokenizer; }
    Result<std::string> renderChat(const tmpl::ChatRequest& request) const override;
    Result<std::vector<int32_t>> encodeChat(const tmpl::ChatRequest& request) const override;

private:
    EngineImpl() = default;

    // Scheduler ids: the public id with the choice in the low byte.
    static sched::RequestId schedId(RequestId id, int choice) { return (id << 8) | uint64_t(choice); }
    static RequestId publicId(sched::RequestId sid) { return sid >> 8; }
    static int choiceOf(sched::RequestId sid) { return int(sid & 0xFF); }
    static sched::FinishReason toSched(FinishReason r) {
        return r == FinishReason::Length ? sched::FinishReason::Length
               : r == FinishReason::Stop ? sched::FinishReason::Stop
                                         : sched::FinishReason::Cancelled;
    }

    void run();
    void admit(Submitted& s);
    // The speculation of one choice of `request` (nullopt: none).
    std::optional<spec::SpeculatorConfig> speculatorFor(const GenerationRequest& request, uint64_t seed) const;

    // Embeddings (embed.cpp). Scheduler ids of embedding inputs have the top bit set.
    static bool isEmbedSid(sched::RequestId sid) { return (sid >> 63) != 0; }
    void admitEmbed(RequestId id, EmbeddingRequest request, Clock::time_point at);
    void feedEmbeddings();   // hands waiting inputs to the scheduler (a few at a time)
    bool embedPending() const;
    // Marks the batch rows an embedding sequence wants (per its pooling); false: not an embedding.
    bool addEmbedTokens(const sched::ScheduledSeq& s, int seqIndex, graph::Batch& batch, Clock::time_point now);
    // Pools this step's hidden rows [h][nEmbd] (in batch order) into their inputs' sums.
    void poolHidden(const sched::SchedulerOutput& out, const std::vector<float>& hidden);
    // Hands the drafter that follows the target's hidden rows those of its sequences (m_mtpRows).
    void observeHidden(const sched::SchedulerOutput& out, const std::vector<float>& hidden);
    // Ends the inputs whose last chunk ran, and the requests whose inputs are all done.
    void finishEmbeds(const sched::SchedulerOutput& out);
    void cancelEmbed(RequestId id, const Status& why);
    void failEmbeds(const Status& error);
    Status step();
    // Appends the input row of the token at prompt position pos to the step's given rows when an
    // image of the request covers it: its index there, else -1.
    int32_t imageRow(const Live& live, int pos);
    // M-RoPE models: the rotation's position of the token at pos, and its row and column when
    // it is an image's (ModelDims::mrope).
    static void placeRope(const Live& live, int pos, graph::BatchToken& t);
    // Speculative decoding: asks each decoding choice's speculator for a draft (engine_step.cpp).
    void proposeDrafts();
    // Emits a sampled token of one choice (text, stop strings); true when the choice ended.
    bool emitToken(RequestId id, int choice, TokenInfo info, bool schedFinished,
                   sched::FinishReason schedReason);
    void finishChoice(RequestId id, int choice, FinishReason reason, bool flushText);
    void cancelLive(RequestId id);
    void failAll(const Status& error);
    void publishStats();

    // Declared first, so destroyed last: once every other member has been freed, the C library
    // gives the freed heap back to the system. Without it, a model's mid-sized buffers stay in
    // the allocator's per-thread arenas after it unloads and the next model's threads use others,
    // so a server switching models (the router) grew well past its memory budget.
    struct HeapRelease {
        ~HeapRelease();
    } m_heapRelease;
    EngineConfig m_config;
    std::optional<gguf::File> m_file;
    std::unique_ptr<model::Architecture> m_model;
    std::unique_ptr<ModelRunner> m_runner; // the model's steps on config.device (and the CPU)
    std::optional<tokenizer::Tokenizer> m_tokenizer;
    std::optional<tmpl::ModelChat> m_chat;
    Status m_chatError;
    std::unique_ptr<kv::KvCacheManager> m_cache;
    std::unique_ptr<kv::StateCache> m_states; // hybrid models only
    std::unique_ptr<sched::Scheduler> m_sched;
    std::unique_ptr<cpu::ThreadPool> m_pool;
    std::vector<float> m_logits; // the last step's logits, [row][vocab]; kept to reuse its memory
    std::shared_ptr<const grammar::TokenTrie> m_trie; // the vocabulary for grammars, built on first use
    ModelSummary m_summary;

    std::mutex m_mu;
    std::condition_variable m_cv;
    std::deque<Submitted> m_inbox;
    std::vector<RequestId> m_cancels;
    // An image waiting to be encoded on the engine thread (encodeImage), its caller blocked on done.
    struct EncodeJob {
        const Image* image = nullptr;
        uint64_t hash = 0;
        std::promise<Result<std::shared_ptr<const ImageEmbeddings>>> done;
    };
    std::deque<EncodeJob*> m_encodeInbox; // one is taken per turn of the loop, between steps
    bool m_stop = false;
    std::atomic<RequestId> m_nextId{1};
    std::atomic<int> m_queued{0}; // submitted and not yet finished

    std::unordered_map<RequestId, Live> m_live; // engine thread only
    std::deque<std::pair<RequestId, EmbeddingRequest>> m_embedInbox; // under m_mu, with its time:
    std::deque<Clock::time_point> m_embedInboxAt;
    std::unordered_map<RequestId, EmbedLive> m_embeds;            // engine thread only
    std::deque<RequestId> m_embedOrder;                           // FIFO of m_embeds with inputs to feed
    std::unordered_map<sched::RequestId, std::pair<RequestId, int>> m_embedSeqs; // sid -> (request, input)
    uint64_t m_nextEmbedSid = 0;
    std::vector<float> m_hidden; // the last step's hidden rows
    std::vector<double> m_synthAccept; // synthetic acceptance per draft position (benchmarks)
    // The draft model (speculation.draftModel) or the multi-token-prediction head, if any.
    std::unique_ptr<ModelDrafter> m_draft;
    std::vector<int> m_mtpRows;   // per scheduled sequence of the last step: its hidden rows for m_draft
    std::vector<int> m_embedRows; // and its hidden rows for an embedding
    std::vector<float> m_stepEmbeds; // the step's given input rows (images' embeddings)
    bool m_imagesAtOnce = false;     // the model sees an image's tokens at once (ModelDims)
    bool m_mrope = false;            // an image's tokens take M-RoPE positions (ModelDims)
    // The vision projector's encoder (EngineConfig::projectorPath), run by encodeImage() on the
    // engine thread between steps (encodeNow), and the last images' embeddings (most recent last).
    std::unique_ptr<VisionEncoder> m_vision;
    std::mutex m_visionMu; // guards m_recentImages
    Result<std::shared_ptr<const ImageEmbeddings>> encodeNow(const Image& image, uint64_t hash);
    std::shared_ptr<const ImageEmbeddings> recentImage(uint64_t hash);
    std::deque<std::shared_ptr<const ImageEmbeddings>> m_recentImages;
    std::unique_ptr<spec::NgramPool> m_ngramPool; // finished sequences' n-grams (speculation.ngram)
    double m_draftStepMs = 0.0;          // the draft model's time per drafted token (recent average)
    int m_specRequests = 0;            // live requests with a speculator
    uint64_t m_draftTokens = 0, m_acceptedDraftTokens = 0;
    uint64_t m_imagesEncoded = 0;     // engine thread only (encodeNow), like the time:
    double m_imageEncodeSeconds = 0.0;
    int m_numBlocks = 0;
    mutable std::mutex m_statsMu;
    EngineStats m_stats;
    std::thread m_thread;
};

} // namespace hearth::runtime
