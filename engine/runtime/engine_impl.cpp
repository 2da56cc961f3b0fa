// The engine thread: takes submitted and cancelled requests from an inbox, runs one scheduler step
// at a time (schedule -> batched forward -> sample -> update), and hands results to each
// request's sink. It alone owns the model, the KV cache and the scheduler.
#include "hearth/engine.h"

#include "backend/cpu/paged_kv.h"
#include "hearth/gguf.h"
#include "kv/kv_cache_manager.h"
#include "model/llama_model.h"
#include "sample/sampler.h"
#include "sched/scheduler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace hearth {

const char* finishReasonName(FinishReason r) {
    switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
    }
    return "error";
}

namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Submitted {
    RequestId id;
    GenerationRequest request;
    Clock::time_point at;
};

// What the engine thread keeps per live request besides the scheduler's own record.
struct Live {
    std::shared_ptr<TokenSink> sink;
    std::unique_ptr<sample::Sampler> sampler;
    std::vector<int32_t> generated;
    bool returnLogits = false;
    Clock::time_point submitted, firstScheduled, firstToken;
    bool scheduled = false, produced = false;
};

class EngineImpl final : public Engine {
public:
    ~EngineImpl() override {
        {
            std::lock_guard<std::mutex> lock(m_mu);
            m_stop = true;
        }
        m_cv.notify_all();
        if (m_thread.joinable()) m_thread.join();
    }

    static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);

    Result<RequestId> submit(GenerationRequest request) override;
    void cancel(RequestId id) override;
    const ModelSummary& model() const override { return m_summary; }
    EngineStats stats() const override {
        std::lock_guard<std::mutex> lock(m_statsMu);
        return m_stats;
    }

private:
    EngineImpl() = default;
    void run();
    Status step();
    void finishLive(RequestId id, FinishReason reason);
    void publishStats();

    EngineConfig m_config;
    std::optional<gguf::File> m_file;
    std::unique_ptr<model::LlamaModel> m_model;
    std::unique_ptr<kv::KvCacheManager> m_cache;
    std::unique_ptr<cpu::PagedKvStore> m_store;
    std::unique_ptr<sched::Scheduler> m_sched;
    ModelSummary m_summary;

    std::mutex m_mu;
    std::condition_variable m_cv;
    std::deque<Submitted> m_inbox;
    std::vector<RequestId> m_cancels;
    bool m_stop = false;
    std::atomic<RequestId> m_nextId{1};
    std::atomic<int> m_queued{0}; // submitted and not yet finished

    std::unordered_map<RequestId, Live> m_live; // engine thread only
    mutable std::mutex m_statsMu;
    EngineStats m_stats;
    std::thread m_thread;
};

Result<std::unique_ptr<Engine>> EngineImpl::create(const EngineConfig& config) {
    auto e = std::unique_ptr<EngineImpl>(new EngineImpl());
    e->m_config = config;
    HEARTH_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(config.modelPath));
    e->m_file.emplace(std::move(file));
    HEARTH_ASSIGN_OR_RETURN(e->m_model, model::LlamaModel::load(*e->m_file));
    const model::LlamaHParams& hp = e->m_model->hparams();

    ModelSummary& s = e->m_summary;
    s.architecture = hp.archName;
    s.name = e->m_file->has("general.name") ? e->m_file->getString("general.name").value() : "";
    s.nVocab = hp.nVocab;
    s.nLayer = hp.nLayer;
    s.contextLength = config.contextLength > 0 ? config.contextLength
                                               : std::min(hp.nCtxTrain > 0 ? hp.nCtxTrain : 4096, 4096);
    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                            "tokenizer.ggml.eom_token_id"}) {
        auto id = e->m_file->getU32(key);
        if (id.isOk() && int64_t(*id) < hp.nVocab &&
            std::find(s.eogTokens.begin(), s.eogTokens.end(), int32_t(*id)) == s.eogTokens.end())
            s.eogTokens.push_back(int32_t(*id));
    }
    if (auto bos = e->m_file->getU32("tokenizer.ggml.bos_token_id"); bos.isOk() && *bos < uint32_t(hp.nVocab))
        s.bosToken = int32_t(*bos);

    const int bs = std::max(1, config.blockSize);
    const uint64_t bytesPerBlock =
        2ull * uint64_t(hp.nLayer) * uint64_t(bs) * uint64_t(hp.nHeadKv) * uint64_t(hp.headDim) * 4;
    const uint64_t blocks = config.kvMemoryBytes / bytesPerBlock;
    if (blocks < 1)
        return outOfMemory("KV memory budget of " + std::to_string(config.kvMemoryBytes) +
                           " bytes holds no block (one needs " + std::to_string(bytesPerBlock) + ")");
    const int numBlocks = int(std::min<uint64_t>(blocks, 1u << 20));
    e->m_cache = std::make_unique<kv::KvCacheManager>(
        kv::KvCacheConfig{.numBlocks = numBlocks, .blockSize = bs, .prefixCaching = config.prefixCaching});
    e->m_store = std::make_unique<cpu::PagedKvStore>(hp.nLayer, numBlocks, bs, hp.nHeadKv, hp.headDim);
    e->m_sched = std::make_unique<sched::Scheduler>(
        sched::SchedulerConfig{.maxNumSeqs = config.maxNumSeqs,
                               .maxBatchedTokens = config.maxBatchedTokens,
                               .maxWaiting = config.maxWaiting,
                               .contextLength = s.contextLength},
        *e->m_cache);
    e->m_stats.kvBlocksTotal = numBlocks;
    e->m_thread = std::thread([raw = e.get()] { raw->run(); });
    return std::unique_ptr<Engine>(std::move(e));
}

Result<RequestId> EngineImpl::submit(GenerationRequest request) {
    if (!request.sink) return invalidArgument("request has no sink");
    if (request.prompt.empty()) return invalidArgument("the prompt is empty");
    if (request.maxTokens < 1) return invalidArgument("'max_tokens' must be at least 1");
    for (int32_t t : request.prompt)
        if (t < 0 || t >= m_summary.nVocab)
            return invalidArgument("prompt token " + std::to_string(t) + " is outside the vocabulary");
    HEARTH_RETURN_IF_ERROR(request.sampling.validate(m_summary.nVocab));
    const int64_t total = int64_t(request.prompt.size()) + request.maxTokens;
    if (total > m_summary.contextLength)
        return outOfRange("prompt (" + std::to_string(request.prompt.size()) +
                          " tokens) + max_tokens (" + std::to_string(request.maxTokens) +
                          ") exceeds the context length of " + std::to_string(m_summary.contextLength));
    if (m_queued.load() >= m_config.maxWaiting + m_config.maxNumSeqs)
        return busy("the engine's queue is full; try again later");
    const RequestId id = m_nextId.fetch_add(1);
    ++m_queued;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_inbox.push_back({id, std::move(request), Clock::now()});
    }
    m_cv.notify_all();
    return id;
}

void EngineImpl::cancel(RequestId id) {
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_cancels.push_back(id);
    }
    m_cv.notify_all();
}

void EngineImpl::finishLive(RequestId id, FinishReason reason) {
    auto it = m_live.find(id);
    if (it == m_live.end()) return;
    Live& live = it->second;
    const sched::Request* r = m_sched->request(id);
    Usage u;
    if (r) {
        u.promptTokens = r->promptLength;
        u.cachedPromptTokens = r->numCachedPrompt;
    }
    u.completionTokens = int32_t(live.generated.size());
    const auto now = Clock::now();
    if (live.scheduled) u.queueMs = msBetween(live.submitted, live.firstScheduled);
    if (live.produced) {
        u.timeToFirstTokenMs = msBetween(live.submitted, live.firstToken);
        u.generationMs = msBetween(live.firstToken, now);
    }
    std::shared_ptr<TokenSink> sink = std::move(live.sink);
    m_live.erase(it);
    m_sched->release(id);
    --m_queued;
    sink->onFinish(reason, u);
}

void EngineImpl::run() {
    for (;;) {
        std::deque<Submitted> inbox;
        std::vector<RequestId> cancels;
        {
            std::unique_lock<std::mutex> lock(m_mu);
            m_cv.wait(lock, [&] {
                return m_stop || !m_inbox.empty() || !m_cancels.empty() || m_sched->hasWork();
            });
            if (m_stop) break;
            inbox.swap(m_inbox);
            cancels.swap(m_cancels);
        }
        for (Submitted& s : inbox) {
            sched::Request r;
            r.id = s.id;
            r.tokens = s.request.prompt;
            r.maxTokens = s.request.maxTokens;
            if (!s.request.ignoreEos)
                r.stopTokens = s.request.stopTokens.empty() ? m_summary.eogTokens : s.request.stopTokens;
            Status st = m_sched->addRequest(std::move(r));
            if (!st.isOk()) {
                --m_queued;
                s.request.sink->onError(st);
                continue;
            }
            Live live;
            live.sink = s.request.sink;
            live.sampler = std::make_unique<sample::Sampler>(s.request.sampling);
            live.submitted = s.at;
            live.returnLogits = s.request.returnLogits;
            m_live.emplace(s.id, std::move(live));
        }
        for (RequestId id : cancels)
            if (m_sched->cancel(id)) finishLive(id, FinishReason::Cancelled);
        if (m_sched->hasWork()) {
            Status st = step();
            if (!st.isOk()) { // a failed step fails every request it touched, never the process
                std::vector<RequestId> ids;
                for (const auto& [id, live] : m_live) ids.push_back(id);
                for (RequestId id : ids) {
                    m_sched->cancel(id);
                    auto it = m_live.find(id);
                    std::shared_ptr<TokenSink> sink = it->second.sink;
                    m_live.erase(it);
                    m_sched->release(id);
                    --m_queued;
                    sink->onError(st);
                }
            }
        }
        publishStats();
    }
    std::vector<RequestId> ids;
    for (const auto& [id, live] : m_live) ids.push_back(id);
    for (RequestId id : ids) {
        m_sched->cancel(id);
        finishLive(id, FinishReason::Cancelled);
    }
}

Status EngineImpl::step() {
    sched::SchedulerOutput out = m_sched->schedule();
    if (out.empty()) return Status::ok();
    const auto now = Clock::now();
    model::Batch batch;
    std::vector<std::vector<int32_t>> tables;
    tables.reserve(out.seqs.size());
    for (size_t i = 0; i < out.seqs.size(); ++i) {
        const sched::ScheduledSeq& s = out.seqs[i];
        const sched::Request* r = m_sched->request(s.id);
        Live& live = m_live.at(s.id);
        if (!live.scheduled) {
            live.scheduled = true;
            live.firstScheduled = now;
        }
        auto table = m_cache->blockTable(s.id);
        tables.emplace_back(table.begin(), table.end());
        for (int k = 0; k < s.numTokens; ++k) {
            const int pos = s.start + k;
            batch.tokens.push_back({r->tokens[size_t(pos)], pos, int(i),
                                    s.samples && k == s.numTokens - 1});
        }
    }
    for (const auto& t : tables) batch.blockTables.emplace_back(t);
    std::vector<float> logits;
    HEARTH_RETURN_IF_ERROR(m_model->forward(batch, *m_store, logits));

    const size_t V = size_t(m_summary.nVocab);
    std::vector<int32_t> sampled;
    std::vector<std::pair<RequestId, TokenInfo>> emitted;
    size_t row = 0;
    for (const sched::ScheduledSeq& s : out.seqs) {
        if (!s.samples) continue;
        Live& live = m_live.at(s.id);
        const std::span<const float> l(&logits[row++ * V], V);
        sample::SampleResult res = live.sampler->sample(l, live.generated);
        sampled.push_back(res.token);
        TokenInfo info;
        info.id = res.token;
        info.logprob = res.logprob;
        for (const auto& t : res.top) info.topLogprobs.push_back({t.token, t.logprob});
        if (live.returnLogits) info.logits.assign(l.begin(), l.end());
        emitted.push_back({s.id, std::move(info)});
    }
    const std::vector<sched::RequestId> finished = m_sched->update(out, sampled);
    const auto after = Clock::now();
    for (auto& [id, info] : emitted) {
        Live& live = m_live.at(id);
        const sched::Request* r = m_sched->request(id);
        const bool isStop = r && r->finish == sched::FinishReason::Stop &&
                            std::find(finished.begin(), finished.end(), id) != finished.end();
        live.generated.push_back(info.id);
        if (!live.produced) {
            live.produced = true;
            live.firstToken = after;
        }
        if (!isStop) live.sink->onToken(info); // end-of-generation tokens are not output
    }
    for (sched::RequestId id : finished) {
        const sched::Request* r = m_sched->request(id);
        finishLive(id, r && r->finish == sched::FinishReason::Stop ? FinishReason::Stop
                                                                   : FinishReason::Length);
    }
    std::lock_guard<std::mutex> lock(m_statsMu);
    ++m_stats.steps;
    return Status::ok();
}

void EngineImpl::publishStats() {
    std::lock_guard<std::mutex> lock(m_statsMu);
    m_stats.running = m_sched->numRunning();
    m_stats.waiting = m_sched->numWaiting();
    m_stats.kvBlocksUsed = m_cache->numUsedBlocks();
    m_stats.kvBlocksTotal = m_cache->numBlocks();
    m_stats.prefillTokensComputed = m_sched->prefillTokensComputed();
    m_stats.prefixQueryTokens = m_cache->prefixQueryTokens();
    m_stats.prefixHitTokens = m_cache->prefixHitTokens();
}

} // namespace

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
    return EngineImpl::create(config);
}

} // namespace hearth
