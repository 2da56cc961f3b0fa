// The inner loops of the fast recurrent ops, one table per instruction-set level (scalar, AVX2,
// AVX-512): recurrent_fast.cpp picks a table by activeIsaLevel() and does the threading, the
// state slots and the runs of tokens around them.
#pragma once

#include <cstdint>

namespace hearth::cpu::kernels {

// Channels [c0, c1) of one run of SsmConv tokens, t in [begin, end) of the batch:
// out[t][c] = Σ_k wT[k][c] · X(t - begin - K + 1 + k)[c], where X(p) is x[begin + p] for p >= 0
// and the window row old[K - 1 + p] before the run.
struct ConvSpan {
    const float* x = nullptr;   // [n][C]
    const float* wT = nullptr;  // [K][C]: the weights transposed (channels contiguous)
    const float* old = nullptr; // [K-1][C]: the run's window at its start, oldest first
    float* out = nullptr;       // [n][C]
    int64_t C = 0, K = 0, begin = 0, end = 0, c0 = 0, c1 = 0;
};

struct RecurrentKernels {
    const char* name = "";
    // One token of one delta-net head, M [S][S] in place: M ← e^g·M; M += beta·(v − M·k)·kᵀ;
    // out = M·q (q and k already normalized). One pass over each row of M.
    void (*deltaStep)(float* M, const float* q, const float* k, const float* v, float g, float beta,
                      float* out, int64_t S) = nullptr;
    // out = x · scale / sqrt(Σx² + eps) over S values.
    void (*l2Normalize)(const float* x, float* out, int64_t S, float eps, float scale) = nullptr;
    void (*conv)(const ConvSpan& span) = nullptr;
};

const RecurrentKernels& recurrentScalar();
const RecurrentKernels& recurrentAvx2();   // only call when the CPU has AVX2 + FMA
const RecurrentKernels& recurrentAvx512(); // only call when the CPU has AVX-512 F

} // namespace hearth::cpu::kernels
