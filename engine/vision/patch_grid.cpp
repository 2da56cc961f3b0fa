// The patch grid an image becomes before a vision encoder (patchGrid): the fixed square of
// Gemma 3's SigLIP, or the aspect-keeping size within a token budget that mtmd chooses for
// Gemma 4, computed in single precision as mtmd computes it so that the sizes agree.
#include "hearth/vision.h"

#include <algorithm>
#include <cmath>

namespace hearth {

PatchGrid patchGrid(const ProjectorInfo& p, int width, int height) {
    if (width < 1 || height < 1 || p.patchSize < 1) return {};
    if (p.minTokens <= 0 || p.maxTokens <= 0) {
        const int side = p.imageSize / p.patchSize;
        return {side, side};
    }
    const int merge = std::max(1, p.merge);
    const int align = p.patchSize * merge; // pixels of one merged patch's side
    const int64_t area = int64_t(align) * align;
    const int64_t minPixels = int64_t(p.minTokens) * area, maxPixels = int64_t(p.maxTokens) * area;
    const float f = float(align);
    auto roundTo = [&](float x) { return int(std::round(x / f)) * align; };
    auto floorTo = [&](float x) { return int(std::floor(x / f)) * align; };
    auto ceilTo = [&](float x) { return int(std::ceil(x / f)) * align; };
    int w = std::max(align, roundTo(float(width)));
    int h = std::max(align, roundTo(float(height)));
    if (int64_t(w) * h > maxPixels) {
        const float beta = std::sqrt(float(height) * float(width) / float(maxPixels));
        h = std::max(align, floorTo(float(height) / beta));
        w = std::max(align, floorTo(float(width) / beta));
    } else if (int64_t(w) * h < minPixels) {
        const float beta = std::sqrt(float(minPixels) / (float(height) * float(width)));
        h = ceilTo(float(height) * beta);
        w = ceilTo(float(width) * beta);
    }
    return {w / p.patchSize, h / p.patchSize};
}

} // namespace hearth
