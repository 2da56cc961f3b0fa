// Predicted-output drafting: alignment of the output's tail with the prediction.
#include "spec/prediction_drafter.h"

#include <algorithm>

namespace hearth::spec {

namespace {

constexpr int kMaxKey = 8; // the longest output tail looked up in the prediction

// The first occurrence of `key` in `text` starting at or after `from`, else -1.
int64_t findFrom(std::span<const int32_t> text, std::span<const int32_t> key, int64_t from) {
    const int64_t n = int64_t(key.size()), end = int64_t(text.size()) - n;
    for (int64_t i = std::max<int64_t>(0, from); i <= end; ++i)
        if (text[size_t(i)] == key[0] && std::equal(key.begin(), key.end(), text.begin() + i)) return i;
    return -1;
}

} // namespace

PredictionDrafter::PredictionDrafter(std::vector<int32_t> prediction) : m_prediction(std::move(prediction)) {}

void PredictionDrafter::propose(std::span<const int32_t> tokens, int promptLength, int maxDraft,
                                std::vector<int32_t>& out) {
    if (maxDraft <= 0 || m_prediction.empty()) return;
    const std::span<const int32_t> pred(m_prediction);
    const std::span<const int32_t> generated =
        tokens.subspan(std::min(tokens.size(), size_t(std::max(0, promptLength))));
    int64_t start = -1;
    if (generated.empty()) {
        start = 0;
    } else {
        // The longest tail of the output found in the prediction, nearest after the last
        // alignment (else anywhere): the output continues from there.
        for (int n = int(std::min<size_t>(kMaxKey, generated.size())); n >= 1 && start < 0; --n) {
            const std::span<const int32_t> key = generated.subspan(generated.size() - size_t(n));
            int64_t at = findFrom(pred, key, m_cursor - n);
            if (at < 0) at = findFrom(pred, key, 0);
            if (at >= 0) start = at + n;
        }
    }
    if (start < 0 || start >= int64_t(pred.size())) return;
    m_cursor = start;
    const int64_t to = std::min<int64_t>(int64_t(pred.size()), start + maxDraft);
    out.insert(out.end(), pred.begin() + start, pred.begin() + to);
}

} // namespace hearth::spec
