// The self-test's cases of the hybrid (qwen3.5) ops: Sigmoid and Softplus (with inputs far beyond
// where exp overflows), RmsNormGated, and SsmConv / DeltaNet over State pools of random contents,
// stepped through decode (three one-token runs), prefill (one run of 40, two of 20), a run
// starting from zeros (read slot -1) and runs that snapshot the state, with the pools compared
// after the run as well as the outputs.
//
// Tolerances (max |ours - ref| / max(1, max |ref|), see selftest_cases.cpp): 1e-5 for the
// element-wise ops, the gated norm and the convolution (float sums of K terms); 1e-4 for the delta
// rule (float dot products of S terms, carried through up to 40 tokens of state).
#include "backend/selftest_builder.h"

namespace hearth::backend::selftest {

using graph::StepInput;
using graph::TensorId;
using quant::Type;

namespace {

constexpr int64_t kSlots = 8; // state slots of every case's pools

// One run of a step: `len` tokens advancing the state from slot `read` (-1: zeros) into `write`;
// snaps: (token within the run, slot) pairs that copy the state after that token.
struct Run {
    int64_t len = 1;
    int32_t read = -1, write = 0;
    std::vector<std::pair<int64_t, int32_t>> snaps;
};

// A named sequence of runs (the step's StateInfo).
struct Steps {
    std::string name;
    std::vector<Run> runs;
    int64_t tokens() const {
        int64_t n = 0;
        for (const Run& r : runs) n += r.len;
        return n;
    }
    std::vector<int32_t> info() const {
        std::vector<int32_t> v;
        for (const Run& r : runs)
            for (int64_t t = 0; t < r.len; ++t) {
                int32_t snap = -1;
                for (const auto& [at, slot] : r.snaps)
                    if (at == t) snap = slot;
                v.insert(v.end(), {r.read, r.write, snap});
            }
        return v;
    }
};

// Read slots are never another run's write or snapshot slot (graph.h), so runs are independent.
std::vector<Steps> stepKinds(bool quick) {
    std::vector<Steps> kinds;
    kinds.push_back({"decode", {{1, 5, 5, {}}, {1, 1, 1, {}}, {1, 3, 6, {}}}});
    if (quick) return kinds;
    kinds.push_back({"prefill 40", {{40, 2, 2, {}}}});
    kinds.push_back({"prefill 20+20", {{20, 4, 4, {}}, {20, 7, 0, {}}}});
    kinds.push_back({"fresh (read -1)", {{7, -1, 3, {}}, {1, 6, 6, {}}}});
    kinds.push_back({"snapshots", {{12, 1, 2, {{3, 5}, {11, 7}}}, {4, 0, 0, {{0, 4}}}}});
    return kinds;
}

class RecurrentBuilder : public CaseBuilder {
public:
    RecurrentBuilder(const SelftestOptions& o, WeightTable& w, std::vector<Case>& cases)
        : CaseBuilder(o.seed ^ 0x5EC0DE5EC0DEull, w, cases) {}

    // Sigmoid / Softplus of values in [lo, hi], with `extremes` mixed in (beyond exp's range).
    void unary(graph::Op op, int64_t width, int64_t rows, float lo, float hi, bool extremes) {
        Case& c = begin(graph::opName(op), "F32", "x" + dims({width, rows, 1, 1}) + (extremes ? " extremes" : ""), 1e-5);
        std::vector<float> v = m_rng.values(width * rows, lo, hi);
        if (extremes) {
            const float far[] = {-1e4f, -200.0f, -88.8f, -30.0f, -20.5f, -20.0f, 0.0f, 19.9f, 20.0f, 20.5f, 30.0f, 88.8f, 200.0f, 1e4f};
            for (size_t i = 0; i < std::size(far) && i < v.size(); ++i) v[(i * 7) % v.size()] = far[i];
        }
        const TensorId x = values(c, {width, rows, 1, 1}, std::move(v));
        finish(c, op == graph::Op::Sigmoid ? c.graph.sigmoid(x) : c.graph.softplus(x));
    }

    void rmsNormGated(int64_t width, int64_t rows, float eps) {
        Case& c = begin("rms_norm_gated", "F32", "x" + dims({width, rows, 1, 1}) + " eps " + num(eps), 1e-5);
        const TensorId x = act(c, {width, rows, 1, 1}, -2.0f, 2.0f);
        const TensorId w = weight(c, Type::F32, {width, 1, 1, 1}, 1, 0.5f, 1.5f);
        const TensorId z = act(c, {width, rows, 1, 1}, -6.0f, 6.0f);
        finish(c, c.graph.rmsNormGated(x, w, z, eps));
    }

    // x [n][C] through w [C][K] with the window pool [slots][(K-1)·C].
    void ssmConv(int64_t C, int64_t K, const Steps& s) {
        const int64_t n = s.tokens();
        Case& c = begin("ssm_conv", "F32", "C " + std::to_string(C) + " K " + std::to_string(K) + " " + s.name, 1e-5);
        graph::Graph& g = c.graph;
        const TensorId x = act(c, {C, n, 1, 1}, -2.0f, 2.0f);
        const TensorId w = weight(c, Type::F32, {K, C, 1, 1}, 2, -1.0f, 1.0f);
        const TensorId state = statePool(c, false, (K - 1) * C);
        const TensorId info = input(c, StepInput::StateInfo, s.info(), 3, n);
        finish(c, g.ssmConv(x, w, state, info));
    }

    // qkv [n][(2Hk + Hv)·S], g and beta [n][Hv] with the matrix pool [slots][Hv·S·S].
    void deltaNet(int64_t S, int64_t Hk, int64_t Hv, const Steps& s) {
        const int64_t n = s.tokens();
        Case& c = begin("delta_net", "F32",
                        "S " + std::to_string(S) + " heads " + std::to_string(Hk) + "/" + std::to_string(Hv) + " " + s.name,
                        1e-4);
        graph::Graph& g = c.graph;
        const TensorId qkv = act(c, {(2 * Hk + Hv) * S, n, 1, 1}, -1.0f, 1.0f);
        const TensorId gate = act(c, {Hv, n, 1, 1}, -2.0f, 0.0f); // the log of the decay
        const TensorId beta = act(c, {Hv, n, 1, 1}, 0.0f, 1.0f);
        const TensorId state = statePool(c, true, Hv * S * S);
        const TensorId info = input(c, StepInput::StateInfo, s.info(), 3, n);
        finish(c, g.deltaNet(qkv, gate, beta, state, info, int32_t(Hk), S, 1e-6f));
    }

private:
    // The layer-0 pool of kSlots rows, random contents (the same on the device and the reference),
    // compared after the run.
    TensorId statePool(Case& c, bool matrices, int64_t row) {
        const TensorId t = c.graph.state(0, matrices, kSlots, row);
        if (t == graph::kNone) return t;
        c.fills.push_back({t, m_rng.values(kSlots * row, -1.0f, 1.0f), {}});
        c.states.push_back(t);
        return t;
    }
};

} // namespace

Status recurrentCases(const SelftestOptions& options, WeightTable& weights, std::vector<Case>& cases) {
    using graph::Op;
    RecurrentBuilder b(options, weights, cases);
    const std::vector<Steps> kinds = stepKinds(options.quick);
    if (options.quick) {
        // qwen3.5's shapes, one decode step.
        b.unary(Op::Sigmoid, 256, 3, -8.0f, 8.0f, true);
        b.unary(Op::Softplus, 256, 3, -8.0f, 8.0f, true);
        b.rmsNormGated(128, 6, 1e-6f);
        b.ssmConv(96, 4, kinds[0]);
        b.deltaNet(128, 1, 2, kinds[0]);
        return b.status();
    }
    Rng& r = b.rng();
    const int64_t odd = 2 * r.range(50, 1500) + 1;
    for (Op op : {Op::Sigmoid, Op::Softplus}) {
        b.unary(op, 1, 3, -8.0f, 8.0f, false);
        b.unary(op, 17, 1, -8.0f, 8.0f, false);
        b.unary(op, 256, 17, -8.0f, 8.0f, false);
        b.unary(op, odd, r.range(1, 8), -8.0f, 8.0f, false);
        b.unary(op, 256, 3, -40.0f, 40.0f, true);
    }
    b.rmsNormGated(1, 3, 1e-5f);
    b.rmsNormGated(128, 6, 1e-6f);
    b.rmsNormGated(32, 17, 1e-6f);
    b.rmsNormGated(odd, r.range(1, 8), 1e-6f);
    for (const Steps& s : kinds) b.ssmConv(96, 4, s);
    b.ssmConv(67, 4, kinds[0]);   // an odd channel count
    b.ssmConv(300, 4, kinds[2]);  // several workgroups of channels
    b.ssmConv(40, 2, kinds[1]);   // the shortest kernel
    b.ssmConv(33, 5, kinds[4]);
    struct Heads {
        int64_t S, Hk, Hv;
    };
    for (const Heads& h : {Heads{32, 4, 4}, Heads{32, 2, 4}, Heads{128, 2, 2}, Heads{128, 1, 2}})
        for (const Steps& s : kinds) b.deltaNet(h.S, h.Hk, h.Hv, s);
    return b.status();
}

} // namespace hearth::backend::selftest
