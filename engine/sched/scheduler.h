// Continuous batching: each step, schedule() picks how many tokens every sequence computes —
// running sequences first (decode or the next prefill chunk), then waiting ones within the token
// budget — and update() takes the sampled tokens back, finishing and freeing sequences.
// Blocks come from the KV cache manager; when they run out the newest running request is
// preempted (its blocks freed) and recomputed later. Speculative decoding: a decoding sequence
// given a draft (setDraft) computes its last token and the drafted ones in one step; update()
// takes back how many were accepted, and the K/V of the rest is rolled back (blocks truncated).
#pragma once

#include "hearth/status.h"
#include "kv/kv_cache_manager.h"
#include "kv/state_cache.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace hearth::sched {

using RequestId = uint64_t;

enum class RequestState { Waiting, Running, Finished };
enum class FinishReason { None, Length, Stop, Cancelled };

struct SchedulerConfig {
    int maxNumSeqs = 16;          // sequences in one step
    int maxBatchedTokens = 512;   // tokens computed in one step (chunked prefill splits prompts)
    int maxWaiting = 256;         // bounded wait queue; beyond it requests are refused
    int contextLength = 2048;     // per-sequence cap: prompt + max_tokens must fit
    // While sequences are decoding, prompt tokens in a step are limited so that the step takes at
    // most this many times as long as a decode-only step would (from the step-time model fed by
    // recordStepTime: time = base + perToken * tokens); so admitting a long prompt never stalls
    // running streams. At least 16 prompt tokens per step. 0: only maxBatchedTokens limits.
    float decodeStallFactor = 2.5f;
    // Hybrid models: the recurrent state is snapshotted for the prefix cache at every multiple of
    // this many tokens (rounded to whole blocks) and at the prompt's last full block.
    int snapshotEvery = 32;
};

struct Request {
    RequestId id = 0;
    std::vector<int32_t> tokens; // prompt followed by generated tokens
    int promptLength = 0;
    int maxTokens = 16;          // tokens to generate at most
    std::vector<int32_t> stopTokens; // end-of-generation ids
    // An embedding: only its prompt is computed (maxTokens 0; the token given to update() after
    // the last chunk ends it), every position from scratch (no cached prefix is reused, since
    // each position's hidden state is wanted).
    bool embedding = false;
    // The prompt is computed in one step or not at all (an encoder's input: its attention sees
    // the whole input): never chunked. Refused when a step cannot hold it.
    bool wholePrompt = false;
    // Spans of the prompt that are an image's tokens (their input rows given by the engine), in
    // order, apart: a chunk never ends inside one, so an image (or what of it the prefix cache
    // lacks) is computed in one step, over the step's budget when it is alone there. With
    // imagesAtOnce (the model sees an image's tokens at once: SchedulerOutput::withinSequence)
    // that step holds no other prompt chunk and no drafts.
    struct Span {
        int start = 0, length = 0;
    };
    std::vector<Span> images;
    bool imagesAtOnce = false;
    int numComputed = 0;         // tokens of `tokens` whose K/V are in the cache
    int numCachedPrompt = 0;     // prompt tokens found in the prefix cache at admission
    int numPreemptions = 0;
    // Hybrid models: the snapshot slot the first step after admission reads its state from
    // (pinned until then; -1: none), and the hashes of its full blocks as far as known.
    int32_t stateResume = -1;
    std::vector<kv::BlockHash> blockHashes;
    // Proposed continuation for the next step (speculative decoding); used once, then cleared.
    std::vector<int32_t> draft;
    RequestState state = RequestState::Waiting;
    FinishReason finish = FinishReason::None;

    int numGenerated() const { return int(tokens.size()) - promptLength; }
};

struct ScheduledSeq {
    RequestId id = 0;
    int start = 0;       // position of the first token computed this step
    int numTokens = 0;   // tokens computed this step
    bool samples = false; // the chunk reaches the end of the sequence: a token is sampled
    // Hybrid models: the state slot the chunk starts from (-1: empty, at position 0), the
    // sequence's live slot it leaves the state in, and snapshots (p, slot): the state after the
    // first p tokens, for the prefix cache.
    int32_t stateRead = -1, stateWrite = -1;
    std::vector<std::pair<int32_t, int32_t>> snapshots;
    // Speculative decoding: the chunk is the sequence's last token followed by these drafted
    // tokens (at positions start + 1 ...), all of which want logits; numTokens counts them.
    std::vector<int32_t> drafts;
    // Hybrid models with drafts: draftStates[a] is the slot that receives the recurrent state
    // after start + 1 + a tokens (the state to resume from when a drafts are accepted; with all
    // of them accepted the live slot has it). Released by update().
    std::vector<int32_t> draftStates;
};

struct SchedulerOutput {
    std::vector<ScheduledSeq> seqs;
    int totalTokens = 0;
    std::vector<RequestId> preempted; // lost their blocks this step; they wait to be recomputed
    std::vector<kv::BlockCopy> copies; // copy-on-write copies the backend must do first
    std::vector<std::pair<int32_t, int32_t>> stateCopies; // (src, dst) state slots to copy first (forks)
    // The step holds an image seen at once: its tokens attend within their sequence
    // (graph::Batch::withinSequence); every other sequence in it computes one token.
    bool withinSequence = false;
    bool empty() const { return seqs.empty(); }
};

class Scheduler {
public:
    // `states`: the recurrent-state slots of a hybrid model (nullptr for pure transformers).
    Scheduler(SchedulerConfig config, kv::KvCacheManager& cache, kv::StateCache* states = nullptr);

    // Queues a request. Refused at once when it can never fit (prompt + maxTokens beyond the
    // context, or more blocks than the whole cache) or when the wait queue is full.
    Status addRequest(Request request);

    SchedulerOutput schedule();

    // Applies a step's results: `sampled[i]` is the token for the i-th scheduled sequence that
    // has `samples` set (in order). Returns the requests that finished in this step.
    // With drafts, `counts` (one per sampling sequence; empty: all 1) says how many of `sampled`
    // are that sequence's: its accepted drafts, then the token sampled after them. Tokens are
    // appended in order until one finishes the request; the rest are dropped.
    std::vector<RequestId> update(const SchedulerOutput& out, std::span<const int32_t> sampled,
                                  std::span<const int> counts = {});

    // Proposes `draft` as the continuation of a running, decoding request for the next
    // schedule() (ignored for others and beyond max_tokens). Returns false when
    // the request cannot take a draft now.
    bool setDraft(RequestId id, std::vector<int32_t> draft);
    // Whether the request is running and decoding (its prompt computed, one token to compute).
    bool decoding(RequestId id) const;

    // Parallel sampling (n > 1): call when `parent` has just sampled its first token, before
    // update(). `child` starts as a running copy whose prompt K/V (the first `numComputed`
    // tokens) share the parent's blocks, with `firstToken` as its own first generated token.
    // Returns true when the child is already finished by that token (stop token or length).
    Result<bool> fork(RequestId parent, RequestId child, int numComputed, int32_t firstToken);

    // A step that did not run (its forward failed): the state snapshots it reserved are dropped.
    void abandon(const SchedulerOutput& out);

    // Stops a request at once (client gone, stop pressed): its blocks are freed now.
    bool cancel(RequestId id);
    // Marks a running request finished with `reason` (e.g. a stop string matched) and frees it.
    bool finish(RequestId id, FinishReason reason);

    const Request* request(RequestId id) const;
    // Forgets a finished request (after its consumer has read the result).
    void release(RequestId id);

    int numRunning() const { return int(m_running.size()); }
    int numWaiting() const { return int(m_waiting.size()); }
    bool hasWork() const { return !m_running.empty() || !m_waiting.empty(); }
    uint64_t prefillTokensComputed() const { return m_prefillTokens; }
    // Feeds the step-time model: a step of `tokens` tokens took `ms`.
    void recordStepTime(int tokens, double ms);
    // Prompt tokens a step may add to `decoding` decoding sequences (the stall limit above).
    int prefillAllowance(int decoding) const;
    // The time a step of `tokens` tokens takes, in ms, for small steps (up to kStepTable tokens):
    // the recent average of steps of that size where there were some, else interpolated between
    // the sizes seen, else extrapolated (the fit's time per token, or a tenth of the nearest
    // smaller step's time per token beyond it); 0 when no step has been seen.
    double stepTimeMs(int tokens) const;
    static constexpr int kStepTable = 160;

    // Tokens whose K/V the running sequences hold (computed so far).
    int64_t tokensHeld() const;

private:
    void preempt(RequestId id);
    void finishRequest(Request& r, FinishReason reason);
    FinishReason finishFor(const Request& r, int32_t token) const;
    bool makeWritable(Request& r, SchedulerOutput& out); // copy-on-write of the block written next
    // Hybrid models: the state slots of a chunk of r starting at `start` (snapshots reserved).
    void assignState(Request& r, ScheduledSeq& seq);
    void releaseState(Request& r);
    void releaseDraftStates(const ScheduledSeq& s);
    kv::BlockHash blockHash(Request& r, int block);
    // How many of the n tokens from `start` r's chunk may take given its image spans (0: not in
    // this step); `image` says whether the chunk is (the rest of) an image seen at once.
    int imageChunk(const Request& r, int start, int n, int budget, const SchedulerOutput& out, bool& image) const;
    // The least-squares fit of step time against tokens: (base, perToken) ms; nullopt without
    // enough spread in step sizes or with time not growing with tokens.
    std::optional<std::pair<double, double>> stepTimeFit() const;

    SchedulerConfig m_config;
    kv::KvCacheManager& m_cache;
    kv::StateCache* m_states = nullptr;
    std::vector<std::pair<int32_t, int32_t>> m_pendingStateCopies; // from forks, for the next step
    std::unordered_map<RequestId, std::unique_ptr<Request>> m_requests;
    std::deque<RequestId> m_waiting; // FIFO; preempted requests go back to the front
    std::vector<RequestId> m_running; // admission order: the last one is preempted first
    uint64_t m_prefillTokens = 0;
    // Exponentially weighted sums for the least-squares fit of step time against tokens.
    double m_w = 0, m_sn = 0, m_st = 0, m_snn = 0, m_snt = 0;
    std::vector<double> m_stepMs = std::vector<double>(kStepTable + 1, 0.0); // by tokens, at speed 1; 0: none seen
    double m_speed = 1.0; // how long steps take now relative to the table
};

} // namespace hearth::sched
