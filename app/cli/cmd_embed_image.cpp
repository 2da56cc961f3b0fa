// `hearth-cli embed-image`: an image's embeddings from a projector file's vision encoder, with
// the time the encoder took (the vision side of a multimodal model, alone).
#include "commands.h"

#include "hearth/image.h"
#include "hearth/vision.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace hearth::cli {

namespace {

const char* kEmbedImageHelp =
    "usage: hearth-cli embed-image --mmproj PROJ.gguf IMAGE [--device ID] [--threads N]\n"
    "                              [--reps N] [-o OUT.f32]\n"
    "  Decodes IMAGE (PNG, JPEG, WebP, GIF), preprocesses it as llama.cpp's mtmd does and runs\n"
    "  the projector's vision encoder (Gemma 3's SigLIP, Gemma 4's, Qwen3-VL's, Pixtral, LLaVA's CLIP)\n"
    "  on the device (default cpu). Prints the embeddings' count and width and each run's time in\n"
    "  ms; -o writes the embeddings as float32 [count][width].\n";

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

template <typename T> bool number(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

int fail(const std::string& what, const Status& s) {
    std::fprintf(stderr, "hearth-cli: %s: %s\n", what.c_str(), s.toString().c_str());
    return s.code() == ErrorCode::InvalidArgument || s.code() == ErrorCode::NotFound ||
                   s.code() == ErrorCode::InvalidFormat || s.code() == ErrorCode::IoError ||
                   s.code() == ErrorCode::Unsupported
               ? 2
               : 1;
}

} // namespace

int runEmbedImage(Args args) {
    std::string projector, imagePath, outPath;
    VisionOptions options;
    int reps = 1;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        const bool hasValue = i + 1 < args.size();
        bool ok = true;
        if (a == "-h" || a == "--help") {
            std::fputs(kEmbedImageHelp, stdout);
            return 0;
        } else if (a == "--mmproj" && hasValue) {
            projector = std::string(args[++i]);
        } else if (a == "--device" && hasValue) {
            options.device = std::string(args[++i]);
        } else if (a == "--threads" && hasValue) {
            ok = number(args[++i], options.threads) && options.threads > 0 && options.threads <= 256;
        } else if (a == "--reps" && hasValue) {
            ok = number(args[++i], reps) && reps > 0 && reps <= 1000;
        } else if ((a == "-o" || a == "--output") && hasValue) {
            outPath = std::string(args[++i]);
        } else if (!a.empty() && a[0] != '-' && imagePath.empty()) {
            imagePath = std::string(a);
        } else {
            std::fprintf(stderr, "hearth-cli embed-image: unknown or incomplete option '%.*s'\n", int(a.size()),
                         a.data());
            return 2;
        }
        if (!ok) {
            std::fprintf(stderr, "hearth-cli embed-image: bad value for '%.*s'\n", int(a.size()), a.data());
            return 2;
        }
    }
    if (projector.empty() || imagePath.empty()) {
        std::fputs(kEmbedImageHelp, stderr);
        return 2;
    }
    std::ifstream in(imagePath, std::ios::binary);
    if (!in) return fail(imagePath, ioError("cannot open the image"));
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Result<Image> image = decodeImage(bytes);
    if (!image) return fail(imagePath, image.status());

    const Clock::time_point load = Clock::now();
    Result<std::unique_ptr<VisionEncoder>> encoder = VisionEncoder::open(projector, options);
    if (!encoder) return fail(projector, encoder.status());
    const ProjectorInfo& info = (*encoder)->info();
    if (info.maxTokens > 0)
        std::printf("projector: %s, %d to %d embeddings of %d per image by its size, on %s (load %.0f ms)\n",
                    info.family.c_str(), info.minTokens, info.maxTokens, info.projectionDim,
                    (*encoder)->deviceId().c_str(), msSince(load));
    else
        std::printf("projector: %s, %d px, %lld embeddings of %d per image, on %s (load %.0f ms)\n",
                    info.family.c_str(), info.imageSize, (long long)info.tokensPerImage, info.projectionDim,
                    (*encoder)->deviceId().c_str(), msSince(load));
    ImageEmbeddings e;
    for (int r = 0; r < reps; ++r) {
        const Clock::time_point t = Clock::now();
        Result<ImageEmbeddings> got = (*encoder)->encode(*image);
        if (!got) return fail(imagePath, got.status());
        std::printf("image %dx%d: %lld embeddings of %d in %.1f ms\n", image->width, image->height,
                    (long long)got->tokens, got->width, msSince(t));
        std::fflush(stdout);
        e = std::move(got).value();
    }
    if (!outPath.empty()) {
        std::ofstream out(outPath, std::ios::binary);
        out.write(reinterpret_cast<const char*>(e.values.data()), std::streamsize(e.values.size() * sizeof(float)));
        if (!out) return fail(outPath, ioError("cannot write the embeddings"));
    }
    return 0;
}

} // namespace hearth::cli
