// A draft model for speculative decoding: a smaller model of the same vocabulary, run by the same
// engine code on its own K/V cache, that proposes each sequence's next tokens greedily. One call
// drafts for every sequence that wants a draft: it first computes the tokens the sequence gained
// since its last draft (after a rejection, the cache is cut back to the longest prefix it shares
// with the sequence), then the drafted tokens one batched step at a time.
#pragma once

#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "hearth/tokenizer.h"
#include "kv/kv_cache_manager.h"
#include "model/arch.h"
#include "runtime/model_drafter.h"
#include "runtime/model_runner.h"

#include <memory>
#include <optional>
#include <unordered_map>

namespace hearth::runtime {

struct DraftModelConfig {
    std::string path;
    std::string device = "cpu"; // where it runs (the target's device by default)
    KvType kvType = KvType::F16;
    int contextLength = 0;      // the target's per-sequence context
    int maxNumSeqs = 16;        // sequences drafted for at once
    uint64_t kvMemoryBytes = 0; // 0: enough for maxNumSeqs full contexts, within the memory available
    cpu::ThreadPool* pool = nullptr;
    // The target's runner and file (a multi-token-prediction head: weights of the same mapping
    // are shared, not copied); both must outlive the drafter.
    const ModelRunner* target = nullptr;
    const gguf::File* targetFile = nullptr;
    // A multi-token-prediction head's drafts from the first `shortlist` token ids only (0: all;
    // model::loadMtpHead).
    int shortlist = 0;
};

// The block size of a drafter's K/V cache.
inline constexpr int kDraftBlock = 16;

// A runner for a drafter's model (a draft model, a multi-token-prediction head): its K/V pool
// sized by config (every sequence's full context within the memory available by default).
Result<std::unique_ptr<ModelRunner>> openDraftRunner(const model::Architecture& arch, const DraftModelConfig& config);

// The length of the common start of a and b.
size_t commonPrefix(std::span<const int32_t> a, std::span<const int32_t> b);

class DraftModel final : public ModelDrafter {
public:
    // Loads the draft and checks it against the target: the same kind of tokenizer, the same
    // text for every token id both have, the same BOS, at most 128 ids more or fewer, and
    // positions enough for the target's context. A refusal says which check failed.
    static Result<std::unique_ptr<DraftModel>> open(const DraftModelConfig& config,
                                                    const tokenizer::Tokenizer& target);
    ~DraftModel() override;

    Status draft(std::vector<DraftJob>& jobs) override;
    void release(uint64_t seq) override;
    int lastSteps() const override { return m_lastSteps; }
    bool lastBuiltPlan() const override { return m_lastBuiltPlan; }
    const std::string& name() const override { return m_name; }
    int numBlocks() const override;
    int numFreeBlocks() const override;

private:
    DraftModel() = default;
    struct Seq {
        std::vector<int32_t> cached; // tokens whose K/V the draft cache holds, in order
    };
    // One batched step: rows[i] computes tokens `add[i]` of jobs[i] (from position `from[i]`),
    // the last of which wants logits; returns the greedy next token per row (-1: none).
    Status step(const std::vector<DraftJob*>& jobs, const std::vector<std::vector<int32_t>>& add,
                std::vector<int32_t>& next);

    std::optional<gguf::File> m_file;
    std::unique_ptr<model::Architecture> m_arch;
    std::unique_ptr<ModelRunner> m_runner;
    std::unique_ptr<kv::KvCacheManager> m_cache;
    std::unordered_map<uint64_t, Seq> m_seqs;
    std::vector<float> m_logits;
    std::vector<float> m_conf; // [jobs]: the probability of each job's token of the last step (with its pMin)
    int32_t m_targetVocab = 0;
    int m_maxChunk = 512;
    int m_lastSteps = 0;
    bool m_lastBuiltPlan = false;
    std::string m_name;
};

} // namespace hearth::runtime
