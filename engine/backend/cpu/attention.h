// Attention on the CPU, vectorized for the CPU it runs on (AVX-512, AVX2 or baseline x86-64
// clones chosen at load time): query tokens against K/V blocks read straight from the paged
// cache, with an online softmax.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <span>

namespace hearth::cpu {

class PagedKvStore;

// Some query tokens of one sequence against that sequence's paged K/V history, for one KV head
// and the `group` query heads that share it. Flash-style: the history is visited block by block
// (each block converted once for every query token and head of the call) with a running max and
// sum per (token, head), so nothing grows with the history but the loop. A token's result does
// not depend on which other tokens share the call, nor on threads: batch invariant.
struct PagedAttentionCall {
    const PagedKvStore* kv = nullptr;
    int layer = 0;
    std::span<const int32_t> blockTable; // the sequence's blocks; position p is in block p / blockSize
    int64_t kvHead = 0;
    int64_t group = 1;   // query heads per KV head (GQA)
    int64_t headDim = 0; // D
    float scale = 1.0f;
    // Query token t (of nTokens) is row rows[t] of q and out and attends positions [0, positions[t]]:
    // head j of the group reads q[rows[t] * rowStride + (kvHead * group + j) * D + d].
    const float* q = nullptr;
    float* out = nullptr;
    int64_t rowStride = 0;
    const int64_t* rows = nullptr;
    const int32_t* positions = nullptr;
    int64_t nTokens = 0;
    // Sliding window (> 0): token t attends positions (positions[t] - window, positions[t]] only;
    // with windowEnds (attention within the sequence) (windowEnds[t] - window, positions[t]]: a
    // window counted back from the token's own position, reaching as far as the sequence does.
    int64_t window = 0;
    const int32_t* windowEnds = nullptr;
    // Score soft-capping (> 0): scores (after scale) become softcap * tanh(score / softcap).
    float softcap = 0.0f;
    // Attention sinks (gpt-oss): one logit per query head (all nHead, indexed as q's heads) that
    // joins each softmax's denominator without a value.
    const float* sinks = nullptr;
};

// Fails (and writes nothing) when a position is not mapped by the block table.
Status pagedAttention(const PagedAttentionCall& call);

} // namespace hearth::cpu
