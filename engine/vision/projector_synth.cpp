// Random-weight projector files of a real family's layout (synthesizeProjector): the tensor
// names, ggml shapes and keys llama.cpp's converter writes for Gemma 3's SigLIP tower, Gemma 4's
// vision tower, Qwen3-VL's (Qwen3.5's), Mistral 3's Pixtral and LLaVA's CLIP with its MLP
// projector, so that llama.cpp's mtmd loads them as it loads a real projector.
#include "hearth/gguf.h"
#include "hearth/projector.h"
#include "hearth/quant.h"

#include <array>
#include <cstring>
#include <optional>
#include <random>

namespace hearth {

namespace {

// Values of a tensor: normal(0, 0.02), or all `fill` when fill is set (norm weights).
std::vector<float> values(uint64_t n, std::mt19937_64& rng, std::optional<float> fill = {}) {
    std::vector<float> v(size_t(n), fill.value_or(0.0f));
    if (fill) return v;
    std::normal_distribution<float> d(0.0f, 0.02f);
    for (float& x : v) x = d(rng);
    return v;
}

Status add(gguf::Writer& w, const std::string& name, std::vector<uint64_t> shape, bool f16,
           std::mt19937_64& rng, std::optional<float> fill = {}) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    const std::vector<float> v = values(n, rng, fill);
    if (!f16) {
        std::vector<uint8_t> bytes(v.size() * 4);
        std::memcpy(bytes.data(), v.data(), bytes.size());
        return w.addTensor(name, quant::Type::F32, std::move(shape), std::move(bytes));
    }
    std::vector<uint8_t> bytes(v.size() * 2);
    HEARTH_RETURN_IF_ERROR(
        quant::quantizeRow(quant::Type::F16, v.data(), bytes.data(), int64_t(v.size())));
    return w.addTensor(name, quant::Type::F16, std::move(shape), std::move(bytes));
}

// The keys every family's file opens with: the clip architecture, the file's name and type, the
// projector type (under typeKey), and the tower's image and patch sizes, widths, layers, heads,
// layer norm epsilon, the text model's width and the pixel normalisation.
struct VisionHeader {
    const char* typeKey = "clip.projector_type";
    const char* type = "";
    int imageSize = 0;
    float eps = 1e-6f;
    std::array<float, 3> mean{}, std{};
};

void writeVisionHeader(gguf::Writer& w, const ProjectorSynthOptions& o, const VisionHeader& h) {
    w.set("general.architecture", gguf::Value::string("clip"));
    w.set("general.name", gguf::Value::string(std::string("hearth-synth ") + h.type + " projector"));
    w.set("general.file_type", gguf::Value::u32(o.f16 ? 1 : 0));
    w.set("clip.has_vision_encoder", gguf::Value::boolean(true));
    w.set(h.typeKey, gguf::Value::string(h.type));
    w.set("clip.vision.image_size", gguf::Value::u32(uint32_t(h.imageSize)));
    w.set("clip.vision.patch_size", gguf::Value::u32(uint32_t(o.patchSize)));
    w.set("clip.vision.embedding_length", gguf::Value::u32(uint32_t(o.nEmbd)));
    w.set("clip.vision.feed_forward_length", gguf::Value::u32(uint32_t(o.nFf)));
    w.set("clip.vision.block_count", gguf::Value::u32(uint32_t(o.nLayer)));
    w.set("clip.vision.attention.head_count", gguf::Value::u32(uint32_t(o.nHead)));
    w.set("clip.vision.attention.layer_norm_epsilon", gguf::Value::f32(h.eps));
    w.set("clip.vision.projection_dim", gguf::Value::u32(uint32_t(o.projectionDim)));
    w.set("clip.vision.image_mean", gguf::Value::f32Array({h.mean[0], h.mean[1], h.mean[2]}));
    w.set("clip.vision.image_std", gguf::Value::f32Array({h.std[0], h.std[1], h.std[2]}));
}

// CLIP's pixel normalisation (Pixtral's and LLaVA's).
constexpr std::array<float, 3> kClipMean{0.48145466f, 0.4578275f, 0.40821073f};
constexpr std::array<float, 3> kClipStd{0.26862954f, 0.26130258f, 0.27577711f};

// A layer norm of `width`: its weight ones, its bias random.
Status addNorm(gguf::Writer& w, const std::string& name, uint64_t width, std::mt19937_64& rng) {
    HEARTH_RETURN_IF_ERROR(add(w, name + ".weight", {width}, false, rng, 1.0f));
    return add(w, name + ".bias", {width}, false, rng);
}

// A linear layer in -> out: its weight (F16 when f16), its bias F32.
Status addLinear(gguf::Writer& w, const std::string& name, uint64_t in, uint64_t out, bool f16,
                 std::mt19937_64& rng) {
    HEARTH_RETURN_IF_ERROR(add(w, name + ".weight", {in, out}, f16, rng));
    return add(w, name + ".bias", {out}, false, rng);
}

// The blocks of a CLIP-like tower (SigLIP's, LLaVA's): layer norms and every linear biased,
// a feed-forward of up and down.
Status addClipBlocks(gguf::Writer& w, const ProjectorSynthOptions& o, std::mt19937_64& rng) {
    const uint64_t E = uint64_t(o.nEmbd), F = uint64_t(o.nFf);
    for (int l = 0; l < o.nLayer; ++l) {
        const std::string b = "v.blk." + std::to_string(l) + ".";
        for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"})
            HEARTH_RETURN_IF_ERROR(addLinear(w, b + m, E, E, o.f16, rng));
        for (const char* n : {"ln1", "ln2"}) HEARTH_RETURN_IF_ERROR(addNorm(w, b + n, E, rng));
        HEARTH_RETURN_IF_ERROR(addLinear(w, b + "ffn_up", E, F, o.f16, rng));
        HEARTH_RETURN_IF_ERROR(addLinear(w, b + "ffn_down", F, E, o.f16, rng));
    }
    return Status::ok();
}

// Gemma 4's tower as the converter writes it (Gemma4VisionAudioModel, vision only): no image
// size of its own (224, unused), pooling 3 unless scale_factor says otherwise, per-head Q/K norms,
// norms after attention and feed-forward, a gated feed-forward, a scalar per layer, two position
// tables (x, y) and the standardisation before the projection.
Status synthesizeGemma4(const ProjectorSynthOptions& o) {
    if (o.projectionDim < 1)
        return invalidArgument("the projector needs the text model's width (projection dim)");
    if (o.patchSize < 1 || o.nHead < 1 || o.nEmbd % o.nHead != 0 || (o.nEmbd / o.nHead) % 4 != 0 ||
        o.merge < 1 || o.nLayer < 1 || o.nFf < 1 || o.positionSize < 0)
        return invalidArgument("projector shape: the width must be whole heads of a multiple of 4 "
                               "(2-D RoPE over halves), pooling and sizes positive");
    const uint64_t E = uint64_t(o.nEmbd), F = uint64_t(o.nFf), P = uint64_t(o.patchSize);
    const uint64_t D = E / uint64_t(o.nHead);
    const uint64_t positions = uint64_t(o.positionSize > 0 ? o.positionSize : 10240);
    std::mt19937_64 rng(o.seed);
    gguf::Writer w;
    writeVisionHeader(w, o,
                      {"clip.vision.projector_type", "gemma4v", 224, 1e-6f, {0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}});
    if (o.merge != 3) w.set("clip.vision.projector.scale_factor", gguf::Value::u32(uint32_t(o.merge)));
    HEARTH_RETURN_IF_ERROR(add(w, "v.patch_embd.weight", {P, P, 3, E}, o.f16, rng));
    // The x table's rows, then the y table's: ne {E, positions, 2}, kept F32 by the converter.
    HEARTH_RETURN_IF_ERROR(add(w, "v.position_embd.weight", {E, positions, 2}, false, rng));
    // A clamped linear's bounds: one-value tensors beside its weight (the converter's names).
    auto bounds = [&](const std::string& linear) -> Status {
        if (!o.clamps) return Status::ok();
        const std::pair<const char*, float> b[] = {
            {".input_min", -1.0f}, {".input_max", 1.5f}, {".output_min", -0.15f}, {".output_max", 0.2f}};
        for (const auto& [suffix, v] : b) HEARTH_RETURN_IF_ERROR(add(w, linear + suffix, {1}, false, rng, v));
        return Status::ok();
    };
    for (int l = 0; l < o.nLayer; ++l) {
        const std::string b = "v.blk." + std::to_string(l) + ".";
        for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
            HEARTH_RETURN_IF_ERROR(add(w, b + m + ".weight", {E, E}, o.f16, rng));
            HEARTH_RETURN_IF_ERROR(bounds(b + m));
        }
        for (const char* n : {"attn_q_norm", "attn_k_norm"})
            HEARTH_RETURN_IF_ERROR(add(w, b + n + ".weight", {D}, false, rng, 1.0f));
        for (const char* n : {"ln1", "attn_post_norm", "ln2", "ffn_post_norm"})
            HEARTH_RETURN_IF_ERROR(add(w, b + n + ".weight", {E}, false, rng, 1.0f));
        HEARTH_RETURN_IF_ERROR(add(w, b + "ffn_gate.weight", {E, F}, o.f16, rng));
        HEARTH_RETURN_IF_ERROR(add(w, b + "ffn_up.weight", {E, F}, o.f16, rng));
        HEARTH_RETURN_IF_ERROR(add(w, b + "ffn_down.weight", {F, E}, o.f16, rng));
        for (const char* m : {"ffn_gate", "ffn_up", "ffn_down"}) HEARTH_RETURN_IF_ERROR(bounds(b + m));
        HEARTH_RETURN_IF_ERROR(add(w, b + "out_scale.weight", {1}, false, rng, 0.75f));
    }
    HEARTH_RETURN_IF_ERROR(add(w, "v.std_bias", {E}, false, rng));
    HEARTH_RETURN_IF_ERROR(add(w, "v.std_scale", {E}, false, rng, 1.0f));
    // [E] -> [text width] as a plain linear layer: ne {E, text width}.
    HEARTH_RETURN_IF_ERROR(add(w, "mm.input_projection.weight", {E, uint64_t(o.projectionDim)}, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(bounds("mm.input_projection"));
    return w.writeFile(o.outPath);
}

// Qwen3-VL's tower as the converter writes it (Qwen3VLVisionModel): the 3-D patch convolution
// split into its two temporal kernels, a square table of learned positions, fused Q/K/V with
// biases, LayerNorms with biases, a GELU feed-forward, the 2 x 2 merger (its norm written as the
// post norm, its linears as mm.0 and mm.2) and a merger per deepstack layer.
Status synthesizeQwen3Vl(const ProjectorSynthOptions& o) {
    if (o.projectionDim < 1)
        return invalidArgument("the projector needs the text model's width (projection dim)");
    const int positions = o.positionSize > 0 ? o.positionSize : 48 * 48;
    int side = 1;
    while (side * side < positions) ++side;
    if (o.patchSize < 1 || o.nHead < 1 || o.nEmbd % o.nHead != 0 || (o.nEmbd / o.nHead) % 4 != 0 || o.merge != 2 ||
        o.nLayer < 1 || o.nFf < 1 || side * side != positions || side < 2)
        return invalidArgument("projector shape: the width must be whole heads of a multiple of 4 (2-D RoPE over "
                               "quarters), merging 2, the positions a square");
    for (int l : o.deepstack)
        if (l < 0 || l >= o.nLayer) return invalidArgument("a deepstack layer is outside the tower");
    const uint64_t E = uint64_t(o.nEmbd), F = uint64_t(o.nFf), P = uint64_t(o.patchSize), E4 = 4 * E;
    const uint64_t out = uint64_t(o.projectionDim);
    std::mt19937_64 rng(o.seed);
    gguf::Writer w;
    writeVisionHeader(w, o, {"clip.projector_type", "qwen3vl_merger", side * o.patchSize, 1e-6f, {0.5f, 0.5f, 0.5f},
                             {0.5f, 0.5f, 0.5f}});
    w.set("clip.use_gelu", gguf::Value::boolean(true));
    w.set("clip.vision.spatial_merge_size", gguf::Value::u32(2));
    if (!o.deepstack.empty()) {
        std::vector<uint8_t> flags(size_t(o.nLayer), 0);
        for (int l : o.deepstack) flags[size_t(l)] = 1;
        w.set("clip.vision.is_deepstack_layers", gguf::Value::numericArray(gguf::ValueType::Bool, std::move(flags)));
    }
    HEARTH_RETURN_IF_ERROR(add(w, "v.patch_embd.weight", {P, P, 3, E}, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(add(w, "v.patch_embd.weight.1", {P, P, 3, E}, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(add(w, "v.patch_embd.bias", {E}, false, rng));
    HEARTH_RETURN_IF_ERROR(add(w, "v.position_embd.weight", {E, uint64_t(positions)}, false, rng));
    // A norm's weight near 1 and its bias near 0, so that a mix-up of the two shows.
    auto norm = [&](const std::string& name, uint64_t width) -> Status {
        std::vector<float> v = values(width, rng);
        for (float& x : v) x += 1.0f;
        std::vector<uint8_t> bytes(v.size() * 4);
        std::memcpy(bytes.data(), v.data(), bytes.size());
        HEARTH_RETURN_IF_ERROR(w.addTensor(name + ".weight", quant::Type::F32, {width}, std::move(bytes)));
        return add(w, name + ".bias", {width}, false, rng);
    };
    auto linear = [&](const std::string& name, uint64_t in, uint64_t outWidth) {
        return addLinear(w, name, in, outWidth, o.f16, rng);
    };
    for (int l = 0; l < o.nLayer; ++l) {
        const std::string b = "v.blk." + std::to_string(l) + ".";
        HEARTH_RETURN_IF_ERROR(norm(b + "ln1", E));
        HEARTH_RETURN_IF_ERROR(linear(b + "attn_qkv", E, 3 * E));
        HEARTH_RETURN_IF_ERROR(linear(b + "attn_out", E, E));
        HEARTH_RETURN_IF_ERROR(norm(b + "ln2", E));
        HEARTH_RETURN_IF_ERROR(linear(b + "ffn_up", E, F));
        HEARTH_RETURN_IF_ERROR(linear(b + "ffn_down", F, E));
    }
    for (int l : o.deepstack) {
        const std::string d = "v.deepstack." + std::to_string(l) + ".";
        HEARTH_RETURN_IF_ERROR(norm(d + "norm", E4));
        HEARTH_RETURN_IF_ERROR(linear(d + "fc1", E4, E4));
        HEARTH_RETURN_IF_ERROR(linear(d + "fc2", E4, out));
    }
    HEARTH_RETURN_IF_ERROR(norm("v.post_ln", E));
    HEARTH_RETURN_IF_ERROR(linear("mm.0", E4, E4));
    HEARTH_RETURN_IF_ERROR(linear("mm.2", E4, out));
    return w.writeFile(o.outPath);
}

// Mistral 3's Pixtral as the converter writes it (LlavaVisionModel): RMS norms (weights near
// one here, so that a norm left out shows), a SiLU-gated feed-forward, no biases in the tower,
// the patch merger of merge x merge squares with its norm when merge > 1, the two-layer
// projector with biases, and the [IMG_BREAK] row (the text model's, in a real file).
Status synthesizePixtral(const ProjectorSynthOptions& o) {
    if (o.projectionDim < 1)
        return invalidArgument("the projector needs the text model's width (projection dim)");
    if (o.patchSize < 1 || o.nHead < 1 || o.nEmbd % o.nHead != 0 || (o.nEmbd / o.nHead) % 4 != 0 ||
        o.merge < 1 || o.nLayer < 1 || o.nFf < 1 || o.imageSize < o.patchSize)
        return invalidArgument("projector shape: the width must be whole heads of a multiple of 4 "
                               "(2-D RoPE over halves), merge and sizes positive");
    const uint64_t E = uint64_t(o.nEmbd), F = uint64_t(o.nFf), P = uint64_t(o.patchSize);
    const uint64_t T = uint64_t(o.projectionDim), M = uint64_t(o.merge);
    std::mt19937_64 rng(o.seed);
    gguf::Writer w;
    writeVisionHeader(w, o, {"clip.projector_type", "pixtral", o.imageSize, 1e-5f, kClipMean, kClipStd});
    w.set("clip.use_silu", gguf::Value::boolean(true));
    if (o.merge > 1) w.set("clip.vision.spatial_merge_size", gguf::Value::u32(uint32_t(o.merge)));
    auto norm = [&](const std::string& name, uint64_t n) {
        std::vector<float> v = values(n, rng);
        for (float& x : v) x = 1.0f + 5.0f * x;
        std::vector<uint8_t> bytes(v.size() * 4);
        std::memcpy(bytes.data(), v.data(), bytes.size());
        return w.addTensor(name, quant::Type::F32, {n}, std::move(bytes));
    };
    HEARTH_RETURN_IF_ERROR(add(w, "v.patch_embd.weight", {P, P, 3, E}, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(norm("v.pre_ln.weight", E));
    for (int l = 0; l < o.nLayer; ++l) {
        const std::string b = "v.blk." + std::to_string(l) + ".";
        for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"})
            HEARTH_RETURN_IF_ERROR(add(w, b + m + ".weight", {E, E}, o.f16, rng));
        HEARTH_RETURN_IF_ERROR(norm(b + "ln1.weight", E));
        HEARTH_RETURN_IF_ERROR(norm(b + "ln2.weight", E));
        HEARTH_RETURN_IF_ERROR(add(w, b + "ffn_gate.weight", {E, F}, o.f16, rng));
        HEARTH_RETURN_IF_ERROR(add(w, b + "ffn_up.weight", {E, F}, o.f16, rng));
        HEARTH_RETURN_IF_ERROR(add(w, b + "ffn_down.weight", {F, E}, o.f16, rng));
    }
    if (o.merge > 1) {
        HEARTH_RETURN_IF_ERROR(norm("mm.input_norm.weight", E));
        HEARTH_RETURN_IF_ERROR(add(w, "mm.patch_merger.weight", {E * M * M, E}, o.f16, rng));
    }
    HEARTH_RETURN_IF_ERROR(addLinear(w, "mm.1", E, T, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(addLinear(w, "mm.2", T, T, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(add(w, "v.token_embd.img_break", {T}, false, rng));
    return w.writeFile(o.outPath);
}

// LLaVA's CLIP tower with its MLP projector (projector type "mlp"): layer norms with biases,
// the class embedding, learned positions (patches and the class token), quick GELU (no
// use_gelu), every linear biased, the projector mm.0 / mm.2; no feature_layer key, so that mtmd
// takes the second-to-last layer's output.
Status synthesizeClipMlp(const ProjectorSynthOptions& o) {
    if (o.projectionDim < 1)
        return invalidArgument("the projector needs the text model's width (projection dim)");
    if (o.patchSize < 1 || o.imageSize % o.patchSize != 0 || o.nHead < 1 || o.nEmbd % o.nHead != 0 ||
        o.nLayer < 2 || o.nFf < 1)
        return invalidArgument("projector shape: the image must be whole patches, the width whole heads, "
                               "at least 2 layers");
    const uint64_t E = uint64_t(o.nEmbd), P = uint64_t(o.patchSize);
    const uint64_t T = uint64_t(o.projectionDim), side = uint64_t(o.imageSize / o.patchSize);
    std::mt19937_64 rng(o.seed);
    gguf::Writer w;
    writeVisionHeader(w, o, {"clip.projector_type", "mlp", o.imageSize, 1e-5f, kClipMean, kClipStd});
    w.set("general.name", gguf::Value::string("hearth-synth llava projector"));
    w.set("clip.has_llava_projector", gguf::Value::boolean(true));
    HEARTH_RETURN_IF_ERROR(add(w, "v.patch_embd.weight", {P, P, 3, E}, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(add(w, "v.class_embd", {E}, false, rng));
    HEARTH_RETURN_IF_ERROR(add(w, "v.position_embd.weight", {E, side * side + 1}, false, rng));
    HEARTH_RETURN_IF_ERROR(addNorm(w, "v.pre_ln", E, rng));
    HEARTH_RETURN_IF_ERROR(addClipBlocks(w, o, rng));
    HEARTH_RETURN_IF_ERROR(addLinear(w, "mm.0", E, T, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(addLinear(w, "mm.2", T, T, o.f16, rng));
    return w.writeFile(o.outPath);
}

} // namespace

Status synthesizeProjector(const ProjectorSynthOptions& o) {
    if (o.family == "gemma4v") return synthesizeGemma4(o);
    if (o.family == "qwen3vl_merger") return synthesizeQwen3Vl(o);
    if (o.family == "pixtral") return synthesizePixtral(o);
    if (o.family == "mlp") return synthesizeClipMlp(o);
    if (o.family != "gemma3")
        return invalidArgument("projector family '" + o.family +
                               "' cannot be synthesized (gemma3, gemma4v, qwen3vl_merger, pixtral and mlp can)");
    if (o.projectionDim < 1)
        return invalidArgument("the projector needs the text model's width (projection dim)");
    if (o.patchSize < 1 || o.imageSize % o.patchSize != 0 || o.nHead < 1 ||
        o.nEmbd % o.nHead != 0 || o.merge < 1 || (o.imageSize / o.patchSize) % o.merge != 0 ||
        o.nLayer < 1 || o.nFf < 1)
        return invalidArgument("projector shape: the image must be whole patches, merged evenly, "
                               "the width whole heads");
    const uint64_t E = uint64_t(o.nEmbd), P = uint64_t(o.patchSize);
    const uint64_t side = uint64_t(o.imageSize / o.patchSize);
    std::mt19937_64 rng(o.seed);
    gguf::Writer w;
    writeVisionHeader(w, o,
                      {"clip.projector_type", "gemma3", o.imageSize, 1e-6f, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}});
    w.set("clip.use_gelu", gguf::Value::boolean(true));
    w.set("clip.vision.projector.scale_factor", gguf::Value::u32(uint32_t(o.merge)));
    // ggml shapes (ne, the row first): the patch convolution [P][P][3][E], positions [E][patches].
    HEARTH_RETURN_IF_ERROR(add(w, "v.patch_embd.weight", {P, P, 3, E}, o.f16, rng));
    HEARTH_RETURN_IF_ERROR(add(w, "v.patch_embd.bias", {E}, false, rng));
    // Position rows stay F32 in converted files (llama.cpp adds them to the patches as they are).
    HEARTH_RETURN_IF_ERROR(add(w, "v.position_embd.weight", {E, side * side}, false, rng));
    HEARTH_RETURN_IF_ERROR(addClipBlocks(w, o, rng));
    HEARTH_RETURN_IF_ERROR(addNorm(w, "v.post_ln", E, rng));
    // Gemma 3's projection: an RMS norm, then [E] -> [text width], stored [text width][E] in ne
    // order.
    HEARTH_RETURN_IF_ERROR(add(w, "mm.soft_emb_norm.weight", {E}, false, rng, 1.0f));
    HEARTH_RETURN_IF_ERROR(
        add(w, "mm.input_projection.weight", {uint64_t(o.projectionDim), E}, o.f16, rng));
    return w.writeFile(o.outPath);
}

} // namespace hearth
