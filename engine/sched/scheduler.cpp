// Continuous-batching scheduler over the paged KV cache (vLLM v1's schedule/update shape).
#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace hearth::sched {

Scheduler::Scheduler(SchedulerConfig config, kv::KvCacheManager& cache, kv::StateCache* states)
    : m_config(config), m_cache(cache), m_states(states) {
    const int bs = std::max(1, cache.blockSize());
    m_config.snapshotEvery = std::max(1, (std::max(1, m_config.snapshotEvery) + bs / 2) / bs) * bs;
    m_config.maxNumSeqs = std::max(1, m_config.maxNumSeqs);
    m_config.maxBatchedTokens = std::max(1, m_config.maxBatchedTokens);
}

Status Scheduler::addRequest(Request request) {
    const std::string name = "request " + std::to_string(request.id);
    if (m_requests.count(request.id)) return invalidArgument(name + " already exists");
    if (request.tokens.empty()) return invalidArgument(name + " has an empty prompt");
    if (request.embedding) request.maxTokens = 0;
    else if (request.maxTokens < 1) return invalidArgument(name + ": max_tokens must be at least 1");
    request.promptLength = int(request.tokens.size());
    if (request.wholePrompt && request.promptLength > m_config.maxBatchedTokens)
        return outOfRange(name + ": its " + std::to_string(request.promptLength) +
                          " tokens must be computed in one step, which holds " +
                          std::to_string(m_config.maxBatchedTokens));
    const int64_t total = int64_t(request.promptLength) + request.maxTokens;
    if (total > m_config.contextLength)
        return outOfRange(name + ": prompt (" + std::to_string(request.promptLength) +
                          " tokens) + max_tokens (" + std::to_string(request.maxTokens) +
                          ") exceeds the context length of " +
                          std::to_string(m_config.contextLength));
    const int64_t blocks = (total + m_cache.blockSize() - 1) / m_cache.blockSize();
    if (blocks > m_cache.numBlocks())
        return outOfRange(name + " needs " + std::to_string(blocks) +
                          " KV blocks but the whole cache has " +
                          std::to_string(m_cache.numBlocks()));
    if (int(m_waiting.size()) >= m_config.maxWaiting)
        return busy("the wait queue is full (" + std::to_string(m_config.maxWaiting) +
                    " requests); try again later");
    request.state = RequestState::Waiting;
    request.numComputed = 0;
    const RequestId id = request.id;
    m_requests.emplace(id, std::make_unique<Request>(std::move(request)));
    m_waiting.push_back(id);
    return Status::ok();
}

void Scheduler::releaseState(Request& r) {
    if (!m_states) return;
    m_states->unpin(r.stateResume);
    r.stateResume = -1;
    m_states->release(r.id);
}

kv::BlockHash Scheduler::blockHash(Request& r, int block) {
    const int bs = m_cache.blockSize();
    while (int(r.blockHashes.size()) <= block) {
        const size_t b = r.blockHashes.size();
        const kv::BlockHash parent = b == 0 ? kv::kRootHash : r.blockHashes.back();
        r.blockHashes.push_back(
            m_cache.hashFn()(parent, std::span<const int32_t>(r.tokens).subspan(b * size_t(bs), size_t(bs))));
    }
    return r.blockHashes[size_t(block)];
}

void Scheduler::assignState(Request& r, ScheduledSeq& seq) {
    if (!m_states) return;
    seq.stateWrite = m_states->liveSlot(r.id);
    seq.stateRead = seq.start == 0 ? -1 : r.stateResume >= 0 ? r.stateResume : seq.stateWrite;
    const int bs = m_cache.blockSize();
    const int promptLast = r.promptLength / bs * bs;
    for (int p = (seq.start / bs + 1) * bs; p <= seq.start + seq.numTokens; p += bs) {
        if (p % m_config.snapshotEvery != 0 && p != promptLast) continue;
        const int32_t slot = m_states->reserveSnapshot(blockHash(r, p / bs - 1));
        if (slot >= 0) seq.snapshots.push_back({p, slot});
    }
}

void Scheduler::preempt(RequestId id) {
    Request& r = *m_requests.at(id);
    releaseState(r);
    m_cache.free(id);
    r.numComputed = 0;
    r.state = RequestState::Waiting;
    ++r.numPreemptions;
    m_running.erase(std::remove(m_running.begin(), m_running.end(), id), m_running.end());
    m_waiting.push_front(id);
}

SchedulerOutput Scheduler::schedule() {
    SchedulerOutput out;
    out.stateCopies = std::move(m_pendingStateCopies);
    m_pendingStateCopies.clear();
    int budget = m_config.maxBatchedTokens;
    // Prompt tokens allowed this step: limited while anyone is decoding (chunked prefill).
    int decoding = 0;
    for (RequestId id : m_running) {
        const Request& r = *m_requests.at(id);
        decoding += int(r.tokens.size()) - r.numComputed == 1 && r.numComputed >= r.promptLength;
    }
    int prefillBudget = decoding > 0 ? prefillAllowance(decoding) : budget;

    // Running sequences first: each gets its decode token or its next prefill chunk.
    for (size_t i = 0; i < m_running.size() && budget > 0;) {
        Request& r = *m_requests.at(m_running[i]);
        const int remaining = int(r.tokens.size()) - r.numComputed;
        const bool prefill = r.numComputed < r.promptLength;
        int n = std::min(remaining, prefill ? std::min(budget, prefillBudget) : budget);
        if (n <= 0) {
            ++i;
            continue;
        }
        bool selfPreempted = false;
        while (!m_cache.allocateSlots(r.id, r.numComputed + n) || !makeWritable(r, out)) {
            const RequestId victim = m_running.back();
            preempt(victim);
            out.preempted.push_back(victim);
            if (victim == r.id) {
                selfPreempted = true;
                break;
            }
        }
        if (selfPreempted) break;
        out.seqs.push_back({r.id, r.numComputed, n, r.numComputed + n == int(r.tokens.size())});
        assignState(r, out.seqs.back());
        budget -= n;
        if (prefill) prefillBudget -= n;
        ++i;
    }

    // Then waiting requests, oldest first, while there is room and no one was just preempted.
    while (!m_waiting.empty() && std::min(budget, prefillBudget) > 0 &&
           int(m_running.size()) < m_config.maxNumSeqs && out.preempted.empty()) {
        Request& r = *m_requests.at(m_waiting.front());
        kv::CachedPrefix prefix = r.embedding ? kv::CachedPrefix{} : m_cache.findCachedPrefix(r.tokens);
        kv::StateSnapshot snapshot;
        if (m_states) {
            // The matched blocks' hashes are this request's: its snapshots' keys start from them.
            if (r.blockHashes.size() < prefix.hashes.size()) r.blockHashes = prefix.hashes;
            // Only as far back as a state snapshot reaches: the recurrent layers resume there.
            snapshot = m_states->find(prefix.hashes);
            prefix.blocks.resize(size_t(snapshot.blocks));
            prefix.hashes.resize(size_t(snapshot.blocks));
            prefix.numTokens = snapshot.blocks * m_cache.blockSize();
        }
        const int start = prefix.numTokens;
        int n = std::min(int(r.tokens.size()) - start, std::min(budget, prefillBudget));
        if (r.wholePrompt && n < int(r.tokens.size()) - start) {
            // Whole or not at all: the whole step's budget when it is the step's only sequence
            // (decoding streams' stall limit aside), else it waits for the next step.
            if (!out.seqs.empty() || int(r.tokens.size()) - start > budget) break;
            n = int(r.tokens.size()) - start;
        }
        if (!m_cache.allocateSlots(r.id, start + n, &prefix)) break;
        if (m_states) {
            if (m_states->acquire(r.id) < 0) {
                m_cache.free(r.id);
                break;
            }
            r.stateResume = snapshot.slot;
            m_states->pin(snapshot.slot);
        }
        if (r.numPreemptions == 0) {
            m_cache.recordPrefixLookup(r.promptLength, std::min(start, r.promptLength));
            r.numCachedPrompt = std::min(start, r.promptLength);
        }
        r.numComputed = start;
        r.state = RequestState::Running;
        m_waiting.pop_front();
        m_running.push_back(r.id);
        out.seqs.push_back({r.id, start, n, start + n == int(r.tokens.size())});
        assignState(r, out.seqs.back());
        budget -= n;
        prefillBudget -= n;
    }

    for (const ScheduledSeq& s : out.seqs) out.totalTokens += s.numTokens;
    return out;
}

bool Scheduler::makeWritable(Request& r, SchedulerOutput& out) {
    // Only the block holding the first position written can be shared (after a fork): later
    // positions live in blocks allocated for this sequence alone.
    Result<std::optional<kv::BlockCopy>> copy = m_cache.prepareWrite(r.id, r.numComputed);
    if (!copy) return false;
    if (copy->has_value()) out.copies.push_back(**copy);
    return true;
}

Result<bool> Scheduler::fork(RequestId parent, RequestId child, int numComputed, int32_t firstToken) {
    auto it = m_requests.find(parent);
    if (it == m_requests.end() || it->second->state != RequestState::Running)
        return invalidArgument("fork: request " + std::to_string(parent) + " is not running");
    if (m_requests.count(child)) return invalidArgument("fork: request " + std::to_string(child) + " exists");
    const Request& p = *it->second;
    if (numComputed != p.promptLength || int(p.tokens.size()) != p.promptLength)
        return invalidArgument("fork: the parent must have computed exactly its prompt");
    int32_t childSlot = -1;
    if (m_states) {
        childSlot = m_states->acquire(child);
        if (childSlot < 0) return outOfMemory("fork: no recurrent state slot is free for another sequence");
    }
    if (Status st = m_cache.fork(parent, child); !st.isOk()) {
        if (m_states) m_states->release(child);
        return st;
    }
    // The child continues from the parent's state after the prompt: copied before the next step.
    if (m_states) m_pendingStateCopies.push_back({m_states->liveSlot(parent), childSlot});
    auto r = std::make_unique<Request>(p);
    r->id = child;
    r->stateResume = -1;
    r->numComputed = numComputed;
    r->tokens.push_back(firstToken);
    r->state = RequestState::Running;
    Request& c = *r;
    m_requests.emplace(child, std::move(r));
    m_running.push_back(child);
    const FinishReason reason = finishFor(c, firstToken);
    if (reason == FinishReason::None) return false;
    finishRequest(c, reason);
    return true;
}

FinishReason Scheduler::finishFor(const Request& r, int32_t token) const {
    if (std::find(r.stopTokens.begin(), r.stopTokens.end(), token) != r.stopTokens.end())
        return FinishReason::Stop;
    if (r.numGenerated() >= r.maxTokens || int(r.tokens.size()) >= m_config.contextLength)
        return FinishReason::Length;
    return FinishReason::None;
}

void Scheduler::finishRequest(Request& r, FinishReason reason) {
    r.state = RequestState::Finished;
    r.finish = reason;
    releaseState(r);
    m_cache.free(r.id);
    m_running.erase(std::remove(m_running.begin(), m_running.end(), r.id), m_running.end());
    m_waiting.erase(std::remove(m_waiting.begin(), m_waiting.end(), r.id), m_waiting.end());
}

std::vector<RequestId> Scheduler::update(const SchedulerOutput& out,
                                         std::span<const int32_t> sampled) {
    std::vector<RequestId> finished;
    size_t k = 0;
    for (const ScheduledSeq& s : out.seqs) {
        const bool hasSample = s.samples && k < sampled.size();
        const int32_t token = hasSample ? sampled[k] : -1;
        if (s.samples) ++k;
        // The step ran: its snapshots hold their states now.
        if (m_states)
            for (const auto& [p, slot] : s.snapshots) m_states->commitSnapshot(slot);
        auto it = m_requests.find(s.id);
        if (it == m_requests.end()) continue;
        Request& r = *it->second;
        if (r.state != RequestState::Running) continue; // cancelled or preempted meanwhile
        if (m_states && r.stateResume >= 0) { // its first step read the snapshot
            m_states->unpin(r.stateResume);
            r.stateResume = -1;
        }
        m_prefillTokens += uint64_t(std::max(0, std::min(s.start + s.numTokens, r.promptLength) -
                                                    std::max(s.start, 0)));
        r.numComputed = s.start + s.numTokens;
        m_cache.cacheComputedBlocks(r.id, r.tokens, r.numComputed);
        if (!hasSample) continue;
        r.tokens.push_back(token);
        const FinishReason reason = finishFor(r, token);
        if (reason != FinishReason::None) {
            finishRequest(r, reason);
            finished.push_back(r.id);
        }
    }
    return finished;
}

void Scheduler::abandon(const SchedulerOutput& out) {
    if (!m_states) return;
    for (const ScheduledSeq& s : out.seqs)
        for (const auto& [p, slot] : s.snapshots) m_states->abandonSnapshot(slot);
}

bool Scheduler::cancel(RequestId id) { return finish(id, FinishReason::Cancelled); }

bool Scheduler::finish(RequestId id, FinishReason reason) {
    auto it = m_requests.find(id);
    if (it == m_requests.end() || it->second->state == RequestState::Finished) return false;
    finishRequest(*it->second, reason);
    return true;
}

void Scheduler::recordStepTime(int tokens, double ms) {
    if (tokens <= 0 || !(ms >= 0.0)) return;
    constexpr double kDecay = 0.97; // remembers roughly the last 30 steps
    const double n = tokens;
    m_w = m_w * kDecay + 1.0;
    m_sn = m_sn * kDecay + n;
    m_st = m_st * kDecay + ms;
    m_snn = m_snn * kDecay + n * n;
    m_snt = m_snt * kDecay + n * ms;
}

int Scheduler::prefillAllowance(int decoding) const {
    if (m_config.decodeStallFactor <= 0.0f) return m_config.maxBatchedTokens;
    const double f = m_config.decodeStallFactor;
    // Without a model yet (or a degenerate one) assume time proportional to tokens.
    double baseOverPerToken = 0.0;
    if (m_w > 0.0) {
        const double meanN = m_sn / m_w, meanT = m_st / m_w;
        const double varN = m_snn / m_w - meanN * meanN, cov = m_snt / m_w - meanN * meanT;
        if (varN > 1e-6 && cov > 0.0) {
            const double perToken = cov / varN;
            const double base = meanT - perToken * meanN;
            if (base > 0.0) baseOverPerToken = base / perToken;
        }
    }
    // base + p (d + k) <= f (base + p d)  =>  k <= (f - 1) (d + base / p)
    const double k = (f - 1.0) * (double(decoding) + baseOverPerToken);
    return int(std::clamp(std::floor(k + 1e-6), 16.0, double(m_config.maxBatchedTokens)));
}

int64_t Scheduler::tokensHeld() const {
    int64_t n = 0;
    for (RequestId id : m_running) n += m_requests.at(id)->numComputed;
    return n;
}

const Request* Scheduler::request(RequestId id) const {
    auto it = m_requests.find(id);
    return it == m_requests.end() ? nullptr : it->second.get();
}

void Scheduler::release(RequestId id) {
    auto it = m_requests.find(id);
    if (it != m_requests.end() && it->second->state == RequestState::Finished) m_requests.erase(it);
}

} // namespace hearth::sched
