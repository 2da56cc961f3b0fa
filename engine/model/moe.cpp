// The mixture-of-experts router and expert feed-forward shared by the MoE architectures.
#include "model/moe.h"

namespace hearth::model {

using graph::TensorId;

Result<MoeHParams> readMoeHParams(const Binder& b, int nFf) {
    MoeHParams hp;
    HEARTH_ASSIGN_OR_RETURN(hp.nExpert, b.integer("expert_count"));
    HEARTH_ASSIGN_OR_RETURN(hp.nUsed, b.sameCount("expert_used_count"));
    if (hp.nExpert < 1 || hp.nExpert > 4096) return invalidFormat("expert_count must be 1..4096");
    if (hp.nUsed < 1 || hp.nUsed > hp.nExpert)
        return invalidFormat("expert_used_count " + std::to_string(hp.nUsed) + " must be 1..expert_count (" +
                             std::to_string(hp.nExpert) + ")");
    HEARTH_ASSIGN_OR_RETURN(hp.nFfExpert, b.sameCount("expert_feed_forward_length", nFf / hp.nUsed));
    if (hp.nFfExpert < 1) return invalidFormat("expert_feed_forward_length must be positive");
    return hp;
}

Result<MoeWeights> bindExperts(Binder& b, int layer, int64_t nEmbd, const MoeHParams& hp, bool biases) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    MoeWeights w;
    const int64_t F = hp.nFfExpert, n = hp.nExpert;
    HEARTH_ASSIGN_OR_RETURN(w.router, b.matrix(p + "ffn_gate_inp.weight", nEmbd, n, layer));
    HEARTH_ASSIGN_OR_RETURN(w.gate, b.experts(p + "ffn_gate_exps.weight", nEmbd, F, n, layer));
    HEARTH_ASSIGN_OR_RETURN(w.up, b.experts(p + "ffn_up_exps.weight", nEmbd, F, n, layer));
    HEARTH_ASSIGN_OR_RETURN(w.down, b.experts(p + "ffn_down_exps.weight", F, nEmbd, n, layer));
    if (biases) {
        HEARTH_ASSIGN_OR_RETURN(w.routerBias, b.vector(p + "ffn_gate_inp.bias", n, layer));
        HEARTH_ASSIGN_OR_RETURN(w.gateBias, b.matrix(p + "ffn_gate_exps.bias", F, n, layer));
        HEARTH_ASSIGN_OR_RETURN(w.upBias, b.matrix(p + "ffn_up_exps.bias", F, n, layer));
        HEARTH_ASSIGN_OR_RETURN(w.downBias, b.matrix(p + "ffn_down_exps.bias", nEmbd, n, layer));
    }
    return w;
}

namespace {

// y [n][k][J] plus each chosen expert's bias row from `table` [nExpert][J].
TensorId addExpertBias(graph::Graph& g, TensorId y, int32_t table, TensorId chosen) {
    if (table < 0) return y;
    // Copied: building more nodes may move the graph's tensors.
    const std::array<int64_t, graph::kMaxDims> ne = g.tensor(y).ne;
    const TensorId rows = g.getRows(g.weight(table), g.reshape(chosen, ne[1] * ne[2])); // [n·k][J]
    return g.add(y, g.reshape(rows, ne[0], ne[1], ne[2]));
}

} // namespace

TensorId moeFeedForward(graph::Graph& g, TensorId x, const MoeWeights& w, const MoeHParams& hp, MoeGating gating,
                        MoeActivation act) {
    const int64_t E = g.tensor(x).ne[0], n = g.tensor(x).rows();
    TensorId logits = g.matMul(g.weight(w.router), x); // [n][nExpert]
    if (w.routerBias >= 0) logits = g.add(logits, g.weight(w.routerBias));
    // The softmax is monotonic: the top k of the logits are the top k of the probabilities.
    const TensorId chosen = g.topK(logits, hp.nUsed);           // [n][k] expert ids
    const TensorId weights = gating == MoeGating::SoftmaxNormalized
                                 ? g.softmax(g.gather(logits, chosen))        // [n][k]
                                 : g.gather(g.softmax(logits), chosen);
    // The experts' part: where --cpu-moe keeps it, the router's outputs and x go to the CPU and
    // the mixed [n][E] comes back.
    g.setExperts(true);
    const TensorId xe = g.reshape(x, E, 1, n);                                // [n][1][E]
    const TensorId gate = addExpertBias(g, g.matMulId(g.weight(w.gate), xe, chosen), w.gateBias, chosen); // [n][k][F]
    const TensorId up = addExpertBias(g, g.matMulId(g.weight(w.up), xe, chosen), w.upBias, chosen);       // [n][k][F]
    const TensorId h = act == MoeActivation::SwiGluOai ? g.swiGluOai(gate, up, 1.702f, 7.0f) : g.swiGlu(gate, up);
    const TensorId y = addExpertBias(g, g.matMulId(g.weight(w.down), h, chosen), w.downBias, chosen);     // [n][k][E]
    const TensorId mixed = g.weightedSum(y, weights);                                                      // [n][E]
    g.setExperts(false);
    return mixed;
}

} // namespace hearth::model
