// Phi-3, Phi-3.5-mini and Phi-4-mini ("phi3"): pre-norm decoder layers with grouped-query
// attention from one fused q/k/v projection, NeoX RoPE over the first rope.dimension_count dims of
// each head (Phi-4-mini rotates 96 of 128) with LongRoPE's per-dimension frequency factors, a
// SwiGLU feed-forward whose gate and up projections are one fused matrix, and tied or separate
// output weights. The facts follow llama.cpp's phi3 graph, which the tests hold this file to.
//
// LongRoPE. A 128k file carries two sets of factors, rope_factors_short and rope_factors_long
// ([rope dims / 2] each), and an attention factor (rope.scaling.attn_factor, sqrt(1 + ln(context /
// original) / ln original)) that scales every rotated dimension of q and k. llama.cpp takes the
// long factors when the context per sequence exceeds the original context
// (rope.scaling.original_context_length, else context_length) and the short ones otherwise; the
// attention factor applies either way. Our step graphs are built per load, so the choice is made
// from KvSetup::sequenceLimit(): the engine's context per sequence (EngineConfig::contextLength,
// passed through RunnerConfig), or, when a caller gives none, every slot of the K/V pool, the
// longest sequence it could hold. The attention factor is not left to the rope op (the GPUs run
// rope without one): q's rotated dimensions are multiplied by its square after RoPE, which gives
// the same attention scores, q · k, as scaling both q and k.
//
// Sliding window. Phi-3 files may give attention.sliding_window (2047 for Phi-3-mini-4k, 262144
// for the 128k models, whose configs do not say which layers slide). llama.cpp reads it and then
// disables sliding-window attention for this architecture (ggml-org/llama.cpp#13676): every layer
// attends to every earlier position. We do the same, so that our logits are llama.cpp's.
#include "model/architectures.h"
#include "model/binding.h"

namespace hearth::model {

namespace {

struct Layer {
    int32_t attnNorm = -1, ffnNorm = -1, gate = -1, up = -1, down = -1;
    AttentionWeights attn;
};

class Phi3 final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "phi3", m_weights, m_copies);
        HEARTH_ASSIGN_OR_RETURN(m_hp, readDecoderHParams(b));
        const DecoderHParams& hp = m_hp;
        if (hp.headDimV != hp.headDim) return unsupported("phi3 with value length != key length");
        m_dims = decoderDims("phi3", hp);
        HEARTH_ASSIGN_OR_RETURN(const int window, b.integer("attention.sliding_window", 0));
        if (window < 0) return invalidFormat("phi3.attention.sliding_window must not be negative");
        graph::RopeParams rope = attentionSpec(hp).rope;
        rope.neox = true;
        HEARTH_ASSIGN_OR_RETURN(m_rope, readRopeScaling(b, hp, rope));
        if (m_rope.nCtxOrig < 1) return invalidFormat("phi3.rope.scaling.original_context_length must be positive");

        const int64_t E = hp.nEmbd, qDim = int64_t(hp.nHead) * hp.headDim, kvDim = int64_t(hp.nHeadKv) * hp.headDim;
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, hp.nVocab, -1));
        HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector("output_norm.weight", E, hp.nLayer));
        m_output = m_tokenEmbedding; // tied unless the file has its own
        if (b.hasTensor("output.weight")) {
            HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix("output.weight", E, hp.nVocab, hp.nLayer));
        }
        HEARTH_ASSIGN_OR_RETURN(m_factorsShort, b.optionalVector("rope_factors_short.weight", hp.nRot / 2, -1));
        HEARTH_ASSIGN_OR_RETURN(m_factorsLong, b.optionalVector("rope_factors_long.weight", hp.nRot / 2, -1));
        int32_t qMagnitude = -1;
        if (m_rope.extFactor == 0.0f && m_rope.attnFactor != 1.0f) {
            // attnFactor² on the rotated dims of q, 1 on the rest; rope itself then runs plain.
            const float a2 = m_rope.attnFactor * m_rope.attnFactor;
            std::vector<float> m(size_t(hp.headDim), 1.0f);
            std::fill(m.begin(), m.begin() + hp.nRot, a2);
            qMagnitude = b.ownVector("rope attention factor (q)", std::move(m));
            m_rope.attnFactor = 1.0f;
        }

        m_layers.resize(size_t(hp.nLayer));
        for (int l = 0; l < hp.nLayer; ++l) {
            Layer& L = m_layers[size_t(l)];
            const std::string p = "blk." + std::to_string(l) + ".";
            HEARTH_ASSIGN_OR_RETURN(L.attnNorm, b.vector(p + "attn_norm.weight", E, l));
            if (b.hasTensor(p + "attn_qkv.weight")) {
                if (b.hasTensor(p + "attn_qkv.bias")) return unsupported("tensor '" + p + "attn_qkv.bias' (a q/k/v bias)");
                // Rows [0, q) are the queries' projection, then the keys', then the values'.
                HEARTH_ASSIGN_OR_RETURN(const std::vector<int32_t> qkv,
                                        b.matrixParts(p + "attn_qkv.weight", E, {qDim, kvDim, kvDim}, l));
                L.attn.wq = qkv[0];
                L.attn.wk = qkv[1];
                L.attn.wv = qkv[2];
            } else {
                HEARTH_ASSIGN_OR_RETURN(L.attn.wq, b.matrix(p + "attn_q.weight", E, qDim, l));
                HEARTH_ASSIGN_OR_RETURN(L.attn.wk, b.matrix(p + "attn_k.weight", E, kvDim, l));
                HEARTH_ASSIGN_OR_RETURN(L.attn.wv, b.matrix(p + "attn_v.weight", E, kvDim, l));
            }
            HEARTH_ASSIGN_OR_RETURN(L.attn.wo, b.matrix(p + "attn_output.weight", qDim, E, l));
            L.attn.qMagnitude = qMagnitude;
            HEARTH_ASSIGN_OR_RETURN(L.ffnNorm, b.vector(p + "ffn_norm.weight", E, l));
            // ffn_up holds the gate's rows [0, F), then the up projection's [F, 2F).
            HEARTH_ASSIGN_OR_RETURN(const std::vector<int32_t> gateUp,
                                    b.matrixParts(p + "ffn_up.weight", E, {hp.nFf, hp.nFf}, l));
            L.gate = gateUp[0];
            L.up = gateUp[1];
            HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(p + "ffn_down.weight", hp.nFf, E, l));
        }
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        const DecoderHParams& hp = m_hp;
        AttentionSpec spec = attentionSpec(hp);
        spec.rope = m_rope;
        const int32_t factors = kv.sequenceLimit() > m_rope.nCtxOrig ? m_factorsLong : m_factorsShort;

        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        graph::TensorId x = g.getRows(g.weight(m_tokenEmbedding), in.ids); // [n][E]
        for (int l = 0; l < hp.nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            AttentionWeights attn = L.attn;
            attn.ropeFactors = factors;
            graph::TensorId cur = g.rmsNorm(x, g.weight(L.attnNorm), hp.normEps);
            x = g.add(x, selfAttention(g, in, kv, l, cur, attn, spec));
            cur = g.rmsNorm(x, g.weight(L.ffnNorm), hp.normEps);
            // [n][F] gate and up, [n][E] down
            cur = g.swiGlu(g.matMul(g.weight(L.gate), cur), g.matMul(g.weight(L.up), cur));
            x = g.add(x, g.matMul(g.weight(L.down), cur));
        }
        g.setLayer(hp.nLayer);
        logitsHead(g, in, x, m_outputNorm, m_output, hp.normEps);
    }

private:
    DecoderHParams m_hp;
    std::vector<Layer> m_layers;
    int32_t m_outputNorm = -1, m_factorsShort = -1, m_factorsLong = -1;
    graph::RopeParams m_rope;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadPhi3(const gguf::File& file) {
    return bindArchitecture<Phi3>(file);
}

} // namespace hearth::model
