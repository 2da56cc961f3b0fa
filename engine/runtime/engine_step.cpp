// One engine step: schedule, copy-on-write copies, the batched forward pass, sampling (forking
// the other choices of an n > 1 request off its first token), update, and streaming the output.
#include "runtime/engine_impl.h"

#include "spec/speculator.h"

#include <algorithm>
#include <unordered_map>

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
    // The sequence's token count before this step's tokens, and this token's index among them
    // (a step verifying drafts emits several; the scheduler keeps those up to a finishing one).
    size_t base = 0;
    int index = 0;
};

// Samples one choice's next token under its grammar (if any). At a dead end the token given to
// the scheduler is a stop token when there is one (it then ends the sequence itself).
sample::SampleResult sampleChoice(Choice& ch, std::span<const float> logits, const sched::Request& r,
                                  GrammarEnd& end, std::span<const int32_t> history) {
    end = GrammarEnd::None;
    if (!ch.constraint) return ch.sampler->sample(logits, history);
    const std::span<const uint64_t> mask = ch.constraint->allowed();
    sample::SampleResult res;
    if (!mask.empty()) res = ch.sampler->sample(logits, history, mask);
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

void EngineImpl::proposeDrafts() {
    if (!m_specRequests) return;
    // What drafts cost: a step's time with k more tokens than the running sequences' decode step,
    // relative to that step (the scheduler's measured step times). Built once per step, at the
    // first sequence that may draft.
    const int running = std::max(1, m_sched->numRunning());
    double cost[65], modelCost[65];
    bool costsKnown = false;
    auto costs = [&] {
        if (costsKnown) return;
        costsKnown = true;
        const double t0 = m_sched->stepTimeMs(running);
        for (int k = 0; k <= 64; ++k) cost[k] = t0 > 0.0 ? m_sched->stepTimeMs(running + k) / t0 : 1.0 + 0.05 * k;
        // A draft model's drafts also cost its own steps: one per drafted token (measured;
        // before the first, a quarter of the model's step is assumed).
        const double draftStep = m_draftStepMs > 0.0 ? m_draftStepMs : 0.25 * t0;
        for (int k = 0; k <= 64; ++k) modelCost[k] = cost[k] + (t0 > 0.0 && k > 0 ? draftStep * k / t0 : 0.25 * k);
    };
    std::vector<DraftJob> jobs;
    std::vector<Choice*> jobChoices;
    // A drafter that follows the target's hidden rows catches up on them now and then even where
    // the sequence does not draft from it (prompt chunks, other drafters), so that what it holds
    // stays bounded: over `tokens`, the part of the sequence computed so far.
    auto catchUp = [&](sched::RequestId sid, std::span<const int32_t> tokens, Choice& ch) {
        if (m_draft && ch.spec->usesDraftModel() && !tokens.empty() &&
            m_draft->pendingRows(sid) > ModelDrafter::kCatchUpRows) {
            jobs.push_back({sid, tokens, 0, {}});
            jobChoices.push_back(&ch);
        }
    };
    for (auto& [id, live] : m_live) {
        for (size_t c = 0; c < live.choices.size(); ++c) {
            Choice& ch = live.choices[c];
            if (!ch.spec || (c > 0 && !ch.started) || ch.finished) continue;
            const sched::RequestId sid = schedId(id, int(c));
            if (!m_sched->decoding(sid)) { // a long prompt in chunks
                if (const sched::Request* r = m_sched->request(sid))
                    catchUp(sid, std::span<const int32_t>(r->tokens).first(size_t(r->numComputed)), ch);
                continue;
            }
            const sched::Request* r = m_sched->request(sid);
            // Never more than could be accepted: max_tokens and the context bound the output.
            const int room = std::min(r->maxTokens - r->numGenerated(), m_summary.contextLength - int(r->tokens.size())) - 1;
            costs();
            const int k = std::min(room, ch.spec->length(cost, double(running - 1)));
            if (k <= 0) {
                catchUp(sid, r->tokens, ch);
                continue;
            }
            std::vector<int32_t> draft = ch.spec->propose(r->tokens, r->promptLength, k, r->stopTokens);
            if (!draft.empty()) {
                m_sched->setDraft(sid, std::move(draft));
                catchUp(sid, r->tokens, ch);
            } else if (m_draft && ch.spec->usesDraftModel()) {
                const int km = std::min(room, ch.spec->modelLength(modelCost, double(running - 1)));
                if (km <= 0) {
                    ch.spec->idle();
                    catchUp(sid, r->tokens, ch);
                    continue;
                }
                jobs.push_back({sid, r->tokens, km, {}, ch.spec->pMin(), {}});
                jobChoices.push_back(&ch);
            }
        }
    }
    if (jobs.empty()) return;
    const auto started = Clock::now();
    const Status st = m_draft->draft(jobs);
    // Its time per step, unless a step built its plan (a first step of that shape is slower).
    if (st.isOk() && m_draft->lastSteps() > 0 && !m_draft->lastBuiltPlan()) {
        const double perStep = msBetween(started, Clock::now()) / m_draft->lastSteps();
        m_draftStepMs = m_draftStepMs > 0.0 ? 0.8 * m_draftStepMs + 0.2 * perStep : perStep;
    }
    if (!st.isOk()) {
        // The draft model failed (its device, its memory): speculation goes on without it.
        m_draft.reset();
        return;
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
        if (jobs[i].draft.empty()) continue;
        jobChoices[i]->spec->proposedByModel();
        m_sched->setDraft(jobs[i].seq, std::move(jobs[i].draft));
    }
}

void EngineImpl::observeHidden(const sched::SchedulerOutput& out, const std::vector<float>& hidden) {
    if (!m_draft || !m_draft->wantsHidden()) return;
    const size_t E = size_t(m_summary.nEmbd);
    size_t row = 0;
    for (size_t i = 0; i < out.seqs.size(); ++i) {
        const size_t n = size_t(m_mtpRows[i]);
        if (n > 0 && (row + n) * E <= hidden.size())
            m_draft->observe(out.seqs[i].id, out.seqs[i].start, std::span<const float>(&hidden[row * E], n * E));
        row += n + size_t(m_embedRows[i]);
    }
}

int32_t EngineImpl::imageRow(const Live& live, int pos) {
    for (const PromptImage& im : live.images) {
        const int64_t k = int64_t(pos) - im.at;
        if (k < 0 || k >= im.embeddings->tokens) continue;
        const size_t E = size_t(im.embeddings->width);
        const float* row = im.embeddings->values.data() + size_t(k) * E;
        m_stepEmbeds.insert(m_stepEmbeds.end(), row, row + E);
        return int32_t(m_stepEmbeds.size() / E) - 1;
    }
    return -1;
}

void EngineImpl::placeRope(const Live& live, int pos, graph::BatchToken& t) {
    // An image of n tokens in a grid of c columns and r rows advances the rotation's position
    // by max(c, r), not n: the positions after it come max(c, r) - n earlier than their own.
    auto side = [](const ImageEmbeddings& e) {
        const int64_t columns = std::max(1, e.columns), rows = (e.tokens + columns - 1) / columns;
        return std::max(columns, rows);
    };
    auto shiftBefore = [&](int64_t at) {
        int64_t shift = 0;
        for (const PromptImage& im : live.images)
            if (im.at + im.embeddings->tokens <= at) shift += im.embeddings->tokens - side(*im.embeddings);
        return shift;
    };
    for (const PromptImage& im : live.images) {
        const int64_t k = int64_t(pos) - im.at;
        if (k < 0 || k >= im.embeddings->tokens) continue;
        const int columns = std::max(1, im.embeddings->columns);
        t.ropePos = int32_t(im.at - shiftBefore(im.at));
        t.gridX = int32_t(k % columns);
        t.gridY = int32_t(k / columns);
        return;
    }
    t.ropePos = int32_t(pos - shiftBefore(pos));
}

Status EngineImpl::step() {
    proposeDrafts();
    sched::SchedulerOutput out = m_sched->schedule();
    if (out.empty()) return Status::ok();
    publishStats(); // what runs in this step, while it runs (a prompt step may take long)
    for (const kv::BlockCopy& c : out.copies) HEARTH_RETURN_IF_ERROR(m_runner->copyBlock(c.src, c.dst));
    for (const auto& [src, dst] : out.stateCopies) HEARTH_RETURN_IF_ERROR(m_runner->copyState(src, dst));
    const auto now = Clock::now();
    graph::Batch batch;
    m_stepEmbeds.clear();
    std::vector<std::vector<int32_t>> tables;
    tables.reserve(out.seqs.size());
    m_mtpRows.assign(out.seqs.size(), 0);
    m_embedRows.assign(out.seqs.size(), 0);
    for (size_t i = 0; i < out.seqs.size(); ++i) {
        const sched::ScheduledSeq& s = out.seqs[i];
        auto table = m_cache->blockTable(s.id);
        if (m_states) {
            batch.states.push_back({s.stateRead, s.stateWrite, s.snapshots});
            for (size_t a = 0; a < s.draftStates.size(); ++a) { // the state after each draft position
                const std::pair<int32_t, int32_t> snap{s.start + 1 + int32_t(a), s.draftStates[a]};
                auto& snaps = batch.states.back().snapshots;
                if (std::find(snaps.begin(), snaps.end(), snap) == snaps.end()) snaps.push_back(snap);
            }
        }
        if (addEmbedTokens(s, int(i), batch, now)) {
            tables.emplace_back(table.begin(), table.end());
            for (size_t t = batch.tokens.size() - size_t(s.numTokens); t < batch.tokens.size(); ++t)
                m_embedRows[i] += batch.tokens[t].wantHidden ? 1 : 0;
            continue;
        }
        const sched::Request* r = m_sched->request(s.id);
        Live& live = m_live.at(publicId(s.id));
        if (!live.scheduled) {
            live.scheduled = true;
            live.firstScheduled = now;
        }
        tables.emplace_back(table.begin(), table.end());
        const int own = s.numTokens - int(s.drafts.size()); // tokens of the sequence; drafts follow
        // The hidden rows of every token for a drafter that follows them (multi-token prediction).
        const Choice& ch = live.choices[size_t(choiceOf(s.id))];
        const bool hidden = m_draft && m_draft->wantsHidden() && ch.spec && ch.spec->usesDraftModel();
        m_mtpRows[i] = hidden ? s.numTokens : 0;
        for (int k = 0; k < s.numTokens; ++k) {
            const int pos = s.start + k;
            const int32_t token = k < own ? r->tokens[size_t(pos)] : s.drafts[size_t(k - own)];
            graph::BatchToken t{token, pos, int(i), s.samples && k >= own - 1};
            t.wantHidden = hidden;
            if (k < own) t.embed = imageRow(live, pos);
            if (m_mrope) placeRope(live, pos, t);
            batch.tokens.push_back(t);
        }
    }
    for (const auto& t : tables) batch.blockTables.emplace_back(t);
    if (!m_stepEmbeds.empty()) {
        batch.embeds = m_stepEmbeds;
        batch.embedWidth = m_summary.nEmbd;
    }
    batch.withinSequence = out.withinSequence;
    std::vector<float>& logits = m_logits;
    if (Status st = m_runner->forward(batch, logits, &m_hidden); !st.isOk()) {
        m_sched->abandon(out);
        return st;
    }
    poolHidden(out, m_hidden);
    observeHidden(out, m_hidden);
    // A prompt read over several steps: how far it is (choice 0's, for the request).
    for (const sched::ScheduledSeq& s : out.seqs) {
        if (s.samples || isEmbedSid(s.id) || choiceOf(s.id) != 0) continue;
        const auto it = m_live.find(publicId(s.id));
        if (it != m_live.end()) it->second.sink->onPromptProgress(s.start + s.numTokens, it->second.promptTokens);
    }

    const size_t V = size_t(m_summary.nVocab);
    std::vector<int32_t> sampled;
    std::vector<int> counts;
    std::vector<Emit> emits;
    size_t row = 0;
    for (const sched::ScheduledSeq& s : out.seqs) {
        if (!s.samples) continue;
        if (isEmbedSid(s.id)) { // its prompt is done: the token only ends the sequence
            sampled.push_back(0);
            counts.push_back(1);
            continue;
        }
        const RequestId id = publicId(s.id);
        const int c = choiceOf(s.id);
        Live& live = m_live.at(id);
        Choice& ch = live.choices[size_t(c)];
        const sched::Request* req = m_sched->request(s.id);
        const size_t base = req->tokens.size();
        if (!s.drafts.empty()) {
            // Verification: row j follows the first j drafts; each token is drawn as a plain
            // decode step would draw it, with the accepted drafts in the sampler's history.
            std::vector<int32_t> history = ch.generated;
            const size_t firstRow = row;
            row += s.drafts.size() + 1;
            const size_t firstEmit = emits.size();
            int32_t deadEnd = -1;
            std::vector<int32_t> tokens = spec::verifyDrafts(
                s.drafts,
                [&](int j) -> int32_t {
                    const std::span<const float> l(&logits[(firstRow + size_t(j)) * V], V);
                    GrammarEnd end;
                    const sample::SampleResult res = sampleChoice(ch, l, *req, end, history);
                    Emit e{id, c, tokenInfo(res, l, live.returnLogits)};
                    e.grammarEnd = end;
                    e.base = base;
                    e.index = j;
                    emits.push_back(std::move(e));
                    if (end == GrammarEnd::DeadEnd) {
                        deadEnd = res.token;
                        return -1;
                    }
                    history.push_back(res.token);
                    return res.token;
                },
                [&](int j) { return ch.spec->synthAccept(j); });
            // A synthetic acceptance emits the draft in place of the token drawn.
            for (size_t t = 0; t < tokens.size() && firstEmit + t < emits.size(); ++t)
                emits[firstEmit + t].info.id = tokens[t];
            const int accepted = deadEnd >= 0 ? int(tokens.size()) : std::max(0, int(tokens.size()) - 1);
            // A grammar's dead end: the token that ends the sequence follows the accepted drafts.
            if (deadEnd >= 0) tokens.push_back(deadEnd);
            sampled.insert(sampled.end(), tokens.begin(), tokens.end());
            counts.push_back(int(tokens.size()));
            ch.spec->record(int(s.drafts.size()), accepted);
            m_draftTokens += s.drafts.size();
            m_acceptedDraftTokens += uint64_t(accepted);
            continue;
        }
        const std::span<const float> l(&logits[row++ * V], V);
        GrammarEnd end;
        const sample::SampleResult res = sampleChoice(ch, l, *req, end, ch.generated);
        sampled.push_back(res.token);
        counts.push_back(1);
        emits.push_back({id, c, tokenInfo(res, l, live.returnLogits)});
        emits.back().grammarEnd = end;
        emits.back().base = base;
        // The other choices of an n > 1 request start from the same logits, sharing its blocks.
        if (c != 0 || live.choices.size() < 2 || live.choices[1].started) continue;
        for (size_t k = 1; k < live.choices.size(); ++k) {
            Choice& child = live.choices[k];
            child.started = true;
            GrammarEnd childEnd;
            const sample::SampleResult cr = sampleChoice(child, l, *req, childEnd, child.generated);
            Result<bool> done = m_sched->fork(s.id, schedId(id, int(k)), s.start + s.numTokens, cr.token);
            if (!done) return done.status().withContext("forking choice " + std::to_string(k));
            Emit e{id, int(k), tokenInfo(cr, l, live.returnLogits)};
            e.forked = true;
            e.forkedFinished = *done;
            e.grammarEnd = childEnd;
            emits.push_back(std::move(e));
        }
    }
    // A step that built its plan took longer than steps of its size will.
    if (!m_runner->builtPlan())
        m_sched->recordStepTime(out.totalTokens, std::chrono::duration<double, std::milli>(Clock::now() - now).count());
    const std::vector<sched::RequestId> finished = m_sched->update(out, sampled, counts);
    finishEmbeds(out);
    // Per sequence, how many of the step's tokens the scheduler kept (all up to a finishing one).
    std::unordered_map<sched::RequestId, size_t> kept;
    for (const Emit& e : emits) {
        if (e.forked || kept.count(schedId(e.id, e.choice))) continue;
        const sched::Request* r = m_sched->request(schedId(e.id, e.choice));
        kept[schedId(e.id, e.choice)] = r && r->tokens.size() > e.base ? r->tokens.size() - e.base : 1;
    }
    for (Emit& e : emits) {
        const sched::RequestId sid = schedId(e.id, e.choice);
        const sched::Request* r = m_sched->request(sid);
        const size_t n = e.forked ? 1 : kept[sid];
        if (size_t(e.index) >= n) continue; // after a token that ended the sequence
        const bool sequenceDone = e.forked ? e.forkedFinished
                                           : std::find(finished.begin(), finished.end(), sid) != finished.end();
        const bool done = sequenceDone && size_t(e.index) + 1 == n;
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
