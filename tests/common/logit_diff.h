// How far one forward pass's logits are from a reference's, accumulated row by row: the forward
// tests of every backend (CPU, Vulkan, CUDA) report and bound these figures.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace hearth::test {

struct LogitDiff {
    double maxDiff = 0.0;  // max |ours - reference| over all logits
    double maxLogit = 0.0; // max |reference logit|, for scale
    int argmaxAgree = 0;   // rows whose largest logit is at the same id
    int rows = 0;

    // Adds rows of `vocab` logits; false (nothing added) when the two differ in size.
    bool add(const std::vector<float>& ref, const std::vector<float>& ours, size_t vocab) {
        if (ours.size() != ref.size()) return false;
        for (size_t r = 0; r < ref.size() / vocab; ++r) {
            const float* x = &ref[r * vocab];
            const float* y = &ours[r * vocab];
            for (size_t i = 0; i < vocab; ++i) {
                maxDiff = std::max(maxDiff, double(std::fabs(x[i] - y[i])));
                maxLogit = std::max(maxLogit, double(std::fabs(x[i])));
            }
            argmaxAgree += std::max_element(x, x + vocab) - x == std::max_element(y, y + vocab) - y;
            ++rows;
        }
        return true;
    }
};

} // namespace hearth::test
