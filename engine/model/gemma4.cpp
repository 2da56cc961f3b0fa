// Gemma 4 (31B dense, 26B-A4B with experts): RMS-normed decoder layers alternating, per the
// file's sliding_window_pattern array, between sliding-window layers (their own head size, KV
// head count and RoPE base) and full-attention layers (a wider head, "proportional" RoPE: the
// rope_freqs factors leave most dimension pairs unrotated), q/k norms and a weightless norm of V,
// scores unscaled (1.0), V taken from K's projection where a layer has no attn_v, norms after
// attention and after the feed-forward, a GeGLU feed-forward (with experts beside it on MoE
// layers, routed on the normed residual), each layer's output scaled, embeddings scaled by √E,
// and final soft-capping. E2B/E4B add per-layer token embeddings (a slice of a second embedding
// table, mixed with a projection of the input, gating a small block after each layer) and
// shared-KV layers: the last shared_kv_layers layers compute no K/V and attend over the cache of
// the last earlier layer of their kind. As llama.cpp reads these files (src/models/gemma4.cpp).
#include "model/architectures.h"
#include "model/binding.h"
#include "model/moe.h"

#include <cmath>

namespace hearth::model {

namespace {

struct Layer {
    int32_t attnNorm = -1, attnPostNorm = -1, ffnNorm = -1, ffnPostNorm = -1, gate = -1, up = -1, down = -1;
    AttentionWeights attn;
    bool sliding = false;
    int nHead = 0, nHeadKv = 0, headDim = 0, nRot = 0;
    float outScale = 1.0f; // layer_output_scale (1 when absent)
    // Experts (MoE layers): the router's input scale [E], the norms around the two branches.
    MoeWeights experts;
    int32_t routerScale = -1, expertNorm = -1, denseOutNorm = -1, expertOutNorm = -1;
    int32_t expertScale = -1; // ffn_down_exps.scale [nExpert]: each expert's output scale (-1: none)
    bool moe = false;
    int kvLayer = -1; // shared-KV layers: the layer whose K/V cache they read
    // Per-layer embeddings: the gate [Lp][E], the projection back [E][Lp], its norm.
    int32_t perLayerGate = -1, perLayerProj = -1, perLayerNorm = -1;
};

class Gemma4 final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "gemma4", m_weights, m_copies);
        HEARTH_ASSIGN_OR_RETURN(m_nLayer, b.layerCount());
        HEARTH_ASSIGN_OR_RETURN(m_nEmbd, b.integer("embedding_length"));
        if (m_nEmbd < 1) return invalidFormat("embedding_length must be positive");
        const int L = m_nLayer;
        HEARTH_ASSIGN_OR_RETURN(const std::vector<int> heads, b.counts("attention.head_count"));
        std::vector<int> kvHeads = heads; // per layer, as llama.cpp defaults them
        if (b.has("attention.head_count_kv")) {
            HEARTH_ASSIGN_OR_RETURN(kvHeads, b.counts("attention.head_count_kv"));
        }
        HEARTH_ASSIGN_OR_RETURN(const std::vector<int> ffs, b.counts("feed_forward_length"));
        if (heads[0] < 1) return invalidFormat("gemma4.attention.head_count must be positive");
        // Head sizes: key_length for the full layers, key_length_swa for the sliding ones.
        HEARTH_ASSIGN_OR_RETURN(const int headFull, b.integer("attention.key_length", m_nEmbd / heads[0]));
        HEARTH_ASSIGN_OR_RETURN(const int headFullV, b.integer("attention.value_length", m_nEmbd / heads[0]));
        HEARTH_ASSIGN_OR_RETURN(const int headSwa, b.integer("attention.key_length_swa"));
        HEARTH_ASSIGN_OR_RETURN(const int headSwaV, b.integer("attention.value_length_swa"));
        if (headFull != headFullV || headSwa != headSwaV)
            return unsupported("gemma4 with value length != key length (full " + std::to_string(headFull) + "/" +
                               std::to_string(headFullV) + ", sliding " + std::to_string(headSwa) + "/" +
                               std::to_string(headSwaV) + ")");
        for (int d : {headFull, headSwa})
            if (d < 2 || d % 2 != 0 || d > 1024)
                return unsupported("head size " + std::to_string(d) + " is not supported");
        HEARTH_ASSIGN_OR_RETURN(const int rotFull, b.integer("rope.dimension_count", headFull));
        HEARTH_ASSIGN_OR_RETURN(const int rotSwa, b.integer("rope.dimension_count_swa", rotFull));
        if (rotFull < 2 || rotFull % 2 || rotFull > headFull || rotSwa < 2 || rotSwa % 2 || rotSwa > headSwa)
            return invalidFormat("rope.dimension_count " + std::to_string(rotFull) + " / _swa " +
                                 std::to_string(rotSwa) + " must be even and within the head sizes " +
                                 std::to_string(headFull) + " / " + std::to_string(headSwa));
        HEARTH_ASSIGN_OR_RETURN(m_ropeBase, b.real("rope.freq_base", 10000.0f));
        HEARTH_ASSIGN_OR_RETURN(m_ropeBaseSliding, b.real("rope.freq_base_swa", 10000.0f));
        HEARTH_ASSIGN_OR_RETURN(m_eps, b.real("attention.layer_norm_rms_epsilon", 1e-6f));
        HEARTH_ASSIGN_OR_RETURN(const int nCtxTrain, b.integer("context_length", 2048));
        if (!(m_ropeBase > 0.0f) || !(m_ropeBaseSliding > 0.0f) || !(m_eps > 0.0f))
            return invalidFormat("RoPE bases and layer_norm_rms_epsilon must be positive");
        HEARTH_ASSIGN_OR_RETURN(m_window, b.integer("attention.sliding_window"));
        if (m_window < 1) return invalidFormat("gemma4.attention.sliding_window must be positive");
        const gguf::Value* pattern = f.find("gemma4.attention.sliding_window_pattern");
        if (!pattern || !pattern->isArray())
            return invalidFormat("gemma4.attention.sliding_window_pattern must be an array of one boolean per layer");
        HEARTH_ASSIGN_OR_RETURN(const std::vector<bool> sliding, readSlidingLayers(b, L, m_window, 0));
        HEARTH_ASSIGN_OR_RETURN(m_finalSoftcap, b.real("final_logit_softcapping", 0.0f));
        if (m_finalSoftcap < 0.0f) return invalidFormat("gemma4 final_logit_softcapping must not be negative");
        HEARTH_ASSIGN_OR_RETURN(const int sharedKv, b.integer("attention.shared_kv_layers", 0));
        // llama.cpp's mapping: a shared sliding layer reads the cache of layer start - 2, a shared
        // full one that of start - 1 (start: the first shared layer).
        const int kvStart = L - sharedKv;
        if (sharedKv > 0 && kvStart < 2)
            return invalidFormat("gemma4.attention.shared_kv_layers " + std::to_string(sharedKv) +
                                 " leaves fewer than 2 layers with their own K/V (of " + std::to_string(L) + ")");
        HEARTH_ASSIGN_OR_RETURN(m_perLayer, b.integer("embedding_length_per_layer_input", 0));
        if (m_perLayer < 0 || int64_t(m_perLayer) * L > (1 << 30))
            return invalidFormat("gemma4.embedding_length_per_layer_input is implausibly large");
        const bool anyExperts = b.has("expert_count");
        if (anyExperts) {
            HEARTH_ASSIGN_OR_RETURN(m_moe, readMoeHParams(b, ffs[0]));
        }

        // The full layers' RoPE scaling when the file gives one (llama.cpp scales those by the
        // context's parameters and leaves the sliding layers unscaled), over the full layers' base.
        DecoderHParams scaling;
        scaling.nCtxTrain = nCtxTrain;
        graph::RopeParams fullRope;
        fullRope.neox = true;
        fullRope.freqBase = m_ropeBase;
        HEARTH_ASSIGN_OR_RETURN(m_ropeFull, readRopeScaling(b, scaling, fullRope));

        const gguf::TensorInfo* emb = f.findTensor("token_embd.weight");
        if (!emb) return notFound("missing tensor 'token_embd.weight'");
        if (emb->nDims != 2 || emb->ne[1] > (1u << 30)) return invalidFormat("token_embd.weight must be 2-D");
        const int64_t E = m_nEmbd, nVocab = int64_t(emb->ne[1]);
        HEARTH_ASSIGN_OR_RETURN(m_tokenEmbedding, b.matrix("token_embd.weight", E, nVocab, -1));
        HEARTH_ASSIGN_OR_RETURN(m_outputNorm, b.vector("output_norm.weight", E, L));
        m_output = m_tokenEmbedding;
        if (b.hasTensor("output.weight")) {
            HEARTH_ASSIGN_OR_RETURN(m_output, b.matrix("output.weight", E, nVocab, L));
        }
        if (m_perLayer > 0) {
            const int64_t P = int64_t(m_perLayer) * L;
            HEARTH_ASSIGN_OR_RETURN(m_perLayerTokens, b.matrix("per_layer_token_embd.weight", P, nVocab, -1));
            HEARTH_ASSIGN_OR_RETURN(m_perLayerModelProj, b.matrix("per_layer_model_proj.weight", E, P, -1));
            HEARTH_ASSIGN_OR_RETURN(m_perLayerProjNorm, b.vector("per_layer_proj_norm.weight", m_perLayer, -1));
        }
        int32_t ropeFreqs = -1; // one tensor, shared by every full layer
        m_dims.archName = "gemma4";
        m_dims.nLayer = L;
        m_dims.nEmbd = m_nEmbd;
        m_dims.nVocab = int(nVocab);
        m_dims.nCtxTrain = nCtxTrain;
        // Images (mtmd's gemma4v): their embeddings as they are, not scaled; seen at once except
        // by the widths of E2B and E4B, which mtmd decodes causally.
        m_dims.givenEmbeddings = true;
        m_dims.imagesAtOnce = m_nEmbd != 1536 && m_nEmbd != 2560;
        m_layers.resize(size_t(L));
        for (int l = 0; l < L; ++l) {
            Layer& Y = m_layers[size_t(l)];
            const std::string p = "blk." + std::to_string(l) + ".";
            Y.sliding = sliding[size_t(l)];
            Y.nHead = heads[size_t(l)];
            Y.nHeadKv = kvHeads[size_t(l)];
            Y.headDim = Y.sliding ? headSwa : headFull;
            Y.nRot = Y.sliding ? rotSwa : rotFull;
            if (Y.nHead < 1 || Y.nHeadKv < 1 || Y.nHead % Y.nHeadKv != 0)
                return invalidFormat("layer " + std::to_string(l) + ": head_count " + std::to_string(Y.nHead) +
                                     " is not a positive multiple of head_count_kv " + std::to_string(Y.nHeadKv));
            if (ffs[size_t(l)] < 1)
                return invalidFormat("layer " + std::to_string(l) + ": feed_forward_length is zero");
            const int64_t D = Y.headDim, qDim = int64_t(Y.nHead) * D, kvDim = int64_t(Y.nHeadKv) * D;
            const int64_t F = ffs[size_t(l)];
            HEARTH_ASSIGN_OR_RETURN(Y.attnNorm, b.vector(p + "attn_norm.weight", E, l));
            if (l >= kvStart) {
                // A shared-KV layer: its own queries over an earlier layer's cache (no K/V here).
                Y.kvLayer = kvStart - (Y.sliding ? 2 : 1);
                const Layer& from = m_layers[size_t(Y.kvLayer)];
                if (from.sliding != Y.sliding || from.nHeadKv != Y.nHeadKv || from.headDim != Y.headDim)
                    return invalidFormat("layer " + std::to_string(l) + " shares the K/V of layer " +
                                         std::to_string(Y.kvLayer) + ", which is of another kind or shape");
                m_dims.kv.push_back(LayerKv{0, 0, 0});
                HEARTH_ASSIGN_OR_RETURN(Y.attn.wq, b.matrix(p + "attn_q.weight", E, qDim, l));
            } else if (b.hasTensor(p + "attn_qkv.weight")) {
                HEARTH_ASSIGN_OR_RETURN(const std::vector<int32_t> qkv,
                                        b.matrixParts(p + "attn_qkv.weight", E, {qDim, kvDim, kvDim}, l));
                Y.attn.wq = qkv[0];
                Y.attn.wk = qkv[1];
                Y.attn.wv = qkv[2];
            } else {
                HEARTH_ASSIGN_OR_RETURN(Y.attn.wq, b.matrix(p + "attn_q.weight", E, qDim, l));
                HEARTH_ASSIGN_OR_RETURN(Y.attn.wk, b.matrix(p + "attn_k.weight", E, kvDim, l));
                if (b.hasTensor(p + "attn_v.weight")) {
                    HEARTH_ASSIGN_OR_RETURN(Y.attn.wv, b.matrix(p + "attn_v.weight", E, kvDim, l));
                }
            }
            if (Y.kvLayer < 0) m_dims.kv.push_back(LayerKv{Y.nHeadKv, Y.headDim, Y.headDim});
            HEARTH_ASSIGN_OR_RETURN(Y.attn.wo, b.matrix(p + "attn_output.weight", qDim, E, l));
            HEARTH_ASSIGN_OR_RETURN(Y.attn.qNorm, b.vector(p + "attn_q_norm.weight", D, l));
            if (Y.kvLayer < 0) {
                HEARTH_ASSIGN_OR_RETURN(Y.attn.kNorm, b.vector(p + "attn_k_norm.weight", D, l));
            }
            HEARTH_ASSIGN_OR_RETURN(Y.attnPostNorm, b.vector(p + "post_attention_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(const int32_t scale, b.optionalVector(p + "layer_output_scale.weight", 1, l));
            if (scale >= 0) Y.outScale = *reinterpret_cast<const float*>(m_weights[size_t(scale)].data);
            if (!Y.sliding) {
                if (ropeFreqs < 0) {
                    HEARTH_ASSIGN_OR_RETURN(ropeFreqs, b.vector("rope_freqs.weight", headFull / 2, l));
                }
                Y.attn.ropeFactors = ropeFreqs;
            }
            HEARTH_ASSIGN_OR_RETURN(Y.ffnNorm, b.vector(p + "ffn_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(Y.gate, b.matrix(p + "ffn_gate.weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(Y.up, b.matrix(p + "ffn_up.weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(Y.down, b.matrix(p + "ffn_down.weight", F, E, l));
            HEARTH_ASSIGN_OR_RETURN(Y.ffnPostNorm, b.vector(p + "post_ffw_norm.weight", E, l));
            if (b.hasTensor(p + "ffn_gate_inp.weight")) HEARTH_RETURN_IF_ERROR(bindExpertsOf(b, Y, l, anyExperts));
            if (m_perLayer > 0) {
                HEARTH_ASSIGN_OR_RETURN(Y.perLayerGate, b.matrix(p + "inp_gate.weight", E, m_perLayer, l));
                HEARTH_ASSIGN_OR_RETURN(Y.perLayerProj, b.matrix(p + "proj.weight", m_perLayer, E, l));
                HEARTH_ASSIGN_OR_RETURN(Y.perLayerNorm, b.vector(p + "post_norm.weight", E, l));
            }
        }
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        graph::TensorId x = g.getRows(g.weight(m_tokenEmbedding), in.ids); // [n][E]
        x = g.scale(x, std::sqrt(float(m_nEmbd)));
        x = withGivenEmbeddings(g, in, x); // an image's embeddings, not scaled
        const graph::TensorId perLayer = m_perLayer > 0 ? perLayerInputs(g, in, x) : graph::kNone; // [n][L·Lp]
        for (int l = 0; l < m_nLayer; ++l) {
            const Layer& Y = m_layers[size_t(l)];
            g.setLayer(l);
            AttentionSpec spec;
            spec.nHead = Y.nHead;
            spec.nHeadKv = Y.nHeadKv;
            spec.headDim = spec.headDimV = Y.headDim;
            spec.rope = Y.sliding ? graph::RopeParams{} : m_ropeFull;
            spec.rope.neox = true;
            spec.rope.nRot = Y.nRot;
            if (Y.sliding) spec.rope.freqBase = m_ropeBaseSliding;
            spec.normEps = m_eps;
            spec.scale = 1.0f;
            spec.window = Y.sliding ? m_window : 0;
            spec.vNorm = true;
            spec.kvLayer = Y.kvLayer;
            graph::TensorId cur = g.rmsNorm(x, g.weight(Y.attnNorm), m_eps);
            cur = selfAttention(g, in, kv, l, cur, Y.attn, spec); // [n][E]
            const graph::TensorId attnOut = g.add(g.rmsNorm(cur, g.weight(Y.attnPostNorm), m_eps), x);
            cur = g.rmsNorm(attnOut, g.weight(Y.ffnNorm), m_eps);
            // [n][F] gate and up, [n][E] down
            cur = g.geGlu(g.matMul(g.weight(Y.gate), cur), g.matMul(g.weight(Y.up), cur));
            cur = g.matMul(g.weight(Y.down), cur);
            if (Y.moe) cur = g.add(g.rmsNorm(cur, g.weight(Y.denseOutNorm), m_eps), expertBranch(g, Y, attnOut));
            x = g.add(g.rmsNorm(cur, g.weight(Y.ffnPostNorm), m_eps), attnOut);
            if (perLayer != graph::kNone) {
                // This layer's slice of the per-layer inputs gates a small block: [n][Lp] -> [n][E].
                const graph::TensorId slice = g.copy(g.columns(perLayer, int64_t(l) * m_perLayer, m_perLayer));
                cur = g.mul(g.gelu(g.matMul(g.weight(Y.perLayerGate), x)), slice);
                x = g.add(x, g.rmsNorm(g.matMul(g.weight(Y.perLayerProj), cur), g.weight(Y.perLayerNorm), m_eps));
            }
            if (Y.outScale != 1.0f) x = g.scale(x, Y.outScale);
        }
        g.setLayer(m_nLayer);
        logitsHead(g, in, x, m_outputNorm, m_output, m_eps, m_finalSoftcap);
    }

private:
    // Every layer's per-layer input [n][L·Lp] (layer l's at columns l·Lp..): the token's row of
    // the per-layer table times √Lp, plus the normed projection of the scaled embeddings x [n][E]
    // (divided by √E), the sum divided by √2. A token given an image's embedding takes token 0's
    // row of the table, as llama.cpp gives an image's tokens.
    graph::TensorId perLayerInputs(graph::Graph& g, const StepTensors& in, graph::TensorId x) const {
        const int64_t Lp = m_perLayer, P = Lp * m_nLayer, n = in.n;
        graph::TensorId rows = g.getRows(g.weight(m_perLayerTokens), in.ids); // [n][P]
        if (in.embeds > 0) {
            const graph::TensorId given = g.input(graph::StepInput::EmbedRows, m_nEmbd, in.embeds, quant::Type::F32);
            const graph::TensorId index = g.input(graph::StepInput::EmbedIndex, n);
            // The ids [m] of token 0: the order of each given row's first value alone (always 0).
            const graph::TensorId zeros = g.argSort(g.copy(g.columns(given, 0, 1)));
            rows = g.getRows(g.concat(rows, g.getRows(g.weight(m_perLayerTokens), zeros), 1), index);
        }
        const graph::TensorId table = g.scale(rows, std::sqrt(float(Lp)));
        graph::TensorId proj = g.scale(g.matMul(g.weight(m_perLayerModelProj), x), 1.0f / std::sqrt(float(m_nEmbd)));
        proj = g.rmsNorm(g.reshape(proj, Lp, m_nLayer, n), g.weight(m_perLayerProjNorm), m_eps); // [n][L][Lp]
        return g.scale(g.add(g.reshape(proj, P, n), table), 1.0f / std::sqrt(2.0f));
    }

    // The expert weights of an MoE layer: the router and its input scale, the experts (gate and
    // up fused or apart), their optional per-expert output scale, and the branch norms.
    Status bindExpertsOf(Binder& b, Layer& Y, int l, bool anyExperts) {
        if (!anyExperts)
            return invalidFormat("blk." + std::to_string(l) + ".ffn_gate_inp.weight without gemma4.expert_count");
        const std::string p = "blk." + std::to_string(l) + ".";
        const int64_t E = m_nEmbd, F = m_moe.nFfExpert, n = m_moe.nExpert;
        Y.moe = true;
        HEARTH_ASSIGN_OR_RETURN(Y.experts.router, b.matrix(p + "ffn_gate_inp.weight", E, n, l));
        HEARTH_ASSIGN_OR_RETURN(Y.routerScale, b.vector(p + "ffn_gate_inp.scale", E, l));
        HEARTH_ASSIGN_OR_RETURN(Y.expertNorm, b.vector(p + "pre_ffw_norm_2.weight", E, l));
        HEARTH_ASSIGN_OR_RETURN(Y.denseOutNorm, b.vector(p + "post_ffw_norm_1.weight", E, l));
        HEARTH_ASSIGN_OR_RETURN(Y.expertOutNorm, b.vector(p + "post_ffw_norm_2.weight", E, l));
        if (b.hasTensor(p + "ffn_gate_up_exps.weight")) {
            // [nExpert][2F][E]: each expert's gate rows, then its up rows.
            HEARTH_ASSIGN_OR_RETURN(Y.experts.gate, b.experts(p + "ffn_gate_up_exps.weight", E, 2 * F, n, l));
            Y.experts.up = -1;
        } else {
            HEARTH_ASSIGN_OR_RETURN(Y.experts.gate, b.experts(p + "ffn_gate_exps.weight", E, F, n, l));
            HEARTH_ASSIGN_OR_RETURN(Y.experts.up, b.experts(p + "ffn_up_exps.weight", E, F, n, l));
        }
        HEARTH_ASSIGN_OR_RETURN(Y.experts.down, b.experts(p + "ffn_down_exps.weight", F, E, n, l));
        HEARTH_ASSIGN_OR_RETURN(Y.expertScale, b.optionalVector(p + "ffn_down_exps.scale", n, l));
        return Status::ok();
    }

    // The experts' branch of an MoE layer on the attention block's output a [n][E]: routed on
    // rms_norm(a) / √E · scale, run on the pre-normed a, each chosen expert's output times its
    // scale and its softmax weight (renormalized over the chosen), post-normed. [n][E].
    graph::TensorId expertBranch(graph::Graph& g, const Layer& Y, graph::TensorId a) const {
        const int64_t E = m_nEmbd, n = g.tensor(a).rows(), F = m_moe.nFfExpert;
        graph::TensorId route = g.rmsNorm(a, graph::kNone, m_eps);
        route = g.mul(g.scale(route, 1.0f / std::sqrt(float(E))), g.weight(Y.routerScale));
        const graph::TensorId logits = g.matMul(g.weight(Y.experts.router), route); // [n][nExpert]
        const graph::TensorId chosen = g.topK(logits, m_moe.nUsed);                 // [n][k]
        graph::TensorId weights = g.softmax(g.gather(logits, chosen));              // [n][k]
        if (Y.expertScale >= 0) {
            // Scaling an expert's output is scaling its weight in the sum: the scales broadcast
            // over the tokens' rows (0 · logits + scales), each row's chosen ones gathered.
            const graph::TensorId scales = g.add(g.scale(logits, 0.0f), g.weight(Y.expertScale)); // [n][nExpert]
            weights = g.mul(weights, g.gather(scales, chosen));
        }
        const graph::TensorId xe = g.reshape(g.rmsNorm(a, g.weight(Y.expertNorm), m_eps), E, 1, n); // [n][1][E]
        graph::TensorId gate, up;
        if (Y.experts.up < 0) {
            const graph::TensorId both = g.matMulId(g.weight(Y.experts.gate), xe, chosen); // [n][k][2F]
            const graph::TensorId rows = g.reshape(both, 2 * F, n * m_moe.nUsed);
            gate = g.reshape(g.copy(g.columns(rows, 0, F)), F, m_moe.nUsed, n);
            up = g.reshape(g.copy(g.columns(rows, F, F)), F, m_moe.nUsed, n);
        } else {
            gate = g.matMulId(g.weight(Y.experts.gate), xe, chosen); // [n][k][F]
            up = g.matMulId(g.weight(Y.experts.up), xe, chosen);
        }
        const graph::TensorId y = g.matMulId(g.weight(Y.experts.down), g.geGlu(gate, up), chosen); // [n][k][E]
        return g.rmsNorm(g.weightedSum(y, weights), g.weight(Y.expertOutNorm), m_eps);
    }

    std::vector<Layer> m_layers;
    MoeHParams m_moe;
    int m_nLayer = 0, m_nEmbd = 0, m_window = 0, m_perLayer = 0;
    int32_t m_perLayerTokens = -1, m_perLayerModelProj = -1, m_perLayerProjNorm = -1;
    int32_t m_outputNorm = -1;
    float m_ropeBase = 10000.0f, m_ropeBaseSliding = 10000.0f, m_eps = 1e-6f, m_finalSoftcap = 0.0f;
    graph::RopeParams m_ropeFull;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadGemma4(const gguf::File& file) {
    return bindArchitecture<Gemma4>(file);
}

} // namespace hearth::model
