// Pillow-style image resampling (resizeImage) and the aspect-keeping fit with padding
// (fitImage) that vision preprocessors apply before cutting an image into patches.
#include "hearth/vision.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth {

namespace {

constexpr int kFracBits = 22; // 32 bits less 8 for a pixel and 2 of headroom for the sums

double filterSupport(ResizeFilter f) {
    switch (f) {
    case ResizeFilter::Bilinear: return 1.0;
    case ResizeFilter::Bicubic: return 2.0;
    case ResizeFilter::Lanczos: return 3.0;
    }
    return 1.0;
}

double sinc(double x) {
    if (x == 0.0) return 1.0;
    const double px = x * 3.14159265358979323846;
    return std::sin(px) / px;
}

// The filter's weight at distance x (in input pixels at the filter's scale).
double filterWeight(ResizeFilter f, double x) {
    switch (f) {
    case ResizeFilter::Lanczos: return (x >= -3.0 && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0;
    case ResizeFilter::Bilinear: x = std::fabs(x); return x < 1.0 ? 1.0 - x : 0.0;
    case ResizeFilter::Bicubic: {
        constexpr double a = -0.5; // Pillow's cubic
        x = std::fabs(x);
        if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
        if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
        return 0.0;
    }
    }
    return 0.0;
}

// Per output pixel of one axis: the first input pixel it reads, how many, and their fixed-point
// weights (taps per output pixel: `taps`).
struct Axis {
    int taps = 0;
    std::vector<int> first, count;
    std::vector<int32_t> weights; // [out][taps]
};

Axis axisWeights(int in, int out, ResizeFilter f) {
    Axis a;
    const double scale = double(in) / out;
    const double widen = std::max(1.0, scale); // shrinking widens the filter (no aliasing)
    const double support = filterSupport(f) * widen;
    a.taps = int(std::ceil(support)) * 2 + 1;
    a.first.resize(size_t(out));
    a.count.resize(size_t(out));
    a.weights.assign(size_t(out) * size_t(a.taps), 0);
    std::vector<double> w(size_t(a.taps));
    const double ss = 1.0 / widen;
    const double one = std::ldexp(1.0, kFracBits);
    for (int o = 0; o < out; ++o) {
        const double centre = (o + 0.5) * scale;
        const int lo = std::max(0, int(centre - support + 0.5));
        const int hi = std::min(in, int(centre + support + 0.5));
        const int n = hi - lo;
        double sum = 0.0;
        for (int i = 0; i < n; ++i) {
            w[size_t(i)] = filterWeight(f, (i + lo - centre + 0.5) * ss);
            sum += w[size_t(i)];
        }
        for (int i = 0; i < n; ++i) {
            const double v = sum != 0.0 ? w[size_t(i)] / sum : w[size_t(i)];
            // Half away from zero, then truncated (Pillow's rounding of its coefficients).
            a.weights[size_t(o) * size_t(a.taps) + size_t(i)] = int32_t(v * one + (v < 0.0 ? -0.5 : 0.5));
        }
        a.first[size_t(o)] = lo;
        a.count[size_t(o)] = n;
    }
    return a;
}

uint8_t clampByte(int32_t v) { return uint8_t(std::clamp(v, 0, 255)); }

// Resamples along x: rows of inW pixels to rows of outW.
std::vector<uint8_t> horizontal(const std::vector<uint8_t>& src, int inW, int h, int outW, const Axis& a) {
    std::vector<uint8_t> out(size_t(outW) * size_t(h) * 3);
    for (int y = 0; y < h; ++y) {
        const uint8_t* row = src.data() + size_t(y) * size_t(inW) * 3;
        uint8_t* dst = out.data() + size_t(y) * size_t(outW) * 3;
        for (int o = 0; o < outW; ++o) {
            const int32_t* k = a.weights.data() + size_t(o) * size_t(a.taps);
            const uint8_t* p = row + size_t(a.first[size_t(o)]) * 3;
            int32_t s[3] = {1 << (kFracBits - 1), 1 << (kFracBits - 1), 1 << (kFracBits - 1)};
            for (int i = 0; i < a.count[size_t(o)]; ++i, p += 3)
                for (int c = 0; c < 3; ++c) s[c] += int32_t(p[c]) * k[i];
            for (int c = 0; c < 3; ++c) dst[o * 3 + c] = clampByte(s[c] >> kFracBits);
        }
    }
    return out;
}

// Resamples along y: inH rows of w pixels to outH rows.
std::vector<uint8_t> vertical(const std::vector<uint8_t>& src, int w, int outH, const Axis& a) {
    const size_t rowLen = size_t(w) * 3;
    std::vector<uint8_t> out(rowLen * size_t(outH));
    std::vector<int32_t> acc(rowLen);
    for (int o = 0; o < outH; ++o) {
        std::fill(acc.begin(), acc.end(), 1 << (kFracBits - 1));
        const int32_t* k = a.weights.data() + size_t(o) * size_t(a.taps);
        for (int i = 0; i < a.count[size_t(o)]; ++i) {
            const uint8_t* row = src.data() + size_t(a.first[size_t(o)] + i) * rowLen;
            for (size_t j = 0; j < rowLen; ++j) acc[j] += int32_t(row[j]) * k[i];
        }
        uint8_t* dst = out.data() + size_t(o) * rowLen;
        for (size_t j = 0; j < rowLen; ++j) dst[j] = clampByte(acc[j] >> kFracBits);
    }
    return out;
}

Status checkImage(const Image& image) {
    if (image.width < 1 || image.height < 1 || image.rgb.size() != size_t(image.width) * size_t(image.height) * 3)
        return invalidArgument("the image is empty or its pixels do not match its size");
    return Status::ok();
}

} // namespace

Result<Image> resizeImage(const Image& image, int width, int height, ResizeFilter filter) {
    HEARTH_RETURN_IF_ERROR(checkImage(image));
    if (width < 1 || height < 1 || width > 65536 || height > 65536)
        return invalidArgument("resize to " + std::to_string(width) + "x" + std::to_string(height) +
                               " (each side must be 1..65536)");
    Image out;
    out.width = width;
    out.height = height;
    std::vector<uint8_t> pixels = image.rgb;
    if (width != image.width) pixels = horizontal(pixels, image.width, image.height, width,
                                                  axisWeights(image.width, width, filter));
    if (height != image.height) pixels = vertical(pixels, width, height, axisWeights(image.height, height, filter));
    out.rgb = std::move(pixels);
    return out;
}

Result<Image> fitImage(const Image& image, int width, int height, ResizeFilter filter, std::array<uint8_t, 3> pad) {
    HEARTH_RETURN_IF_ERROR(checkImage(image));
    if (image.width == width && image.height == height) return image;
    const float scale = std::min(float(width) / float(image.width), float(height) / float(image.height));
    const int w = std::min(int(std::ceil(float(image.width) * scale)), width);
    const int h = std::min(int(std::ceil(float(image.height) * scale)), height);
    HEARTH_ASSIGN_OR_RETURN(const Image scaled, resizeImage(image, std::max(1, w), std::max(1, h), filter));
    Image out;
    out.width = width;
    out.height = height;
    out.rgb.resize(size_t(width) * size_t(height) * 3);
    for (size_t i = 0; i < out.rgb.size(); i += 3) std::memcpy(&out.rgb[i], pad.data(), 3);
    const int x0 = (width - scaled.width) / 2, y0 = (height - scaled.height) / 2;
    for (int y = 0; y < scaled.height; ++y)
        std::memcpy(&out.rgb[(size_t(y + y0) * size_t(width) + size_t(x0)) * 3],
                    &scaled.rgb[size_t(y) * size_t(scaled.width) * 3], size_t(scaled.width) * 3);
    return out;
}

} // namespace hearth
