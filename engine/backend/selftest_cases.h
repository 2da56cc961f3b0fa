// The self-test's cases as data (selftest_cases.cpp builds them, selftest.cpp runs them): per case
// a small graph over the run's weight table, the values of its leaf tensors, the tensor compared,
// the tolerance, and the K/V pool it needs.
#pragma once

#include "backend/device.h"
#include "backend/selftest.h"
#include "graph/graph.h"

#include <cstdint>
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

// Values written into a leaf tensor (an activation no node makes, or a step input) before a run.
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
    bool kv = false;                       // needs a K/V pool of kvSpec (layer 0)
    KvPoolSpec kvSpec;
};

// Builds the cases of these options over `weights` (deterministic in options.seed), and names the
// weight types that cannot be quantized (so are not tested).
Status buildCases(const SelftestOptions& options, WeightTable& weights, std::vector<Case>& cases,
                  std::vector<std::string>& notQuantizable);

} // namespace hearth::backend::selftest
