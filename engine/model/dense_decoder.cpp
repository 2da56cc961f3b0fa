// Binding and step description of the dense decoder shared by llama, qwen2, qwen3, mistral3 and smollm3.
#include "model/dense_decoder.h"

#include <cmath>

namespace hearth::model {

Status DenseDecoder::bind(const gguf::File& f) {
    Binder b(f, m_variant.arch, m_weights, m_copies);
    HEARTH_ASSIGN_OR_RETURN(m_hp, readDecoderHParams(b));
    const DecoderHParams& hp = m_hp;
    m_dims = decoderDims(m_variant.arch, hp);
    m_dims.givenEmbeddings = m_variant.takesImages;
    // RoPE scaling as the file says (linear or YaRN), as llama.cpp applies it to every architecture.
    HEARTH_ASSIGN_OR_RETURN(m_rope, readRopeScaling(b, hp, attentionSpec(hp).rope));
    if (m_variant.attnTemperature) {
        HEARTH_ASSIGN_OR_RETURN(m_rope.tempScale, b.real("attention.temperature_scale", 0.0f));
        if (!std::isfinite(m_rope.tempScale) || m_rope.tempScale < 0.0f)
            return invalidFormat(b.arch() + ".attention.temperature_scale must be a non-negative number");
        // Positions are counted in lengths of the original context (rope.scaling.original_context_length).
        m_rope.tempLength = m_rope.nCtxOrig;
        if (m_rope.tempScale != 0.0f && m_rope.tempLength <= 0)
            return invalidFormat(b.arch() + ": the attention temperature needs rope.scaling.original_context_length");
        if (m_rope.tempScale != 0.0f && hp.nRot != hp.headDim)
            return unsupported("the attention temperature with RoPE on part of each head");
    }
    const int64_t E = hp.nEmbd, qDim = int64_t(hp.nHead) * hp.headDim, kDim = int64_t(hp.nHeadKv) * hp.headDim,
                  vDim = int64_t(hp.nHeadKv) * hp.headDimV;
    HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, hp.nVocab, -1));
    HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector("output_norm.weight", E, hp.nLayer));
    m_output = m_tokenEmbedding; // tied unless the file has its own
    if (b.hasTensor("output.weight")) {
        HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix("output.weight", E, hp.nVocab, hp.nLayer));
    }
    if (auto pooling = f.getU32(std::string(m_variant.arch) + ".pooling_type");
        m_variant.rankHead && pooling.isOk() && *pooling == 4) {
        const gguf::TensorInfo* out = f.findTensor("cls.output.weight");
        if (!out) return unsupported("a rank-pooling (reranker) file without its classification head (cls.output.weight)");
        HEARTH_ASSIGN_OR_RETURN(const ClsOutput head, bindClsOutput(b, *out, E, hp.nLayer));
        m_clsOut = head.weight;
        m_clsOutB = head.bias;
        m_dims.rankOutputs = head.outputs;
    }
    using Ffn = DenseVariant::Ffn;
    m_experts = m_variant.ffn == Ffn::Experts;
    if (m_variant.ffn == Ffn::ExpertsIfCounted) {
        HEARTH_ASSIGN_OR_RETURN(const int counted, b.integer("expert_count", 0));
        m_experts = counted > 0;
    }
    if (m_experts) {
        HEARTH_ASSIGN_OR_RETURN(m_moe, readMoeHParams(b, hp.nFf));
        HEARTH_ASSIGN_OR_RETURN(const float weightsScale, b.real("expert_weights_scale", 0.0f));
        if (weightsScale != 0.0f && weightsScale != 1.0f)
            return unsupported(b.arch() + ".expert_weights_scale other than 1");
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
            HEARTH_ASSIGN_OR_RETURN(L.attn.bo, b.optionalVector(p + "attn_output.bias", E, l));
            if (!m_experts) {
                HEARTH_ASSIGN_OR_RETURN(L.gateBias, b.optionalVector(p + "ffn_gate.bias", hp.nFf, l));
                HEARTH_ASSIGN_OR_RETURN(L.upBias, b.optionalVector(p + "ffn_up.bias", hp.nFf, l));
                HEARTH_ASSIGN_OR_RETURN(L.downBias, b.optionalVector(p + "ffn_down.bias", E, l));
            }
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
    return Status::ok();
}

void DenseDecoder::build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const {
    const DecoderHParams& hp = m_hp;
    AttentionSpec spec = attentionSpec(hp);
    spec.rope = m_rope;
    spec.rope.neox = m_variant.neox;

    g.setLayer(-1);
    const StepTensors in = stepTensors(g, shape);
    graph::TensorId x = g.getRows(g.weight(m_tokenEmbedding), in.ids); // [n][E]
    if (m_variant.takesImages) x = withGivenEmbeddings(g, in, x);
    for (int l = 0; l < hp.nLayer; ++l) {
        const DenseLayer& L = m_layers[size_t(l)];
        g.setLayer(l);
        AttentionSpec layerSpec = spec;
        layerSpec.rotate = m_variant.noRopeEvery <= 0 || (l + 1) % m_variant.noRopeEvery != 0;
        graph::TensorId cur = g.rmsNorm(x, g.weight(L.attnNorm), hp.normEps);
        x = g.add(x, selfAttention(g, in, kv, l, cur, L.attn, layerSpec));
        cur = g.rmsNorm(x, g.weight(L.ffnNorm), hp.normEps);
        if (m_experts) {
            x = g.add(x, moeFeedForward(g, cur, L.experts, m_moe, m_variant.gating));
            continue;
        }
        // [n][F] gate and up, [n][E] down
        auto biased = [&](graph::TensorId t, int32_t bias) { return bias >= 0 ? g.add(t, g.weight(bias)) : t; };
        const graph::TensorId h = g.swiGlu(biased(g.matMul(g.weight(L.gate), cur), L.gateBias),
                                           biased(g.matMul(g.weight(L.up), cur), L.upBias));
        x = g.add(x, biased(g.matMul(g.weight(L.down), h), L.downBias));
    }
    g.setLayer(hp.nLayer);
    if (m_clsOut >= 0 && in.hidden != graph::kNone) { // a reranker's head on the pooled last tokens
        graph::TensorId rows = g.rmsNorm(g.getRows(x, in.hidden), g.weight(m_outputNorm), hp.normEps); // [h][E]
        rows = g.matMul(g.weight(m_clsOut), rows);                                                      // [h][outputs]
        if (m_clsOutB >= 0) rows = g.add(rows, g.weight(m_clsOutB));
        g.setHiddenOutput(g.softmax(rows));
        StepTensors rest = in;
        rest.hidden = graph::kNone;
        logitsHead(g, rest, x, m_outputNorm, m_output, hp.normEps);
        return;
    }
    logitsHead(g, in, x, m_outputNorm, m_output, hp.normEps);
}

} // namespace hearth::model
