// The pieces the BERT-family encoders (bert.cpp, nomic_bert.cpp) share: the LayerNorm epsilon and
// causal flag, the token-type row and embedding norm, and the post-norm residual of their layers.
#pragma once

#include "model/binding.h"

namespace hearth::model {

// What every encoder reads besides its layers.
struct EncoderInput {
    float eps = 1e-12f;  // <arch>.attention.layer_norm_epsilon (every LayerNorm)
    bool causal = true;  // <arch>.attention.causal; absent: causal, as llama.cpp takes it
    int32_t typeRow = -1; // token_types.weight's row 0 ("sentence A", the only type ever added); -1: none
    int32_t norm = -1, normB = -1; // token_embd_norm
};

// Reads the epsilon and causal flag, the token-type row (the table is optional, its count
// tokenizer.ggml.token_type_count is not, as in llama.cpp) and the embedding norm.
inline Result<EncoderInput> bindEncoderInput(const gguf::File& f, Binder& b, int64_t E,
                                             const std::vector<graph::Weight>& weights) {
    EncoderInput in;
    const std::string a = b.arch() + ".";
    HEARTH_ASSIGN_OR_RETURN(in.eps, b.real("attention.layer_norm_epsilon"));
    if (!(in.eps > 0.0f)) return invalidFormat(a + "attention.layer_norm_epsilon must be positive");
    if (f.has(a + "attention.causal")) {
        HEARTH_ASSIGN_OR_RETURN(in.causal, f.getBool(a + "attention.causal"));
    }
    HEARTH_ASSIGN_OR_RETURN(const uint32_t nTypes, f.getU32("tokenizer.ggml.token_type_count"));
    if (nTypes < 1 || nTypes > 1024) return invalidFormat("tokenizer.ggml.token_type_count must be 1..1024");
    if (b.hasTensor("token_types.weight")) {
        HEARTH_ASSIGN_OR_RETURN(const int32_t table, b.matrix("token_types.weight", E, nTypes, -1));
        const graph::Weight& w = weights[size_t(table)];
        std::vector<float> row(static_cast<size_t>(E));
        HEARTH_RETURN_IF_ERROR(quant::dequantizeRow(w.type, w.data, row.data(), E));
        in.typeRow = b.ownVector("token_types.weight (type 0)", std::move(row));
    }
    HEARTH_ASSIGN_OR_RETURN(in.norm, b.vector("token_embd_norm.weight", E, -1));
    HEARTH_ASSIGN_OR_RETURN(in.normB, b.vector("token_embd_norm.bias", E, -1));
    return in;
}

// x + b when the bias is given.
inline graph::TensorId addBias(graph::Graph& g, graph::TensorId x, int32_t bias) {
    return bias >= 0 ? g.add(x, g.weight(bias)) : x;
}

// The token embeddings [n][E] with the type-0 row and `positions` (absolute position rows when
// >= 0) added, then layer-normed: the input of the first layer.
inline graph::TensorId encoderEmbeddings(graph::Graph& g, const StepTensors& in, int32_t tokenEmbedding,
                                         int32_t positions, const EncoderInput& e) {
    graph::TensorId x = g.getRows(g.weight(tokenEmbedding), in.ids); // [n][E]
    x = addBias(g, x, e.typeRow);
    if (positions >= 0) x = g.add(x, g.getRows(g.weight(positions), in.positions));
    return g.layerNorm(x, g.weight(e.norm), g.weight(e.normB), e.eps);
}

// Post-norm residual: LayerNorm(y + x) [n][E].
inline graph::TensorId postNorm(graph::Graph& g, graph::TensorId y, graph::TensorId x, int32_t w, int32_t b,
                                float eps) {
    return g.layerNorm(g.add(y, x), g.weight(w), g.weight(b), eps);
}

} // namespace hearth::model
