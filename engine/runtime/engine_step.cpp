// One engine step: schedule, copy-on-write copies, the batched forward pass, sampling (forking
// the other choices of an n > 1 request off its first token), update, and streaming the output.
#include "runtime/engine_impl.h"

#include <algorithm>

namespace hearth::runtime {

namespace {

// How a grammar ends a choice at this token.
enum class GrammarEnd {
    None,
    Complete, // the text is a sentence nothing may extend: end after this token
    DeadEnd,  // no token can continue the grammar: end now, without this token
};

struct Emit {
    RequestId id;
    int choice;
    TokenInfo info;
    bool forkedFinished = false; // a forked choice whose first token already ended it
    bool forked = false;
    GrammarEnd grammarEnd = GrammarEnd::None;
};

// Samples one choice's next token under its grammar (if any). At a dead end the token given to
// the scheduler is a stop token when there is one (it then ends the sequence itself).
sample::SampleResult sampleChoice(Choice& ch, std::span<const float> logits, const sched::Request& r,
                                  GrammarEnd& end) {
    end = GrammarEnd::None;
    if (!ch.constraint) return ch.sampler->sample(logits, ch.generated);
    const std::span<const uint64_t> mask = ch.constraint->allowed();
    sample::SampleResult res;
    if (!mask.empty()) res = ch.sampler->sample(logits, ch.generated, mask);
    if (mask.empty() || res.token < 0 || !ch.constraint->accept(res.token).isOk()) {
        end = GrammarEnd::DeadEnd;
        res = {};
        res.token = r.stopTokens.empty() ? 0 : r.stopTokens.front();
        return res;
    }
    if (ch.constraint->complete()) end = GrammarEnd::Complete;
    return res;
}

TokenInfo tokenInfo(const sample::SampleResult& res, std::span<const float> row, bool keepLogits) {
    TokenInfo info;
    info.id = res.token;
    info.logprob = res.logprob;
    for (const auto& t : res.top) info.topLogprobs.push_back({t.token, t.logprob});
    if (keepLogits) info.logits.assign(row.begin(), row.end());
    return info;
}

} // namespace

Status EngineImpl::step() {
    sched::SchedulerOutput out = m_sched->schedule();
    if (out.empty()) return Status::ok();
    for (const kv::BlockCopy& c : out.copies) HEARTH_RETURN_IF_ERROR(m_runner->copyBlock(c.src, c.dst));
    for (const auto& [src, dst] : out.stateCopies) HEARTH_RETURN_IF_ERROR(m_runner->copyState(src, dst));
    const auto now = Clock::now();
    graph::Batch batch;
    std::vector<std::vector<int32_t>> tables;
    tables.reserve(out.seqs.size());
    for (size_t i = 0; i < out.seqs.size(); ++i) {
        const sched::ScheduledSeq& s = out.seqs[i];
        auto table = m_cache->blockTable(s.id);
        if (m_states) batch.states.push_back({s.stateRead, s.stateWrite, s.snapshots});
        if (addEmbedTokens(s, int(i), batch, now)) {
            tables.emplace_back(table.begin(), table.end());
            continue;
        }
        const sched::Request* r = m_sched->request(s.id);
        Live& live = m_live.at(publicId(s.id));
        if (!live.scheduled) {
            live.scheduled = true;
            live.firstScheduled = now;
        }
        tables.emplace_back(table.begin(), table.end());
        for (int k = 0; k < s.numTokens; ++k) {
            const int pos = s.start + k;
            batch.tokens.push_back({r->tokens[size_t(pos)], pos, int(i), s.samples && k == s.numTokens - 1});
        }
    }
    for (const auto& t : tables) batch.blockTables.emplace_back(t);
    std::vector<float>& logits = m_logits;
    if (Status st = m_runner->forward(batch, logits, &m_hidden); !st.isOk()) {
        m_sched->abandon(out);
        return st;
    }
    poolHidden(out, m_hidden);

    const size_t V = size_t(m_summary.nVocab);
    std::vector<int32_t> sampled;
    std::vector<Emit> emits;
    size_t row = 0;
    for (const sched::ScheduledSeq& s : out.seqs) {
        if (!s.samples) continue;
        if (isEmbedSid(s.id)) { // its prompt is done: the token only ends the sequence
            sampled.push_back(0);
            continue;
        }
        const RequestId id = publicId(s.id);
        const int c = choiceOf(s.id);
        Live& live = m_live.at(id);
        Choice& ch = live.choices[size_t(c)];
        const std::span<const float> l(&logits[row++ * V], V);
        const sched::Request* req = m_sched->request(s.id);
        GrammarEnd end;
        const sample::SampleResult res = sampleChoice(ch, l, *req, end);
        sampled.push_back(res.token);
        emits.push_back({id, c, tokenInfo(res, l, live.returnLogits)});
        emits.back().grammarEnd = end;
        // The other choices of an n > 1 request start from the same logits, sharing its blocks.
        if (c != 0 || live.choices.size() < 2 || live.choices[1].started) continue;
        for (size_t k = 1; k < live.choices.size(); ++k) {
            Choice& child = live.choices[k];
            child.started = true;
            GrammarEnd childEnd;
            const sample::SampleResult cr = sampleChoice(child, l, *req, childEnd);
            Result<bool> done = m_sched->fork(s.id, schedId(id, int(k)), s.start + s.numTokens, cr.token);
            if (!done) return done.status().withContext("forking choice " + std::to_string(k));
            Emit e{id, int(k), tokenInfo(cr, l, live.returnLogits)};
            e.forked = true;
            e.forkedFinished = *done;
            e.grammarEnd = childEnd;
            emits.push_back(std::move(e));
        }
    }
    m_sched->recordStepTime(out.totalTokens, std::chrono::duration<double, std::milli>(Clock::now() - now).count());
    const std::vector<sched::RequestId> finished = m_sched->update(out, sampled);
    finishEmbeds(out);
    for (Emit& e : emits) {
        const sched::RequestId sid = schedId(e.id, e.choice);
        const sched::Request* r = m_sched->request(sid);
        const bool done = e.forked ? e.forkedFinished
                                   : std::find(finished.begin(), finished.end(), sid) != finished.end();
        if (e.grammarEnd == GrammarEnd::DeadEnd) {
            finishChoice(e.id, e.choice, FinishReason::Error, true);
            continue;
        }
        const bool ended = emitToken(e.id, e.choice, std::move(e.info), done,
                                     r ? r->finish : sched::FinishReason::Cancelled);
        if (!ended && e.grammarEnd == GrammarEnd::Complete) finishChoice(e.id, e.choice, FinishReason::Stop, true);
    }
    std::lock_guard<std::mutex> lock(m_statsMu);
    ++m_stats.steps;
    return Status::ok();
}

bool EngineImpl::emitToken(RequestId id, int choice, TokenInfo info, bool schedFinished,
                           sched::FinishReason schedReason) {
    auto it = m_live.find(id);
    if (it == m_live.end()) return true;
    Live& live = it->second;
    Choice& ch = live.choices[size_t(choice)];
    if (ch.finished) return true;
    ch.generated.push_back(info.id);
    if (!live.produced) {
        live.produced = true;
        live.firstToken = Clock::now();
    }
    // An end-of-generation token ends the choice without being output.
    const bool isStopToken = schedFinished && schedReason == sched::FinishReason::Stop;
    if (!isStopToken) {
        TextStream::Piece piece = ch.text->push(info.id);
        info.choice = choice;
        info.text = std::move(piece.text);
        live.sink->onToken(info);
        if (piece.stopped) {
            finishChoice(id, choice, FinishReason::Stop, false);
            return true;
        }
    }
    if (!schedFinished) return false;
    finishChoice(id, choice, isStopToken ? FinishReason::Stop : FinishReason::Length, true);
    return true;
}

} // namespace hearth::runtime
