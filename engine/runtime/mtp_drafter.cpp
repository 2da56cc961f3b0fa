// The multi-token-prediction drafter: the target's hidden rows kept per sequence, the head's
// catch-up over them, and greedy drafting from the head's own hidden rows.
#include "runtime/mtp_drafter.h"

#include "sample/sampler.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace hearth::runtime {

MtpDrafter::~MtpDrafter() = default;

Result<std::unique_ptr<MtpDrafter>> MtpDrafter::open(const DraftModelConfig& config) {
    auto d = std::unique_ptr<MtpDrafter>(new MtpDrafter());
    d->m_name =
        std::filesystem::path(config.path).filename().string() + " (multi-token prediction)";
    auto fail = [&](const Status& s) { return s.withContext("multi-token prediction"); };
    // The target's own file when given (its mapping's weights are shared), else a new mapping.
    const gguf::File* source = config.targetFile;
    if (!source) {
        Result<gguf::File> file = gguf::File::open(config.path);
        if (!file) return fail(file.status());
        d->m_file.emplace(std::move(*file));
        source = &*d->m_file;
    }
    Result<std::unique_ptr<model::Architecture>> arch = model::loadMtpHead(*source, config.shortlist);
    if (!arch) return fail(arch.status());
    d->m_arch = std::move(*arch);
    d->m_width = d->m_arch->dims().nEmbd;
    Result<std::unique_ptr<ModelRunner>> runner = openDraftRunner(*d->m_arch, config);
    if (!runner) return fail(runner.status());
    d->m_runner = std::move(*runner);
    d->m_cache = std::make_unique<kv::KvCacheManager>(kv::KvCacheConfig{
        .numBlocks = d->m_runner->numBlocks(), .blockSize = kDraftBlock, .prefixCaching = false});
    return d;
}

uint64_t MtpDrafter::weightBytes() const {
    uint64_t bytes = 0;
    for (const DeviceMemory& m : m_runner->memory()) bytes += m.weightBytes;
    return bytes;
}

int MtpDrafter::numBlocks() const {
    return m_cache->numBlocks();
}
int MtpDrafter::numFreeBlocks() const {
    return m_cache->numFreeBlocks();
}

int MtpDrafter::pendingRows(uint64_t seq) const {
    auto it = m_seqs.find(seq);
    return it == m_seqs.end() ? 0 : int(it->second.hidden.size() / size_t(m_width));
}

void MtpDrafter::release(uint64_t seq) {
    m_cache->free(seq);
    m_seqs.erase(seq);
}

void MtpDrafter::observe(uint64_t seq, int from, std::span<const float> rows) {
    if (rows.empty() || rows.size() % size_t(m_width) != 0 || from < 0) return;
    Seq& s = m_seqs[seq];
    const int held = int(s.hidden.size() / size_t(m_width));
    if (from < s.hFrom || from > s.hFrom + held) { // recomputed from further back, or a gap
        s.hFrom = from;
        s.hidden.assign(rows.begin(), rows.end());
        return;
    }
    // Rows from `from` on replace what was held there (rows of rejected drafts).
    s.hidden.resize(size_t(from - s.hFrom) * size_t(m_width));
    s.hidden.insert(s.hidden.end(), rows.begin(), rows.end());
}

void MtpDrafter::targetRow(const Seq& s, int p, float* out) {
    const size_t E = size_t(m_width);
    const int held = int(s.hidden.size() / E);
    if (p >= s.hFrom && p < s.hFrom + held) {
        std::memcpy(out, &s.hidden[size_t(p - s.hFrom) * E], E * sizeof(float));
        return;
    }
    std::fill(out, out + E, 0.0f); // position -1 (before the first token), or a row not held
    if (p >= 0) ++m_missingRows;
}

Status MtpDrafter::step(const std::vector<DraftJob*>& jobs, const std::vector<Row>& rows,
                        const std::vector<float>& hin, std::vector<int32_t>& next) {
    graph::Batch batch;
    std::vector<std::vector<int32_t>> tables;
    tables.reserve(jobs.size());
    for (const DraftJob* j : jobs) {
        auto table = m_cache->blockTable(j->seq);
        tables.emplace_back(table.begin(), table.end());
    }
    for (const Row& r : rows) {
        graph::BatchToken t{r.token, r.pos, r.job, r.last};
        t.wantHidden = r.last;
        batch.tokens.push_back(t);
    }
    for (const auto& t : tables) batch.blockTables.emplace_back(t);
    batch.hiddenIn = hin;
    batch.hiddenWidth = m_width;
    HEARTH_RETURN_IF_ERROR(m_runner->forward(batch, m_logits, &m_hiddenOut));
    ++m_lastSteps;
    m_lastBuiltPlan = m_lastBuiltPlan || m_runner->builtPlan();
    const size_t V = size_t(m_arch->dims().logitWidth()), E = size_t(m_width);
    next.assign(jobs.size(), -1);
    m_conf.assign(jobs.size(), 1.0f);
    m_out.resize(jobs.size() * E);
    size_t wanted = 0;
    for (const Row& r : rows) {
        if (!r.last) continue;
        if ((wanted + 1) * V > m_logits.size() || (wanted + 1) * E > m_hiddenOut.size())
            return internalError("the multi-token-prediction step gave fewer rows than wanted");
        const std::span<const float> row(&m_logits[wanted * V], V);
        next[size_t(r.job)] = sample::argmaxFirst(row);
        const float pMin = jobs[size_t(r.job)]->pMin;
        m_conf[size_t(r.job)] = pMin > 0.0f ? topProbability(row, next[size_t(r.job)], pMin) : 1.0f;
        std::memcpy(&m_out[size_t(r.job) * E], &m_hiddenOut[wanted * E], E * sizeof(float));
        ++wanted;
    }
    return Status::ok();
}

Status MtpDrafter::draft(std::vector<DraftJob>& jobs) {
    m_lastSteps = 0;
    m_lastBuiltPlan = false;
    const size_t E = size_t(m_width);
    std::vector<DraftJob*> active;
    for (DraftJob& j : jobs) {
        j.draft.clear();
        j.confidence.clear();
        if (j.tokens.empty() || j.maxDraft < 0) continue;
        Seq& s = m_seqs[j.seq];
        const size_t keep = std::min(commonPrefix(s.cached, j.tokens), j.tokens.size() - 1);
        s.cached.resize(keep);
        m_cache->truncate(j.seq, int(keep));
        // Room for the sequence and the drafts (each but the last is computed).
        if (!m_cache->allocateSlots(j.seq, int(j.tokens.size()) + std::max(0, j.maxDraft - 1))) {
            release(j.seq); // the cache is full: no draft for it this time
            continue;
        }
        active.push_back(&j);
    }
    std::vector<int32_t> next;
    std::vector<float> hin;
    std::vector<DraftJob*> drafting;
    // The catch-up: positions [cached, N) from the target's rows (x_p with h_{p-1}), at most
    // m_maxChunk per step; the last position of a job that drafts wants its first draft.
    while (!active.empty()) {
        std::vector<DraftJob*> stepJobs, later;
        std::vector<Row> rows;
        std::vector<bool> complete;
        hin.clear();
        int budget = m_maxChunk;
        for (DraftJob* j : active) {
            Seq& s = m_seqs[j->seq];
            const int N = int(j->tokens.size()), from = int(s.cached.size()), left = N - from;
            if (budget <= 0) {
                later.push_back(j);
                continue;
            }
            const int n = std::min(left, budget);
            const int index = int(stepJobs.size());
            stepJobs.push_back(j);
            for (int p = from; p < from + n; ++p) {
                rows.push_back({index, j->tokens[size_t(p)], p, p == N - 1 && j->maxDraft > 0});
                hin.resize(hin.size() + E);
                targetRow(s, p - 1, &hin[hin.size() - E]);
            }
            s.cached.insert(s.cached.end(), j->tokens.begin() + from, j->tokens.begin() + from + n);
            budget -= n;
            complete.push_back(n == left);
            if (n < left) later.push_back(j);
        }
        HEARTH_RETURN_IF_ERROR(step(stepJobs, rows, hin, next));
        for (size_t i = 0; i < stepJobs.size(); ++i) {
            DraftJob* j = stepJobs[i];
            if (!complete[i] || j->maxDraft <= 0 || !takeDraft(*j, next[i], m_conf[i])) continue;
            if (j->maxDraft > 1) {
                drafting.push_back(j);
                m_draftH.insert(m_draftH.end(), m_out.begin() + std::ptrdiff_t(i * E),
                                m_out.begin() + std::ptrdiff_t((i + 1) * E));
            }
        }
        active = std::move(later);
    }
    // Drafting: one token per step for every job at once, each from the head's own hidden row.
    while (!drafting.empty()) {
        std::vector<Row> rows;
        for (size_t i = 0; i < drafting.size(); ++i) {
            const DraftJob* j = drafting[i];
            rows.push_back(
                {int(i), j->draft.back(), int32_t(j->tokens.size() + j->draft.size() - 1), true});
        }
        HEARTH_RETURN_IF_ERROR(step(drafting, rows, m_draftH, next));
        std::vector<DraftJob*> still;
        m_draftH.clear();
        for (size_t i = 0; i < drafting.size(); ++i) {
            if (!takeDraft(*drafting[i], next[i], m_conf[i])) continue;
            if (int(drafting[i]->draft.size()) >= drafting[i]->maxDraft) continue;
            still.push_back(drafting[i]);
            m_draftH.insert(m_draftH.end(), m_out.begin() + std::ptrdiff_t(i * E),
                            m_out.begin() + std::ptrdiff_t((i + 1) * E));
        }
        drafting = std::move(still);
    }
    m_draftH.clear();
    // The drafted positions' K/V came from the head's rows, not the target's: dropped. The
    // target's rows before the last token are no longer needed.
    for (DraftJob& j : jobs) {
        auto it = m_seqs.find(j.seq);
        if (it == m_seqs.end() || !m_cache->hasSequence(j.seq)) continue;
        Seq& s = it->second;
        m_cache->truncate(j.seq, int(s.cached.size()));
        const int keepFrom = int(s.cached.size()) - 1;
        const int held = int(s.hidden.size() / E);
        const int drop = std::clamp(keepFrom - s.hFrom, 0, held);
        s.hidden.erase(s.hidden.begin(), s.hidden.begin() + std::ptrdiff_t(size_t(drop) * E));
        s.hFrom += drop;
    }
    return Status::ok();
}

} // namespace hearth::runtime

namespace hearth {

Status checkMtpHead(const std::string& modelPath) {
    Result<gguf::File> file = gguf::File::open(modelPath);
    if (!file) return file.status().withContext("model " + modelPath);
    Result<std::unique_ptr<model::Architecture>> head = model::loadMtpHead(*file);
    return head.isOk() ? Status::ok() : head.status();
}

} // namespace hearth
