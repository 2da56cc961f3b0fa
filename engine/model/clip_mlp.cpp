// LLaVA's CLIP vision tower with its MLP projector, of llama.cpp's projector files (projector type
// "mlp"): an image's patches become the embeddings the text model (llama) reads in place of its
// tokens. Described once over the graph op set, so that every backend runs it; the facts follow
// llama.cpp's mtmd (its llava graph and inputs).
//
// A step is one image of the encoder's fixed grid (S x S patches) and the class token: tokens
// 0..S²-1 are the patches, row-major, each a StepInput::HiddenIn row of 3·P² values (channel,
// patch row, column; normalised), and token S² is the class token (its HiddenIn row unused), as
// mtmd appends the class embedding after the patches; each token's position is its index. The
// tower: the patch convolution as a product (bias when given), the class row, the learned
// position rows, a layer norm before the layers when given (pre_ln), then per layer: layer norm,
// Q/K/V with biases, attention scaled by 1/√(head size), not causal, the output projection, the
// residual; layer norm, up, the activation (quick GELU unless clip.use_gelu / use_silu), down, the
// residual. The features are the hidden state before the deepest of clip.vision.feature_layer,
// or, without it, before the last layer (the second-to-last layer's output), after post_ln when
// the file has one; with several feature layers their states side by side. The projector:
// mm.0, GELU, mm.2, with biases. The output is StepInput::HiddenRows: mtmd's rows 1..S² (every
// patch but the first, then the class token), [S²][text width].
#include "model/architectures.h"
#include "model/binding.h"
#include "model/vision_ffn.h"

#include <algorithm>
#include <cmath>

namespace hearth::model {

namespace {

struct Layer {
    int32_t ln1 = -1, ln1B = -1, ln2 = -1, ln2B = -1;
    int32_t wq = -1, wk = -1, wv = -1, wo = -1, bq = -1, bk = -1, bv = -1, bo = -1;
    int32_t up = -1, upB = -1, down = -1, downB = -1;
};

class ClipMlp final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "clip.vision", m_weights, m_copies);
        std::string type;
        for (const char* key : {"clip.projector_type", "clip.vision.projector_type"})
            if (type.empty() && f.has(key)) {
                HEARTH_ASSIGN_OR_RETURN(type, f.getString(key));
            }
        if (type != "mlp") return unsupported("vision projector type '" + type + "' (mlp expected)");
        HEARTH_ASSIGN_OR_RETURN(const int imageSize, b.integer("image_size"));
        HEARTH_ASSIGN_OR_RETURN(m_patch, b.integer("patch_size"));
        HEARTH_ASSIGN_OR_RETURN(m_embd, b.integer("embedding_length"));
        HEARTH_ASSIGN_OR_RETURN(m_ff, b.integer("feed_forward_length"));
        HEARTH_ASSIGN_OR_RETURN(const int fileLayers, b.integer("block_count"));
        HEARTH_ASSIGN_OR_RETURN(m_nHead, b.integer("attention.head_count"));
        HEARTH_ASSIGN_OR_RETURN(m_eps, b.real("attention.layer_norm_epsilon", 1e-5f));
        if (m_patch < 1 || imageSize % m_patch != 0 || m_nHead < 1 || m_embd % m_nHead != 0 || fileLayers < 1 ||
            m_ff < 1 || !(m_eps > 0.0f))
            return invalidFormat("clip.vision: image of whole patches, whole heads, layers or epsilon out of range");
        m_side = imageSize / m_patch;
        HEARTH_ASSIGN_OR_RETURN(m_ffnOp, visionFfnOp(f));
        HEARTH_RETURN_IF_ERROR(readFeatureLayers(f, fileLayers));
        const int64_t E = m_embd, F = m_ff, P = m_patch, n = int64_t(m_side) * m_side;
        const gguf::TensorInfo* mm0 = f.findTensor("mm.0.weight");
        const gguf::TensorInfo* mm2 = f.findTensor("mm.2.weight");
        if (!mm0 || mm0->nDims != 2 || !mm2 || mm2->nDims != 2)
            return notFound("missing tensor 'mm.0.weight' or 'mm.2.weight' (2-D)");
        const int64_t features = E * int64_t(std::max<size_t>(1, m_features.size()));
        const int64_t hidden = int64_t(mm0->ne[1]);
        m_textWidth = int(mm2->ne[1]);

        // The convolution kernel ne {P, P, 3, E} is the matrix [E][3·P·P].
        HEARTH_ASSIGN_OR_RETURN(m_patchEmbd, b.reshapedMatrix("v.patch_embd.weight", {P, P, 3, E}, 4, 3 * P * P, E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_patchBias, b.optionalVector("v.patch_embd.bias", E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_classEmbd, b.vector("v.class_embd", E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_positions, b.matrix("v.position_embd.weight", E, n + 1, -1));
        if (b.hasTensor("v.pre_ln.weight")) {
            HEARTH_ASSIGN_OR_RETURN(m_preLn, b.vector("v.pre_ln.weight", E, -1));
            HEARTH_ASSIGN_OR_RETURN(m_preLnB, b.vector("v.pre_ln.bias", E, -1));
        }
        // Old conversions swapped ffn_up and ffn_down (mtmd swaps them back).
        const gguf::TensorInfo* down0 = f.findTensor("v.blk.0.ffn_down.weight");
        const bool swapped = down0 && down0->ne[0] == uint64_t(E) && E != F;
        m_layers.resize(size_t(m_nLayer));
        for (int l = 0; l < m_nLayer; ++l) {
            Layer& L = m_layers[size_t(l)];
            const std::string p = "v.blk." + std::to_string(l) + ".";
            HEARTH_ASSIGN_OR_RETURN(L.ln1, b.vector(p + "ln1.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ln1B, b.vector(p + "ln1.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wq, b.matrix(p + "attn_q.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bq, b.optionalVector(p + "attn_q.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wk, b.matrix(p + "attn_k.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bk, b.optionalVector(p + "attn_k.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wv, b.matrix(p + "attn_v.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bv, b.optionalVector(p + "attn_v.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wo, b.matrix(p + "attn_out.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bo, b.optionalVector(p + "attn_out.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ln2, b.vector(p + "ln2.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ln2B, b.vector(p + "ln2.bias", E, l));
            const std::string up = p + (swapped ? "ffn_down" : "ffn_up"), down = p + (swapped ? "ffn_up" : "ffn_down");
            HEARTH_ASSIGN_OR_RETURN(L.up, b.matrix(up + ".weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(L.upB, b.optionalVector(up + ".bias", F, l));
            HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(down + ".weight", F, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.downB, b.optionalVector(down + ".bias", E, l));
        }
        if (b.hasTensor("v.post_ln.weight")) {
            HEARTH_ASSIGN_OR_RETURN(m_postLn, b.vector("v.post_ln.weight", E, m_nLayer));
            HEARTH_ASSIGN_OR_RETURN(m_postLnB, b.vector("v.post_ln.bias", E, m_nLayer));
        }
        HEARTH_ASSIGN_OR_RETURN(m_mm0, b.matrix("mm.0.weight", features, hidden, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_mm0B, b.vector("mm.0.bias", hidden, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_mm2, b.matrix("mm.2.weight", hidden, m_textWidth, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_mm2B, b.vector("mm.2.bias", m_textWidth, m_nLayer));

        m_dims.archName = "clip-mlp";
        m_dims.nLayer = m_nLayer;
        m_dims.nEmbd = m_textWidth;
        m_dims.nVocab = 1; // every "token" of a step is a patch or the class token (id 0)
        m_dims.nCtxTrain = int(n + 1);
        m_dims.maxPositions = int(n + 1);
        m_dims.embeddingsOnly = true;
        m_dims.causal = false;
        // One layer's K/V pool, which every layer writes and reads in turn.
        m_dims.kv.assign(size_t(m_nLayer), LayerKv{});
        m_dims.kv[0] = LayerKv{m_nHead, int(E / m_nHead), int(E / m_nHead)};
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        const int64_t n = shape.tokens, E = m_embd, H = m_nHead, D = E / H, P = m_patch;
        auto bias = [&](graph::TensorId x, int32_t w) { return w >= 0 ? g.add(x, g.weight(w)) : x; };
        auto norm = [&](graph::TensorId x, int32_t w, int32_t b) { return g.layerNorm(x, g.weight(w), g.weight(b), m_eps); };
        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        const graph::TensorId pixels = g.input(graph::StepInput::HiddenIn, 3 * P * P, n, quant::Type::F32);
        graph::TensorId x = bias(g.matMul(g.weight(m_patchEmbd), pixels), m_patchBias); // [n][E]
        // The last token is the class token (a step of one token, the runner's probe, is only it),
        // its row an activation 0·x + class (concat takes activations).
        const graph::TensorId cls = g.add(g.scale(g.rows(x, n - 1, 1), 0.0f), g.weight(m_classEmbd));
        x = n > 1 ? g.concat(g.rows(x, 0, n - 1), cls, 1) : cls;
        x = g.add(x, g.getRows(g.weight(m_positions), in.positions));
        if (m_preLn >= 0) x = norm(x, m_preLn, m_preLnB);

        graph::AttentionParams ap;
        ap.nHeadKv = int32_t(H);
        ap.scale = 1.0f / std::sqrt(float(D));
        ap.blockSize = kv.blockSize;
        ap.causal = false;
        std::vector<graph::TensorId> stack;
        auto isFeature = [&](int l) { return std::find(m_features.begin(), m_features.end(), l) != m_features.end(); };
        for (int l = 0; l < m_nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            if (isFeature(l)) stack.push_back(x);
            graph::TensorId h = norm(x, L.ln1, L.ln1B);
            const graph::TensorId q = bias(g.matMul(g.weight(L.wq), h), L.bq);
            const graph::TensorId k = bias(g.matMul(g.weight(L.wk), h), L.bk);
            const graph::TensorId v = bias(g.matMul(g.weight(L.wv), h), L.bv);
            const graph::TensorId kCache = g.kvCache(0, false, kv.type, kv.slots(), E);
            const graph::TensorId vCache = g.kvCache(0, true, kv.type, kv.slots(), E);
            g.kvWrite(kCache, k, in.slots);
            g.kvWrite(vCache, v, in.slots);
            graph::TensorId att =
                g.attention(g.reshape(q, D, H, n), kCache, vCache, in.info, in.tables, graph::kNone, D, ap);
            x = g.add(x, bias(g.matMul(g.weight(L.wo), g.reshape(att, E, n)), L.bo));
            h = bias(g.matMul(g.weight(L.up), norm(x, L.ln2, L.ln2B)), L.upB); // [n][F]
            switch (m_ffnOp) {
            case FfnOp::Gelu: h = g.gelu(h); break;
            case FfnOp::Silu: h = g.silu(h); break;
            case FfnOp::QuickGelu: h = g.mul(h, g.sigmoid(g.scale(h, 1.702f))); break;
            }
            x = g.add(x, bias(g.matMul(g.weight(L.down), h), L.downB));
        }
        g.setLayer(m_nLayer);
        if (m_postLn >= 0) x = norm(x, m_postLn, m_postLnB);
        if (isFeature(m_nLayer)) stack.push_back(x);
        if (!stack.empty()) {
            x = stack[0];
            for (size_t i = 1; i < stack.size(); ++i) x = g.concat(x, stack[i], 0);
        }
        x = g.gelu(bias(g.matMul(g.weight(m_mm0), x), m_mm0B));
        x = bias(g.matMul(g.weight(m_mm2), x), m_mm2B); // [n][text width]
        if (in.hidden != graph::kNone) g.setHiddenOutput(g.getRows(x, in.hidden));
    }

private:
    // clip.vision.feature_layer (layer indices; the state before that layer, n_layer the last
    // output): the layers to run, up to the deepest; without it, all but the last.
    Status readFeatureLayers(const gguf::File& f, int fileLayers) {
        m_features.clear();
        if (f.has("clip.vision.feature_layer")) {
            HEARTH_ASSIGN_OR_RETURN(const std::vector<int32_t> layers, f.getI32Array("clip.vision.feature_layer"));
            for (int32_t v : layers) {
                if (v > fileLayers)
                    return invalidFormat("clip.vision.feature_layer " + std::to_string(v) + " is past the layers");
                if (v >= 0) m_features.push_back(v);
            }
        }
        m_nLayer = m_features.empty() ? fileLayers - 1 : *std::max_element(m_features.begin(), m_features.end());
        if (m_nLayer < 1) return unsupported("clip.vision: features before the first layer");
        return Status::ok();
    }

    int m_patch = 0, m_side = 0, m_embd = 0, m_ff = 0, m_nLayer = 0, m_nHead = 0, m_textWidth = 0;
    float m_eps = 1e-5f;
    FfnOp m_ffnOp = FfnOp::QuickGelu;
    std::vector<int> m_features;
    std::vector<Layer> m_layers;
    int32_t m_patchEmbd = -1, m_patchBias = -1, m_classEmbd = -1, m_positions = -1, m_preLn = -1, m_preLnB = -1;
    int32_t m_postLn = -1, m_postLnB = -1, m_mm0 = -1, m_mm0B = -1, m_mm2 = -1, m_mm2B = -1;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadClipMlp(const gguf::File& file) {
    return bindArchitecture<ClipMlp>(file);
}

} // namespace hearth::model
