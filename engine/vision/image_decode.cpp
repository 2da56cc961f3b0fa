// Image decoding for vision requests: the format from its magic number, the size from its header
// (checked against the limits before decoding), then PNG, JPEG and GIF by stb_image and WebP by
// libwebp, to 8-bit RGB.
#include "hearth/image.h"

#include <cstring>
#include <limits>
#include <memory>
#include <new>

// stb_image's implementation, for the three formats only, from memory only, refusing any side
// over 1 << 24 itself (ours are checked first, from the header).
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_GIF
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS (1 << 24)
#include <stb/stb_image.h>
#include <webp/decode.h>

namespace hearth {

namespace {

bool startsWith(std::span<const uint8_t> b, std::string_view magic, size_t at = 0) {
    return b.size() >= at + magic.size() &&
           std::memcmp(b.data() + at, magic.data(), magic.size()) == 0;
}

Status checkSize(ImageFormat f, int64_t w, int64_t h, const ImageLimits& limits) {
    const std::string what = std::string(imageFormatName(f)) + " image of " + std::to_string(w) +
                             " x " + std::to_string(h);
    if (w < 1 || h < 1) return invalidArgument(what + ": no pixels");
    if (w > limits.maxSide || h > limits.maxSide)
        return invalidArgument(what + " is larger than " + std::to_string(limits.maxSide) +
                               " pixels on a side");
    if (uint64_t(w) * uint64_t(h) > limits.maxPixels)
        return invalidArgument(what + " has more than " + std::to_string(limits.maxPixels) +
                               " pixels");
    return Status::ok();
}

uint32_t bigEndian32(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

// The size the header gives, read here for PNG and GIF (stb_image's own check refuses large
// images without saying their size), by stb_image for JPEG; false when the header is cut short.
bool headerSize(ImageFormat f, std::span<const uint8_t> b, int64_t& w, int64_t& h) {
    switch (f) {
    case ImageFormat::Png: // signature, IHDR's length and type, then width and height
        if (b.size() < 24 || !startsWith(b, "IHDR", 12)) return false;
        w = bigEndian32(b.data() + 16);
        h = bigEndian32(b.data() + 20);
        return true;
    case ImageFormat::Gif: // the logical screen, which the frames are drawn on
        if (b.size() < 10) return false;
        w = b[6] | b[7] << 8;
        h = b[8] | b[9] << 8;
        return true;
    default: {
        int iw = 0, ih = 0, channels = 0;
        if (!stbi_info_from_memory(b.data(), int(b.size()), &iw, &ih, &channels)) return false;
        w = iw;
        h = ih;
        return true;
    }
    }
}

struct StbFree {
    void operator()(stbi_uc* p) const { stbi_image_free(p); }
};

} // namespace

ImageFormat sniffImageFormat(std::span<const uint8_t> bytes) {
    if (startsWith(bytes, "\x89PNG\r\n\x1a\n")) return ImageFormat::Png;
    if (startsWith(bytes, "\xff\xd8\xff")) return ImageFormat::Jpeg;
    if (startsWith(bytes, "GIF87a") || startsWith(bytes, "GIF89a")) return ImageFormat::Gif;
    if (startsWith(bytes, "RIFF") && startsWith(bytes, "WEBP", 8)) return ImageFormat::Webp;
    return ImageFormat::Unknown;
}

const char* imageFormatName(ImageFormat f) {
    switch (f) {
    case ImageFormat::Png:
        return "PNG";
    case ImageFormat::Jpeg:
        return "JPEG";
    case ImageFormat::Gif:
        return "GIF";
    case ImageFormat::Webp:
        return "WebP";
    case ImageFormat::Unknown:
        break;
    }
    return "unknown";
}

Result<Image> decodeImage(std::span<const uint8_t> bytes, const ImageLimits& limits) {
    if (bytes.empty()) return invalidArgument("the image is empty");
    if (bytes.size() > limits.maxEncodedBytes)
        return invalidArgument("the image has " + std::to_string(bytes.size()) +
                               " bytes, more than " + std::to_string(limits.maxEncodedBytes));
    if (bytes.size() > size_t(std::numeric_limits<int>::max()))
        return invalidArgument("the image is too large");
    const ImageFormat f = sniffImageFormat(bytes);
    if (f == ImageFormat::Unknown)
        return invalidArgument("the image is not PNG, JPEG, WebP or GIF (the formats supported)");
    const int n = int(bytes.size());
    Image img;
    if (f == ImageFormat::Webp) {
        int w = 0, h = 0;
        if (!WebPGetInfo(bytes.data(), bytes.size(), &w, &h))
            return invalidArgument("the WebP image is corrupt");
        HEARTH_RETURN_IF_ERROR(checkSize(f, w, h, limits));
        try {
            img.rgb.resize(size_t(w) * size_t(h) * 3);
        } catch (const std::bad_alloc&) {
            return outOfMemory("decoding a " + std::to_string(w) + " x " + std::to_string(h) +
                               " image");
        }
        if (!WebPDecodeRGBInto(bytes.data(), bytes.size(), img.rgb.data(), img.rgb.size(), w * 3))
            return invalidArgument("the WebP image is corrupt or truncated");
        img.width = w;
        img.height = h;
        return img;
    }
    int64_t w = 0, h = 0;
    if (!headerSize(f, bytes, w, h))
        return invalidArgument(std::string("the ") + imageFormatName(f) +
                               " image's header is corrupt or cut short");
    HEARTH_RETURN_IF_ERROR(checkSize(f, w, h, limits));
    int dw = 0, dh = 0, channels = 0;
    std::unique_ptr<stbi_uc, StbFree> pixels(
        stbi_load_from_memory(bytes.data(), n, &dw, &dh, &channels, 3));
    if (!pixels) {
        const std::string why = stbi_failure_reason() ? stbi_failure_reason() : "unknown";
        if (why == "outofmem")
            return outOfMemory("decoding a " + std::to_string(w) + " x " + std::to_string(h) +
                               " image");
        return invalidArgument(std::string("the ") + imageFormatName(f) +
                               " image is corrupt or truncated (" + why + ")");
    }
    if (dw != w || dh != h)
        return invalidArgument(std::string("the ") + imageFormatName(f) +
                               " image's size changed while decoding");
    try {
        img.rgb.assign(pixels.get(), pixels.get() + size_t(w) * size_t(h) * 3);
    } catch (const std::bad_alloc&) {
        return outOfMemory("decoding a " + std::to_string(w) + " x " + std::to_string(h) +
                           " image");
    }
    img.width = int(w);
    img.height = int(h);
    return img;
}

} // namespace hearth
