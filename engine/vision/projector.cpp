// Reading a multimodal projector file's metadata (the keys llama.cpp's clip loader reads) into
// ProjectorInfo, and the check that it fits a text model (its width, an architecture that reads
// image embeddings).
#include "hearth/projector.h"

#include "hearth/gguf.h"
#include "model/arch.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace hearth {

namespace {

struct Family {
    const char* type;
    const char* name;
    int merge; // default patches merged per side
};

// The vision projector types of the families Hearth's vision work targets, with what they are.
constexpr Family kFamilies[] = {
    {"gemma3", "SigLIP (Gemma 3)", 4},
    {"gemma4v", "SigLIP (Gemma 4)", 3},
    {"qwen2vl_merger", "Qwen2-VL ViT", 2},
    {"qwen2.5vl_merger", "Qwen2.5-VL ViT", 2},
    {"qwen2.5o", "Qwen2.5-VL ViT", 2},
    {"qwen3vl_merger", "Qwen3-VL ViT", 2},
    {"pixtral", "Pixtral (Mistral 3)", 1},
    {"lightonocr", "Pixtral (LightOnOCR)", 1},
    {"mlp", "CLIP with an MLP projector (LLaVA)", 1},
    {"ldp", "CLIP with an LDP projector (MobileVLM)", 1},
    {"ldpv2", "CLIP with an LDPv2 projector (MobileVLM)", 1},
    {"idefics3", "SigLIP (Idefics3, SmolVLM)", 1},
    {"internvl", "InternViT (InternVL)", 1},
    {"llama4", "Llama 4 vision", 1},
    {"kimivl", "MoonViT (Kimi-VL)", 1},
    {"lfm2", "SigLIP2 (LFM2-VL)", 1},
    {"minicpmv", "MiniCPM-V resampler", 1},
    {"resampler", "MiniCPM-V resampler", 1},
    {"glm4v", "GLM-4V ViT", 2},
    {"phi4", "SigLIP (Phi-4 multimodal)", 1},
};

Result<int> positive(const gguf::File& f, const std::string& key, bool required, int fallback = 0) {
    if (!f.has(key)) {
        if (required) return invalidFormat("projector: missing key " + key);
        return fallback;
    }
    Result<uint32_t> v = f.getU32(key);
    if (!v) return v.status().withContext("projector: " + key);
    if (*v < 1 || *v > (1u << 20))
        return invalidFormat("projector: " + key + " = " + std::to_string(*v) + " is out of range");
    return int(*v);
}

} // namespace

Result<ProjectorInfo> readProjector(const std::string& path) {
    Result<gguf::File> file = gguf::File::open(path);
    if (!file) return file.status().withContext("projector " + path);
    const gguf::File& f = *file;
    ProjectorInfo p;
    if (f.has("clip.has_vision_encoder")) {
        Result<bool> v = f.getBool("clip.has_vision_encoder");
        if (!v) return v.status().withContext("projector: clip.has_vision_encoder");
        p.vision = *v;
    }
    if (!p.vision)
        return invalidArgument("projector " + path +
                               " has no vision encoder (clip.has_vision_encoder)");
    for (const char* key : {"clip.projector_type", "clip.vision.projector_type"}) {
        if (!p.type.empty() || !f.has(key)) continue;
        Result<std::string> t = f.getString(key);
        if (!t) return t.status().withContext(std::string("projector: ") + key);
        p.type = *t;
    }
    if (p.type.empty()) return invalidFormat("projector: no clip.projector_type");
    p.family = p.type;
    for (const Family& fam : kFamilies)
        if (p.type == fam.type) {
            p.family = fam.name;
            p.merge = fam.merge;
        }
    HEARTH_ASSIGN_OR_RETURN(p.imageSize, positive(f, "clip.vision.image_size", true));
    HEARTH_ASSIGN_OR_RETURN(p.patchSize, positive(f, "clip.vision.patch_size", true));
    HEARTH_ASSIGN_OR_RETURN(p.nEmbd, positive(f, "clip.vision.embedding_length", true));
    HEARTH_ASSIGN_OR_RETURN(p.nFf, positive(f, "clip.vision.feed_forward_length", true));
    HEARTH_ASSIGN_OR_RETURN(p.nLayer, positive(f, "clip.vision.block_count", true));
    HEARTH_ASSIGN_OR_RETURN(p.nHead, positive(f, "clip.vision.attention.head_count", true));
    HEARTH_ASSIGN_OR_RETURN(p.projectionDim, positive(f, "clip.vision.projection_dim", false));
    if (p.type == "gemma3") {
        p.imageBegin = "<start_of_image>";
        p.imageEnd = "<end_of_image>";
        HEARTH_ASSIGN_OR_RETURN(p.merge,
                                positive(f, "clip.vision.projector.scale_factor", false, p.merge));
    }
    if (p.type == "gemma4v") {
        // mtmd's Gemma 4 facts: pooling 3 unless the file says, a budget of 70..1120 tokens.
        p.imageBegin = "<|image>";
        p.imageEnd = "<image|>";
        HEARTH_ASSIGN_OR_RETURN(p.merge,
                                positive(f, "clip.vision.projector.scale_factor", false, p.merge));
        p.minTokens = 70;
        p.maxTokens = 1120;
    }
    if (p.type == "qwen3vl_merger") {
        // mtmd's Qwen-VL facts: a budget of 8..4096 merged patches, the image between these.
        p.imageBegin = "<|vision_start|>";
        p.imageEnd = "<|vision_end|>";
        p.minTokens = 8;
        p.maxTokens = 4096;
    }
    if (p.type == "pixtral") {
        // mtmd's Pixtral facts: no begin text, "[IMG_END]" after the image (the [IMG_BREAK] rows
        // are among the embeddings), a budget of 8..1024 merged patches.
        p.imageEnd = "[IMG_END]";
        p.minTokens = 8;
        p.maxTokens = 1024;
    }
    if (f.has("clip.vision.spatial_merge_size")) {
        HEARTH_ASSIGN_OR_RETURN(p.merge,
                                positive(f, "clip.vision.spatial_merge_size", false, p.merge));
    }
    if (p.patchSize > p.imageSize && p.maxTokens == 0)
        return invalidFormat("projector: patch size " + std::to_string(p.patchSize) +
                             " is larger than the image size " + std::to_string(p.imageSize));
    if (p.nEmbd % p.nHead != 0)
        return invalidFormat("projector: embedding length " + std::to_string(p.nEmbd) +
                             " is not a multiple of " + std::to_string(p.nHead) + " heads");
    Result<float> eps = f.getF32("clip.vision.attention.layer_norm_epsilon");
    if (!eps)
        return eps.status().withContext("projector: clip.vision.attention.layer_norm_epsilon");
    if (!(*eps > 0.0f && *eps < 1.0f))
        return invalidFormat("projector: layer norm epsilon out of range");
    p.eps = *eps;
    for (auto [key, out] : {std::pair{"clip.vision.image_mean", &p.mean},
                            std::pair{"clip.vision.image_std", &p.std}}) {
        Result<std::vector<float>> v = f.getF32Array(key);
        if (!v) return v.status().withContext(std::string("projector: ") + key);
        if (v->size() < 3)
            return invalidFormat(std::string("projector: ") + key + " has fewer than 3 values");
        for (int c = 0; c < 3; ++c) {
            if (!std::isfinite((*v)[size_t(c)]))
                return invalidFormat(std::string("projector: ") + key + " is not finite");
            (*out)[size_t(c)] = (*v)[size_t(c)];
        }
    }
    for (float s : p.std)
        if (s == 0.0f) return invalidFormat("projector: clip.vision.image_std has a zero");
    const int side = p.imageSize / p.patchSize / std::max(1, p.merge);
    p.tokensPerImage = p.maxTokens > 0 ? p.maxTokens : int64_t(side) * side;
    if (p.type == "pixtral") p.tokensPerImage += 32; // about: a square image's [IMG_BREAK] rows
    for (const gguf::TensorInfo& t : f.tensors()) p.tensorBytes += t.bytes;
    return p;
}

uint64_t projectorMemoryBytes(const ProjectorInfo& p) {
    const uint64_t side = p.patchSize > 0 ? uint64_t(p.imageSize / p.patchSize) : 0;
    const uint64_t patches = p.maxTokens > 0 ? uint64_t(p.maxTokens) * uint64_t(p.merge) * uint64_t(p.merge)
                                             : side * side;
    const uint64_t kv = 2 * patches * uint64_t(p.nEmbd) * 4;
    const uint64_t widest = uint64_t(std::max(p.nFf, 3 * p.nEmbd));
    const uint64_t activations = 2 * patches * widest * 4; // an op's input and output
    return p.tensorBytes + kv + activations;
}

Status checkProjectorFor(const ProjectorInfo& projector, const std::string& modelPath) {
    Result<gguf::File> model = gguf::File::open(modelPath);
    if (!model) return model.status().withContext("model " + modelPath);
    const gguf::TensorInfo* embd = model->findTensor("token_embd.weight");
    if (!embd || embd->nDims < 2)
        return invalidFormat("model " + modelPath + " has no token_embd.weight");
    const int64_t width = int64_t(embd->ne[0]);
    if (projector.projectionDim > 0 && projector.projectionDim != width)
        return invalidArgument("the projector's embeddings are " +
                               std::to_string(projector.projectionDim) + " wide, the model's " +
                               std::to_string(width) + ": it belongs to another model");
    model::ArchitectureOptions withProjector;
    withProjector.projector = true;
    Result<std::unique_ptr<model::Architecture>> arch = model::loadArchitecture(*model, withProjector);
    if (!arch) return arch.status().withContext("model " + modelPath);
    if (!(*arch)->dims().givenEmbeddings) {
        Result<std::string> name = model->getString("general.architecture");
        return invalidArgument("the model (" + (name ? *name : std::string("?")) + ") does not take images");
    }
    // The families whose text models read one projector type's embeddings (their positions,
    // not only their width, are the model's): a projector of another type is another model's.
    constexpr std::pair<const char*, const char*> kReaders[] = {
        {"gemma3", "gemma3"},           {"gemma4", "gemma4v"},  {"qwen35", "qwen3vl_merger"},
        {"qwen35moe", "qwen3vl_merger"}, {"mistral3", "pixtral"}, {"llama", "mlp"}};
    if (Result<std::string> name = model->getString("general.architecture"); name)
        for (const auto& [arch, type] : kReaders)
            if (*name == arch && projector.type != type)
                return invalidArgument("the projector (" + projector.family + ") belongs to another model: " + *name +
                                       " reads " + type + " projectors' embeddings");
    return Status::ok();
}

} // namespace hearth
