// Embeddings on the engine thread: each input of a request becomes a scheduler sequence that only
// computes its prompt (batched with generation like any prefill), the step returns the final
// normed hidden rows its pooling wants, and those are pooled (mean, first or last token), cut to
// the wanted dimensions and L2-normalized when every input is done. A reranker's rows are its
// classification head's outputs for the first token, returned as they are.
#include "runtime/engine_impl.h"

#include <cmath>
#include <condition_variable>
#include <mutex>

namespace hearth {

const char* poolingName(Pooling p) {
    switch (p) {
    case Pooling::Model: return "model";
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Last: return "last";
    case Pooling::Rank: return "rank";
    }
    return "model";
}

namespace {

// Waits on the caller's thread for an embedding result (embedAndWait).
class WaitingSink final : public EmbeddingSink {
public:
    void onEmbeddings(EmbeddingResult result) override {
        std::lock_guard<std::mutex> lock(m_mu);
        m_result = std::move(result);
        m_done = true;
        m_cv.notify_all();
    }
    void onError(const Status& error) override {
        std::lock_guard<std::mutex> lock(m_mu);
        m_error = error;
        m_done = true;
        m_cv.notify_all();
    }
    Result<EmbeddingResult> wait() {
        std::unique_lock<std::mutex> lock(m_mu);
        m_cv.wait(lock, [&] { return m_done; });
        if (!m_error.isOk()) return m_error;
        return std::move(m_result);
    }

private:
    std::mutex m_mu;
    std::condition_variable m_cv;
    bool m_done = false;
    Status m_error;
    EmbeddingResult m_result;
};

} // namespace

Result<EmbeddingResult> embedAndWait(Engine& engine, EmbeddingRequest request) {
    auto sink = std::make_shared<WaitingSink>();
    request.sink = sink;
    HEARTH_RETURN_IF_ERROR(engine.embed(std::move(request)).status());
    return sink->wait();
}

std::vector<int32_t> rankingInput(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& query,
                                  const std::vector<int32_t>& document) {
    std::vector<int32_t> ids;
    auto special = [&](bool add, int32_t id) {
        if (add && id != tokenizer::kNoToken) ids.push_back(id);
    };
    // EOS, or SEP where the vocabulary has no EOS.
    const int32_t eos = tokenizer.eos() != tokenizer::kNoToken ? tokenizer.eos() : tokenizer.sep();
    special(tokenizer.addBos(), tokenizer.bos());
    ids.insert(ids.end(), query.begin(), query.end());
    special(tokenizer.addEos(), eos);
    special(tokenizer.addSep(), tokenizer.sep());
    ids.insert(ids.end(), document.begin(), document.end());
    special(tokenizer.addEos(), eos);
    return ids;
}

namespace runtime {

namespace {

// Inputs of all embedding requests waiting in the scheduler at once (more wait in their request).
constexpr int kMaxEmbedWaiting = 64;
constexpr size_t kMaxEmbedInputs = 1u << 16;

// Whether the token at `pos` of an input of `length` tokens is pooled. A reranker pools its
// first token, or its last when it is a decoder (causal: Qwen3-Reranker), as llama.cpp does.
bool pooledRow(Pooling p, int pos, int length, bool causal) {
    switch (p) {
    case Pooling::Rank: return causal ? pos == length - 1 : pos == 0;
    case Pooling::Cls: return pos == 0;
    case Pooling::Last: return pos == length - 1;
    default: return true;
    }
}

} // namespace

Result<RequestId> EngineImpl::embed(EmbeddingRequest request) {
    if (!request.sink) return invalidArgument("request has no sink");
    if (!m_summary.embeddings) return unsupported("this model's pooling is not supported");
    const bool ranker = m_summary.rankOutputs > 0;
    if (ranker != (request.pooling == Pooling::Rank || (ranker && request.pooling == Pooling::Model)))
        return invalidArgument(ranker ? "this model is a reranker: it scores inputs (rank pooling) and pools no other way"
                                      : "rank pooling needs a reranker (a model with a classification head)");
    if (ranker && request.dimensions > 0) return invalidArgument("a reranker's scores are not cut to dimensions");
    if (request.inputs.empty()) return invalidArgument("the embedding request has no input");
    if (request.inputs.size() > kMaxEmbedInputs)
        return invalidArgument("at most " + std::to_string(kMaxEmbedInputs) + " inputs per embedding request");
    if (request.dimensions < 0 || request.dimensions > m_summary.nEmbd)
        return invalidArgument("'dimensions' must be between 1 and the model's width of " +
                               std::to_string(m_summary.nEmbd));
    const int64_t bs = std::max(1, m_summary.kvBlockSize);
    for (size_t i = 0; i < request.inputs.size(); ++i) {
        const std::vector<int32_t>& in = request.inputs[i];
        const std::string which = "input " + std::to_string(i);
        if (in.empty()) return invalidArgument(which + " is empty");
        for (int32_t t : in)
            if (t < 0 || t >= m_summary.nVocab)
                return invalidArgument(which + ": token " + std::to_string(t) + " is outside the vocabulary");
        if (int64_t(in.size()) > m_summary.contextLength)
            return outOfRange(which + " has " + std::to_string(in.size()) + " tokens, more than the context length of " +
                              std::to_string(m_summary.contextLength));
        // Without the causal mask (encoders) an input is computed in one step.
        if (!m_model->dims().causal && int64_t(in.size()) > m_config.maxBatchedTokens)
            return outOfRange(which + " has " + std::to_string(in.size()) + " tokens, more than one step computes (" +
                              std::to_string(m_config.maxBatchedTokens) +
                              ", the batch size): an encoder computes each input in one step");
        if ((int64_t(in.size()) + bs - 1) / bs > m_numBlocks)
            return outOfRange(which + " has " + std::to_string(in.size()) + " tokens, more than the KV cache holds");
    }
    if (m_queued.load() >= m_config.maxWaiting + m_config.maxNumSeqs)
        return busy("the engine's queue is full; try again later");
    const RequestId id = m_nextId.fetch_add(1);
    ++m_queued;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_embedInbox.emplace_back(id, std::move(request));
        m_embedInboxAt.push_back(Clock::now());
    }
    m_cv.notify_all();
    return id;
}

void EngineImpl::admitEmbed(RequestId id, EmbeddingRequest request, Clock::time_point at) {
    EmbedLive e;
    e.pooling = request.pooling == Pooling::Model ? m_summary.pooling : request.pooling;
    const size_t n = request.inputs.size();
    e.sums.assign(n, {});
    e.rows.assign(n, 0);
    e.done.assign(n, false);
    e.request = std::move(request);
    e.submitted = at;
    m_embeds.emplace(id, std::move(e));
    m_embedOrder.push_back(id);
}

bool EngineImpl::embedPending() const { return !m_embedOrder.empty() && m_sched->numWaiting() < kMaxEmbedWaiting; }

void EngineImpl::feedEmbeddings() {
    while (!m_embedOrder.empty() && m_sched->numWaiting() < kMaxEmbedWaiting) {
        const RequestId id = m_embedOrder.front();
        auto it = m_embeds.find(id);
        if (it == m_embeds.end() || it->second.nextInput >= int(it->second.request.inputs.size())) {
            m_embedOrder.pop_front();
            continue;
        }
        EmbedLive& e = it->second;
        const int input = e.nextInput++;
        sched::Request r;
        r.id = (uint64_t(1) << 63) | m_nextEmbedSid++;
        r.tokens = e.request.inputs[size_t(input)];
        r.embedding = true;
        r.wholePrompt = !m_model->dims().causal;
        const sched::RequestId sid = r.id;
        if (Status st = m_sched->addRequest(std::move(r)); !st.isOk()) {
            cancelEmbed(id, st.withContext("input " + std::to_string(input)));
            continue;
        }
        e.active.push_back(sid);
        m_embedSeqs.emplace(sid, std::make_pair(id, input));
    }
}

bool EngineImpl::addEmbedTokens(const sched::ScheduledSeq& s, int seqIndex, graph::Batch& batch,
                                Clock::time_point now) {
    if (!isEmbedSid(s.id)) return false;
    const auto& [id, input] = m_embedSeqs.at(s.id);
    EmbedLive& e = m_embeds.at(id);
    if (!e.scheduled) {
        e.scheduled = true;
        e.firstScheduled = now;
    }
    const std::vector<int32_t>& tokens = e.request.inputs[size_t(input)];
    const int length = int(tokens.size());
    for (int k = 0; k < s.numTokens; ++k) {
        const int pos = s.start + k;
        graph::BatchToken t{tokens[size_t(pos)], pos, seqIndex, false};
        t.wantHidden = pooledRow(e.pooling, pos, length, m_model->dims().causal);
        batch.tokens.push_back(t);
    }
    return true;
}

void EngineImpl::poolHidden(const sched::SchedulerOutput& out, const std::vector<float>& hidden) {
    // A reranker's rows are its head's outputs (every row of the step: its graph adds the head).
    const size_t E = size_t(m_summary.rankOutputs > 0 ? m_summary.rankOutputs : m_summary.nEmbd);
    size_t row = 0;
    for (size_t i = 0; i < out.seqs.size(); ++i) {
        const sched::ScheduledSeq& s = out.seqs[i];
        if (!isEmbedSid(s.id)) { // a generating sequence's rows for the drafter, if any
            row += size_t(m_mtpRows[i]);
            continue;
        }
        const auto& [id, input] = m_embedSeqs.at(s.id);
        EmbedLive& e = m_embeds.at(id);
        const int length = int(e.request.inputs[size_t(input)].size());
        std::vector<double>& sum = e.sums[size_t(input)];
        if (s.start == 0) { // the first chunk (again, after a preemption): start over
            sum.assign(E, 0.0);
            e.rows[size_t(input)] = 0;
        }
        for (int k = 0; k < s.numTokens; ++k) {
            if (!pooledRow(e.pooling, s.start + k, length, m_model->dims().causal)) continue;
            if ((row + 1) * E > hidden.size()) return; // cannot happen: one row per wanted token
            const float* h = &hidden[row++ * E];
            for (size_t j = 0; j < E; ++j) sum[j] += double(h[j]);
            ++e.rows[size_t(input)];
        }
    }
}

void EngineImpl::finishEmbeds(const sched::SchedulerOutput& out) {
    for (const sched::ScheduledSeq& s : out.seqs) {
        if (!isEmbedSid(s.id) || !s.samples) continue;
        auto seq = m_embedSeqs.find(s.id);
        if (seq == m_embedSeqs.end()) continue;
        const auto [id, input] = seq->second;
        m_embedSeqs.erase(seq);
        m_sched->finish(s.id, sched::FinishReason::Length); // no-op when update() ended it
        m_sched->release(s.id);
        auto it = m_embeds.find(id);
        if (it == m_embeds.end()) continue;
        EmbedLive& e = it->second;
        std::erase(e.active, s.id);
        e.done[size_t(input)] = true;
        if (++e.numDone < int(e.request.inputs.size())) continue;

        EmbeddingResult result;
        const bool scores = m_summary.rankOutputs > 0; // as they are: no cut, no normalizing
        const size_t E = size_t(scores ? m_summary.rankOutputs : m_summary.nEmbd);
        const size_t keep = e.request.dimensions > 0 ? size_t(e.request.dimensions) : E;
        for (size_t i = 0; i < e.sums.size(); ++i) {
            const double div = std::max(1, e.rows[i]);
            std::vector<float> v(keep);
            double norm = 0.0;
            for (size_t j = 0; j < keep; ++j) {
                const double x = e.sums[i][j] / div;
                norm += x * x;
                v[j] = float(x);
            }
            if (e.request.normalize && !scores && norm > 0.0) {
                const double inv = 1.0 / std::sqrt(norm);
                for (size_t j = 0; j < keep; ++j) v[j] = float(double(e.sums[i][j]) / div * inv);
            }
            result.vectors.push_back(std::move(v));
            result.promptTokens += int32_t(e.request.inputs[i].size());
        }
        const auto now = Clock::now();
        result.queueMs = msBetween(e.submitted, e.firstScheduled);
        result.computeMs = msBetween(e.firstScheduled, now);
        std::shared_ptr<EmbeddingSink> sink = std::move(e.request.sink);
        m_embeds.erase(it);
        --m_queued;
        sink->onEmbeddings(std::move(result));
    }
}

void EngineImpl::cancelEmbed(RequestId id, const Status& why) {
    auto it = m_embeds.find(id);
    if (it == m_embeds.end()) return;
    for (sched::RequestId sid : it->second.active) {
        m_sched->cancel(sid);
        m_sched->release(sid);
        m_embedSeqs.erase(sid);
    }
    std::shared_ptr<EmbeddingSink> sink = std::move(it->second.request.sink);
    m_embeds.erase(it);
    --m_queued;
    sink->onError(why);
}

void EngineImpl::failEmbeds(const Status& error) {
    std::vector<RequestId> ids;
    for (const auto& [id, e] : m_embeds) ids.push_back(id);
    for (RequestId id : ids) cancelEmbed(id, error);
    m_embedOrder.clear();
}

} // namespace runtime
} // namespace hearth
