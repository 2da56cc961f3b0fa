// Vectorizable attention for one head: scores over positions (contiguous thanks to the transposed
// K), a stable softmax, and the weighted sum of V rows. The loops carry no reduction across the
// vectorized index, so the compiler vectorizes them without reassociating floating-point sums.
#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define HEARTH_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HEARTH_CLONES
#endif

namespace hearth::cpu {

HEARTH_CLONES
void attendHead(const float* q, const float* kT, int64_t kStride, const float* v, int64_t vStride,
                int64_t len, int64_t D, float scale, float* scores, float* out) {
    for (int64_t p = 0; p < len; ++p) scores[p] = 0.0f;
    for (int64_t d = 0; d < D; ++d) {
        const float qd = q[d];
        const float* k = kT + d * kStride;
        for (int64_t p = 0; p < len; ++p) scores[p] += qd * k[p];
    }
    float maxv = -INFINITY;
    for (int64_t p = 0; p < len; ++p) maxv = std::max(maxv, scores[p] *= scale);
    float sum = 0.0f;
    for (int64_t p = 0; p < len; ++p) sum += (scores[p] = std::exp(scores[p] - maxv));
    const float inv = 1.0f / sum;
    for (int64_t d = 0; d < D; ++d) out[d] = 0.0f;
    for (int64_t p = 0; p < len; ++p) {
        const float w = scores[p] * inv;
        const float* vp = v + p * vStride;
        for (int64_t d = 0; d < D; ++d) out[d] += w * vp[d];
    }
}

} // namespace hearth::cpu
