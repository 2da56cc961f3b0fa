// The model file's multi-token-prediction head as a drafter (qwen35, qwen35moe): one layer that
// takes the target's final normed hidden row at position p - 1 with the token at p and predicts
// the token at p + 1. Its own K/V cache is kept in step with the target's: the hidden rows of
// every target step (observe) are consumed by a catch-up over the tokens the sequence gained,
// and the drafted positions, computed from the head's own hidden rows, are dropped after each
// draft. Greedy, one batched step per drafted token for all sequences.
#pragma once

#include "hearth/gguf.h"
#include "kv/kv_cache_manager.h"
#include "model/arch.h"
#include "runtime/draft_model.h"
#include "runtime/model_drafter.h"
#include "runtime/model_runner.h"

#include <memory>
#include <optional>
#include <unordered_map>

namespace hearth::runtime {

class MtpDrafter final : public ModelDrafter {
public:
    // Loads the head of the model file at config.path, or of config.targetFile, sharing the
    // weight copies of config.target (an error names why a file has none).
    static Result<std::unique_ptr<MtpDrafter>> open(const DraftModelConfig& config);
    // The bytes its devices hold for its weights beyond the file's mapping.
    uint64_t weightBytes() const;
    ~MtpDrafter() override;

    Status draft(std::vector<DraftJob>& jobs) override;
    void release(uint64_t seq) override;
    bool wantsHidden() const override { return true; }
    void observe(uint64_t seq, int from, std::span<const float> rows) override;
    int lastSteps() const override { return m_lastSteps; }
    bool lastBuiltPlan() const override { return m_lastBuiltPlan; }
    const std::string& name() const override { return m_name; }
    int numBlocks() const override;
    int numFreeBlocks() const override;

    // The target's hidden rows it holds for a sequence.
    int pendingRows(uint64_t seq) const override;
    // Positions whose catch-up had no target row and took zeros (a prefix the target did not
    // compute, such as a cached prompt): drafts there are worse, never wrong.
    uint64_t missingRows() const { return m_missingRows; }

private:
    MtpDrafter() = default;
    struct Seq {
        std::vector<int32_t> cached; // tokens whose K/V the head's cache holds from target rows
        int hFrom = 0;               // the position of hidden's first row
        std::vector<float> hidden;   // the target's rows for positions [hFrom, hFrom + rows)
    };
    // One row of the step: token `token` at position `pos` of job `job` with hidden row `h`.
    struct Row {
        int job = 0;
        int32_t token = 0;
        int32_t pos = 0;
        bool last = false; // wants logits and the head's hidden row
    };
    // The target's row for position p of s into out (zeros when it holds none).
    void targetRow(const Seq& s, int p, float* out);
    // One batched step over rows (hidden rows in hin); per job with a last row: the greedy token
    // (-1: none) in next, its probability in m_conf (with the job's pMin), and the head's hidden
    // row in m_out.
    Status step(const std::vector<DraftJob*>& jobs, const std::vector<Row>& rows,
                const std::vector<float>& hin, std::vector<int32_t>& next);

    std::optional<gguf::File> m_file;
    std::unique_ptr<model::Architecture> m_arch;
    std::unique_ptr<ModelRunner> m_runner;
    std::unique_ptr<kv::KvCacheManager> m_cache;
    std::unordered_map<uint64_t, Seq> m_seqs;
    std::vector<float> m_logits, m_hiddenOut;
    std::vector<float> m_out;    // [jobs][E]: each job's last hidden row of the last step
    std::vector<float> m_conf;   // [jobs]: the probability of each job's token of the last step
    std::vector<float> m_draftH; // [drafting][E]: the hidden rows the next drafting step takes
    int64_t m_width = 0;
    int m_maxChunk = 512;
    int m_lastSteps = 0;
    bool m_lastBuiltPlan = false;
    uint64_t m_missingRows = 0;
    std::string m_name;
};

} // namespace hearth::runtime
