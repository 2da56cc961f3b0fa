// The recurrent ops of hybrid models (graph Op::SsmConv and Op::DeltaNet) on host memory: the
// scalar reference, written to be obviously right, and the runs of tokens that share a state.
// The fast CPU path and the GPU kernels are checked against these.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <vector>

namespace hearth::cpu::ref {

// A run of consecutive tokens [begin, end) advancing one state: loaded from `read` (-1: zeros)
// at its start, stored to `write` at its end. info is the step's StateInfo [n][3].
struct StateRun {
    int64_t begin = 0, end = 0;
    int32_t read = -1, write = -1;
};
std::vector<StateRun> stateRuns(const int32_t* info, int64_t n);

// Every slot of info [n][3] within a pool of `slots` (write slots >= 0, the others >= -1), else
// OutOfRange naming the op.
Status checkStateSlots(const char* op, const int32_t* info, int64_t n, int64_t slots);

// out [n][C] = causal depth-wise convolution of x [n][C] with w [C][K] over each run, the window
// starting from the state row [K-1][C] (oldest first); the rows are updated in place.
// state: [slots][(K-1)·C].
void ssmConv(const float* x, const float* w, float* state, const int32_t* info, float* out, int64_t n, int64_t C,
             int64_t K);

// The gated delta rule (graph Op::DeltaNet): qkv [n][(2Hk + Hv)·S], g and beta [n][Hv],
// state [slots][Hv][S][S] (row i: value dim, column j: key dim), out [n][Hv][S].
void deltaNet(const float* qkv, const float* g, const float* beta, float* state, const int32_t* info, float* out,
              int64_t n, int64_t Hk, int64_t Hv, int64_t S, float eps);

// One token of one head: M [S][S] ← e^g·M, M += beta·(v − M·k)·kᵀ, out = M·q. q and k are
// already normalized (and q scaled). Shared by the reference and the fast path's scalar tail.
void deltaStep(float* M, const float* q, const float* k, const float* v, float g, float beta, float* out, int64_t S);

// x / sqrt(Σx² + eps) over S values into out, times `scale`.
void l2Normalize(const float* x, float* out, int64_t S, float eps, float scale);

} // namespace hearth::cpu::ref
