// The SigLIP vision tower of llama.cpp's projector files ("clip" GGUFs) with Gemma 3's projection:
// an image's patches become a sequence of embeddings the text model reads in place of tokens.
// Described once over the graph op set, like every text architecture, so that every backend runs
// it; the facts follow llama.cpp's clip graph (build_vit and its Gemma 3 projector).
//
// A step is one image: its n = S² patches (S = image_size / patch_size, row-major from the top
// left) arrive as StepInput::HiddenIn rows of 3·P² pixel values (channel, then patch row, then
// column: the convolution kernel's order), and the attention is not causal, over a K/V pool of
// one layer's rows that every layer reuses in turn. The output is StepInput::HiddenRows of the
// projected embeddings [(S/m)²][text width] (m: the pooling side).
#include "model/architectures.h"
#include "model/binding.h"

#include <cmath>

namespace hearth::model {

namespace {

struct Layer {
    int32_t ln1 = -1, ln1B = -1, ln2 = -1, ln2B = -1;
    int32_t wq = -1, bq = -1, wk = -1, bk = -1, wv = -1, bv = -1, wo = -1, bo = -1;
    int32_t up = -1, upB = -1, down = -1, downB = -1;
};

class Siglip final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "clip.vision", m_weights, m_copies);
        HEARTH_ASSIGN_OR_RETURN(const std::string type, f.getString("clip.projector_type"));
        if (type != "gemma3") return unsupported("vision projector type '" + type + "' (gemma3 is supported)");
        HEARTH_ASSIGN_OR_RETURN(m_imageSize, b.integer("image_size"));
        HEARTH_ASSIGN_OR_RETURN(m_patch, b.integer("patch_size"));
        HEARTH_ASSIGN_OR_RETURN(m_embd, b.integer("embedding_length"));
        HEARTH_ASSIGN_OR_RETURN(m_ff, b.integer("feed_forward_length"));
        HEARTH_ASSIGN_OR_RETURN(m_nLayer, b.integer("block_count"));
        HEARTH_ASSIGN_OR_RETURN(m_nHead, b.integer("attention.head_count"));
        HEARTH_ASSIGN_OR_RETURN(m_eps, b.real("attention.layer_norm_epsilon"));
        HEARTH_ASSIGN_OR_RETURN(m_merge, b.integer("projector.scale_factor", 4));
        if (m_patch < 1 || m_imageSize < m_patch || m_imageSize % m_patch != 0)
            return invalidFormat("clip.vision: the image side must be a whole number of patches");
        m_side = m_imageSize / m_patch;
        if (m_merge < 1 || m_side % m_merge != 0)
            return invalidFormat("clip.vision: " + std::to_string(m_side) + " patches per side do not pool by " +
                                 std::to_string(m_merge));
        if (m_nHead < 1 || m_embd % m_nHead != 0 || m_nLayer < 1 || m_ff < 1 || !(m_eps > 0.0f))
            return invalidFormat("clip.vision: width, heads, layers or epsilon out of range");
        const int64_t E = m_embd, F = m_ff, P = m_patch, n = int64_t(m_side) * m_side;
        const gguf::TensorInfo* proj = f.findTensor("mm.input_projection.weight");
        if (!proj || proj->nDims != 2) return notFound("missing tensor 'mm.input_projection.weight'");
        m_textWidth = int(proj->ne[0]);

        // The convolution kernel ne {P, P, 3, E} is the matrix [E][3·P·P].
        HEARTH_ASSIGN_OR_RETURN(m_patchEmbd, b.reshapedMatrix("v.patch_embd.weight", {P, P, 3, E}, 4, 3 * P * P, E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_patchBias, b.optionalVector("v.patch_embd.bias", E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_positions, b.matrix("v.position_embd.weight", E, n, -1));
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
            HEARTH_ASSIGN_OR_RETURN(L.up, b.matrix(p + "ffn_up.weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(L.upB, b.optionalVector(p + "ffn_up.bias", F, l));
            HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(p + "ffn_down.weight", F, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.downB, b.optionalVector(p + "ffn_down.bias", E, l));
        }
        HEARTH_ASSIGN_OR_RETURN(m_postLn, b.vector("v.post_ln.weight", E, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_postLnB, b.vector("v.post_ln.bias", E, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_softNorm, b.vector("mm.soft_emb_norm.weight", E, m_nLayer));
        // Stored ne {text width, E}; llama.cpp transposes it before the product.
        HEARTH_ASSIGN_OR_RETURN(m_projection, b.transposedMatrix("mm.input_projection.weight", m_textWidth, E, m_nLayer));

        m_dims.archName = "clip-gemma3";
        m_dims.nLayer = m_nLayer;
        m_dims.nEmbd = m_textWidth;
        m_dims.nVocab = 1; // every "token" of a step is a patch (id 0)
        m_dims.nCtxTrain = int(n);
        m_dims.maxPositions = int(n);
        m_dims.embeddingsOnly = true;
        m_dims.causal = false;
        // One layer's K/V pool, which every layer writes and reads in turn.
        m_dims.kv.assign(size_t(m_nLayer), LayerKv{});
        m_dims.kv[0] = LayerKv{m_nHead, int(E / m_nHead), int(E / m_nHead)};
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        const int64_t n = shape.tokens, E = m_embd, H = m_nHead, D = E / H, P = m_patch;
        auto bias = [&](graph::TensorId x, int32_t b) { return b >= 0 ? g.add(x, g.weight(b)) : x; };
        auto norm = [&](graph::TensorId x, int32_t w, int32_t b) {
            return g.layerNorm(x, g.weight(w), g.weight(b), m_eps);
        };

        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        const graph::TensorId pixels = g.input(graph::StepInput::HiddenIn, 3 * P * P, n, quant::Type::F32);
        graph::TensorId x = bias(g.matMul(g.weight(m_patchEmbd), pixels), m_patchBias); // [n][E]
        x = g.add(x, g.getRows(g.weight(m_positions), in.positions));

        graph::AttentionParams ap;
        ap.nHeadKv = int32_t(H);
        ap.scale = 1.0f / std::sqrt(float(D));
        ap.blockSize = kv.blockSize;
        ap.causal = false;
        for (int l = 0; l < m_nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            graph::TensorId h = norm(x, L.ln1, L.ln1B);
            const graph::TensorId q = bias(g.matMul(g.weight(L.wq), h), L.bq); // [n][E]
            const graph::TensorId k = bias(g.matMul(g.weight(L.wk), h), L.bk);
            const graph::TensorId v = bias(g.matMul(g.weight(L.wv), h), L.bv);
            const graph::TensorId kCache = g.kvCache(0, false, kv.type, kv.slots(), E);
            const graph::TensorId vCache = g.kvCache(0, true, kv.type, kv.slots(), E);
            g.kvWrite(kCache, k, in.slots);
            g.kvWrite(vCache, v, in.slots);
            graph::TensorId att = g.attention(g.reshape(q, D, H, n), kCache, vCache, in.info, in.tables, graph::kNone,
                                              D, ap); // [n][H][D]
            att = bias(g.matMul(g.weight(L.wo), g.reshape(att, E, n)), L.bo);
            x = g.add(x, att);
            h = norm(x, L.ln2, L.ln2B);
            h = g.gelu(bias(g.matMul(g.weight(L.up), h), L.upB)); // [n][F]
            x = g.add(x, bias(g.matMul(g.weight(L.down), h), L.downB));
        }
        g.setLayer(m_nLayer);
        x = norm(x, m_postLn, m_postLnB);
        // Average pooling of m x m patches; a step of another size (the runner's placement probe)
        // has no square to pool and skips it.
        if (n == int64_t(m_side) * m_side) x = pool(g, x);
        x = g.rmsNorm(x, g.weight(m_softNorm), m_eps);
        x = g.matMul(g.weight(m_projection), x); // [(S/m)²][text width]
        if (in.hidden != graph::kNone) g.setHiddenOutput(g.getRows(x, in.hidden));
    }

private:
    // x [S·S][E], row y·S + x, to the means of its m x m squares [(S/m)²][E], row by·(S/m) + bx.
    graph::TensorId pool(graph::Graph& g, graph::TensorId x) const {
        const int64_t E = m_embd, S = m_side, m = m_merge, s = S / m;
        if (m == 1) return x;
        // Along each row: rows of m neighbours [S·s][m·E], summed over their m columns of E.
        const graph::TensorId across = g.reshape(x, m * E, S * s);
        graph::TensorId rowSum = graph::kNone;
        for (int64_t dx = 0; dx < m; ++dx) {
            const graph::TensorId part = g.copy(g.columns(across, dx * E, E)); // [S·s][E]
            rowSum = rowSum == graph::kNone ? part : g.add(rowSum, part);
        }
        // Down each column: rows y = by·m + dy, as [s][m · s·E], summed over their m parts.
        const graph::TensorId down = g.reshape(rowSum, m * s * E, s);
        graph::TensorId sum = graph::kNone;
        for (int64_t dy = 0; dy < m; ++dy) {
            const graph::TensorId part = g.copy(g.columns(down, dy * s * E, s * E)); // [s][s·E]
            sum = sum == graph::kNone ? part : g.add(sum, part);
        }
        return g.scale(g.reshape(sum, E, s * s), 1.0f / float(m * m));
    }

    int m_imageSize = 0, m_patch = 0, m_side = 0, m_merge = 4;
    int m_embd = 0, m_ff = 0, m_nLayer = 0, m_nHead = 0, m_textWidth = 0;
    float m_eps = 1e-6f;
    std::vector<Layer> m_layers;
    int32_t m_patchEmbd = -1, m_patchBias = -1, m_positions = -1;
    int32_t m_postLn = -1, m_postLnB = -1, m_softNorm = -1, m_projection = -1;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadSiglip(const gguf::File& file) {
    return bindArchitecture<Siglip>(file);
}

} // namespace hearth::model
