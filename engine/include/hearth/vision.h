// Images to the embeddings a vision-language model reads in place of tokens: the resizing and
// normalisation llama.cpp's mtmd applies before a vision encoder, and the encoder of a projector
// file (hearth/projector.h) run on a device like a text model.
#pragma once

#include "hearth/image.h"
#include "hearth/projector.h"
#include "hearth/status.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hearth {

// Pillow's resampling filters (the resize the models' own preprocessors use).
enum class ResizeFilter { Bilinear, Bicubic, Lanczos };

// The image resampled to width x height as Pillow does it: a separable filter (horizontal pass,
// then vertical), widened by the scale when shrinking, with weights in 22-bit fixed point.
// InvalidArgument for an empty image or a side outside [1, 65536].
Result<Image> resizeImage(const Image& image, int width, int height, ResizeFilter filter);

// The image scaled to fit width x height with its aspect kept (each side rounded up, at most the
// target's), centred on a `pad` background: llama.cpp's resize with padding.
Result<Image> fitImage(const Image& image, int width, int height, ResizeFilter filter,
                       std::array<uint8_t, 3> pad = {0, 0, 0});

// The grid of patches (columns x rows) an image of width x height becomes before an encoder: the
// encoder's own square for fixed-size families; for a token budget (ProjectorInfo::minTokens > 0)
// mtmd's choice: each side rounded to whole merged patches (patch · merge pixels), then, when the
// area exceeds the budget's most (or falls below its least), both sides scaled by one factor and
// floored (or ceiled) to whole merged patches. Zero for an empty image.
struct PatchGrid {
    int columns = 0, rows = 0;
    bool operator==(const PatchGrid&) const = default;
};
PatchGrid patchGrid(const ProjectorInfo& projector, int width, int height);

struct VisionOptions {
    std::string device = "cpu"; // "cpu", "ref", "vulkan:N", "cuda:N"
    int threads = 0;            // CPU threads (0: one per hardware thread)
};

// One image's embeddings: [tokens][width] values, width the text model's embedding width.
struct ImageEmbeddings {
    int64_t tokens = 0;
    int width = 0;
    int columns = 0; // tokens per row of the image's grid of them (row-major; M-RoPE's columns)
    std::vector<float> values;
    uint64_t hash = 0; // of the image's pixels and size (the prefix cache's key for it)
};

// A 64-bit hash of an image's size and pixels.
uint64_t imageHash(const Image& image);

class VisionEncoder {
public:
    // Loads the vision encoder of the projector file at `path` (Gemma 3's SigLIP, Gemma 4's
    // tower, Qwen3-VL's and Qwen3.5's tower, Mistral 3's Pixtral, LLaVA's CLIP with its MLP
    // projector). Errors: what readProjector says, a projector type Hearth does not encode
    // (named), the device's.
    static Result<std::unique_ptr<VisionEncoder>> open(const std::string& path,
                                                       const VisionOptions& options = {});
    ~VisionEncoder();

    const ProjectorInfo& info() const;
    const std::string& deviceId() const;

    // The encoder's input for an image: resized and padded to its patch grid's pixels (bilinear
    // for Gemma 3, bicubic for the others; black padding, LLaVA's its mean colour), pixels scaled
    // to [0, 1] and normalised per channel (Gemma 4's encoder then maps v to 2v - 1, done here),
    // cut into patches [patches][3 * P * P] (row-major from the top left; within a patch:
    // channel, row, column).
    Result<std::vector<float>> patches(const Image& image) const;

    // The image's embeddings (Pixtral's with its [IMG_BREAK] rows: after each row but the last).
    Result<ImageEmbeddings> encode(const Image& image);

    struct Impl;

private:
    explicit VisionEncoder(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m;
};

} // namespace hearth
