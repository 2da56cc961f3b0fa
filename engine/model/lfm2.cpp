// LFM2 (Liquid's LFM2 and LFM2.5, 350M-2.6B): a hybrid decoder. Layers whose
// attention.head_count_kv is 0 are gated short convolutions: in_proj splits into B, C and x,
// B·x passes a causal depthwise convolution of shortconv.l_cache taps (its last l_cache - 1
// inputs kept per sequence as recurrent state), and C times the result goes through out_proj.
// The others are grouped-query attention with per-head q/k RMS norms and NeoX RoPE. Every
// layer: x += mixer(norm(x)); x += SwiGLU(ffn_norm(x)); the final norm is token_embd_norm. As
// llama.cpp reads these files (src/models/lfm2.cpp).
#include "model/architectures.h"
#include "model/binding.h"

namespace hearth::model {

namespace {

struct Layer {
    bool conv = false;
    int32_t attnNorm = -1, ffnNorm = -1, gate = -1, up = -1, down = -1;
    int32_t inProj = -1, kernel = -1, outProj = -1; // the short convolution
    AttentionWeights attn;
};

class Lfm2 final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "lfm2", m_weights, m_copies);
        std::vector<bool> conv;
        HEARTH_ASSIGN_OR_RETURN(m_hp, readDecoderHParams(b, true, &conv));
        const DecoderHParams& hp = m_hp;
        HEARTH_ASSIGN_OR_RETURN(m_taps, b.integer("shortconv.l_cache"));
        if (m_taps < 2 || m_taps > 16)
            return invalidFormat("lfm2.shortconv.l_cache " + std::to_string(m_taps) + " must be 2..16");
        if (hp.headDimV != hp.headDim) return invalidFormat("lfm2: key and value heads must be the same size");
        m_spec = attentionSpec(hp);
        m_spec.rope.neox = true;
        HEARTH_ASSIGN_OR_RETURN(m_spec.rope, readRopeScaling(b, hp, m_spec.rope));

        const int64_t E = hp.nEmbd, D = hp.headDim, qDim = int64_t(hp.nHead) * D, kvDim = int64_t(hp.nHeadKv) * D;
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, hp.nVocab, -1));
        // The converter names the final norm token_embd_norm.
        HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector("token_embd_norm.weight", E, hp.nLayer));
        m_output = m_tokenEmbedding;
        if (b.hasTensor("output.weight")) {
            HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix("output.weight", E, hp.nVocab, hp.nLayer));
        }
        m_dims = decoderDims("lfm2", hp);
        m_dims.state.assign(size_t(hp.nLayer), LayerState{});
        m_layers.resize(size_t(hp.nLayer));
        for (int l = 0; l < hp.nLayer; ++l) {
            Layer& Y = m_layers[size_t(l)];
            const std::string p = "blk." + std::to_string(l) + ".";
            Y.conv = conv[size_t(l)];
            const std::string other = p + (Y.conv ? "attn_q.weight" : "shortconv.in_proj.weight");
            if (b.hasTensor(other))
                return invalidFormat("layer " + std::to_string(l) + " is " +
                                     (Y.conv ? "a convolution (head_count_kv 0)" : "attention") + " but holds '" +
                                     other + "'");
            HEARTH_ASSIGN_OR_RETURN(Y.attnNorm, b.vector(p + "attn_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(Y.ffnNorm, b.vector(p + "ffn_norm.weight", E, l));
            if (Y.conv) {
                m_dims.kv[size_t(l)] = LayerKv{0, 0, 0};
                m_dims.state[size_t(l)] = LayerState{int64_t(m_taps - 1) * E, 0};
                HEARTH_ASSIGN_OR_RETURN(Y.inProj, b.matrix(p + "shortconv.in_proj.weight", E, 3 * E, l));
                HEARTH_ASSIGN_OR_RETURN(Y.kernel, b.f32Matrix(p + "shortconv.conv.weight", m_taps, E, l));
                HEARTH_ASSIGN_OR_RETURN(Y.outProj, b.matrix(p + "shortconv.out_proj.weight", E, E, l));
            } else {
                HEARTH_ASSIGN_OR_RETURN(Y.attn.wq, b.matrix(p + "attn_q.weight", E, qDim, l));
                HEARTH_ASSIGN_OR_RETURN(Y.attn.wk, b.matrix(p + "attn_k.weight", E, kvDim, l));
                HEARTH_ASSIGN_OR_RETURN(Y.attn.wv, b.matrix(p + "attn_v.weight", E, kvDim, l));
                HEARTH_ASSIGN_OR_RETURN(Y.attn.wo, b.matrix(p + "attn_output.weight", qDim, E, l));
                HEARTH_ASSIGN_OR_RETURN(Y.attn.qNorm, b.vector(p + "attn_q_norm.weight", D, l));
                HEARTH_ASSIGN_OR_RETURN(Y.attn.kNorm, b.vector(p + "attn_k_norm.weight", D, l));
            }
            HEARTH_ASSIGN_OR_RETURN(Y.gate, b.matrix(p + "ffn_gate.weight", E, hp.nFf, l));
            HEARTH_ASSIGN_OR_RETURN(Y.up, b.matrix(p + "ffn_up.weight", E, hp.nFf, l));
            HEARTH_ASSIGN_OR_RETURN(Y.down, b.matrix(p + "ffn_down.weight", hp.nFf, E, l));
        }
        if (std::none_of(conv.begin(), conv.end(), [](bool c) { return c; }))
            return invalidFormat("lfm2: no layer is a convolution (attention.head_count_kv 0)");
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        const StepTensors in = stepTensors(g, shape);
        const graph::TensorId stateInfo = g.input(graph::StepInput::StateInfo, 3, shape.tokens);
        graph::TensorId x = g.getRows(g.weight(m_tokenEmbedding), in.ids); // [n][E]
        for (int l = 0; l < m_hp.nLayer; ++l) {
            g.setLayer(l);
            const Layer& Y = m_layers[size_t(l)];
            const graph::TensorId h = g.rmsNorm(x, g.weight(Y.attnNorm), m_hp.normEps);
            x = g.add(x, Y.conv ? shortConv(g, kv, stateInfo, l, h) : selfAttention(g, in, kv, l, h, Y.attn, m_spec));
            const graph::TensorId f = g.rmsNorm(x, g.weight(Y.ffnNorm), m_hp.normEps);
            x = g.add(x, g.matMul(g.weight(Y.down), g.swiGlu(g.matMul(g.weight(Y.gate), f), g.matMul(g.weight(Y.up), f))));
        }
        g.setLayer(m_hp.nLayer);
        logitsHead(g, in, x, m_outputNorm, m_output, m_hp.normEps);
    }

private:
    // The gated short convolution of layer l on the normed input h [n][E]: [n][E].
    graph::TensorId shortConv(graph::Graph& g, const KvSetup& kv, graph::TensorId info, int l, graph::TensorId h) const {
        const Layer& Y = m_layers[size_t(l)];
        const int64_t E = m_hp.nEmbd, n = g.tensor(h).rows();
        const graph::TensorId bcx = g.reshape(g.matMul(g.weight(Y.inProj), h), 3 * E, n); // [n][3E]: B, C, x
        const graph::TensorId bGate = g.copy(g.columns(bcx, 0, E));
        const graph::TensorId cGate = g.copy(g.columns(bcx, E, E));
        const graph::TensorId xIn = g.copy(g.columns(bcx, 2 * E, E));
        const graph::TensorId state = g.state(l, false, kv.stateSlots, m_dims.state[size_t(l)].convRow);
        const graph::TensorId conv = g.ssmConv(g.mul(bGate, xIn), g.weight(Y.kernel), state, info); // [n][E]
        return g.matMul(g.weight(Y.outProj), g.mul(cGate, conv));
    }

    DecoderHParams m_hp;
    int m_taps = 0; // shortconv.l_cache
    AttentionSpec m_spec;
    int32_t m_outputNorm = -1;
    std::vector<Layer> m_layers;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadLfm2(const gguf::File& file) { return bindArchitecture<Lfm2>(file); }

} // namespace hearth::model
