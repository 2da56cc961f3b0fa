// What the engine asks of a drafter that runs a model of its own (a draft model, or the file's
// multi-token-prediction head): drafts for many sequences in batched steps, released with them.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hearth::runtime {

// One sequence's request for a draft.
struct DraftJob {
    uint64_t seq = 0;
    std::span<const int32_t> tokens; // the sequence so far (prompt and output)
    int maxDraft = 0;
    std::vector<int32_t> draft; // out: at most maxDraft tokens
    // > 0: drafting stops at a token whose probability under the drafter is below this (it is
    // left out); each draft's probability is then also given in `confidence`.
    float pMin = 0.0f;
    std::vector<float> confidence; // out, with pMin > 0: one per draft token
};

// The probability of token `top` (the row's maximum) under softmax(row), exactly as far as it
// matters against pMin: the sum stops once it shows the probability is below pMin.
float topProbability(std::span<const float> row, int32_t top, float pMin);

// Adds a drafted token of probability p to the job's draft, unless there is none (token < 0) or
// p is below the job's pMin; false: drafting stops for this job.
inline bool takeDraft(DraftJob& j, int32_t token, float p) {
    if (token < 0 || (j.pMin > 0.0f && p < j.pMin)) return false;
    j.draft.push_back(token);
    if (j.pMin > 0.0f) j.confidence.push_back(p);
    return true;
}

class ModelDrafter {
public:
    virtual ~ModelDrafter() = default;
    // Fills each job's draft (left empty for a job that cannot be drafted for now, e.g. its
    // cache is full). Errors only when a step fails.
    virtual Status draft(std::vector<DraftJob>& jobs) = 0;
    // The sequence ended: what the drafter holds for it is released.
    virtual void release(uint64_t seq) = 0;
    // Whether it reads the target's final normed hidden rows (observe) of the sequences it
    // drafts for: the engine then asks the target step for every row of theirs.
    virtual bool wantsHidden() const { return false; }
    // The target computed positions [from, from + rows / width) of `seq`: their hidden rows.
    virtual void observe(uint64_t /*seq*/, int /*from*/, std::span<const float> /*rows*/) {}
    // Observed rows not yet consumed: over kCatchUpRows, a job with maxDraft 0 (catch up only)
    // should be given even when the sequence does not draft.
    virtual int pendingRows(uint64_t /*seq*/) const { return 0; }
    static constexpr int kCatchUpRows = 256;

    // The last draft(): the steps it ran, and whether any built its plan (slower than usual).
    virtual int lastSteps() const = 0;
    virtual bool lastBuiltPlan() const = 0;
    virtual const std::string& name() const = 0;
    // Its K/V cache, in blocks.
    virtual int numBlocks() const = 0;
    virtual int numFreeBlocks() const = 0;
};

} // namespace hearth::runtime
