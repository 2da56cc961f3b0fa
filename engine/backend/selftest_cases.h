// The self-test's cases as data (selftest_cases.cpp builds them, selftest.cpp runs them): per case
// a small graph over the run's weight table, the values of its leaf tensors, the tensor compared,
// the tolerance, and the K/V pool it needs.
#pragma once

#include "backend/device.h"
#include "backend/selftest.h"
#include "graph/graph.h"

#include <cstdint>
#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace hearth::backend::selftest {

// Every weight of one run, each with its own index (devices keep uploaded weights by index), and
// the bytes behind them (64-byte aligned, as a GGUF mapping would be).
class WeightTable {
public:
    WeightTable() = default;
    WeightTable(const WeightTable&) = delete;
    WeightTable& operator=(const WeightTable&) = delete;

    // Quantizes values (rows of ne[0]) to type (a type without a quantizer gets random blocks
    // seeded from the values); returns the new weight's index.
    Result<int32_t> add(const std::string& name, quant::Type type, std::array<int64_t, graph::kMaxDims> ne, int nDims,
                        const std::vector<float>& values);
    const std::vector<graph::Weight>& list() const { return m_list; }

private:
    struct Aligned {
        void operator()(uint8_t* p) const;
    };
    std::vector<graph::Weight> m_list;
    std::deque<std::unique_ptr<uint8_t[], Aligned>> m_bytes;
};

// splitmix64: the same numbers on every platform and standard library.
class Rng {
public:
    explicit Rng(uint64_t seed) : m_state(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
    uint64_t next() {
        uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * float(double(next() >> 40) * 0x1.0p-24); }
    int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); } // inclusive
    std::vector<float> values(int64_t n, float lo, float hi) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = uniform(lo, hi);
        return v;
    }
    template <typename T> void shuffle(std::vector<T>& v) {
        for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[size_t(next() % i)]);
    }

private:
    uint64_t m_state;
};

// Values written into a leaf tensor (an activation no node makes, a step input, or a State pool's
// initial contents) before a run.
struct Fill {
    graph::TensorId tensor = graph::kNone;
    std::vector<float> f;
    std::vector<int32_t> i;
};

struct Case {
    std::string op, type, shape;
    double tol = 0.0;
    graph::Graph graph;
    std::vector<Fill> fills;
    graph::TensorId output = graph::kNone; // compared; I32 outputs must match exactly
    std::vector<graph::TensorId> states;   // State pools (filled) also compared after the run
    bool kv = false;                       // needs a K/V pool of kvSpec (layer 0)
    KvPoolSpec kvSpec;
};

// Builds the cases of these options over `weights` (deterministic in options.seed), and names the
// weight types that cannot be quantized (so are not tested).
Status buildCases(const SelftestOptions& options, WeightTable& weights, std::vector<Case>& cases,
                  std::vector<std::string>& notQuantizable);

// The cases of the hybrid models' ops (selftest_cases_recurrent.cpp): Sigmoid, Softplus,
// RmsNormGated, and SsmConv / DeltaNet over State pools with decode, prefill, fresh and snapshot
// runs.
Status recurrentCases(const SelftestOptions& options, WeightTable& weights, std::vector<Case>& cases);

} // namespace hearth::backend::selftest
