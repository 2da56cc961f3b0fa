// BERT encoders as llama.cpp converts them ("bert": BGE, all-MiniLM, e5, bge-reranker): token, absolute position
// and token-type (type 0) embeddings summed and layer-normed, then post-norm layers (self-attention
// with q/k/v/output biases over the whole input, residual add and LayerNorm; a GELU feed-forward
// with biases, residual add and LayerNorm). No LM head: the embeddings pool the last layer's
// output as it is (no final norm). A reranker (pooling_type 4, rank) has a classification head
// on the first token's row: cls (dense, tanh) then cls.output, whose first output is the
// relevance score; either part may be missing, as in llama.cpp. The facts follow llama.cpp's bert
// graph, which the tests hold this file to.
//
// Attention is not causal when the file says bert.attention.causal = false (what the converter
// writes); llama.cpp takes an absent key as causal, and so do we. Without the causal mask each
// input must be computed in one step (the scheduler keeps it whole): ModelDims::causal false.
#include "model/architectures.h"
#include "model/encoder.h"

#include <cmath>

namespace hearth::model {

namespace {

struct Layer {
    int32_t wq = -1, wk = -1, wv = -1, wo = -1;
    int32_t bq = -1, bk = -1, bv = -1, bo = -1;
    int32_t attnNorm = -1, attnNormB = -1; // attn_output_norm: after the attention's residual add
    int32_t up = -1, upB = -1, down = -1, downB = -1;
    int32_t outNorm = -1, outNormB = -1;   // layer_output_norm: after the feed-forward's residual add
};

class Bert final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "bert", m_weights, m_copies);
        HEARTH_ASSIGN_OR_RETURN(m_hp, readDecoderHParams(b));
        const DecoderHParams& hp = m_hp;
        if (!b.has("context_length"))
            return notFound("missing key 'bert.context_length' (the position embeddings' rows)");
        if (hp.nCtxTrain < 1) return invalidFormat("bert.context_length must be positive");
        if (hp.headDimV != hp.headDim) return unsupported("bert with value length != key length");
        const int64_t E = hp.nEmbd, qDim = int64_t(hp.nHead) * hp.headDim, kvDim = int64_t(hp.nHeadKv) * hp.headDim;
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, hp.nVocab, -1));
        HEARTH_ASSIGN_OR_RETURN(m_positions, b.matrix("position_embd.weight", E, hp.nCtxTrain, -1));
        HEARTH_ASSIGN_OR_RETURN(m_in, bindEncoderInput(f, b, E, m_weights));
        m_dims = decoderDims("bert", hp);
        m_dims.embeddingsOnly = true;
        m_dims.causal = m_in.causal;
        m_dims.maxPositions = hp.nCtxTrain;

        if (auto pooling = f.getU32("bert.pooling_type"); pooling.isOk() && *pooling == 4) {
            const gguf::TensorInfo* out = f.findTensor("cls.output.weight");
            const gguf::TensorInfo* dense = f.findTensor("cls.weight");
            if (!out && !dense) return unsupported("a rank-pooling (reranker) file without its classification head (cls.weight, cls.output.weight)");
            if (dense) {
                HEARTH_ASSIGN_OR_RETURN(m_cls, b.matrix("cls.weight", E, E, hp.nLayer)); // with the last layer
                HEARTH_ASSIGN_OR_RETURN(m_clsB, b.optionalVector("cls.bias", E, hp.nLayer));
            }
            m_dims.rankOutputs = int(E);
            if (out) {
                HEARTH_ASSIGN_OR_RETURN(const ClsOutput head, bindClsOutput(b, *out, E, hp.nLayer));
                m_clsOut = head.weight;
                m_clsOutB = head.bias;
                m_dims.rankOutputs = head.outputs;
            }
        }

        m_layers.resize(size_t(hp.nLayer));
        for (int l = 0; l < hp.nLayer; ++l) {
            Layer& L = m_layers[size_t(l)];
            const std::string p = "blk." + std::to_string(l) + ".";
            if (b.hasTensor(p + "attn_qkv.weight"))
                return unsupported("tensor '" + p + "attn_qkv.weight' (fused q/k/v in a bert file)");
            HEARTH_ASSIGN_OR_RETURN(L.wq, b.matrix(p + "attn_q.weight", E, qDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.wk, b.matrix(p + "attn_k.weight", E, kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.wv, b.matrix(p + "attn_v.weight", E, kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.bq, b.optionalVector(p + "attn_q.bias", qDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.bk, b.optionalVector(p + "attn_k.bias", kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.bv, b.optionalVector(p + "attn_v.bias", kvDim, l));
            HEARTH_ASSIGN_OR_RETURN(L.wo, b.matrix(p + "attn_output.weight", qDim, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bo, b.optionalVector(p + "attn_output.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.attnNorm, b.vector(p + "attn_output_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.attnNormB, b.vector(p + "attn_output_norm.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.up, b.matrix(p + "ffn_up.weight", E, hp.nFf, l));
            HEARTH_ASSIGN_OR_RETURN(L.upB, b.optionalVector(p + "ffn_up.bias", hp.nFf, l));
            HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(p + "ffn_down.weight", hp.nFf, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.downB, b.optionalVector(p + "ffn_down.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.outNorm, b.vector(p + "layer_output_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.outNormB, b.vector(p + "layer_output_norm.bias", E, l));
        }
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        const DecoderHParams& hp = m_hp;
        const int64_t n = shape.tokens, D = hp.headDim;
        auto bias = [&](graph::TensorId x, int32_t b) { return addBias(g, x, b); };

        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        graph::TensorId x = encoderEmbeddings(g, in, m_tokenEmbedding, m_positions, m_in); // [n][E]

        graph::AttentionParams ap;
        ap.nHeadKv = hp.nHeadKv;
        ap.scale = 1.0f / std::sqrt(float(D));
        ap.blockSize = kv.blockSize;
        ap.causal = m_in.causal;
        for (int l = 0; l < hp.nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            // q [n][nHead * D]; k, v [n][nHeadKv * D]
            const graph::TensorId q = bias(g.matMul(g.weight(L.wq), x), L.bq);
            const graph::TensorId k = bias(g.matMul(g.weight(L.wk), x), L.bk);
            const graph::TensorId v = bias(g.matMul(g.weight(L.wv), x), L.bv);
            const graph::TensorId kCache = g.kvCache(l, false, kv.type, kv.slots(), int64_t(hp.nHeadKv) * D);
            const graph::TensorId vCache = g.kvCache(l, true, kv.type, kv.slots(), int64_t(hp.nHeadKv) * D);
            g.kvWrite(kCache, k, in.slots);
            g.kvWrite(vCache, v, in.slots);
            graph::TensorId att = g.attention(g.reshape(q, D, hp.nHead, n), kCache, vCache, in.info, in.tables,
                                              graph::kNone, D, ap); // [n][nHead][D]
            att = bias(g.matMul(g.weight(L.wo), g.reshape(att, int64_t(hp.nHead) * D, n)), L.bo); // [n][E]
            x = postNorm(g, att, x, L.attnNorm, L.attnNormB, m_in.eps);
            graph::TensorId ffn = g.gelu(bias(g.matMul(g.weight(L.up), x), L.upB)); // [n][F]
            ffn = bias(g.matMul(g.weight(L.down), ffn), L.downB);                     // [n][E]
            x = postNorm(g, ffn, x, L.outNorm, L.outNormB, m_in.eps);
        }
        g.setLayer(hp.nLayer);
        // The pooled rows are the last layer's output as it is; there are no logits.
        if (in.hidden == graph::kNone) return;
        graph::TensorId rows = g.getRows(x, in.hidden); // [h][E]
        if (m_dims.rankOutputs > 0) { // a reranker's head on the pooled first tokens
            if (m_cls >= 0) rows = g.softcap(bias(g.matMul(g.weight(m_cls), rows), m_clsB), 1.0f); // tanh, [h][E]
            if (m_clsOut >= 0) rows = bias(g.matMul(g.weight(m_clsOut), rows), m_clsOutB);      // [h][outputs]
        }
        g.setHiddenOutput(rows);
    }

private:
    DecoderHParams m_hp;
    std::vector<Layer> m_layers;
    EncoderInput m_in;
    int32_t m_positions = -1;
    int32_t m_cls = -1, m_clsB = -1, m_clsOut = -1, m_clsOutB = -1; // a reranker's head
};

} // namespace

Result<std::unique_ptr<Architecture>> loadBert(const gguf::File& file) {
    return bindArchitecture<Bert>(file);
}

} // namespace hearth::model
