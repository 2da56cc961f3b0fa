// Multimodal projector files (llama.cpp's --mmproj GGUFs, the "clip" layout): what a file's vision
// encoder is, read from its metadata and checked against the text model it is to serve.
#pragma once

#include "hearth/status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace hearth {

struct ProjectorInfo {
    std::string type; // clip.projector_type (or clip.vision.projector_type): "gemma3", "mlp", ...
    std::string
        family; // the encoder it names, e.g. "SigLIP (Gemma 3)"; the type when unknown to Hearth
    bool vision = false;              // has a vision encoder (clip.has_vision_encoder)
    int imageSize = 0, patchSize = 0; // the encoder's input side and patch side, in pixels
    int nEmbd = 0, nFf = 0, nLayer = 0, nHead = 0;
    int projectionDim =
        0;            // the width its embeddings are projected to (the text model's), 0: not given
    float eps = 0.0f; // layer norm epsilon
    std::array<float, 3> mean{}, std{}; // per-channel normalisation of pixels in [0, 1]
    int merge = 1; // patches merged along each side into one embedding (Gemma 3's pooling: 4)
    // Embeddings one image becomes at the encoder's own size (image_size / patch_size / merge,
    // squared); families of dynamic resolution (Qwen's ViT) give more for larger images. For a
    // family that sizes each image within a token budget (Gemma 4: minTokens > 0), the most.
    int64_t tokensPerImage = 0;
    // A token budget (as mtmd sets it: Gemma 4's 70..1120, Qwen3-VL's 8..4096): each image is
    // resized, its aspect kept, to a whole number of merged patches whose count lies within it;
    // 0: a fixed square.
    int minTokens = 0, maxTokens = 0;
    uint64_t tensorBytes = 0; // the weights' bytes in the file
    // Text around an image's embeddings in a prompt (Gemma 3: "<start_of_image>", "<end_of_image>").
    std::string imageBegin, imageEnd;
};

// What a loaded projector holds in memory: its weights, and the working set of encoding one image
// at its own size (the one reused K/V layer over its patches, F32, and the widest activations).
uint64_t projectorMemoryBytes(const ProjectorInfo& projector);

// Reads the projector file at `path`. Errors: not a GGUF file, no vision encoder, a projector type
// llama.cpp does not define here (named), keys missing or out of range (named).
Result<ProjectorInfo> readProjector(const std::string& path);

// A random-weight projector of a family's real layout, for tests and benchmarks: the vision
// encoder's tensors as llama.cpp's converter names and shapes them, normal(0, 0.02) weights,
// norms 1. Families: "gemma3" (SigLIP with Gemma 3's pooling and projection), "gemma4v" (Gemma 4's
// vision tower: RMS norms, 2-D RoPE, gated feed-forward, pooling by `merge`, std scaling; its
// image size is unused, positionSize the rows of each position table), "qwen3vl_merger"
// (Qwen3-VL's and Qwen3.5's: two temporal patch kernels, a square position table of
// positionSize rows, 2-D vision RoPE, the 2 x 2 merger and deepstack mergers; merge must be 2),
// "pixtral" (Mistral 3's Pixtral: RMS norms near 1, 2-D RoPE, SiLU-gated feed-forward, the patch
// merger of `merge` x `merge` squares when merge > 1, the GELU projector, the [IMG_BREAK] row),
// "mlp" (LLaVA's CLIP: layer norms, class token, learned positions, quick GELU, the mm.0 / mm.2
// projector).
struct ProjectorSynthOptions {
    std::string family = "gemma3";
    int imageSize = 896, patchSize = 14; // Gemma 3's
    int nEmbd = 1152, nFf = 4304, nLayer = 27, nHead = 16;
    int projectionDim = 0; // the text model's width (required)
    int merge = 4;         // written as clip.vision.projector.scale_factor (pixtral: spatial_merge_size)
    int positionSize = 0;  // gemma4v: rows of the x and the y position tables (0: 10240);
                           // qwen3vl_merger: rows of the position table, a square (0: 48 x 48)
    std::vector<int> deepstack; // qwen3vl_merger: the layers feeding a deepstack merger
    bool clamps = false;   // gemma4v: clamped linears, bounds that bite (in [-1, 1.5], out [-0.15, 0.2])
    bool f16 = false;      // F16 matrices (as converted files), else F32
    uint64_t seed = 42;
    std::string outPath;
};
Status synthesizeProjector(const ProjectorSynthOptions& options);

// Whether the projector can serve the text model at modelPath: its embeddings' width is the
// model's embedding width (the error names both), the model's architecture reads image
// embeddings with a projector (the error names it), and of the projector's type where the
// architecture reads one type's only (gemma3, gemma4, qwen35, mistral3's pixtral, llama's mlp:
// the error names both and says the projector belongs to another model).
Status checkProjectorFor(const ProjectorInfo& projector, const std::string& modelPath);

// The vision projector lying beside the model at modelPath, as Hugging Face repositories and
// LM Studio's folders keep them: a GGUF file in the same folder whose name holds "mmproj", that
// readProjector reads and checkProjectorFor accepts. Among several, F16 before BF16 before F32
// before the others, then by name. An empty path when there is none; errors only for a model
// path whose folder cannot be listed.
Result<std::string> findProjectorFor(const std::string& modelPath);

// Whether the file name (not a path) looks like a projector's: it holds "mmproj" in any case.
bool isProjectorFileName(const std::string& fileName);

} // namespace hearth
