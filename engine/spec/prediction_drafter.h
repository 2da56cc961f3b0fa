// Drafts from a predicted output (OpenAI's `prediction`): the text the client expects back, such
// as a file being edited. The output is kept aligned with the prediction: while it follows the
// prediction the next predicted tokens are proposed; after it departs (an edit), its last tokens
// are looked up in the prediction to find where it rejoins.
#pragma once

#include "spec/drafter.h"

namespace hearth::spec {

class PredictionDrafter final : public Drafter {
public:
    explicit PredictionDrafter(std::vector<int32_t> prediction);
    void propose(std::span<const int32_t> tokens, int promptLength, int maxDraft,
                 std::vector<int32_t>& out) override;
    size_t size() const { return m_prediction.size(); }

private:
    std::vector<int32_t> m_prediction;
    int64_t m_cursor = 0; // where in the prediction the output was last aligned
};

} // namespace hearth::spec
