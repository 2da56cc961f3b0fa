// The SIMD bodies of the recurrent kernels (recurrent_kernels.h), written once over a vector type
// V and compiled per instruction-set level by recurrent_avx2.cpp and recurrent_avx512.cpp. V has
// T (the register), W (floats in it), load, store, set1, zero, add, sub, mul, fma(a, b, c) =
// a·b + c and hsum. Each level defines its V in an unnamed namespace, so every instantiation stays
// local to the file compiled with that level's flags.
#pragma once

#include "backend/cpu/recurrent_kernels.h"

#include <cmath>

namespace hearth::cpu::kernels::simd {

// The run's snapshot destination after its token t (nullptr: none). A template like everything
// here, so that no copy compiled with one level's flags can stand in for another's.
template <class V> float* snapshotOf(const DeltaRun& a, int64_t t) {
    const int32_t slot = a.snapSlots[3 * t];
    return slot >= 0 && slot != a.skipSlot ? a.snapBase + int64_t(slot) * a.slotStride : nullptr;
}

// The rows of deltaRunFixed and deltaRunLanes hold M / c, c being the decay accumulated since the last time
// it was folded into them: a token's decay then costs one scalar product instead of a pass over
// M. With the token's cn = c·decay, a = (M/c)·k and b = (M/c)·q of the old rows,
//   d = beta·(v − cn·a),  out = cn·b + d·(k·q),  M/cn ← M/c + (d/cn)·k,
// the update of the reference reordered so that one sweep takes both dot products and one
// horizontal sum stands between a token and the next. When cn falls below kFoldScale (or is not
// a number) it is multiplied into the rows first and restarts at 1.
inline constexpr float kFoldScale = 1e-18f;

// Runs of at least this many tokens take deltaRunLanes (transposing costs a pass over M).
inline constexpr int64_t kLanesTokens = 4;

// R rows held in registers (NV = S / W vectors each) through every token of the run: rows never
// interact, so M is read and written once per run, and the R rows' chains interleave.
template <class V, int NV, int R> void deltaRunFixed(const DeltaRun& a) {
    using T = typename V::T;
    constexpr int W = V::W;
    const int64_t S = a.S;
    for (int64_t i0 = 0; i0 < S; i0 += R) {
        T row[R][NV];
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < NV; ++j) row[r][j] = V::load(a.M + (i0 + r) * S + j * W);
        float c = 1.0f;
        auto storeRows = [&](float* dst) {
            const T cv = V::set1(c);
            for (int r = 0; r < R; ++r)
                for (int j = 0; j < NV; ++j) V::store(dst + (i0 + r) * S + j * W, V::mul(row[r][j], cv));
        };
        for (int64_t t = 0; t < a.tokens; ++t) {
            const float* k = a.k + t * a.qkStride;
            const float* q = a.q + t * a.qkStride;
            const float* v = a.v + t * a.vStride;
            const float beta = a.beta[t * a.gStride], kq = a.kq[t * a.kqStride];
            float cn = c * a.decay[t * a.gStride];
            if (!(cn >= kFoldScale)) {
                const T sv = V::set1(cn);
                for (int r = 0; r < R; ++r)
                    for (int j = 0; j < NV; ++j) row[r][j] = V::mul(row[r][j], sv);
                cn = 1.0f;
            }
            T ak[R][2], aq[R][2];
            for (int r = 0; r < R; ++r) ak[r][0] = ak[r][1] = aq[r][0] = aq[r][1] = V::zero();
            for (int j = 0; j < NV; ++j) {
                const T kj = V::load(k + j * W), qj = V::load(q + j * W);
                for (int r = 0; r < R; ++r) {
                    ak[r][j % 2] = V::fma(row[r][j], kj, ak[r][j % 2]);
                    aq[r][j % 2] = V::fma(row[r][j], qj, aq[r][j % 2]);
                }
            }
            float* out = a.out + t * a.outStride;
            T dd[R];
            for (int r = 0; r < R; ++r) {
                const float d = beta * (v[i0 + r] - cn * V::hsum(V::add(ak[r][0], ak[r][1])));
                out[i0 + r] = cn * V::hsum(V::add(aq[r][0], aq[r][1])) + d * kq;
                dd[r] = V::set1(d / cn);
            }
            for (int j = 0; j < NV; ++j) {
                const T kj = V::load(k + j * W);
                for (int r = 0; r < R; ++r) row[r][j] = V::fma(dd[r], kj, row[r][j]);
            }
            c = cn;
            if (float* snap = snapshotOf<V>(a, t)) storeRows(snap);
        }
        storeRows(a.M);
    }
}

// Any S, short runs: R rows at a time, staying in L1 from token to token, one sweep for both
// dot products of the old rows and one to decay and update them (no accumulated scale: a
// decode step's one token would pay a pass over M to apply it).
template <class V, int R> void deltaRunMem(const DeltaRun& a, int64_t i0) {
    using T = typename V::T;
    constexpr int W = V::W;
    const int64_t S = a.S, vecEnd = S / W * W;
    float* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = a.M + (i0 + r) * S;
    for (int64_t t = 0; t < a.tokens; ++t) {
        const float* k = a.k + t * a.qkStride;
        const float* q = a.q + t * a.qkStride;
        const float decay = a.decay[t * a.gStride], beta = a.beta[t * a.gStride], kq = a.kq[t * a.kqStride];
        T ak[R][2], aq[R][2];
        for (int r = 0; r < R; ++r) ak[r][0] = ak[r][1] = aq[r][0] = aq[r][1] = V::zero();
        int64_t j = 0;
        for (; j + 2 * W <= vecEnd; j += 2 * W) {
            const T k0 = V::load(k + j), k1 = V::load(k + j + W), q0 = V::load(q + j), q1 = V::load(q + j + W);
            for (int r = 0; r < R; ++r) {
                const T x0 = V::load(rows[r] + j), x1 = V::load(rows[r] + j + W);
                ak[r][0] = V::fma(x0, k0, ak[r][0]);
                aq[r][0] = V::fma(x0, q0, aq[r][0]);
                ak[r][1] = V::fma(x1, k1, ak[r][1]);
                aq[r][1] = V::fma(x1, q1, aq[r][1]);
            }
        }
        for (; j < vecEnd; j += W) {
            const T kj = V::load(k + j), qj = V::load(q + j);
            for (int r = 0; r < R; ++r) {
                const T x = V::load(rows[r] + j);
                ak[r][0] = V::fma(x, kj, ak[r][0]);
                aq[r][0] = V::fma(x, qj, aq[r][0]);
            }
        }
        float d[R];
        float* out = a.out + t * a.outStride;
        for (int r = 0; r < R; ++r) {
            float mk = V::hsum(V::add(ak[r][0], ak[r][1])), mq = V::hsum(V::add(aq[r][0], aq[r][1]));
            for (int64_t x = vecEnd; x < S; ++x) {
                mk += rows[r][x] * k[x];
                mq += rows[r][x] * q[x];
            }
            d[r] = beta * (a.v[t * a.vStride + i0 + r] - decay * mk);
            out[i0 + r] = decay * mq + d[r] * kq;
        }
        const T dv = V::set1(decay);
        for (int r = 0; r < R; ++r) {
            const T dd = V::set1(d[r]);
            for (j = 0; j < vecEnd; j += W) V::store(rows[r] + j, V::fma(dd, V::load(k + j), V::mul(V::load(rows[r] + j), dv)));
            for (; j < S; ++j) rows[r][j] = decay * rows[r][j] + d[r] * k[j];
        }
        if (float* snap = snapshotOf<V>(a, t))
            for (int r = 0; r < R; ++r)
                for (j = 0; j < S; ++j) snap[(i0 + r) * S + j] = rows[r][j];
    }
}

// Long runs: W rows at a time, one per lane, so that no horizontal sum stands between a token
// and the next. The rows are transposed into blk [S][W] (in L1) for the run and back at its
// end and at snapshots; per token a sweep over blk takes M·k and M·q for the W rows, and
// a second one applies the update. S must be a multiple of W (so also of 4).
template <class V> void deltaRunLanes(const DeltaRun& a, float* blk) {
    using T = typename V::T;
    constexpr int W = V::W;
    const int64_t S = a.S;
    for (int64_t i0 = 0; i0 < S; i0 += W) {
        for (int r = 0; r < W; ++r)
            for (int64_t j = 0; j < S; ++j) blk[j * W + r] = a.M[(i0 + r) * S + j];
        float c = 1.0f;
        auto storeRows = [&](float* dst, float by) {
            for (int r = 0; r < W; ++r)
                for (int64_t j = 0; j < S; ++j) dst[(i0 + r) * S + j] = blk[j * W + r] * by;
        };
        for (int64_t t = 0; t < a.tokens; ++t) {
            const float* k = a.k + t * a.qkStride;
            const float* q = a.q + t * a.qkStride;
            const float beta = a.beta[t * a.gStride], kq = a.kq[t * a.kqStride];
            float cn = c * a.decay[t * a.gStride];
            if (!(cn >= kFoldScale)) {
                const T sv = V::set1(cn);
                for (int64_t j = 0; j < S; ++j) V::store(blk + j * W, V::mul(V::load(blk + j * W), sv));
                cn = 1.0f;
            }
            T ak[4], aq[4];
            for (int u = 0; u < 4; ++u) ak[u] = aq[u] = V::zero();
            for (int64_t j = 0; j < S; j += 4)
                for (int u = 0; u < 4; ++u) {
                    const T x = V::load(blk + (j + u) * W);
                    ak[u] = V::fma(x, V::set1(k[j + u]), ak[u]);
                    aq[u] = V::fma(x, V::set1(q[j + u]), aq[u]);
                }
            const T mk = V::add(V::add(ak[0], ak[1]), V::add(ak[2], ak[3]));
            const T mq = V::add(V::add(aq[0], aq[1]), V::add(aq[2], aq[3]));
            const T cv = V::set1(cn);
            const T d = V::mul(V::set1(beta), V::sub(V::load(a.v + t * a.vStride + i0), V::mul(cv, mk)));
            V::store(a.out + t * a.outStride + i0, V::fma(cv, mq, V::mul(d, V::set1(kq))));
            const T dc = V::mul(d, V::set1(1.0f / cn));
            for (int64_t j = 0; j < S; ++j) V::store(blk + j * W, V::fma(dc, V::set1(k[j]), V::load(blk + j * W)));
            c = cn;
            if (float* snap = snapshotOf<V>(a, t)) storeRows(snap, c);
        }
        storeRows(a.M, c);
    }
}

template <class V> void deltaRunLoop(const DeltaRun& a) {
    int64_t i = 0;
    for (; i + 2 <= a.S; i += 2) deltaRunMem<V, 2>(a, i);
    if (i < a.S) deltaRunMem<V, 1>(a, i);
}

// The largest number of rows whose registers (and the temporaries) fit the register file.
template <class V, int NV> void deltaRunRows(const DeltaRun& a) {
    constexpr int regs = V::W >= 16 ? 32 : 16;
    if constexpr (2 * NV + 8 <= regs) deltaRunFixed<V, NV, 2>(a);
    else if constexpr (NV + 6 <= regs) deltaRunFixed<V, NV, 1>(a);
    else deltaRunLoop<V>(a);
}

template <class V> void deltaRun(const DeltaRun& a) {
    constexpr int W = V::W;
    constexpr int64_t kMaxLanesS = 256;
    if constexpr (W >= 8) {
        if (a.tokens >= kLanesTokens && a.S % W == 0 && a.S <= kMaxLanesS) {
            alignas(64) float blk[kMaxLanesS * W];
            return deltaRunLanes<V>(a, blk);
        }
    }
    if (W > 1 && a.S % W == 0) {
        switch (a.S / W) {
        case 2: return deltaRunRows<V, 2>(a);
        case 4: return deltaRunRows<V, 4>(a);
        case 8: return deltaRunRows<V, 8>(a);
        case 16: return deltaRunRows<V, 16>(a);
        default: break;
        }
    }
    deltaRunLoop<V>(a);
}

template <class V> float dot(const float* x, const float* y, int64_t S) {
    using T = typename V::T;
    constexpr int W = V::W;
    T a = V::zero();
    int64_t j = 0;
    for (; j + W <= S; j += W) a = V::fma(V::load(x + j), V::load(y + j), a);
    float s = V::hsum(a);
    for (; j < S; ++j) s += x[j] * y[j];
    return s;
}

template <class V> void l2Normalize(const float* x, float* out, int64_t S, float eps, float scale) {
    using T = typename V::T;
    constexpr int W = V::W;
    T a = V::zero();
    int64_t j = 0;
    for (; j + W <= S; j += W) {
        const T v = V::load(x + j);
        a = V::fma(v, v, a);
    }
    float ss = V::hsum(a);
    for (; j < S; ++j) ss += x[j] * x[j];
    const float inv = float(double(scale) / std::sqrt(double(ss) + double(eps)));
    const T iv = V::set1(inv);
    for (j = 0; j + W <= S; j += W) V::store(out + j, V::mul(V::load(x + j), iv));
    for (; j < S; ++j) out[j] = x[j] * inv;
}

// The run's tokens one after another; each output row accumulates its K products in the order
// of the reference (oldest input first).
template <class V> void conv(const ConvSpan& s) {
    constexpr int W = V::W;
    for (int64_t t = s.begin; t < s.end; ++t) {
        float* o = s.out + t * s.C;
        for (int64_t k = 0; k < s.K; ++k) {
            const int64_t p = t - s.begin - s.K + 1 + k;
            const float* src = p >= 0 ? s.x + (s.begin + p) * s.C : s.old + (s.K - 1 + p) * s.C;
            const float* w = s.wT + k * s.C;
            int64_t c = s.c0;
            if (k == 0) {
                for (; c + W <= s.c1; c += W) V::store(o + c, V::mul(V::load(w + c), V::load(src + c)));
                for (; c < s.c1; ++c) o[c] = w[c] * src[c];
            } else {
                for (; c + W <= s.c1; c += W) V::store(o + c, V::fma(V::load(w + c), V::load(src + c), V::load(o + c)));
                for (; c < s.c1; ++c) o[c] += w[c] * src[c];
            }
        }
    }
}

template <class V> RecurrentKernels table(const char* name) {
    RecurrentKernels k;
    k.name = name;
    k.deltaRun = &deltaRun<V>;
    k.l2Normalize = &l2Normalize<V>;
    k.dot = &dot<V>;
    k.conv = &conv<V>;
    return k;
}

} // namespace hearth::cpu::kernels::simd
