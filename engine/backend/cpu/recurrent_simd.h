// The SIMD bodies of the recurrent kernels (recurrent_kernels.h), written once over a vector type
// V and compiled per instruction-set level by recurrent_avx2.cpp and recurrent_avx512.cpp. V has
// T (the register), W (floats in it), load, store, set1, zero, mul, fma(a, b, c) = a·b + c and
// hsum. Each level defines its V in an unnamed namespace, so every instantiation stays local to
// the file compiled with that level's flags.
#pragma once

#include "backend/cpu/recurrent_kernels.h"
#include "backend/cpu/recurrent_ops.h"

#include <cmath>

namespace hearth::cpu::kernels::simd {

// One row of M with the whole row in registers (NV = S / W vectors): decay and M·k in one sweep,
// then the rank-one update and M·q in a second sweep over the same registers, and one store.
template <class V, int NV>
void deltaStepFixed(float* M, const float* q, const float* k, const float* v, float g, float beta, float* out,
                    int64_t S) {
    using T = typename V::T;
    constexpr int W = V::W;
    T kk[NV], qq[NV];
    for (int j = 0; j < NV; ++j) {
        kk[j] = V::load(k + j * W);
        qq[j] = V::load(q + j * W);
    }
    const T dv = V::set1(std::exp(g));
    for (int64_t i = 0; i < S; ++i) {
        float* r = M + i * S;
        T row[NV];
        T a0 = V::zero(), a1 = V::zero();
        for (int j = 0; j < NV; ++j) {
            row[j] = V::mul(V::load(r + j * W), dv);
            if (j % 2 == 0) a0 = V::fma(row[j], kk[j], a0);
            else a1 = V::fma(row[j], kk[j], a1);
        }
        const float d = beta * (v[i] - V::hsum(V::add(a0, a1)));
        const T dd = V::set1(d);
        T o0 = V::zero(), o1 = V::zero();
        for (int j = 0; j < NV; ++j) {
            row[j] = V::fma(dd, kk[j], row[j]);
            V::store(r + j * W, row[j]);
            if (j % 2 == 0) o0 = V::fma(row[j], qq[j], o0);
            else o1 = V::fma(row[j], qq[j], o1);
        }
        out[i] = V::hsum(V::add(o0, o1));
    }
}

// Any S that is a multiple of W: the same two sweeps per row, the second re-reading the row
// from L1.
template <class V>
void deltaStepLoop(float* M, const float* q, const float* k, const float* v, float g, float beta, float* out,
                   int64_t S) {
    using T = typename V::T;
    constexpr int W = V::W;
    const T dv = V::set1(std::exp(g));
    for (int64_t i = 0; i < S; ++i) {
        float* r = M + i * S;
        T a = V::zero();
        for (int64_t j = 0; j < S; j += W) {
            const T x = V::mul(V::load(r + j), dv);
            V::store(r + j, x);
            a = V::fma(x, V::load(k + j), a);
        }
        const T dd = V::set1(beta * (v[i] - V::hsum(a)));
        T o = V::zero();
        for (int64_t j = 0; j < S; j += W) {
            const T x = V::fma(dd, V::load(k + j), V::load(r + j));
            V::store(r + j, x);
            o = V::fma(x, V::load(q + j), o);
        }
        out[i] = V::hsum(o);
    }
}

template <class V>
void deltaStep(float* M, const float* q, const float* k, const float* v, float g, float beta, float* out,
               int64_t S) {
    constexpr int W = V::W;
    if (S % W != 0) return ref::deltaStep(M, q, k, v, g, beta, out, S);
    switch (S / W) {
    case 2: return deltaStepFixed<V, 2>(M, q, k, v, g, beta, out, S);
    case 4: return deltaStepFixed<V, 4>(M, q, k, v, g, beta, out, S);
    case 8: return deltaStepFixed<V, 8>(M, q, k, v, g, beta, out, S);
    case 16:
        if constexpr (W >= 16) return deltaStepFixed<V, 16>(M, q, k, v, g, beta, out, S);
        break;
    default: break;
    }
    deltaStepLoop<V>(M, q, k, v, g, beta, out, S);
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
    k.deltaStep = &deltaStep<V>;
    k.l2Normalize = &l2Normalize<V>;
    k.conv = &conv<V>;
    return k;
}

} // namespace hearth::cpu::kernels::simd
