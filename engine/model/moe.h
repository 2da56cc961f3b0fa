// Mixture-of-experts feed-forward blocks: the router (a linear layer scoring every expert, the
// top k kept per token, their weights), the chosen experts' SwiGLU feed-forwards as matMuls over
// 3-D expert tensors that read only the selected experts, and their weighted sum.
#pragma once

#include "model/binding.h"

namespace hearth::model {

// How a file describes its experts.
struct MoeHParams {
    int nExpert = 0;     // expert_count
    int nUsed = 0;       // expert_used_count: experts per token
    int nFfExpert = 0;   // expert_feed_forward_length: each expert's hidden width
};
// Reads expert_count, expert_used_count and expert_feed_forward_length (default nFf / nUsed; the
// last two given once or per layer, the same on every layer).
// Errors name the key: no experts, more used than there are, absurd sizes.
Result<MoeHParams> readMoeHParams(const Binder& b, int nFf);

// One layer's expert weights; -1 where absent.
struct MoeWeights {
    int32_t router = -1;                 // ffn_gate_inp  [nExpert][E]
    int32_t gate = -1, up = -1, down = -1; // ffn_{gate,up,down}_exps  [nExpert][F][E], [nExpert][E][F]
    // Biases (gpt-oss): the router's [nExpert], each expert's gate/up [nExpert][F] and down [nExpert][E].
    int32_t routerBias = -1, gateBias = -1, upBias = -1, downBias = -1;
};
// Binds blk.<layer>.ffn_gate_inp / ffn_{gate,up,down}_exps (and their .bias tensors when `biases`)
// against the hyper-parameters.
Result<MoeWeights> bindExperts(Binder& b, int layer, int64_t nEmbd, const MoeHParams& hp, bool biases = false);

enum class MoeGating : uint8_t {
    Softmax,           // weights: the softmax over all experts, taken at the chosen ones
    SoftmaxNormalized, // the chosen ones' weights rescaled to sum to 1 (= softmax over the chosen)
};

enum class MoeActivation : uint8_t {
    SwiGlu,    // silu(gate) · up
    SwiGluOai, // gpt-oss: clamped at 7, sigmoid(1.702 g), (up + 1)
};

// The feed-forward of x [n][E] through the top nUsed experts of each token: [n][E].
graph::TensorId moeFeedForward(graph::Graph& g, graph::TensorId x, const MoeWeights& w, const MoeHParams& hp,
                               MoeGating gating, MoeActivation act = MoeActivation::SwiGlu);

} // namespace hearth::model
