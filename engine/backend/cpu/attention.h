// Attention of one query head over a sequence's history on the CPU, vectorized for the CPU it
// runs on (AVX-512, AVX2 or baseline x86-64 clones chosen at load time).
#pragma once

#include <cstdint>

namespace hearth::cpu {

// out[D] = softmax(scale * q · K[p]) · V[p] over positions p in [0, len).
// kT holds K transposed: kT[d * kStride + p] (positions contiguous, so the scores vectorize);
// v holds V rows: v[p * vStride + d]. scores is scratch of at least len floats.
void attendHead(const float* q, const float* kT, int64_t kStride, const float* v, int64_t vStride,
                int64_t len, int64_t D, float scale, float* scores, float* out);

} // namespace hearth::cpu
