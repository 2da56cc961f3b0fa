// Images a request carries (PNG, JPEG, WebP, GIF's first frame), decoded to 8-bit RGB for the
// vision encoders, with limits checked on the header before any pixel is decoded.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hearth {

// An image as rows of RGB bytes, top row first: [height][width][3].
struct Image {
    int width = 0, height = 0;
    std::vector<uint8_t> rgb;
};

// What a decode may cost: the encoded size, each side, and the pixels (the decoded bytes are
// 3 per pixel, plus the decoder's own working copy of at most 4).
struct ImageLimits {
    uint64_t maxEncodedBytes = 32ull << 20;
    int maxSide = 16384;
    uint64_t maxPixels = 40'000'000;
};

enum class ImageFormat { Unknown, Png, Jpeg, Gif, Webp };

// The format named by the first bytes (magic numbers), Unknown for anything else.
ImageFormat sniffImageFormat(std::span<const uint8_t> bytes);
const char* imageFormatName(ImageFormat f);

// Decodes the image in `bytes`. An alpha channel is dropped (as llama.cpp's mtmd loads images:
// the colour values, not blended). Errors (InvalidArgument): an empty or unknown format (the
// message names the supported ones), a corrupt or truncated file, sizes over `limits` (found from
// the header, before decoding); OutOfMemory when the pixels cannot be allocated.
Result<Image> decodeImage(std::span<const uint8_t> bytes, const ImageLimits& limits = {});

} // namespace hearth
