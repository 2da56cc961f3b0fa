// The Qwen3-VL vision tower of llama.cpp's projector files ("qwen3vl_merger", the projector of
// Qwen3-VL and Qwen3.5): an image's patches become embeddings the text model reads in place of
// tokens. Described once over the graph op set so that every backend runs it; the facts follow
// llama.cpp's clip graph for this projector type.
//
// A step is one image of n patches (a grid of even columns and rows), taken 2 x 2 square by
// square (row-major squares, within one: top left, top right, bottom left, bottom right): each
// arrives as a StepInput::HiddenIn row of its 3·P² pixels (channel, then patch row, then column:
// the convolution kernel's order) followed by its E learned position values, already
// interpolated to the grid (vision/qwen_vision_input.cpp); StepInput::GridX and GridY give its
// column and row for the 2-D rotary embedding. The attention is not causal, over a K/V pool of
// one layer's rows that every layer reuses in turn. The output (StepInput::HiddenRows) is the
// n / 4 merged rows, each the merger's embedding followed by one per deepstack layer.
#include "model/architectures.h"
#include "model/binding.h"

#include <cmath>

namespace hearth::model {

namespace {

struct Layer {
    int32_t ln1 = -1, ln1B = -1, ln2 = -1, ln2B = -1;
    int32_t qkv = -1, qkvB = -1, wo = -1, bo = -1;
    int32_t up = -1, upB = -1, down = -1, downB = -1;
};

// A merger: LayerNorm, then fc1, GELU, fc2 (over 4 patches' rows side by side).
struct Merger {
    int32_t layer = -1; // the block whose output it reads; -1: the last, after the post norm
    int32_t norm = -1, normB = -1, fc1 = -1, fc1B = -1, fc2 = -1, fc2B = -1;
};

constexpr int kMerge = 2; // the graph merges 2 x 2 patches, as llama.cpp's does

class Qwen3VlVision final : public Architecture {
public:
    Status bind(const gguf::File& f) {
        Binder b(f, "clip.vision", m_weights, m_copies);
        std::string type;
        for (const char* key : {"clip.projector_type", "clip.vision.projector_type"})
            if (type.empty() && f.has(key)) {
                HEARTH_ASSIGN_OR_RETURN(type, f.getString(key));
            }
        if (type != "qwen3vl_merger")
            return unsupported("vision projector type '" + type + "' (qwen3vl_merger expected)");
        HEARTH_ASSIGN_OR_RETURN(m_patch, b.integer("patch_size"));
        HEARTH_ASSIGN_OR_RETURN(m_embd, b.integer("embedding_length"));
        HEARTH_ASSIGN_OR_RETURN(m_ff, b.integer("feed_forward_length"));
        HEARTH_ASSIGN_OR_RETURN(m_nLayer, b.integer("block_count"));
        HEARTH_ASSIGN_OR_RETURN(m_nHead, b.integer("attention.head_count"));
        HEARTH_ASSIGN_OR_RETURN(m_eps, b.real("attention.layer_norm_epsilon", 1e-6f));
        HEARTH_ASSIGN_OR_RETURN(const int merge, b.integer("spatial_merge_size", kMerge));
        if (merge != kMerge)
            return unsupported("clip.vision.spatial_merge_size " + std::to_string(merge) + " (2 is supported)");
        if (m_patch < 1 || m_nHead < 1 || m_embd % m_nHead != 0 || (m_embd / m_nHead) % 4 != 0 || m_nLayer < 1 ||
            m_ff < 1 || !(m_eps > 0.0f))
            return invalidFormat("clip.vision: patch, heads (whole, a multiple of 4 wide: 2-D RoPE over quarters), "
                                 "layers or epsilon out of range");
        const int64_t E = m_embd, F = m_ff, P = m_patch, E4 = 4 * E;
        const gguf::TensorInfo* pos = f.findTensor("v.position_embd.weight");
        if (!pos || pos->nDims != 2 || pos->ne[0] != uint64_t(E))
            return invalidFormat("tensor 'v.position_embd.weight' must be [positions][" + std::to_string(E) + "]");
        const int64_t side = int64_t(std::llround(std::sqrt(double(pos->ne[1]))));
        if (side < 2 || uint64_t(side * side) != pos->ne[1])
            return invalidFormat("v.position_embd.weight: " + std::to_string(pos->ne[1]) +
                                 " positions are not a square of at least 2 x 2");
        const gguf::TensorInfo* out = f.findTensor("mm.2.weight");
        if (!out || out->nDims != 2) return notFound("missing tensor 'mm.2.weight'");
        m_outWidth = int(out->ne[1]);

        // The two temporal halves of the patch convolution, ne {P, P, 3, E} each: [E][3·P·P].
        HEARTH_ASSIGN_OR_RETURN(m_patchEmbd[0], b.reshapedMatrix("v.patch_embd.weight", {P, P, 3, E}, 4, 3 * P * P, E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_patchEmbd[1],
                                b.reshapedMatrix("v.patch_embd.weight.1", {P, P, 3, E}, 4, 3 * P * P, E, -1));
        HEARTH_ASSIGN_OR_RETURN(m_patchBias, b.vector("v.patch_embd.bias", E, -1));
        m_layers.resize(size_t(m_nLayer));
        for (int l = 0; l < m_nLayer; ++l) {
            Layer& L = m_layers[size_t(l)];
            const std::string p = "v.blk." + std::to_string(l) + ".";
            HEARTH_ASSIGN_OR_RETURN(L.ln1, b.vector(p + "ln1.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ln1B, b.vector(p + "ln1.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.qkv, b.matrix(p + "attn_qkv.weight", E, 3 * E, l));
            HEARTH_ASSIGN_OR_RETURN(L.qkvB, b.vector(p + "attn_qkv.bias", 3 * E, l));
            HEARTH_ASSIGN_OR_RETURN(L.wo, b.matrix(p + "attn_out.weight", E, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.bo, b.vector(p + "attn_out.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ln2, b.vector(p + "ln2.weight", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.ln2B, b.vector(p + "ln2.bias", E, l));
            HEARTH_ASSIGN_OR_RETURN(L.up, b.matrix(p + "ffn_up.weight", E, F, l));
            HEARTH_ASSIGN_OR_RETURN(L.upB, b.vector(p + "ffn_up.bias", F, l));
            HEARTH_ASSIGN_OR_RETURN(L.down, b.matrix(p + "ffn_down.weight", F, E, l));
            HEARTH_ASSIGN_OR_RETURN(L.downB, b.vector(p + "ffn_down.bias", E, l));
            const std::string d = "v.deepstack." + std::to_string(l) + ".";
            if (!b.hasTensor(d + "fc1.weight")) continue;
            HEARTH_ASSIGN_OR_RETURN(Merger m, merger(b, d + "norm", d + "fc1", d + "fc2", E4, l));
            m.layer = l;
            m_deepstack.push_back(m);
        }
        // The main merger: its norm over each patch's E values (llama.cpp's post norm), before
        // the 2 x 2 patches are put side by side.
        HEARTH_ASSIGN_OR_RETURN(m_merger, merger(b, "v.post_ln", "mm.0", "mm.2", E, m_nLayer));

        const int maxPatches = 4096 * kMerge * kMerge; // mtmd's most tokens per image, unmerged
        m_dims.archName = "clip-qwen3vl";
        m_dims.nLayer = m_nLayer;
        m_dims.nEmbd = m_outWidth * int(1 + m_deepstack.size());
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
        const int64_t n = shape.tokens, E = m_embd, H = m_nHead, D = E / H, P = m_patch, pixels = 3 * P * P;
        auto norm = [&](graph::TensorId x, int32_t w, int32_t b) {
            return g.layerNorm(x, g.weight(w), g.weight(b), m_eps);
        };
        auto linear = [&](graph::TensorId x, int32_t w, int32_t b) { return g.add(g.matMul(g.weight(w), x), g.weight(b)); };

        g.setLayer(-1);
        const StepTensors in = stepTensors(g, shape);
        const graph::TensorId rowsIn = g.input(graph::StepInput::HiddenIn, pixels + E, n, quant::Type::F32);
        const graph::TensorId gx = g.input(graph::StepInput::GridX, n);
        const graph::TensorId gy = g.input(graph::StepInput::GridY, n);
        const graph::TensorId patches = g.copy(g.columns(rowsIn, 0, pixels));
        const graph::TensorId positions = g.copy(g.columns(rowsIn, pixels, E));
        // Both temporal kernels see the same picture (a still image is two equal frames).
        graph::TensorId x = g.add(g.matMul(g.weight(m_patchEmbd[0]), patches), g.matMul(g.weight(m_patchEmbd[1]), patches));
        x = g.add(g.add(x, g.weight(m_patchBias)), positions); // [n][E]

        // llama.cpp's vision M-RoPE: pairs (i, i + D/2); those of the first quarter turn by the
        // row, of the second by the column, each at base^(-4i/D). As two NeoX rotations of D/2
        // over quarters (0, 2) and (1, 3); the head's dims come out as 0, 2, 1, 3, for q as for k,
        // which leaves their products as they are.
        graph::RopeParams rope;
        rope.nRot = int32_t(D / 2);
        rope.neox = true;
        rope.freqBase = 10000.0f;
        auto quarters = [&](graph::TensorId flat, int64_t a, int64_t b) {
            const graph::TensorId first = g.copy(g.columns(flat, a * D / 4, D / 4));
            const graph::TensorId second = g.copy(g.columns(flat, b * D / 4, D / 4));
            return g.reshape(g.concat(first, second, 0), D / 2, H, n);
        };
        auto rope2d = [&](graph::TensorId t) { // t [n][E]
            const graph::TensorId flat = g.reshape(t, D, H * n);
            const graph::TensorId byRow = g.rope(quarters(flat, 0, 2), gy, graph::kNone, rope);
            const graph::TensorId byColumn = g.rope(quarters(flat, 1, 3), gx, graph::kNone, rope);
            return g.concat(byRow, byColumn, 0); // [n][H][D]
        };

        graph::AttentionParams ap;
        ap.nHeadKv = int32_t(H);
        ap.scale = 1.0f / std::sqrt(float(D));
        ap.blockSize = kv.blockSize;
        ap.causal = false;
        std::vector<graph::TensorId> deepstack;
        for (int l = 0; l < m_nLayer; ++l) {
            const Layer& L = m_layers[size_t(l)];
            g.setLayer(l);
            const graph::TensorId qkv = linear(norm(x, L.ln1, L.ln1B), L.qkv, L.qkvB); // [n][3E]
            const graph::TensorId q = rope2d(g.copy(g.columns(qkv, 0, E)));
            const graph::TensorId k = rope2d(g.copy(g.columns(qkv, E, E)));
            const graph::TensorId v = g.copy(g.columns(qkv, 2 * E, E));
            const graph::TensorId kCache = g.kvCache(0, false, kv.type, kv.slots(), E);
            const graph::TensorId vCache = g.kvCache(0, true, kv.type, kv.slots(), E);
            g.kvWrite(kCache, g.reshape(k, E, n), in.slots);
            g.kvWrite(vCache, v, in.slots);
            const graph::TensorId att = g.attention(q, kCache, vCache, in.info, in.tables, graph::kNone, D, ap);
            x = g.add(linear(g.reshape(att, E, n), L.wo, L.bo), x);
            const graph::TensorId h = linear(g.gelu(linear(norm(x, L.ln2, L.ln2B), L.up, L.upB)), L.down, L.downB);
            x = g.add(x, h);
            for (const Merger& m : m_deepstack)
                if (m.layer == l) deepstack.push_back(applyMerger(g, m, sideBySide(g, x, n), true));
        }
        g.setLayer(m_nLayer);
        graph::TensorId merged = applyMerger(g, m_merger, x, false);
        for (graph::TensorId d : deepstack) merged = g.concat(merged, d, 0);
        if (in.hidden != graph::kNone) g.setHiddenOutput(g.getRows(merged, in.hidden));
    }

private:
    // [n][E] as [n/4][4E]: each square's 4 consecutive rows side by side. A step whose patches
    // are not whole squares (the runner's placement probe) gets each row 4 times instead.
    graph::TensorId sideBySide(graph::Graph& g, graph::TensorId x, int64_t n) const {
        if (n % 4 == 0) return g.reshape(x, 4 * int64_t(m_embd), n / 4);
        const graph::TensorId two = g.concat(x, x, 0);
        return g.concat(two, two, 0);
    }

    // A merger over the rows: its norm before the squares go side by side (the main merger), or
    // after (sideBySideAlready: a deepstack merger, given the squares side by side).
    graph::TensorId applyMerger(graph::Graph& g, const Merger& m, graph::TensorId x, bool sideBySideAlready) const {
        const int64_t n = g.tensor(x).ne[1];
        graph::TensorId h = g.layerNorm(x, g.weight(m.norm), g.weight(m.normB), m_eps);
        if (!sideBySideAlready) h = sideBySide(g, h, n);
        h = g.gelu(g.add(g.matMul(g.weight(m.fc1), h), g.weight(m.fc1B)));
        return g.add(g.matMul(g.weight(m.fc2), h), g.weight(m.fc2B));
    }

    Result<Merger> merger(Binder& b, const std::string& norm, const std::string& fc1, const std::string& fc2,
                          int64_t normWidth, int32_t layer) {
        const int64_t E4 = 4 * int64_t(m_embd);
        const gguf::TensorInfo* hidden = b.file().findTensor(fc1 + ".weight");
        if (!hidden || hidden->nDims != 2) return notFound("missing tensor '" + fc1 + ".weight'");
        const int64_t width = int64_t(hidden->ne[1]);
        Merger m;
        HEARTH_ASSIGN_OR_RETURN(m.norm, b.vector(norm + ".weight", normWidth, layer));
        HEARTH_ASSIGN_OR_RETURN(m.normB, b.vector(norm + ".bias", normWidth, layer));
        HEARTH_ASSIGN_OR_RETURN(m.fc1, b.matrix(fc1 + ".weight", E4, width, layer));
        HEARTH_ASSIGN_OR_RETURN(m.fc1B, b.vector(fc1 + ".bias", width, layer));
        HEARTH_ASSIGN_OR_RETURN(m.fc2, b.matrix(fc2 + ".weight", width, m_outWidth, layer));
        HEARTH_ASSIGN_OR_RETURN(m.fc2B, b.vector(fc2 + ".bias", m_outWidth, layer));
        return m;
    }

    int m_patch = 0, m_embd = 0, m_ff = 0, m_nLayer = 0, m_nHead = 0, m_outWidth = 0;
    float m_eps = 1e-6f;
    std::vector<Layer> m_layers;
    std::vector<Merger> m_deepstack; // in layer order
    Merger m_merger;
    int32_t m_patchEmbd[2] = {-1, -1}, m_patchBias = -1;
};

} // namespace

Result<std::unique_ptr<Architecture>> loadQwen3VlVision(const gguf::File& file) {
    return bindArchitecture<Qwen3VlVision>(file);
}

} // namespace hearth::model
