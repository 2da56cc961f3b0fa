// Gemma 3 (dense): RMS-normed decoder layers whose attention alternates between a sliding window
// (most layers, RoPE base 10k) and global attention (every n-th layer, the file's RoPE base and
// linear scaling), with q/k norms, norms after attention and after the feed-forward as well as
// before, a GeGLU feed-forward (tanh GELU), embeddings scaled by √E, and optional soft-capping of
// the attention scores and of the final logits.
#include "model/architectures.h"
#include "model/binding.h"

#include <cmath>

namespace hearth::model {

namespace {

struct Layer {
    int32_t attnNorm = -1, attnPostNorm = -1, ffnNorm = -1, ffnPostNorm = -1, gate = -1, up = -1, down = -1;
    AttentionWeights attn;
    bool sliding = false;
};

class Gemma3 final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "gemma3", m_weights, m_copies);
        HEARTH_ASSIGN_OR_RETURN(m_hp, readDecoderHParams(b));
        const DecoderHParams& hp = m_hp;
        if (hp.headDimV != hp.headDim) return unsupported("gemma3 with value length != key length");
        m_dims = decoderDims("gemma3", hp);
        m_dims.givenEmbeddings = true;
        m_dims.imagesAtOnce = true;
        HEARTH_ASSIGN_OR_RETURN(m_window, b.integer("attention.sliding_window", 0));
        HEARTH_ASSIGN_OR_RETURN(const std::vector<bool> sliding, readSlidingLayers(b, hp.nLayer, m_window, 6));
        HEARTH_ASSIGN_OR_RETURN(m_ropeBaseSliding, b.real("rope.freq_base_swa", 10000.0f));
        // The global layers' linear scaling (sliding layers run unscaled).
        HEARTH_ASSIGN_OR_RETURN(const graph::RopeParams scaled, readRopeScaling(b, hp, attentionSpec(hp).rope));
        m_ropeScale = scaled.freqScale;
        HEARTH_ASSIGN_OR_RETURN(m_attnSoftcap, b.real("attn_logit_softcapping", 0.0f));
        HEARTH_ASSIGN_OR_RETURN(m_finalSoftcap, b.real("final_logit_softcapping", 0.0f));
        if (m_attnSoftcap < 0.0f || m_finalSoftcap < 0.0f) return invalidFormat("gemma3 soft-capping must not be negative");
        // Gemma 3 27B scales queries by 1/√(E / heads), the others by 1/√(head size).
        m_queryScale = hp.nLayer == 62 ? 1.0f / std::sqrt(float(hp.nEmbd / hp.nHead)) : 1.0f / std::sqrt(float(hp.headDim));

        const int64_t E = hp.nEmbd, qDim = int64_t(hp.nHead) * hp.headDim, kvDim = int64_t(hp.nHeadKv) * hp.headDim;
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, hp.nVocab, -1));
        HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector("output_norm.weight", E, hp.nLayer));
        m_output = m_tokenEmbedding;
        if (b.hasTensor("output.weight")) {
            HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix("output.weight", E, hp.nVocab, hp.nLayer));
        }
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
            HEARTH_ASSIGN_OR_RETURN(L.attn.qNorm, b.vector(p + "attn_q_norm.weight", hp.headDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.kNorm, b.vector(p + "attn_k_norm.weight", hp.headDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attnPostNorm, b.vector(p + "post_attention_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ffnNorm, b.vector(p + "ffn_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.gate, b.matrix(p + "ffn_gate.weight", E, hp.nFf, l));
            HEARTH_ASSIGN_OR_RETURN(L.up, b.matrix(p + "ffn_up.weight", E, hp.nFf, l));
            HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(p + "ffn_down.weight", hp.nFf, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ffnPostNorm, b.vector(p + "post_ffw_norm.weight", E, l));
        }
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        const DecoderHParams& hp = m_hp;
        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        graph::TensorId x = g.getRows(g.weight(m_tokenEmbedding), in.ids); // [n][E]
        x = g.scale(x, std::sqrt(float(hp.nEmbd)));
        x = withGivenEmbeddings(g, in, x); // an image's embeddings as they are, not scaled
        for (int l = 0; l < hp.nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            AttentionSpec spec = attentionSpec(hp);
            spec.rope.neox = true;
            spec.rope.freqBase = L.sliding ? m_ropeBaseSliding : hp.ropeBase;
            spec.rope.freqScale = L.sliding ? 1.0f : m_ropeScale;
            spec.rope.nCtxOrig = hp.nCtxTrain;
            spec.scale = m_queryScale;
            spec.window = L.sliding ? m_window : 0;
            spec.softcap = m_attnSoftcap;
            graph::TensorId cur = g.rmsNorm(x, g.weight(L.attnNorm), hp.normEps);
            cur = selfAttention(g, in, kv, l, cur, L.attn, spec);
            const graph::TensorId attnOut = g.add(g.rmsNorm(cur, g.weight(L.attnPostNorm), hp.normEps), x);
            cur = g.rmsNorm(attnOut, g.weight(L.ffnNorm), hp.normEps);
            // [n][F] gate and up, [n][E] down
            cur = g.geGlu(g.matMul(g.weight(L.gate), cur), g.matMul(g.weight(L.up), cur));
            cur = g.matMul(g.weight(L.down), cur);
            x = g.add(g.rmsNorm(cur, g.weight(L.ffnPostNorm), hp.normEps), attnOut);
        }
        g.setLayer(hp.nLayer);
        logitsHead(g, in, x, m_outputNorm, m_output, hp.normEps, m_finalSoftcap);
    }

private:
    DecoderHParams m_hp;
    std::vector<Layer> m_layers;
    int32_t m_outputNorm = -1;
    int m_window = 0;
    float m_ropeBaseSliding = 10000.0f, m_ropeScale = 1.0f, m_attnSoftcap = 0.0f, m_finalSoftcap = 0.0f;
    float m_queryScale = 1.0f;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadGemma3(const gguf::File& file) {
    return bindArchitecture<Gemma3>(file);
}

} // namespace hearth::model
