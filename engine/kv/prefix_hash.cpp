// Chained 64-bit block hashes over token ids.
#include "kv/prefix_hash.h"

namespace hearth::kv {

namespace {

// A 64-bit finaliser with good avalanche (each input bit affects every output bit).
inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

} // namespace

BlockHash hashBlockTokens(BlockHash parent, std::span<const int32_t> tokens) {
    uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ull);
    for (int32_t t : tokens) h = mix64(h + 0x9e3779b97f4a7c15ull + uint32_t(t));
    return mix64(h ^ tokens.size());
}

std::vector<BlockHash> hashFullBlocks(std::span<const int32_t> tokens, int blockSize,
                                      const BlockHashFn& fn) {
    std::vector<BlockHash> out;
    if (blockSize <= 0) return out;
    BlockHash parent = kRootHash;
    for (size_t start = 0; start + size_t(blockSize) <= tokens.size(); start += size_t(blockSize)) {
        parent = fn(parent, tokens.subspan(start, size_t(blockSize)));
        out.push_back(parent);
    }
    return out;
}

} // namespace hearth::kv
