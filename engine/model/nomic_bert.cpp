// nomic-bert encoders as llama.cpp converts them (nomic-embed-text v1 and v1.5): token and
// token-type (type 0) embeddings summed and layer-normed (no position embeddings), then post-norm
// layers: self-attention over the whole input with q/k/v from one fused attn_qkv matrix (or three
// separate ones) and RoPE on the NeoX pairing at nomic-bert.rope.freq_base, residual add and
// LayerNorm; a SwiGLU feed-forward (silu(gate) * up, then down), residual add and LayerNorm. No
// LM head: embeddings pool the last layer's output as it is. The facts follow llama.cpp's bert
// graph for this architecture, which the tests hold this file to: it reads but never applies
// feed-forward biases, so neither do we; a fused q/k/v bias is refused rather than guessed.
#include "model/architectures.h"
#include "model/encoder.h"

#include <cmath>

namespace hearth::model {

namespace {

struct Layer {
    AttentionWeights attn;
    int32_t attnNorm = -1, attnNormB = -1; // attn_output_norm: after the attention's residual add
    int32_t gate = -1, up = -1, down = -1;
    int32_t outNorm = -1, outNormB = -1;   // layer_output_norm: after the feed-forward's residual add
};

class NomicBert final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "nomic-bert", m_weights, m_copies);
        HEARTH_ASSIGN_OR_RETURN(m_hp, readDecoderHParams(b));
        const DecoderHParams& hp = m_hp;
        if (hp.headDimV != hp.headDim) return unsupported("nomic-bert with value length != key length");
        const int64_t E = hp.nEmbd, qDim = int64_t(hp.nHead) * hp.headDim, kvDim = int64_t(hp.nHeadKv) * hp.headDim;
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, hp.nVocab, -1));
        HEARTH_ASSIGN_OR_RETURN(m_in, bindEncoderInput(f, b, E, m_weights));
        if (b.hasTensor("position_embd.weight"))
            return unsupported("tensor 'position_embd.weight' in a nomic-bert file (its positions are RoPE)");

        m_spec = attentionSpec(hp);
        HEARTH_ASSIGN_OR_RETURN(m_spec.rope, readRopeScaling(b, hp, m_spec.rope));
        m_spec.rope.neox = true;
        m_spec.causal = m_in.causal;

        m_dims = decoderDims("nomic-bert", hp);
        m_dims.embeddingsOnly = true;
        m_dims.causal = m_in.causal;

        m_layers.resize(size_t(hp.nLayer));
        for (int l = 0; l < hp.nLayer; ++l) {
            Layer& L = m_layers[size_t(l)];
            const std::string p = "blk." + std::to_string(l) + ".";
            if (b.hasTensor(p + "attn_qkv.weight")) {
                if (b.hasTensor(p + "attn_qkv.bias"))
                    return unsupported("tensor '" + p + "attn_qkv.bias' (a fused q/k/v bias in a nomic-bert file)");
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
            HEARTH_ASSIGN_OR_RETURN(L.attn.bq, b.optionalVector(p + "attn_q.bias", qDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bk, b.optionalVector(p + "attn_k.bias", kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bv, b.optionalVector(p + "attn_v.bias", kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.wo, b.matrix(p + "attn_output.weight", qDim, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bo, b.optionalVector(p + "attn_output.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.attnNorm, b.vector(p + "attn_output_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.attnNormB, b.vector(p + "attn_output_norm.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.gate, b.matrix(p + "ffn_gate.weight", E, hp.nFf, l));
            HEARTH_ASSIGN_OR_RETURN(L.up, b.matrix(p + "ffn_up.weight", E, hp.nFf, l));
            HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(p + "ffn_down.weight", hp.nFf, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.outNorm, b.vector(p + "layer_output_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.outNormB, b.vector(p + "layer_output_norm.bias", E, l));
        }
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        graph::TensorId x = encoderEmbeddings(g, in, m_tokenEmbedding, -1, m_in); // [n][E]
        for (int l = 0; l < m_hp.nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            const graph::TensorId att = selfAttention(g, in, kv, l, x, L.attn, m_spec); // [n][E]
            x = postNorm(g, att, x, L.attnNorm, L.attnNormB, m_in.eps);
            const graph::TensorId h = g.swiGlu(g.matMul(g.weight(L.gate), x), g.matMul(g.weight(L.up), x)); // [n][F]
            x = postNorm(g, g.matMul(g.weight(L.down), h), x, L.outNorm, L.outNormB, m_in.eps);
        }
        g.setLayer(m_hp.nLayer);
        // The pooled rows are the last layer's output as it is; there are no logits.
        if (in.hidden != graph::kNone) g.setHiddenOutput(g.getRows(x, in.hidden)); // [h][E]
    }

private:
    DecoderHParams m_hp;
    AttentionSpec m_spec;
    std::vector<Layer> m_layers;
    EncoderInput m_in;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadNomicBert(const gguf::File& file) {
    return bindArchitecture<NomicBert>(file);
}

} // namespace hearth::model
