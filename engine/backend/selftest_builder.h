// The common part of the self-test's case builders (selftest_cases.cpp, selftest_cases_recurrent.cpp):
// opening and closing a case, and its leaf tensors (activations of random or given values, index
// tensors, step inputs, weights) with their fills, drawing from one seeded Rng.
#pragma once

#include "backend/selftest_cases.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace hearth::backend::selftest {

class CaseBuilder {
public:
    using Ne = std::array<int64_t, graph::kMaxDims>;

    CaseBuilder(uint64_t seed, WeightTable& weights, std::vector<Case>& cases) : m_rng(seed), m_weights(weights), m_cases(cases) {}

    // The first error of any case built so far.
    Status status() const { return m_status; }
    Rng& rng() { return m_rng; }

    // "%g" of v, for case shapes.
    static std::string num(float v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", double(v));
        return buf;
    }
    // "[ne0,ne1,...]" without trailing 1s beyond ne1.
    static std::string dims(const Ne& ne) {
        int last = graph::kMaxDims - 1;
        while (last > 1 && ne[size_t(last)] == 1) --last;
        std::string s = "[";
        for (int d = 0; d <= last; ++d) s += (d ? "," : "") + std::to_string(ne[size_t(d)]);
        return s + "]";
    }

protected:
    // A new case with an empty graph over the weight table.
    Case& begin(std::string op, std::string type, std::string shape, double tol) {
        m_cases.emplace_back();
        Case& c = m_cases.back();
        c.op = std::move(op);
        c.type = std::move(type);
        c.shape = std::move(shape);
        c.tol = tol;
        c.graph = graph::Graph(&m_weights.list());
        return c;
    }

    // Sets the compared tensor; keeps the graph's error (or a missing output) as the status.
    void finish(Case& c, graph::TensorId out) {
        c.output = out;
        if (m_status.isOk() && !c.graph.status().isOk()) m_status = c.graph.status().withContext("selftest case " + c.op + " " + c.shape);
        if (m_status.isOk() && out == graph::kNone) m_status = internalError("selftest case " + c.op + " " + c.shape + " has no output");
    }

    // An F32 activation of these values.
    graph::TensorId values(Case& c, Ne ne, std::vector<float> v) {
        const graph::TensorId t = c.graph.newActivation(quant::Type::F32, ne, "in" + std::to_string(c.fills.size()));
        c.fills.push_back({t, std::move(v), {}});
        return t;
    }
    // An F32 activation of random values in [lo, hi].
    graph::TensorId act(Case& c, Ne ne, float lo, float hi) { return values(c, ne, m_rng.values(ne[0] * ne[1] * ne[2] * ne[3], lo, hi)); }

    // An I32 activation of these values.
    graph::TensorId indices(Case& c, Ne ne, std::vector<int32_t> v) {
        const graph::TensorId t = c.graph.newActivation(quant::Type::I32, ne, "ids");
        c.fills.push_back({t, {}, std::move(v)});
        return t;
    }

    // The step input `which` [n1][n] holding v.
    graph::TensorId input(Case& c, graph::StepInput which, std::vector<int32_t> v, int64_t n, int64_t n1 = 1) {
        const graph::TensorId t = c.graph.input(which, n, n1);
        if (t != graph::kNone) c.fills.push_back({t, {}, std::move(v)});
        return t;
    }

    // A new weight of type t (random values in [lo, hi], quantized) in the table and the case's graph.
    graph::TensorId weight(Case& c, quant::Type t, Ne ne, int nDims, float lo, float hi) {
        auto index = m_weights.add("w" + std::to_string(m_weights.list().size()), t, ne, nDims,
                                   m_rng.values(ne[0] * ne[1] * ne[2] * ne[3], lo, hi));
        if (!index) {
            if (m_status.isOk()) m_status = index.status().withContext("selftest weight of " + c.op);
            return graph::kNone;
        }
        return c.graph.weight(*index);
    }

    Rng m_rng;
    WeightTable& m_weights;
    std::vector<Case>& m_cases;
    Status m_status;
};

} // namespace hearth::backend::selftest
