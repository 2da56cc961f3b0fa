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

int Scheduler::imageChunk(const Request& r, int start, int n, int budget, const SchedulerOutput& out,
                          bool& image) const {
    image = false;
    for (const Request::Span& sp : r.images) {
        const int end = sp.start + sp.length;
        if (end <= start) continue;
        if (sp.start >= start + n) break;
        if (sp.start > start) return sp.start - start; // the text before the image first
        // The chunk starts inside (or at) the image: all of the rest of it, or nothing.
        const int rest = end - start;
        // Over the budget only beside single decode tokens (an image may outgrow a step).
        if (rest > budget && std::any_of(out.seqs.begin(), out.seqs.end(),
                                         [](const ScheduledSeq& q) { return q.numTokens != 1; }))
            return 0;
        image = r.imagesAtOnce;
        if (image) {
            // Seen at once: the step's other sequences decode one token each, and hold no
            // other image.
            if (out.withinSequence) return 0;
            for (const ScheduledSeq& q : out.seqs)
                if (q.numTokens != 1) return 0;
        }
        return rest;
    }
    // Text only; with an image seen at once in the step, no prompt chunk joins it.
    return out.withinSequence ? 0 : n;
}

void Scheduler::assignState(Request& r, ScheduledSeq& seq) {
    if (!m_states) return;
    seq.stateWrite = m_states->liveSlot(r.id);
    seq.stateRead = seq.start == 0 ? -1 : r.stateResume >= 0 ? r.stateResume : seq.stateWrite;
    const int bs = m_cache.blockSize();
    const int promptLast = r.promptLength / bs * bs;
    // Prefix snapshots only where the tokens are the sequence's own (never inside drafts).
    const int own = seq.start + seq.numTokens - int(seq.drafts.size());
    for (int p = (seq.start / bs + 1) * bs; p <= own; p += bs) {
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
    r.draft.clear();
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
        if (int(r.tokens.size()) - r.numComputed == 1 && r.numComputed >= r.promptLength)
            decoding += 1 + int(r.draft.size());
    }
    int prefillBudget = decoding > 0 ? prefillAllowance(decoding) : budget;

    // A running sequence whose next chunk is an image seen at once gets its step: the others
    // decode one token each beside it (no drafts, no prompt chunks) until it has been computed.
    RequestId dueImage = 0;
    for (RequestId id : m_running) {
        const Request& r = *m_requests.at(id);
        if (!r.imagesAtOnce || r.numComputed >= r.promptLength) continue;
        for (const Request::Span& sp : r.images)
            if (sp.start <= r.numComputed && r.numComputed < sp.start + sp.length) dueImage = dueImage ? dueImage : id;
    }

    // Running sequences first: each gets its decode token (and its drafts) or its next prefill chunk.
    for (size_t i = 0; i < m_running.size() && budget > 0;) {
        Request& r = *m_requests.at(m_running[i]);
        const int remaining = int(r.tokens.size()) - r.numComputed;
        const bool prefill = r.numComputed < r.promptLength;
        int n = std::min(remaining, prefill ? std::min(budget, prefillBudget) : budget);
        std::vector<int32_t> drafts = std::move(r.draft);
        r.draft.clear();
        bool image = false;
        if (dueImage && r.id != dueImage) {
            drafts.clear(); // beside an image seen at once: one token, or nothing
            if (prefill || n != 1) n = 0;
        }
        if (prefill && n > 0) n = imageChunk(r, r.numComputed, n, std::min(budget, prefillBudget), out, image);
        if (out.withinSequence && !image && n != 1) n = 0;
        if (n <= 0) {
            ++i;
            continue;
        }
        if (!prefill && remaining == 1 && !drafts.empty()) {
            // Every accepted draft and the token after them must fit max_tokens and the context.
            const int room = std::min({budget - 1, r.maxTokens - r.numGenerated() - 1,
                                       m_config.contextLength - int(r.tokens.size()) - 1});
            drafts.resize(size_t(std::clamp(room, 0, int(drafts.size()))));
            n += int(drafts.size());
        } else {
            drafts.clear();
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
        std::vector<int32_t> draftStates;
        if (m_states && !drafts.empty()) {
            // The state at each draft position, to resume from after a rejection: as many
            // drafts as slots can be had.
            for (size_t d = 0; d < drafts.size(); ++d) {
                const int32_t slot = m_states->acquireScratch();
                if (slot < 0) break;
                draftStates.push_back(slot);
            }
            n -= int(drafts.size() - draftStates.size());
            drafts.resize(draftStates.size());
        }
        out.withinSequence = out.withinSequence || image;
        out.seqs.push_back({r.id, r.numComputed, n, r.numComputed + n - int(drafts.size()) == int(r.tokens.size())});
        out.seqs.back().drafts = std::move(drafts);
        out.seqs.back().draftStates = std::move(draftStates);
        assignState(r, out.seqs.back());
        // A prefix snapshot after the sequence's own last token holds the state a draft rejected
        // at once resumes from: that slot serves, and the scratch slot goes back.
        ScheduledSeq& seq = out.seqs.back();
        for (const auto& [p, slot] : seq.snapshots)
            if (!seq.draftStates.empty() && p == seq.start + 1) {
                m_states->releaseScratch(seq.draftStates[0]);
                seq.draftStates[0] = slot;
            }
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
        bool image = false;
        n = imageChunk(r, start, n, std::min(budget, prefillBudget), out, image);
        if (n <= 0) break;
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
        out.withinSequence = out.withinSequence || image;
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

std::vector<RequestId> Scheduler::update(const SchedulerOutput& out, std::span<const int32_t> sampled,
                                         std::span<const int> counts) {
    std::vector<RequestId> finished;
    size_t k = 0, next = 0; // k: sampling sequences seen; next: their first token in `sampled`
    // Draft-position states are released now: a slot keeps its contents until a later step's
    // work writes it, and the copy of the one resumed from (below) runs before any such work.
    for (const ScheduledSeq& s : out.seqs) releaseDraftStates(s);
    for (const ScheduledSeq& s : out.seqs) {
        size_t first = next, count = 0;
        if (s.samples) {
            count = k < counts.size() ? size_t(std::max(0, counts[k])) : 1;
            count = std::min(count, sampled.size() - std::min(sampled.size(), first));
            // A draft counts as accepted only where the token given equals it.
            size_t matched = 0;
            while (matched < s.drafts.size() && matched + 1 < count && sampled[first + matched] == s.drafts[matched])
                ++matched;
            count = std::min(count, matched + 1);
            next += count;
            ++k;
        }
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
        // Of the drafts, the accepted ones (all but the last token given) hold valid K/V.
        const int accepted = count > 0 ? int(count) - 1 : 0;
        const int rejected = int(s.drafts.size()) - accepted;
        // Hybrid models: the recurrent state resumes after the last accepted token (copied into
        // the live slot before the next step's work).
        if (m_states && rejected > 0 && size_t(accepted) < s.draftStates.size())
            m_pendingStateCopies.push_back({s.draftStates[size_t(accepted)], m_states->liveSlot(r.id)});
        r.numComputed = s.start + s.numTokens - rejected;
        for (int d = 0; d < accepted; ++d) r.tokens.push_back(s.drafts[size_t(d)]);
        if (rejected > 0) m_cache.truncate(r.id, r.numComputed);
        m_cache.cacheComputedBlocks(r.id, r.tokens, r.numComputed);
        if (count == 0) continue;
        // Accepted drafts equal the tokens sampled at their positions: appended one at a time,
        // any of them may end the request (the tokens after it are dropped).
        for (int d = 0; d < accepted; ++d) r.tokens.pop_back();
        for (size_t t = 0; t < count; ++t) {
            const int32_t token = sampled[first + t];
            r.tokens.push_back(token);
            const FinishReason reason = finishFor(r, token);
            if (reason != FinishReason::None) {
                finishRequest(r, reason);
                finished.push_back(r.id);
                break;
            }
        }
    }
    return finished;
}

bool Scheduler::decoding(RequestId id) const {
    auto it = m_requests.find(id);
    if (it == m_requests.end()) return false;
    const Request& r = *it->second;
    return r.state == RequestState::Running && r.numComputed >= r.promptLength &&
           int(r.tokens.size()) - r.numComputed == 1;
}

bool Scheduler::setDraft(RequestId id, std::vector<int32_t> draft) {
    if (!decoding(id)) return false;
    Request& r = *m_requests.at(id);
    if (r.maxTokens - r.numGenerated() <= 1) return false;
    r.draft = std::move(draft);
    return true;
}

void Scheduler::abandon(const SchedulerOutput& out) {
    if (!m_states) return;
    for (const ScheduledSeq& s : out.seqs) {
        for (const auto& [p, slot] : s.snapshots) m_states->abandonSnapshot(slot);
        releaseDraftStates(s);
    }
}

void Scheduler::releaseDraftStates(const ScheduledSeq& s) {
    if (!m_states) return;
    for (int32_t slot : s.draftStates) m_states->releaseScratch(slot);
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
    if (tokens <= kStepTable && ms > 0.0) {
        // The table holds times at a reference speed; m_speed follows how fast steps run now (a
        // warming cache, a busier machine), so sizes last seen long ago keep their proportions.
        double& t = m_stepMs[size_t(tokens)];
        if (t > 0.0) {
            m_speed *= std::pow(ms / (t * m_speed), 0.1);
            t = 0.8 * t + 0.2 * ms / m_speed;
        } else {
            t = ms / m_speed;
        }
    }
}

std::optional<std::pair<double, double>> Scheduler::stepTimeFit() const {
    if (m_w <= 0.0) return std::nullopt;
    const double meanN = m_sn / m_w, meanT = m_st / m_w;
    const double varN = m_snn / m_w - meanN * meanN, cov = m_snt / m_w - meanN * meanT;
    if (varN <= 1e-6 || cov <= 0.0) return std::nullopt;
    const double perToken = cov / varN;
    return std::pair{meanT - perToken * meanN, perToken};
}

int Scheduler::prefillAllowance(int decoding) const {
    if (m_config.decodeStallFactor <= 0.0f) return m_config.maxBatchedTokens;
    const double f = m_config.decodeStallFactor;
    // Without a model yet (or a degenerate one) assume time proportional to tokens.
    double baseOverPerToken = 0.0;
    if (const auto fit = stepTimeFit(); fit && fit->first > 0.0) baseOverPerToken = fit->first / fit->second;
    // base + p (d + k) <= f (base + p d)  =>  k <= (f - 1) (d + base / p)
    const double k = (f - 1.0) * (double(decoding) + baseOverPerToken);
    return int(std::clamp(std::floor(k + 1e-6), 16.0, double(m_config.maxBatchedTokens)));
}

double Scheduler::stepTimeMs(int tokens) const {
    if (tokens <= 0) return 0.0;
    tokens = std::min(tokens, kStepTable);
    if (m_stepMs[size_t(tokens)] > 0.0) return m_stepMs[size_t(tokens)] * m_speed;
    int below = tokens - 1, above = tokens + 1;
    while (below > 0 && m_stepMs[size_t(below)] <= 0.0) --below;
    while (above <= kStepTable && m_stepMs[size_t(above)] <= 0.0) ++above;
    const bool haveBelow = below > 0, haveAbove = above <= kStepTable;
    if (haveBelow && haveAbove) {
        const double t = double(tokens - below) / double(above - below);
        return (m_stepMs[size_t(below)] * (1.0 - t) + m_stepMs[size_t(above)] * t) * m_speed;
    }
    if (haveAbove) return m_stepMs[size_t(above)] * m_speed; // a smaller step takes no longer (conservative)
    if (!haveBelow) return 0.0;
    // Beyond the largest size seen: the fitted time per token if there is one, else a tenth of
    // that step's time per token (extra tokens cost far less than a step's fixed part).
    const double belowMs = m_stepMs[size_t(below)] * m_speed;
    const auto fit = stepTimeFit();
    const double perToken = fit ? fit->second : 0.1 * belowMs / double(below);
    return belowMs + perToken * double(tokens - below);
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
