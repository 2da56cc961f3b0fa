// gpt-oss (OpenAI's open-weights 20b / 120b): RMS-normed decoder layers whose attention, with
// q/k/v and output biases and a learned sink logit per head, alternates between a 128-token
// sliding window (even layers) and full attention, with YaRN-scaled NeoX RoPE; each feed-forward
// is a mixture of experts with biases everywhere: the router's top k logits softmaxed into the
// weights, and the experts' clamped SwiGLU (gate · σ(1.702 gate) · (up + 1)).
#include "model/architectures.h"
#include "model/binding.h"
#include "model/moe.h"

namespace hearth::model {

namespace {

struct Layer {
    int32_t attnNorm = -1, ffnNorm = -1;
    AttentionWeights attn;
    MoeWeights experts;
    bool sliding = false;
};

class GptOss final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "gpt-oss", m_weights, m_copies);
        HEARTH_ASSIGN_OR_RETURN(m_hp, readDecoderHParams(b, /*feedForward=*/false));
        const DecoderHParams& hp = m_hp;
        if (hp.nRot != hp.headDim || hp.headDimV != hp.headDim)
            return unsupported("gpt-oss with RoPE or value dimensions other than the head size");
        m_dims = decoderDims("gpt-oss", hp);
        HEARTH_ASSIGN_OR_RETURN(m_moe, readMoeHParams(b, hp.nFf));
        HEARTH_ASSIGN_OR_RETURN(m_window, b.integer("attention.sliding_window"));
        HEARTH_ASSIGN_OR_RETURN(const std::vector<bool> sliding, readSlidingLayers(b, hp.nLayer, m_window, 2));
        graph::RopeParams rope = attentionSpec(hp).rope;
        rope.neox = true;
        HEARTH_ASSIGN_OR_RETURN(m_rope, readRopeScaling(b, hp, rope));
        HEARTH_ASSIGN_OR_RETURN(m_ropeBaseSliding, b.real("rope.freq_base_swa", hp.ropeBase));

        const int64_t E = hp.nEmbd, qDim = int64_t(hp.nHead) * hp.headDim, kvDim = int64_t(hp.nHeadKv) * hp.headDim;
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, hp.nVocab, -1));
        HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector("output_norm.weight", E, hp.nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix("output.weight", E, hp.nVocab, hp.nLayer));
        m_layers.resize(size_t(hp.nLayer));
        for (int l = 0; l < hp.nLayer; ++l) {
            Layer& L = m_layers[size_t(l)];
            const std::string p = "blk." + std::to_string(l) + ".";
            L.sliding = sliding[size_t(l)];
            HEARTH_ASSIGN_OR_RETURN(L.attnNorm, b.vector(p + "attn_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.wq, b.matrix(p + "attn_q.weight", E, qDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.wk, b.matrix(p + "attn_k.weight", E, kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.wv, b.matrix(p + "attn_v.weight", E, kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.wo, b.matrix(p + "attn_output.weight", qDim, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bq, b.vector(p + "attn_q.bias", qDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bk, b.vector(p + "attn_k.bias", kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bv, b.vector(p + "attn_v.bias", kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bo, b.vector(p + "attn_output.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.sinks, b.vector(p + "attn_sinks.weight", hp.nHead, l));
            HEARTH_ASSIGN_OR_RETURN(L.ffnNorm, b.vector(p + "post_attention_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.experts, bindExperts(b, l, E, m_moe, /*biases=*/true));
        }
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        const DecoderHParams& hp = m_hp;
        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        graph::TensorId x = g.getRows(g.weight(m_tokenEmbedding), in.ids); // [n][E]
        for (int l = 0; l < hp.nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            AttentionSpec spec = attentionSpec(hp);
            spec.rope = m_rope;
            if (L.sliding) spec.rope.freqBase = m_ropeBaseSliding;
            spec.window = L.sliding ? m_window : 0;
            graph::TensorId cur = g.rmsNorm(x, g.weight(L.attnNorm), hp.normEps);
            x = g.add(selfAttention(g, in, kv, l, cur, L.attn, spec), x);
            cur = g.rmsNorm(x, g.weight(L.ffnNorm), hp.normEps);
            cur = moeFeedForward(g, cur, L.experts, m_moe, MoeGating::SoftmaxNormalized, MoeActivation::SwiGluOai);
            x = g.add(cur, x);
        }
        g.setLayer(hp.nLayer);
        logitsHead(g, in, x, m_outputNorm, m_output, hp.normEps);
    }

private:
    DecoderHParams m_hp;
    MoeHParams m_moe;
    std::vector<Layer> m_layers;
    int32_t m_outputNorm = -1;
    int m_window = 0;
    graph::RopeParams m_rope;
    float m_ropeBaseSliding = 10000.0f;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadGptOss(const gguf::File& file) {
    return bindArchitecture<GptOss>(file);
}

} // namespace hearth::model
