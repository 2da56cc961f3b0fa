// The pre-norm dense decoder that llama, qwen2, qwen3, mistral3 and smollm3 share: per layer RMSNorm, grouped-query
// self-attention (with the variant's biases, q/k norms and RoPE pairing), a residual add, RMSNorm,
// a SwiGLU feed-forward (or a mixture of SwiGLU experts: qwen3moe, Mixtral) and another residual
// add; then the final norm and the logits. Each of those
// architectures' files binds it with its own options and describes its step through it.
#pragma once

#include "model/binding.h"
#include "model/moe.h"

#include <vector>

namespace hearth::model {

struct DenseLayer {
    int32_t attnNorm = -1, ffnNorm = -1, gate = -1, up = -1, down = -1;
    int32_t gateBias = -1, upBias = -1, downBias = -1; // optional feed-forward biases (llama, mistral3)
    AttentionWeights attn;
    MoeWeights experts; // a mixture-of-experts feed-forward instead of gate/up/down
};

struct DenseVariant {
    const char* arch = "llama";
    bool biases = false;         // q/k/v biases required (qwen2)
    bool optionalBiases = false; // q/k/v/output and feed-forward biases bound when the file has them (llama)
    // llama 4's attention temperature on q (attention.temperature_scale, over the original
    // context's length of positions), as llama.cpp reads it for mistral3.
    bool attnTemperature = false;
    bool qkNorm = false;         // per-head RMS norms of q and k before RoPE (qwen3)
    bool neox = false;           // RoPE pairs (i, i + nRot/2) instead of (2i, 2i + 1)
    // Every noRopeEvery-th layer (layers noRopeEvery - 1, 2 * noRopeEvery - 1, ...) attends
    // without RoPE (smollm3: 4); 0: every layer rotates.
    int noRopeEvery = 0;
    // Reads input embeddings (an image's, used as they are) in place of some tokens' rows
    // (ModelDims::givenEmbeddings): mistral3 with Pixtral, llama with a projector (LLaVA).
    bool takesImages = false;
    // The feed-forward: dense SwiGLU, a mixture of experts, or experts when the file has
    // expert_count (llama files of Mixtral).
    enum class Ffn : uint8_t { Dense, Experts, ExpertsIfCounted } ffn = Ffn::Dense;
    // A reranker when the file says pooling_type 4 (Qwen3-Reranker as llama.cpp converts it): the
    // last token's normed row through cls.output (the "yes" and "no" rows of the LM head), then
    // a softmax, whose first output is the relevance probability.
    bool rankHead = false;
    MoeGating gating = MoeGating::SoftmaxNormalized;
};

class DenseDecoder : public Architecture {
public:
    explicit DenseDecoder(const DenseVariant& variant) : m_variant(variant) {}
    // Reads the hyper-parameters and binds every tensor (errors name the key or tensor).
    Status bind(const gguf::File& file);
    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override;

private:
    DenseVariant m_variant;
    DecoderHParams m_hp;
    graph::RopeParams m_rope; // with the file's RoPE scaling
    bool m_experts = false;
    MoeHParams m_moe;
    std::vector<DenseLayer> m_layers;
    int32_t m_outputNorm = -1;
    int32_t m_clsOut = -1, m_clsOutB = -1; // a reranker's head
};

} // namespace hearth::model
