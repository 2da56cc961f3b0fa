// Mistral 3's Pixtral vision tower of llama.cpp's projector files (projector type "pixtral"): an
// image's patches become the embeddings the text model reads in place of its tokens. Described
// once over the graph op set, so that every backend runs it; the facts follow llama.cpp's mtmd
// (its pixtral graph, build_vit and build_rope_2d).
//
// A step is one image of any grid (columns x rows of patches, vision.h's patchGrid), each patch a
// StepInput::HiddenIn row of 3·P² values (channel, patch row, column; normalised), its column and
// row in StepInput::GridX / GridY. The attention is not causal, so the order of the patches in the
// step is free: with a patch merger of m x m squares the encoder (vision/vision_encoder.cpp) gives
// each square's m² patches one after another, (dy, dx) row-major, the squares row-major, so that
// the merger is a reshape to [squares][m²·E] and one product. The output is StepInput::HiddenRows
// of the projected embeddings [squares][text width]; the encoder puts the [IMG_BREAK] rows
// between the rows of squares.
//
// The patch convolution as a product (bias when the file has one), an RMS norm before the
// layers when the file has one (v.pre_ln), then per layer: RMS norm, Q/K/V (biases when given),
// 2-D RoPE on adjacent pairs (base 10000: the first half of each head by the patch's row with
// the even frequencies, the second by its column with the odd ones), attention scaled by
// 1/√(head size), the output projection, the residual; RMS norm, the gated feed-forward (SiLU
// with clip.use_silu, GELU with clip.use_gelu, else quick GELU), the residual. Then, when the file
// has the merger (Mistral Small 3.1, Ministral 3): an RMS norm weighted by mm.input_norm and the
// product of each m x m square's features, channel-major in the file (unfold's order, re-ordered
// here once at load); and the two-layer GELU projector (mm.1, mm.2, biases when given).
#include "model/architectures.h"
#include "model/binding.h"
#include "model/vision_ffn.h"

#include "hearth/quant.h"

#include <cmath>

namespace hearth::model {

namespace {

struct Layer {
    int32_t ln1 = -1, ln2 = -1;
    int32_t wq = -1, wk = -1, wv = -1, wo = -1, bq = -1, bk = -1, bv = -1, bo = -1;
    int32_t gate = -1, up = -1, down = -1, gateB = -1, upB = -1, downB = -1;
};

class Pixtral final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "clip.vision", m_weights, m_copies);
        std::string type;
        for (const char* key : {"clip.projector_type", "clip.vision.projector_type"})
            if (type.empty() && f.has(key)) {
                HEARTH_ASSIGN_OR_RETURN(type, f.getString(key));
            }
        if (type != "pixtral") return unsupported("vision projector type '" + type + "' (pixtral expected)");
        HEARTH_ASSIGN_OR_RETURN(m_patch, b.integer("patch_size"));
        HEARTH_ASSIGN_OR_RETURN(m_embd, b.integer("embedding_length"));
        HEARTH_ASSIGN_OR_RETURN(m_ff, b.integer("feed_forward_length"));
        HEARTH_ASSIGN_OR_RETURN(m_nLayer, b.integer("block_count"));
        HEARTH_ASSIGN_OR_RETURN(m_nHead, b.integer("attention.head_count"));
        HEARTH_ASSIGN_OR_RETURN(m_eps, b.real("attention.layer_norm_epsilon", 1e-5f));
        HEARTH_ASSIGN_OR_RETURN(m_merge, b.integer("spatial_merge_size", 1));
        if (m_patch < 1 || m_merge < 1 || m_nHead < 1 || m_embd % m_nHead != 0 || (m_embd / m_nHead) % 4 != 0 ||
            m_nLayer < 1 || m_ff < 1 || !(m_eps > 0.0f))
            return invalidFormat("clip.vision: patch, merge, heads (whole, a multiple of 4 wide), layers or "
                                 "epsilon out of range");
        HEARTH_ASSIGN_OR_RETURN(m_ffnOp, visionFfnOp(f));
        const int64_t E = m_embd, F = m_ff, P = m_patch;
        const gguf::TensorInfo* mm1 = f.findTensor("mm.1.weight");
        const gguf::TensorInfo* mm2 = f.findTensor("mm.2.weight");
        if (!mm1 || mm1->nDims != 2 || !mm2 || mm2->nDims != 2)
            return notFound("missing tensor 'mm.1.weight' or 'mm.2.weight' (2-D)");
        const int64_t hidden = int64_t(mm1->ne[1]);
        m_textWidth = int(mm2->ne[1]);

        // The convolution kernel ne {P, P, 3, E} is the matrix [E][3·P·P].
        HEARTH_ASSIGN_OR_RETURN(m_patchEmbd, b.reshapedMatrix("v.patch_embd.weight", {P, P, 3, E}, 4, 3 * P * P, E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_patchBias, b.optionalVector("v.patch_embd.bias", E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_preLn, b.optionalVector("v.pre_ln.weight", E, -1));
        m_layers.resize(size_t(m_nLayer));
        for (int l = 0; l < m_nLayer; ++l) {
            Layer& L = m_layers[size_t(l)];
            const std::string p = "v.blk." + std::to_string(l) + ".";
            HEARTH_ASSIGN_OR_RETURN(L.ln1, b.vector(p + "ln1.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wq, b.matrix(p + "attn_q.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bq, b.optionalVector(p + "attn_q.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wk, b.matrix(p + "attn_k.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bk, b.optionalVector(p + "attn_k.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wv, b.matrix(p + "attn_v.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bv, b.optionalVector(p + "attn_v.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wo, b.matrix(p + "attn_out.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bo, b.optionalVector(p + "attn_out.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ln2, b.vector(p + "ln2.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.gate, b.matrix(p + "ffn_gate.weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(L.gateB, b.optionalVector(p + "ffn_gate.bias", F, l));
            HEARTH_ASSIGN_OR_RETURN(L.up, b.matrix(p + "ffn_up.weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(L.upB, b.optionalVector(p + "ffn_up.bias", F, l));
            HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(p + "ffn_down.weight", F, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.downB, b.optionalVector(p + "ffn_down.bias", E, l));
        }
        if (b.hasTensor("mm.patch_merger.weight")) {
            HEARTH_ASSIGN_OR_RETURN(m_inputNorm, b.vector("mm.input_norm.weight", E, m_nLayer));
            HEARTH_ASSIGN_OR_RETURN(m_merger, mergerMatrix(b));
        } else if (m_merge != 1) {
            return invalidFormat("clip.vision.spatial_merge_size is " + std::to_string(m_merge) +
                                 " but the file has no mm.patch_merger.weight");
        }
        HEARTH_ASSIGN_OR_RETURN(m_mm1, b.matrix("mm.1.weight", E, hidden, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_mm1B, b.optionalVector("mm.1.bias", hidden, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_mm2, b.matrix("mm.2.weight", hidden, m_textWidth, m_nLayer));
        HEARTH_ASSIGN_OR_RETURN(m_mm2B, b.optionalVector("mm.2.bias", m_textWidth, m_nLayer));

        const int maxPatches = 1024 * m_merge * m_merge; // mtmd's most tokens per image, unmerged
        m_dims.archName = "clip-pixtral";
        m_dims.nLayer = m_nLayer;
        m_dims.nEmbd = m_textWidth;
        m_dims.nVocab = 1; // every "token" of a step is a patch (id 0)
        m_dims.nCtxTrain = maxPatches;
        m_dims.maxPositions = maxPatches;
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
        auto norm = [&](graph::TensorId x, int32_t w) { return g.rmsNorm(x, g.weight(w), m_eps); };
        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        const graph::TensorId pixels = g.input(graph::StepInput::HiddenIn, 3 * P * P, n, quant::Type::F32);
        const graph::TensorId gx = g.input(graph::StepInput::GridX, n);
        const graph::TensorId gy = g.input(graph::StepInput::GridY, n);
        graph::TensorId x = bias(g.matMul(g.weight(m_patchEmbd), pixels), m_patchBias); // [n][E]
        if (m_preLn >= 0) x = norm(x, m_preLn);

        // Each half of a head rotated over D/2 dims: the first by the row at base^(-4i/D), the
        // second by the column at base^(-(4i+2)/D) (the odd frequencies, as a linear scale).
        graph::RopeParams byRow;
        byRow.nRot = int32_t(D / 2);
        byRow.freqBase = 10000.0f;
        graph::RopeParams byColumn = byRow;
        byColumn.freqScale = std::pow(byRow.freqBase, -2.0f / float(D));
        auto rope2d = [&](graph::TensorId t) { // t [n][E] -> [n][H][D]
            const graph::TensorId flat = g.reshape(t, D, H * n);
            const graph::TensorId a = g.reshape(g.copy(g.columns(flat, 0, D / 2)), D / 2, H, n);
            const graph::TensorId c = g.reshape(g.copy(g.columns(flat, D / 2, D / 2)), D / 2, H, n);
            return g.concat(g.rope(a, gy, graph::kNone, byRow), g.rope(c, gx, graph::kNone, byColumn), 0);
        };

        graph::AttentionParams ap;
        ap.nHeadKv = int32_t(H);
        ap.scale = 1.0f / std::sqrt(float(D));
        ap.blockSize = kv.blockSize;
        ap.causal = false;
        for (int l = 0; l < m_nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            graph::TensorId h = norm(x, L.ln1);
            const graph::TensorId q = rope2d(bias(g.matMul(g.weight(L.wq), h), L.bq));
            const graph::TensorId k = rope2d(bias(g.matMul(g.weight(L.wk), h), L.bk));
            const graph::TensorId v = bias(g.matMul(g.weight(L.wv), h), L.bv);
            const graph::TensorId kCache = g.kvCache(0, false, kv.type, kv.slots(), E);
            const graph::TensorId vCache = g.kvCache(0, true, kv.type, kv.slots(), E);
            g.kvWrite(kCache, g.reshape(k, E, n), in.slots);
            g.kvWrite(vCache, v, in.slots);
            graph::TensorId att = g.attention(q, kCache, vCache, in.info, in.tables, graph::kNone, D, ap); // [n][H][D]
            x = g.add(x, bias(g.matMul(g.weight(L.wo), g.reshape(att, E, n)), L.bo));
            h = norm(x, L.ln2);
            const graph::TensorId gate = bias(g.matMul(g.weight(L.gate), h), L.gateB); // [n][F]
            const graph::TensorId up = bias(g.matMul(g.weight(L.up), h), L.upB);
            graph::TensorId act = graph::kNone;
            switch (m_ffnOp) {
            case FfnOp::Silu: act = g.swiGlu(gate, up); break;
            case FfnOp::Gelu: act = g.geGlu(gate, up); break;
            case FfnOp::QuickGelu: act = g.mul(g.mul(gate, g.sigmoid(g.scale(gate, 1.702f))), up); break;
            }
            x = g.add(x, bias(g.matMul(g.weight(L.down), act), L.downB));
        }
        g.setLayer(m_nLayer);
        // The merger over each square's m² consecutive rows. A step of another size (the runner's
        // placement probe) has no squares: each row repeated m² times stands for one, so that the
        // merger's weights are placed as for a real step.
        const int64_t mm = int64_t(m_merge) * m_merge;
        if (m_merger >= 0) {
            x = norm(x, m_inputNorm);
            graph::TensorId squares = x;
            if (shape.hidden > 0 && shape.hidden * mm == n) {
                squares = g.reshape(x, mm * E, shape.hidden);
            } else {
                for (int64_t k = 1; k < mm; ++k) squares = g.concat(squares, x, 0);
            }
            x = g.matMul(g.weight(m_merger), squares); // [squares][E]
        }
        x = g.gelu(bias(g.matMul(g.weight(m_mm1), x), m_mm1B));
        x = bias(g.matMul(g.weight(m_mm2), x), m_mm2B); // [rows][text width]
        if (in.hidden != graph::kNone) g.setHiddenOutput(g.getRows(x, in.hidden));
    }

private:
    // mm.patch_merger.weight [E][E·m²], its columns channel-major (c·m² + dy·m + dx, unfold's
    // order), as an F32 copy whose columns are square-major ((dy·m + dx)·E + c): the order of a
    // square's m² consecutive rows [m²][E] read as one row.
    Result<int32_t> mergerMatrix(Binder& b) {
        const int64_t E = m_embd, mm = int64_t(m_merge) * m_merge;
        HEARTH_ASSIGN_OR_RETURN(const int32_t index, b.matrix("mm.patch_merger.weight", E * mm, E, m_nLayer));
        const graph::Weight src = m_weights[size_t(index)];
        m_weights.pop_back();
        std::vector<float> row(static_cast<size_t>(E * mm)), out(static_cast<size_t>(E * E * mm));
        for (int64_t r = 0; r < E; ++r) {
            HEARTH_RETURN_IF_ERROR(quant::dequantizeRow(src.type, src.data + uint64_t(r) * src.rowBytes, row.data(), E * mm));
            float* o = out.data() + r * E * mm;
            for (int64_t c = 0; c < E; ++c)
                for (int64_t k = 0; k < mm; ++k) o[k * E + c] = row[size_t(c * mm + k)];
        }
        m_copies.push_back(std::move(out));
        graph::Weight w;
        w.name = "mm.patch_merger.weight (square-major)";
        w.type = quant::Type::F32;
        w.ne = {E * mm, E, 1, 1};
        w.nDims = 2;
        w.data = reinterpret_cast<const uint8_t*>(m_copies.back().data());
        w.rowBytes = uint64_t(E * mm) * 4;
        w.layer = m_nLayer;
        m_weights.push_back(std::move(w));
        return int32_t(m_weights.size() - 1);
    }

    int m_patch = 0, m_merge = 1, m_embd = 0, m_ff = 0, m_nLayer = 0, m_nHead = 0, m_textWidth = 0;
    float m_eps = 1e-5f;
    FfnOp m_ffnOp = FfnOp::QuickGelu;
    std::vector<Layer> m_layers;
    int32_t m_patchEmbd = -1, m_patchBias = -1, m_preLn = -1;
    int32_t m_inputNorm = -1, m_merger = -1;
    int32_t m_mm1 = -1, m_mm1B = -1, m_mm2 = -1, m_mm2B = -1;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadPixtral(const gguf::File& file) {
    return bindArchitecture<Pixtral>(file);
}

} // namespace hearth::model
