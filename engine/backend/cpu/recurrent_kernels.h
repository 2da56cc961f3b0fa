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

// One delta-net v head over a run of tokens (t from 0 to tokens - 1): M [S][S] (row: value dim,
// column: key dim) advanced in place, per token M ← decay·M; M += beta·(v − M·k)·kᵀ; out = M·q,
// with q and k already normalized; after a token whose snapshot slot is >= 0 and not skipSlot,
// the matrix is also copied to snapBase + slot · slotStride.
struct DeltaRun {
    float* M = nullptr;
    const float *q = nullptr, *k = nullptr; // token t's at + t · qkStride
    const float* v = nullptr;               // token t's at + t · vStride
    const float *decay = nullptr, *beta = nullptr; // token t's at [t · gStride]
    const float* kq = nullptr;              // token t's k·q at [t · kqStride]
    float* out = nullptr;                   // token t's S values at + t · outStride
    const int32_t* snapSlots = nullptr;     // token t's snapshot slot at [3t]
    float* snapBase = nullptr;
    int64_t slotStride = 0;
    int32_t skipSlot = -1;
    int64_t S = 0, tokens = 0, qkStride = 0, vStride = 0, gStride = 0, kqStride = 0, outStride = 0;
};

struct RecurrentKernels {
    const char* name = "";
    void (*deltaRun)(const DeltaRun& run) = nullptr;
    // out = x · scale / sqrt(Σx² + eps) over S values.
    void (*l2Normalize)(const float* x, float* out, int64_t S, float eps, float scale) = nullptr;
    float (*dot)(const float* x, const float* y, int64_t S) = nullptr;
    void (*conv)(const ConvSpan& span) = nullptr;
};

const RecurrentKernels& recurrentScalar();
const RecurrentKernels& recurrentAvx2();   // only call when the CPU has AVX2 + FMA
const RecurrentKernels& recurrentAvx512(); // only call when the CPU has AVX-512 F

} // namespace hearth::cpu::kernels
