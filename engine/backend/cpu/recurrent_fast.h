// The ops of hybrid (gated delta-net) models on the optimized CPU path: Sigmoid, Softplus and
// RmsNormGated as threaded element-wise / row kernels, and the recurrent SsmConv and DeltaNet
// threaded over channels and over (run of tokens, v head), working on the State pools in place.
// Within float rounding of the reference (recurrent_ops.h, ref_program.cpp), not bit for bit.
#pragma once

#include "backend/cpu/cpu_device.h"
#include "backend/cpu/recurrent_ops.h"

#include <vector>

namespace hearth::cpu {

class ThreadPool;

class RecurrentOps {
public:
    // Whether run() takes nodes of this op.
    static bool covers(graph::Op op);

    // Sizes the scratch for node n at compile, so that a run allocates nothing.
    void plan(const HostTensors& h, const graph::Node& n);

    // Runs n (an op covers() accepts) on the pool (nullptr: the calling thread), with the
    // kernels of activeIsaLevel(). State slots outside the pool are an OutOfRange error, as on
    // the reference.
    Status run(const HostTensors& h, const graph::Node& n, ThreadPool* pool);

private:
    Status ssmConv(const HostTensors& h, const graph::Node& n, ThreadPool* pool);
    Status deltaNet(const HostTensors& h, const graph::Node& n, ThreadPool* pool);
    void splitRuns(const int32_t* info, int64_t n);

    std::vector<ref::StateRun> m_runs;
    std::vector<float> m_qk;     // DeltaNet: the step's q and k heads normalized, [2][n][Hk][S], then their k·q [n][Hk]
    std::vector<float> m_decay;  // DeltaNet: e^g, [n][Hv]
    std::vector<float> m_window; // SsmConv: each run's starting window, [K-1][C]
    std::vector<float> m_wT;     // SsmConv: the weights transposed, [K][C]
};

} // namespace hearth::cpu
