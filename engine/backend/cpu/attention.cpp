// Vectorizable paged attention over K/V blocks with an online softmax. The loops carry no
// reduction across the vectorized index (scores run along positions, accumulators along the
// head dimension), so the compiler vectorizes them without reassociating floating-point sums;
// built without FMA contraction (CMakeLists.txt), results are the same on every instruction set
// level and whichever states share a fold.
#include "backend/cpu/attention.h"

#include "backend/cpu/fast_math.h"
#include "backend/cpu/paged_kv.h"
#include "backend/cpu/target_clones.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace hearth::cpu {

namespace {

// Folds one block's positions [from, lim) into one (token, head)'s running state: m (max score so
// far), l (sum of exp(score - m)) and acc[D] (sum of exp(score - m) * v).
//   kT: [D][B] the block's keys transposed; v: [B][D] its values; s: scratch [B].
inline void foldBlockBody(const float* q, const float* kT, const float* v, int64_t B, int64_t from, int64_t lim, int64_t D,
               float scale, float cap, float* s, float& m, float& l, float* acc) {
    for (int64_t o = 0; o < B; ++o) s[o] = 0.0f;
    for (int64_t d = 0; d < D; ++d) {
        const float qd = q[d];
        const float* k = kT + d * B;
        for (int64_t o = 0; o < B; ++o) s[o] += qd * k[o];
    }
    float blockMax = -INFINITY;
    for (int64_t o = from; o < lim; ++o) {
        s[o] *= scale;
        if (cap > 0.0f) s[o] = cap * std::tanh(s[o] / cap);
        blockMax = std::max(blockMax, s[o]);
    }
    const float newMax = std::max(m, blockMax);
    const float correction = std::exp(m - newMax); // 0 for the first block (m = -inf)
    l *= correction;
    for (int64_t d = 0; d < D; ++d) acc[d] *= correction;
    for (int64_t o = from; o < lim; ++o) {
        const float w = std::exp(s[o] - newMax);
        l += w;
        const float* vo = v + o * D;
        for (int64_t d = 0; d < D; ++d) acc[d] += w * vo[d];
    }
    m = newMax;
}

HEARTH_ISA_DISPATCH(void, foldBlock,
                    (const float* q, const float* kT, const float* v, int64_t B, int64_t from, int64_t lim, int64_t D,
                     float scale, float cap, float* s, float& m, float& l, float* acc),
                    (q, kT, v, B, from, lim, D, scale, cap, s, m, l, acc), foldBlockBody)

constexpr int64_t kFastBlock = 16; // the block size of the multi-state fold
constexpr int kStates = 4;         // query states folded together (a GQA group of 4 heads)

// acc[i][d] = acc[i][d] * correction[i] + sum over o < maxLim of w[i][o] * v[o][d] for NQ states, on
// vectors V (D a multiple of its lanes): two vectors of columns a pass (each weight loaded once
// for both; 2·NQ accumulators, half the registers at every level), then one.
template <int NQ, typename V>
__attribute__((always_inline)) inline void foldValues(const float* v, int64_t D, int64_t maxLim,
                                                      const float (*w)[kFastBlock], const float* correction,
                                                      float* const* acc) {
    constexpr int L = Lanes<V>::n;
    int64_t d0 = 0;
    for (; d0 + 2 * L <= D; d0 += 2 * L) {
        V a[NQ], b[NQ];
        for (int i = 0; i < NQ; ++i) {
            a[i] = loadV<V>(acc[i] + d0) * correction[i];
            b[i] = loadV<V>(acc[i] + d0 + L) * correction[i];
        }
        for (int64_t o = 0; o < maxLim; ++o) {
            const V va = loadV<V>(v + o * D + d0), vb = loadV<V>(v + o * D + d0 + L);
            for (int i = 0; i < NQ; ++i) {
                a[i] += w[i][o] * va;
                b[i] += w[i][o] * vb;
            }
        }
        for (int i = 0; i < NQ; ++i) {
            storeV(acc[i] + d0, a[i]);
            storeV(acc[i] + d0 + L, b[i]);
        }
    }
    for (; d0 < D; d0 += L) {
        V a[NQ];
        for (int i = 0; i < NQ; ++i) a[i] = loadV<V>(acc[i] + d0) * correction[i];
        for (int64_t o = 0; o < maxLim; ++o) {
            const V va = loadV<V>(v + o * D + d0);
            for (int i = 0; i < NQ; ++i) a[i] += w[i][o] * va;
        }
        for (int i = 0; i < NQ; ++i) storeV(acc[i] + d0, a[i]);
    }
}

// foldBlock for NQ (token, head) states at once over a block of kFastBlock positions, with D a
// multiple of 8, on vectors V of the level's width: the states' scores and accumulators stay in
// registers and their dependency chains interleave, and the exponentials are vector operations. State i folds positions [from[i], lim[i]); with cap > 0 its
// scores are soft-capped first. The weights' sum is a fixed tree over the 16 positions and every
// other sum runs in the written order, so each state's result is the same whatever the level and
// whatever the other states (batch invariance).
//   kT: [D][16] keys transposed; v: [16][D] values (rows past the history zero).
template <int NQ, typename V>
__attribute__((always_inline)) inline void foldStates(const float* const* q, const float* kT, const float* v, const int64_t* from,
                       const int64_t* lim, int64_t D, float scale, float cap, float* const* m, float* const* l,
                       float* const* acc) {
    constexpr int64_t B = kFastBlock;
    constexpr int L = Lanes<V>::n, NB = int(B) / L; // lanes, vectors per block of positions
    // s[i][o] = sum over d of q[i][d] * kT[d][o], summed in order of d.
    V s[NQ][NB];
    for (int i = 0; i < NQ; ++i)
        for (int j = 0; j < NB; ++j) s[i][j] = V{};
    for (int64_t d = 0; d < D; ++d) {
        V k[NB];
        for (int j = 0; j < NB; ++j) k[j] = loadV<V>(kT + d * B + j * L);
        for (int i = 0; i < NQ; ++i) {
            const float qd = q[i][d];
            for (int j = 0; j < NB; ++j) s[i][j] += qd * k[j];
        }
    }
    alignas(64) float w[NQ][B];
    float correction[NQ];
    int64_t maxLim = 0;
    for (int i = 0; i < NQ; ++i) {
        V si[NB];
        alignas(64) float t[B];
        for (int j = 0; j < NB; ++j) storeV(t + j * L, si[j] = s[i][j] * scale);
        if (cap > 0.0f) {
            for (int64_t o = 0; o < B; ++o) t[o] = cap * std::tanh(t[o] / cap);
            for (int j = 0; j < NB; ++j) si[j] = loadV<V>(t + j * L);
        }
        float blockMax = -INFINITY;
        for (int64_t o = from[i]; o < lim[i]; ++o) blockMax = std::max(blockMax, t[o]);
        const float newMax = std::max(*m[i], blockMax);
        // 0 for the first block (m = -inf); exp(0) is exactly 1, so an unchanged maximum skips it.
        correction[i] = newMax == *m[i] ? 1.0f : std::exp(*m[i] - newMax);
        *m[i] = newMax;
        for (int j = 0; j < NB; ++j) storeV(w[i] + j * L, expClamped(si[j] - newMax));
        for (int64_t o = 0; o < from[i]; ++o) w[i][o] = 0.0f;
        for (int64_t o = lim[i]; o < B; ++o) w[i][o] = 0.0f;
        float h[8];
        for (int k = 0; k < 8; ++k) h[k] = w[i][k] + w[i][k + 8];
        for (int k = 0; k < 4; ++k) h[k] = h[k] + h[k + 4];
        const float sum = (h[0] + h[2]) + (h[1] + h[3]);
        *l[i] = *l[i] * correction[i] + sum;
        maxLim = std::max(maxLim, lim[i]);
    }
    // A head size that is not a whole number of the level's vectors (D = 8 at AVX-512) takes
    // vectors of 8 lanes for the values; lanes are independent, so the sums are the same.
    if constexpr (L > 8)
        if (D % L != 0) return foldValues<NQ, F8>(v, D, maxLim, w, correction, acc);
    foldValues<NQ, V>(v, D, maxLim, w, correction, acc);
}

#define HEARTH_FOLD_STATES(name, nq)                                                                                \
    HEARTH_ISA_DISPATCH3(void, name,                                                                                 \
                         (const float* const* q, const float* kT, const float* v, const int64_t* from,              \
                          const int64_t* lim, int64_t D, float scale, float cap, float* const* m, float* const* l, \
                          float* const* acc),                                                                        \
                         (q, kT, v, from, lim, D, scale, cap, m, l, acc), (foldStates<nq, F16>),                    \
                         (foldStates<nq, F8>), (foldStates<nq, F4>))
HEARTH_FOLD_STATES(foldStates4, kStates)
HEARTH_FOLD_STATES(foldStates2, 2)
HEARTH_FOLD_STATES(foldStates1, 1)
#undef HEARTH_FOLD_STATES

// The first offset of the block starting at p0 that token t's window reaches (0 without a window).
int64_t windowFrom(const PagedAttentionCall& c, int64_t t, int64_t p0) {
    if (c.window <= 0) return 0;
    return std::max<int64_t>(0, int64_t(c.windowEnds ? c.windowEnds[t] : c.positions[t]) - c.window + 1 - p0);
}

} // namespace

Status pagedAttention(const PagedAttentionCall& c) {
    if (!c.kv || c.headDim < 1 || c.group < 1 || c.nTokens < 0)
        return invalidArgument("pagedAttention: bad arguments");
    const PagedKvStore& kv = *c.kv;
    const int64_t B = kv.blockSize(), D = c.headDim, G = c.group, T = c.nTokens;
    if ((c.kvHead + 1) * D > kv.rowSize()) return invalidArgument("pagedAttention: head outside the K/V row");
    int64_t maxPos = -1;
    for (int64_t t = 0; t < T; ++t) maxPos = std::max<int64_t>(maxPos, c.positions[t]);
    if (maxPos < 0) return Status::ok();
    const int64_t nBlocks = maxPos / B + 1;
    // With a window, blocks before every token's window are never read.
    int64_t minFrom = maxPos;
    for (int64_t t = 0; t < T; ++t)
        minFrom = std::min<int64_t>(minFrom, windowFrom(c, t, 0));
    const int64_t firstBlock = minFrom / B;
    if (nBlocks > int64_t(c.blockTable.size())) return internalError("pagedAttention: position beyond the block table");
    for (int64_t b = 0; b < nBlocks; ++b)
        if (c.blockTable[size_t(b)] < 0 || c.blockTable[size_t(b)] >= kv.numBlocks())
            return internalError("pagedAttention: unmapped block in the block table");

    // Per-thread scratch, grown on demand and kept: no allocation per call once warm.
    //   kT [D][B], v [B][D], row [rowSize] (Q8_0 heads off the 32-value grid), s [B],
    //   state per (token, head): acc [D], m, l.
    const bool sliceReads = kv.type() != KvType::Q8_0 || (D % 32 == 0 && (c.kvHead * D) % 32 == 0);
    const size_t need = size_t(2 * B * D + kv.rowSize() + B + T * G * (D + 2));
    thread_local std::vector<float> scratch;
    if (scratch.size() < need) scratch.resize(need);
    float* kT = scratch.data();
    float* v = kT + B * D;
    float* row = v + B * D;
    float* s = row + kv.rowSize();
    float* acc = s + B;
    float* m = acc + T * G * D;
    float* l = m + T * G;
    std::fill(acc, acc + T * G * D, 0.0f);
    std::fill(m, m + T * G, -INFINITY);
    std::fill(l, l + T * G, 0.0f);

    const int64_t first = c.kvHead * D;
    // F32/F16 stores hold each head's block as K [D][B] and V [B][D]: read whole, no transposing.
    const bool headMajor = kv.headMajor();
    if (headMajor && kv.headDim() != D) return invalidArgument("pagedAttention: head size differs from the K/V store's");
    const bool fast = B == kFastBlock && D % 8 == 0;
    for (int64_t b = firstBlock; b < nBlocks; ++b) {
        const int64_t p0 = b * B;
        const int64_t count = std::min(B, maxPos + 1 - p0);
        const int64_t slot0 = int64_t(c.blockTable[size_t(b)]) * B;
        // This head's part of the blocks two ahead is requested from memory now (the first three
        // at the start), while this one is folded.
        if (b == firstBlock)
            for (int64_t a = b; a < std::min<int64_t>(nBlocks, b + 3); ++a) kv.prefetch(c.layer, c.blockTable[size_t(a)], c.kvHead);
        else if (b + 2 < nBlocks)
            kv.prefetch(c.layer, c.blockTable[size_t(b + 2)], c.kvHead);
        if (headMajor) {
            kv.readBlockHead(c.layer, c.blockTable[size_t(b)], c.kvHead, kT, v);
        } else if (sliceReads) { // Q8_0, the head on the 32-value grid
            kv.readBlockHeadRows(c.layer, c.blockTable[size_t(b)], c.kvHead, count, kT, v);
        } else { // Q8_0 with the head off the grid: whole rows, then this head's slice
            for (int64_t o = 0; o < count; ++o) {
                kv.readKey(c.layer, slot0 + o, row);
                for (int64_t d = 0; d < D; ++d) kT[d * B + o] = row[first + d];
                kv.readValue(c.layer, slot0 + o, row);
                std::copy(row + first, row + first + D, v + o * D);
            }
        }
        for (int64_t o = count; o < B; ++o) { // positions past the history: zero, never used
            for (int64_t d = 0; d < D; ++d) kT[d * B + o] = 0.0f;
            std::fill(v + o * D, v + (o + 1) * D, 0.0f);
        }
        if (fast) {
            // The states that see part of this block, folded kStates at a time.
            const float* qs[kStates];
            int64_t froms[kStates], lims[kStates];
            float *ms[kStates], *ls[kStates], *accs[kStates];
            int pending = 0;
            for (int64_t t = 0; t < T; ++t) {
                const int64_t lim = std::min<int64_t>(count, int64_t(c.positions[t]) + 1 - p0);
                const int64_t from = windowFrom(c, t, p0);
                if (lim <= from) continue;
                const float* qt = c.q + c.rows[t] * c.rowStride + c.kvHead * G * D;
                for (int64_t j = 0; j < G; ++j) {
                    const int64_t state = t * G + j;
                    qs[pending] = qt + j * D;
                    froms[pending] = from;
                    lims[pending] = lim;
                    ms[pending] = m + state;
                    ls[pending] = l + state;
                    accs[pending] = acc + state * D;
                    if (++pending == kStates) {
                        foldStates4(qs, kT, v, froms, lims, D, c.scale, c.softcap, ms, ls, accs);
                        pending = 0;
                    }
                }
            }
            int i = 0;
            if (pending - i >= 2) {
                foldStates2(qs + i, kT, v, froms + i, lims + i, D, c.scale, c.softcap, ms + i, ls + i, accs + i);
                i += 2;
            }
            if (i < pending)
                foldStates1(qs + i, kT, v, froms + i, lims + i, D, c.scale, c.softcap, ms + i, ls + i, accs + i);
            continue;
        }
        for (int64_t t = 0; t < T; ++t) {
            const int64_t lim = std::min<int64_t>(count, int64_t(c.positions[t]) + 1 - p0);
            const int64_t from = windowFrom(c, t, p0);
            if (lim <= from) continue;
            const float* qt = c.q + c.rows[t] * c.rowStride + c.kvHead * G * D;
            for (int64_t j = 0; j < G; ++j) {
                const int64_t state = t * G + j;
                foldBlock(qt + j * D, kT, v, B, from, lim, D, c.scale, c.softcap, s, m[state], l[state], acc + state * D);
            }
        }
    }
    for (int64_t t = 0; t < T; ++t) {
        float* ot = c.out + c.rows[t] * c.rowStride + c.kvHead * G * D;
        for (int64_t j = 0; j < G; ++j) {
            const int64_t state = t * G + j;
            float inv = l[state] > 0.0f ? 1.0f / l[state] : 0.0f;
            if (c.sinks) {
                // The sink's exp(sink) joins the denominator, both sides rescaled to the larger max.
                const float sink = c.sinks[c.kvHead * G + j];
                const float top = l[state] > 0.0f ? std::max(m[state], sink) : sink;
                const float keep = l[state] > 0.0f ? std::exp(m[state] - top) : 0.0f;
                inv = keep / (l[state] * keep + std::exp(sink - top));
            }
            for (int64_t d = 0; d < D; ++d) ot[j * D + d] = acc[state * D + d] * inv;
        }
    }
    return Status::ok();
}

} // namespace hearth::cpu
