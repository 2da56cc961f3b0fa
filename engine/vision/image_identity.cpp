// What identifies an image to the prefix cache: a hash of its pixels, and the placeholder token
// ids drawn from it that stand for its embeddings in a prompt.
#include "hearth/engine.h"
#include "hearth/vision.h"

#include <cstring>

namespace hearth {

namespace {

uint64_t mix(uint64_t x) { // splitmix64's finalizer
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

} // namespace

uint64_t imageHash(const Image& image) {
    uint64_t h = mix(uint64_t(uint32_t(image.width)) << 32 | uint32_t(image.height));
    const uint8_t* p = image.rgb.data();
    size_t n = image.rgb.size(), i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = mix(h ^ w);
    }
    uint64_t tail = 0;
    for (size_t k = 0; i + k < n; ++k) tail |= uint64_t(p[i + k]) << (8 * k);
    return mix(h ^ tail ^ (uint64_t(n) << 56));
}

std::vector<int32_t> imagePlaceholders(const ImageEmbeddings& embeddings, int32_t nVocab) {
    std::vector<int32_t> ids(size_t(embeddings.tokens > 0 ? embeddings.tokens : 0));
    if (nVocab < 1) return ids;
    for (size_t k = 0; k < ids.size(); ++k) ids[k] = int32_t(mix(embeddings.hash + k) % uint64_t(nVocab));
    return ids;
}

} // namespace hearth
