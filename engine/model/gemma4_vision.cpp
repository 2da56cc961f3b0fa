// Gemma 4's vision tower of llama.cpp's projector files (projector type "gemma4v"): an image's
// patches become the embeddings the text model reads in place of its tokens. Described once over
// the graph op set, so that every backend runs it; the facts follow llama.cpp's mtmd (its gemma4v
// graph and build_vit).
//
// A step is one image of any grid (columns x rows of patches, vision.h's patchGrid), each patch a
// StepInput::HiddenIn row of 3·P² values (channel, patch row, column; already mapped to 2v - 1),
// its column and row in StepInput::GridX / GridY. The attention is not causal, so the order of
// the patches in the step is free: the encoder (vision/vision_encoder.cpp) orders them by their
// place within their m x m pooling square first, (dy, dx), then by the square, row-major, so that
// the pooling is the mean of m² consecutive blocks of rows. The output is StepInput::HiddenRows of
// the projected embeddings [squares][text width], the squares row-major from the top left.
//
// Per layer: RMS norm, Q/K/V without biases, per-head RMS norms of Q and K (weighted) and of V
// (plain), 2-D NEOX RoPE (the first half of each head by the column, the second by the row,
// base 100), attention with no scaling, an RMS norm after it, then an RMS-normed gated
// feed-forward (quick GELU: x·σ(1.702x), mtmd's default without clip.use_gelu) with an RMS norm
// after it, and the layer's output times its scalar. Then pooling, ×√E, (x - std_bias)·std_scale,
// a plain RMS norm and the projection to the text width. A linear layer whose weight "X.weight"
// has scalars X.input_min / input_max / output_min / output_max (Gemma 4's clamped linears, any
// missing one ±FLT_MAX) clamps its input and its output to them.
#include "model/architectures.h"
#include "model/binding.h"

#include <cmath>
#include <limits>

namespace hearth::model {

namespace {

// A linear layer's weight and, for a clamped one, the one-value weights of its bounds.
struct Linear {
    int32_t w = -1;
    int32_t inMin = -1, inMax = -1, outMin = -1, outMax = -1; // all -1: not clamped
};

struct Layer {
    int32_t ln1 = -1, qNorm = -1, kNorm = -1, attnPost = -1, ln2 = -1, ffnPost = -1;
    Linear wq, wk, wv, wo, gate, up, down;
    float outScale = 1.0f;
};

class Gemma4Vision final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "clip.vision", m_weights, m_copies);
        std::string type;
        for (const char* key : {"clip.vision.projector_type", "clip.projector_type"})
            if (type.empty() && f.has(key)) {
                HEARTH_ASSIGN_OR_RETURN(type, f.getString(key));
            }
        if (type != "gemma4v") return unsupported("vision projector type '" + type + "' (gemma4v expected)");
        HEARTH_ASSIGN_OR_RETURN(m_patch, b.integer("patch_size"));
        HEARTH_ASSIGN_OR_RETURN(m_embd, b.integer("embedding_length"));
        HEARTH_ASSIGN_OR_RETURN(m_ff, b.integer("feed_forward_length"));
        HEARTH_ASSIGN_OR_RETURN(m_nLayer, b.integer("block_count"));
        HEARTH_ASSIGN_OR_RETURN(m_nHead, b.integer("attention.head_count"));
        HEARTH_ASSIGN_OR_RETURN(m_eps, b.real("attention.layer_norm_epsilon", 1e-6f));
        HEARTH_ASSIGN_OR_RETURN(m_merge, b.integer("projector.scale_factor", 3));
        if (m_patch < 1 || m_merge < 1 || m_nHead < 1 || m_embd % m_nHead != 0 || (m_embd / m_nHead) % 4 != 0 ||
            m_nLayer < 1 || m_ff < 1 || !(m_eps > 0.0f))
            return invalidFormat("clip.vision: patch, pooling, heads (whole, a multiple of 4 wide), layers or "
                                 "epsilon out of range");
        const int64_t E = m_embd, F = m_ff, P = m_patch, D = E / m_nHead;
        const gguf::TensorInfo* proj = f.findTensor("mm.input_projection.weight");
        if (!proj || proj->nDims != 2) return notFound("missing tensor 'mm.input_projection.weight'");
        m_textWidth = int(proj->ne[1]);
        const gguf::TensorInfo* pos = f.findTensor("v.position_embd.weight");
        if (!pos || pos->nDims != 3 || pos->ne[0] != uint64_t(E) || pos->ne[2] != 2)
            return invalidFormat("tensor 'v.position_embd.weight' must be [2][positions][" + std::to_string(E) + "]");
        m_positionRows = int(pos->ne[1]);

        // The convolution kernel ne {P, P, 3, E} is the matrix [E][3·P·P].
        HEARTH_ASSIGN_OR_RETURN(m_patchEmbd, b.reshapedMatrix("v.patch_embd.weight", {P, P, 3, E}, 4, 3 * P * P, E, -1));
        HEARTH_RETURN_IF_ERROR(bindPositionTables(b, E));
        m_layers.resize(size_t(m_nLayer));
        for (int l = 0; l < m_nLayer; ++l) {
            Layer& L = m_layers[size_t(l)];
            const std::string p = "v.blk." + std::to_string(l) + ".";
            HEARTH_ASSIGN_OR_RETURN(L.ln1, b.vector(p + "ln1.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wq, linear(b, p + "attn_q", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wk, linear(b, p + "attn_k", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wv, linear(b, p + "attn_v", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wo, linear(b, p + "attn_out", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.qNorm, b.vector(p + "attn_q_norm.weight", D, l));
            HEARTH_ASSIGN_OR_RETURN(L.kNorm, b.vector(p + "attn_k_norm.weight", D, l));
            HEARTH_ASSIGN_OR_RETURN(L.attnPost, b.vector(p + "attn_post_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ln2, b.vector(p + "ln2.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.gate, linear(b, p + "ffn_gate", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(L.up, linear(b, p + "ffn_up", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(L.down, linear(b, p + "ffn_down", F, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ffnPost, b.vector(p + "ffn_post_norm.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(const int32_t scale, b.optionalVector(p + "out_scale.weight", 1, l));
            if (scale >= 0) L.outScale = *reinterpret_cast<const float*>(m_weights[size_t(scale)].data);
        }
        // (x - std_bias) · std_scale, the subtraction as the addition of the negated bias.
        HEARTH_ASSIGN_OR_RETURN(const int32_t stdBias, b.optionalVector("v.std_bias", E, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_stdScale, b.optionalVector("v.std_scale", E, m_nLayer));
        if ((stdBias >= 0) != (m_stdScale >= 0)) return invalidFormat("v.std_bias and v.std_scale come together");
        if (stdBias >= 0) {
            const float* v = reinterpret_cast<const float*>(m_weights[size_t(stdBias)].data);
            std::vector<float> negated(static_cast<size_t>(E));
            for (int64_t i = 0; i < E; ++i) negated[size_t(i)] = -v[i];
            m_stdBiasNeg = b.ownVector("v.std_bias (negated)", std::move(negated), m_nLayer);
        }
        HEARTH_ASSIGN_OR_RETURN(m_projection, linear(b, "mm.input_projection", E, m_textWidth, m_nLayer));

        const int maxPatches = 1120 * m_merge * m_merge; // mtmd's most tokens per image, unpooled
        m_dims.archName = "clip-gemma4v";
        m_dims.nLayer = m_nLayer;
        m_dims.nEmbd = m_textWidth;
        m_dims.nVocab = 1; // every "token" of a step is a patch (id 0)
        m_dims.nCtxTrain = maxPatches;
        m_dims.maxPositions = maxPatches;
        m_dims.embeddingsOnly = true;
        m_dims.causal = false;
        // One layer's K/V pool, which every layer writes and reads in turn.
        m_dims.kv.assign(size_t(m_nLayer), LayerKv{});
        m_dims.kv[0] = LayerKv{m_nHead, int(D), int(D)};
        return Status::ok();
    }

    void build(graph::Graph& g, const graph::StepShape& shape, const KvSetup& kv) const override {
        const int64_t n = shape.tokens, E = m_embd, H = m_nHead, D = E / H, P = m_patch;
        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        const graph::TensorId pixels = g.input(graph::StepInput::HiddenIn, 3 * P * P, n, quant::Type::F32);
        const graph::TensorId gx = g.input(graph::StepInput::GridX, n);
        const graph::TensorId gy = g.input(graph::StepInput::GridY, n);
        graph::TensorId x = g.matMul(g.weight(m_patchEmbd), pixels); // [n][E], no bias
        x = g.add(x, g.getRows(g.weight(m_positionsX), gx));
        x = g.add(x, g.getRows(g.weight(m_positionsY), gy));

        graph::RopeParams rope;
        rope.nRot = int32_t(D / 2);
        rope.neox = true;
        rope.freqBase = 100.0f;
        // x [n][H][D]: the first half of each head rotated by the column, the second by the row.
        auto rope2d = [&](graph::TensorId t) {
            const graph::TensorId flat = g.reshape(t, D, H * n);
            const graph::TensorId a = g.reshape(g.copy(g.columns(flat, 0, D / 2)), D / 2, H, n);
            const graph::TensorId b = g.reshape(g.copy(g.columns(flat, D / 2, D / 2)), D / 2, H, n);
            return g.concat(g.rope(a, gx, graph::kNone, rope), g.rope(b, gy, graph::kNone, rope), 0);
        };
        auto norm = [&](graph::TensorId t, int32_t w) { return g.rmsNorm(t, w >= 0 ? g.weight(w) : graph::kNone, m_eps); };
        auto applyLinear = [&](const Linear& w, graph::TensorId t) {
            if (w.inMin < 0) return g.matMul(g.weight(w.w), t);
            return clamp(g, g.matMul(g.weight(w.w), clamp(g, t, w.inMin, w.inMax)), w.outMin, w.outMax);
        };

        graph::AttentionParams ap;
        ap.nHeadKv = int32_t(H);
        ap.scale = 1.0f; // the Q/K norms stand for the scaling
        ap.blockSize = kv.blockSize;
        ap.causal = false;
        for (int l = 0; l < m_nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            graph::TensorId h = norm(x, L.ln1);
            const graph::TensorId q = rope2d(norm(g.reshape(applyLinear(L.wq, h), D, H, n), L.qNorm));
            const graph::TensorId k = rope2d(norm(g.reshape(applyLinear(L.wk, h), D, H, n), L.kNorm));
            const graph::TensorId v = norm(g.reshape(applyLinear(L.wv, h), D, H, n), -1);
            const graph::TensorId kCache = g.kvCache(0, false, kv.type, kv.slots(), E);
            const graph::TensorId vCache = g.kvCache(0, true, kv.type, kv.slots(), E);
            g.kvWrite(kCache, g.reshape(k, E, n), in.slots);
            g.kvWrite(vCache, g.reshape(v, E, n), in.slots);
            graph::TensorId att = g.attention(q, kCache, vCache, in.info, in.tables, graph::kNone, D, ap); // [n][H][D]
            att = norm(applyLinear(L.wo, g.reshape(att, E, n)), L.attnPost);
            x = g.add(x, att);
            h = norm(x, L.ln2);
            const graph::TensorId gate = applyLinear(L.gate, h); // [n][F]
            const graph::TensorId quickGelu = g.mul(gate, g.sigmoid(g.scale(gate, 1.702f)));
            h = applyLinear(L.down, g.mul(quickGelu, applyLinear(L.up, h)));
            x = g.add(x, norm(h, L.ffnPost));
            if (L.outScale != 1.0f) x = g.scale(x, L.outScale);
        }
        g.setLayer(m_nLayer);
        // The mean of each square's m² patches, rows [k·s, (k+1)·s) holding offset k of every one
        // of the s squares; a step of another size (the runner's placement probe) skips it.
        const int64_t mm = int64_t(m_merge) * m_merge;
        if (shape.hidden > 0 && shape.hidden * mm == n) {
            const int64_t s = shape.hidden;
            graph::TensorId sum = g.rows(x, 0, s);
            for (int64_t k = 1; k < mm; ++k) sum = g.add(sum, g.rows(x, k * s, s));
            if (mm == 1) sum = g.copy(sum);
            x = g.scale(sum, 1.0f / float(mm));
        }
        x = g.scale(x, std::sqrt(float(E)));
        if (m_stdBiasNeg >= 0) x = g.mul(g.add(x, g.weight(m_stdBiasNeg)), g.weight(m_stdScale));
        x = norm(x, -1);
        x = applyLinear(m_projection, x); // [rows][text width]
        if (in.hidden != graph::kNone) g.setHiddenOutput(g.getRows(x, in.hidden));
    }

private:
    // The weight "<name>.weight" [rows][cols] and its bounds when the file has any of them.
    Result<Linear> linear(Binder& b, const std::string& name, int64_t cols, int64_t rows, int32_t layer) {
        Linear out;
        HEARTH_ASSIGN_OR_RETURN(out.w, b.matrix(name + ".weight", cols, rows, layer));
        const char* keys[4] = {".input_min", ".input_max", ".output_min", ".output_max"};
        int32_t* slots[4] = {&out.inMin, &out.inMax, &out.outMin, &out.outMax};
        bool any = false;
        for (const char* k : keys) any = any || b.hasTensor(name + k);
        if (!any) return out;
        constexpr float kMax = std::numeric_limits<float>::max();
        for (int i = 0; i < 4; ++i) {
            HEARTH_ASSIGN_OR_RETURN(const int32_t v, b.optionalVector(name + keys[i], 1, layer));
            const float bound = v >= 0 ? *reinterpret_cast<const float*>(m_weights[size_t(v)].data) : (i % 2 ? kMax : -kMax);
            *slots[i] = v >= 0 ? v : b.ownVector(name + keys[i] + " (default)", {bound}, layer);
        }
        for (int i = 0; i < 4; i += 2)
            if (!(*reinterpret_cast<const float*>(m_weights[size_t(*slots[i])].data) <=
                  *reinterpret_cast<const float*>(m_weights[size_t(*slots[i + 1])].data)))
                return invalidFormat("projector: " + name + keys[i] + " is above " + name + keys[i + 1]);
        return out;
    }

    // t clamped to [lo, hi] (one-value weights, lo <= hi), exactly: each value with its two
    // bounds as a row of three, sorted (argsort, then gather), its middle one.
    static graph::TensorId clamp(graph::Graph& g, graph::TensorId t, int32_t lo, int32_t hi) {
        const graph::Tensor shape = g.tensor(t);
        const graph::TensorId col = g.reshape(t, 1, shape.elements()); // [N][1]
        const graph::TensorId zero = g.scale(col, 0.0f);
        const graph::TensorId three = g.concat(g.concat(col, g.add(zero, g.weight(lo)), 0), g.add(zero, g.weight(hi)), 0);
        const graph::TensorId sorted = g.gather(three, g.argSort(three)); // descending: [hi', mid, lo']
        const graph::TensorId mid = g.copy(g.columns(sorted, 1, 1));
        return g.reshape(mid, shape.ne[0], shape.ne[1], shape.ne[2], shape.ne[3]);
    }

    // The file's [2][positions][E] table as two weights over its bytes: the x table, the y table.
    Status bindPositionTables(Binder& b, int64_t E) {
        const int64_t rows = m_positionRows;
        HEARTH_ASSIGN_OR_RETURN(const int32_t both, b.reshapedMatrix("v.position_embd.weight", {E, rows, 2, 1}, 3, E,
                                                                     2 * rows, -1));
        graph::Weight y = m_weights[size_t(both)];
        graph::Weight& x = m_weights[size_t(both)];
        x.ne = {E, rows, 1, 1};
        x.name += " (x)";
        y.ne = {E, rows, 1, 1};
        y.name += " (y)";
        y.data += uint64_t(rows) * y.rowBytes;
        m_positionsX = both;
        m_weights.push_back(std::move(y));
        m_positionsY = int32_t(m_weights.size() - 1);
        return Status::ok();
    }

    int m_patch = 0, m_merge = 3, m_embd = 0, m_ff = 0, m_nLayer = 0, m_nHead = 0, m_textWidth = 0;
    int m_positionRows = 0;
    float m_eps = 1e-6f;
    std::vector<Layer> m_layers;
    int32_t m_patchEmbd = -1, m_positionsX = -1, m_positionsY = -1;
    int32_t m_stdBiasNeg = -1, m_stdScale = -1;
    Linear m_projection;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadGemma4Vision(const gguf::File& file) {
    return bindArchitecture<Gemma4Vision>(file);
}

} // namespace hearth::model
