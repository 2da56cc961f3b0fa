// Binding and step description of the dense decoder shared by llama, qwen2 and qwen3.
#include "model/dense_decoder.h"


namespace hearth::model {

Status DenseDecoder::bind(const gguf::File& f) {
    Binder b(f, m_variant.arch, m_weights, m_copies);
    HEARTH_ASSIGN_OR_RETURN(m_hp, readDecoderHParams(b));
    const DecoderHParams& hp = m_hp;
    m_dims = decoderDims(m_variant.arch, hp);
    const int64_t E = hp.nEmbd, qDim = int64_t(hp.nHead) * hp.headDim, kDim = int64_t(hp.nHeadKv) * hp.headDim,
                  vDim = int64_t(hp.nHeadKv) * hp.headDimV;
    HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, hp.nVocab, -1));
    HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector("output_norm.weight", E, hp.nLayer));
    m_output = m_tokenEmbedding; // tied unless the file has its own
    if (b.hasTensor("output.weight")) {
        HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix("output.weight", E, hp.nVocab, hp.nLayer));
    }
    using Ffn = DenseVariant::Ffn;
    m_experts = m_variant.ffn == Ffn::Experts;
    if (m_variant.ffn == Ffn::ExpertsIfCounted) {
        HEARTH_ASSIGN_OR_RETURN(const int counted, b.integer("expert_count", 0));
        m_experts = counted > 0;
    }
    if (m_experts) {
        HEARTH_ASSIGN_OR_RETURN(m_moe, readMoeHParams(b, hp.nFf));
        // llama files with experts (Mixtral) size each expert by feed_forward_length, as llama.cpp reads them.
        if (m_variant.ffn == Ffn::ExpertsIfCounted) m_moe.nFfExpert = hp.nFf;
    }
    HEARTH_ASSIGN_OR_RETURN(const int32_t ropeFactors, b.optionalVector("rope_freqs.weight", hp.nRot / 2, -1));
    m_layers.resize(size_t(hp.nLayer));
    for (int l = 0; l < hp.nLayer; ++l) {
        DenseLayer& L = m_layers[size_t(l)];
        const std::string p = "blk." + std::to_string(l) + ".";
        HEARTH_ASSIGN_OR_RETURN(L.attnNorm, b.vector(p + "attn_norm.weight", E, l));
        HEARTH_ASSIGN_OR_RETURN(L.attn.wq, b.matrix(p + "attn_q.weight", E, qDim, l));
        HEARTH_ASSIGN_OR_RETURN(L.attn.wk, b.matrix(p + "attn_k.weight", E, kDim, l));
        HEARTH_ASSIGN_OR_RETURN(L.attn.wv, b.matrix(p + "attn_v.weight", E, vDim, l));
        HEARTH_ASSIGN_OR_RETURN(L.attn.wo, b.matrix(p + "attn_output.weight", int64_t(hp.nHead) * hp.headDimV, E, l));
        L.attn.ropeFactors = ropeFactors;
        if (m_variant.biases) {
            HEARTH_ASSIGN_OR_RETURN(L.attn.bq, b.vector(p + "attn_q.bias", qDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bk, b.vector(p + "attn_k.bias", kDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bv, b.vector(p + "attn_v.bias", vDim, l));
        } else if (m_variant.optionalBiases) {
            HEARTH_ASSIGN_OR_RETURN(L.attn.bq, b.optionalVector(p + "attn_q.bias", qDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bk, b.optionalVector(p + "attn_k.bias", kDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.bv, b.optionalVector(p + "attn_v.bias", vDim, l));
        }
        if (m_variant.qkNorm) {
            HEARTH_ASSIGN_OR_RETURN(L.attn.qNorm, b.vector(p + "attn_q_norm.weight", hp.headDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.attn.kNorm, b.vector(p + "attn_k_norm.weight", hp.headDim, l));
        }
        HEARTH_ASSIGN_OR_RETURN(L.ffnNorm, b.vector(p + "ffn_norm.weight", E, l));
        if (m_experts) {
            HEARTH_ASSIGN_OR_RETURN(L.experts, bindExperts(b, l, E, m_moe));
            continue;
        }
        HEARTH_ASSIGN_OR_RETURN(L.gate, b.matrix(p + "ffn_gate.weight", E, hp.nFf, l));
        HEARTH_ASSIGN_OR_RETURN(L.up, b.matrix(p + "ffn_up.weight", E, hp.nFf, l));
        HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(p + "ffn_down.weight", hp.nFf, E, l));
    }
    m_reader = f.dataReader();
    return Status::ok();
}

void DenseDecoder::build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const {
    const DecoderHParams& hp = m_hp;
    AttentionSpec spec = attentionSpec(hp);
    spec.rope.neox = m_variant.neox;

    g.setLayer(-1);
    const StepTensors in = stepTensors(g, shape);
    graph::TensorId x = g.getRows(g.weight(m_tokenEmbedding), in.ids); // [n][E]
    for (int l = 0; l < hp.nLayer; ++l) {
        const DenseLayer& L = m_layers[size_t(l)];
        g.setLayer(l);
        graph::TensorId cur = g.rmsNorm(x, g.weight(L.attnNorm), hp.normEps);
        x = g.add(x, selfAttention(g, in, kv, l, cur, L.attn, spec));
        cur = g.rmsNorm(x, g.weight(L.ffnNorm), hp.normEps);
        if (m_experts) {
            x = g.add(x, moeFeedForward(g, cur, L.experts, m_moe, m_variant.gating));
            continue;
        }
        // [n][F] gate and up, [n][E] down
        const graph::TensorId h = g.swiGlu(g.matMul(g.weight(L.gate), cur), g.matMul(g.weight(L.up), cur));
        x = g.add(x, g.matMul(g.weight(L.down), h));
    }
    g.setLayer(hp.nLayer);
    logitsHead(g, in, x, m_outputNorm, m_output, hp.normEps);
}

} // namespace hearth::model
