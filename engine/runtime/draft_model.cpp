// The draft model: its checks (at load, and from metadata alone for checkDraftModel), and greedy
// drafting over its own paged K/V cache.
#include "runtime/draft_model.h"

#include "hearth/engine.h"

#include "runtime/memory_budget.h"
#include "runtime/step_plan.h"
#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

namespace hearth::runtime {

namespace {

constexpr int32_t kMaxVocabDifference = 128;

Status checkVocabulary(const tokenizer::Tokenizer& draft, const tokenizer::Tokenizer& target) {
    if (draft.modelName() != target.modelName())
        return invalidArgument("the draft model's tokenizer is '" + draft.modelName() + "', the model's '" +
                               target.modelName() + "'");
    const int32_t dv = draft.vocabSize(), tv = target.vocabSize();
    if (std::abs(dv - tv) > kMaxVocabDifference)
        return invalidArgument("the draft model's vocabulary has " + std::to_string(dv) + " tokens, the model's " +
                               std::to_string(tv) + " (at most " + std::to_string(kMaxVocabDifference) +
                               " may differ)");
    if (draft.bos() != target.bos())
        return invalidArgument("the draft model's BOS token is " + std::to_string(draft.bos()) + ", the model's " +
                               std::to_string(target.bos()));
    for (int32_t id = 0; id < std::min(dv, tv); ++id)
        if (draft.tokenText(id) != target.tokenText(id))
            return invalidArgument("the draft model's token " + std::to_string(id) + " is '" +
                                   std::string(draft.tokenText(id)) + "', the model's '" +
                                   std::string(target.tokenText(id)) + "'");
    return Status::ok();
}

// What open() asks of a draft model before loading its weights (see checkDraftModel).
Status checkDraft(const gguf::File& file, const model::Architecture& arch, const tokenizer::Tokenizer& target,
                  int32_t contextLength) {
    const model::ModelDims& dims = arch.dims();
    if (dims.embeddingsOnly) return invalidArgument("it computes embeddings only");
    if (dims.stateBytesPerSlot() > 0) return unsupported("hybrid (recurrent) models cannot draft yet");
    if (dims.maxPositions > 0 && dims.maxPositions < contextLength)
        return invalidArgument("it has positions for " + std::to_string(dims.maxPositions) +
                               " tokens, fewer than the context of " + std::to_string(contextLength));
    Result<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::fromGguf(file);
    if (!tok) return tok.status().withContext("its tokenizer");
    return checkVocabulary(*tok, target);
}

} // namespace

float topProbability(std::span<const float> row, int32_t top, float pMin) {
    if (top < 0 || size_t(top) >= row.size()) return 0.0f;
    const float best = row[size_t(top)];
    const float enough = pMin > 0.0f ? 1.0f / pMin : std::numeric_limits<float>::infinity();
    float sum = 0.0f;
    for (size_t i = 0; i < row.size(); i += 1024) {
        const size_t end = std::min(row.size(), i + 1024);
        for (size_t k = i; k < end; ++k) sum += std::exp(row[k] - best);
        if (sum > enough) break; // below pMin already: the rest only lowers it
    }
    return 1.0f / sum;
}

size_t commonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

DraftModel::~DraftModel() = default;

Result<std::unique_ptr<DraftModel>> DraftModel::open(const DraftModelConfig& config,
                                                     const tokenizer::Tokenizer& target) {
    auto d = std::unique_ptr<DraftModel>(new DraftModel());
    d->m_name = std::filesystem::path(config.path).filename().string();
    auto fail = [&](const Status& s) { return s.withContext("draft model " + d->m_name); };
    Result<gguf::File> file = gguf::File::open(config.path);
    if (!file) return fail(file.status());
    d->m_file.emplace(std::move(*file));
    Result<std::unique_ptr<model::Architecture>> arch = model::loadArchitecture(*d->m_file);
    if (!arch) return fail(arch.status());
    d->m_arch = std::move(*arch);
    if (Status st = checkDraft(*d->m_file, *d->m_arch, target, config.contextLength); !st.isOk()) return fail(st);
    d->m_targetVocab = target.vocabSize();

    Result<std::unique_ptr<ModelRunner>> runner = openDraftRunner(*d->m_arch, config);
    if (!runner) return fail(runner.status());
    d->m_runner = std::move(*runner);
    d->m_cache = std::make_unique<kv::KvCacheManager>(
        kv::KvCacheConfig{.numBlocks = d->m_runner->numBlocks(), .blockSize = kDraftBlock, .prefixCaching = false});
    return d;
}

Result<std::unique_ptr<ModelRunner>> openDraftRunner(const model::Architecture& arch, const DraftModelConfig& config) {
    const uint64_t perToken = kvBytesPerToken(arch.dims(), config.kvType);
    const int ctx = std::max(1, config.contextLength);
    const uint64_t budget = config.kvMemoryBytes > 0
                                ? config.kvMemoryBytes
                                : autoKvBudget(perToken * kDraftBlock, kDraftBlock, ctx, std::max(1, config.maxNumSeqs));
    const uint64_t blocks = perToken ? budget / (perToken * kDraftBlock) : uint64_t(ctx / kDraftBlock + 1);
    if (blocks < uint64_t((ctx + kDraftBlock - 1) / kDraftBlock))
        return outOfMemory("its K/V budget does not hold one full context");
    RunnerConfig rc;
    rc.device = config.device.empty() ? "cpu" : config.device;
    rc.kvType = config.kvType;
    rc.blockSize = kDraftBlock;
    rc.numBlocks = int(std::min<uint64_t>(blocks, 1u << 20));
    rc.contextLength = ctx;
    rc.pool = config.pool;
    rc.shareWeights = config.target;
    return ModelRunner::create(arch, rc);
}

int DraftModel::numBlocks() const { return m_cache->numBlocks(); }
int DraftModel::numFreeBlocks() const { return m_cache->numFreeBlocks(); }

void DraftModel::release(uint64_t seq) {
    m_cache->free(seq);
    m_seqs.erase(seq);
}

Status DraftModel::step(const std::vector<DraftJob*>& jobs, const std::vector<std::vector<int32_t>>& add,
                        std::vector<int32_t>& next) {
    graph::Batch batch;
    std::vector<std::vector<int32_t>> tables;
    tables.reserve(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
        Seq& s = m_seqs[jobs[i]->seq];
        const int from = int(s.cached.size());
        auto table = m_cache->blockTable(jobs[i]->seq);
        tables.emplace_back(table.begin(), table.end());
        for (size_t k = 0; k < add[i].size(); ++k)
            batch.tokens.push_back({add[i][k], int32_t(from + int(k)), int(i), k + 1 == add[i].size()});
    }
    for (const auto& t : tables) batch.blockTables.emplace_back(t);
    HEARTH_RETURN_IF_ERROR(m_runner->forward(batch, m_logits));
    ++m_lastSteps;
    m_lastBuiltPlan = m_lastBuiltPlan || m_runner->builtPlan();
    const size_t V = size_t(m_arch->dims().nVocab);
    next.assign(jobs.size(), -1);
    m_conf.assign(jobs.size(), 1.0f);
    for (size_t i = 0; i < jobs.size(); ++i) {
        Seq& s = m_seqs[jobs[i]->seq];
        s.cached.insert(s.cached.end(), add[i].begin(), add[i].end());
        const std::span<const float> row(&m_logits[i * V], V);
        const int32_t t = sample::argmaxFirst(row);
        next[i] = t < m_targetVocab ? t : -1;
        if (jobs[i]->pMin > 0.0f) m_conf[i] = topProbability(row, t, jobs[i]->pMin);
    }
    return Status::ok();
}

Status DraftModel::draft(std::vector<DraftJob>& jobs) {
    // Catch up: each job's tokens not yet in the draft cache (chunked), the last wanting logits.
    m_lastSteps = 0;
    m_lastBuiltPlan = false;
    std::vector<DraftJob*> active;
    for (DraftJob& j : jobs) {
        j.draft.clear();
        j.confidence.clear();
        if (j.tokens.empty() || j.maxDraft <= 0) continue;
        Seq& s = m_seqs[j.seq];
        const size_t keep = std::min(commonPrefix(s.cached, j.tokens), j.tokens.size() - 1);
        s.cached.resize(keep);
        m_cache->truncate(j.seq, int(keep));
        // Room for the rest of the sequence and the drafts (all but the last is computed).
        if (!m_cache->allocateSlots(j.seq, int(j.tokens.size()) + j.maxDraft - 1)) {
            release(j.seq); // the draft cache is full: no draft for it this time
            continue;
        }
        active.push_back(&j);
    }
    std::vector<int32_t> next;
    while (!active.empty()) {
        // At most m_maxChunk tokens per step: long catch-ups (a new prompt) take several steps.
        std::vector<DraftJob*> stepJobs, ready, later;
        std::vector<std::vector<int32_t>> add;
        std::vector<bool> complete;
        int budget = m_maxChunk;
        for (DraftJob* j : active) {
            const size_t cached = m_seqs[j->seq].cached.size(), left = j->tokens.size() - cached;
            if (budget <= 0) {
                later.push_back(j);
                continue;
            }
            const size_t n = std::min(left, size_t(budget));
            stepJobs.push_back(j);
            add.emplace_back(j->tokens.begin() + std::ptrdiff_t(cached), j->tokens.begin() + std::ptrdiff_t(cached + n));
            complete.push_back(n == left);
            budget -= int(n);
            (n == left ? ready : later).push_back(j);
        }
        HEARTH_RETURN_IF_ERROR(step(stepJobs, add, next));
        for (size_t i = 0; i < stepJobs.size(); ++i)
            if (complete[i]) takeDraft(*stepJobs[i], next[i], m_conf[i]);
        active = std::move(later);
        // The jobs whose catch-up is done draft on, one token per step together.
        std::vector<DraftJob*> drafting;
        for (DraftJob* j : ready)
            if (!j->draft.empty() && int(j->draft.size()) < j->maxDraft) drafting.push_back(j);
        while (!drafting.empty()) {
            std::vector<std::vector<int32_t>> one;
            for (DraftJob* j : drafting) one.push_back({j->draft.back()});
            HEARTH_RETURN_IF_ERROR(step(drafting, one, next));
            std::vector<DraftJob*> still;
            for (size_t i = 0; i < drafting.size(); ++i) {
                if (!takeDraft(*drafting[i], next[i], m_conf[i])) continue;
                if (int(drafting[i]->draft.size()) < drafting[i]->maxDraft) still.push_back(drafting[i]);
            }
            drafting = std::move(still);
        }
    }
    return Status::ok();
}

} // namespace hearth::runtime

namespace hearth {

struct DraftChecker::Impl {
    tokenizer::Tokenizer target;
};

DraftChecker::DraftChecker() = default;
DraftChecker::DraftChecker(DraftChecker&&) noexcept = default;
DraftChecker& DraftChecker::operator=(DraftChecker&&) noexcept = default;
DraftChecker::~DraftChecker() = default;

Result<DraftChecker> DraftChecker::open(const std::string& modelPath) {
    Result<gguf::File> target = gguf::File::open(modelPath);
    if (!target) return target.status().withContext("model " + modelPath);
    Result<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::fromGguf(*target);
    if (!tok) return tok.status().withContext("the model's tokenizer");
    DraftChecker c;
    c.m_impl = std::unique_ptr<Impl>(new Impl{std::move(*tok)});
    return c;
}

Status DraftChecker::check(const std::string& draftPath, int32_t contextLength) const {
    const std::string name = std::filesystem::path(draftPath).filename().string();
    Result<gguf::File> draft = gguf::File::open(draftPath);
    if (!draft) return draft.status().withContext("draft model " + name);
    Result<std::unique_ptr<model::Architecture>> arch = model::loadArchitecture(*draft);
    if (!arch) return arch.status().withContext("draft model " + name);
    if (Status st = runtime::checkDraft(*draft, **arch, m_impl->target, contextLength); !st.isOk())
        return st.withContext("draft model " + name);
    return Status::ok();
}

Status checkDraftModel(const std::string& modelPath, const std::string& draftPath, int32_t contextLength) {
    Result<DraftChecker> checker = DraftChecker::open(modelPath);
    if (!checker) return checker.status();
    return checker->check(draftPath, contextLength);
}

} // namespace hearth
