// Prefix hashes for KV blocks: a full block's hash chains its parent block's hash with its own
// token ids, so equal hashes mean (barring collisions, which callers verify) equal prefixes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace hearth::kv {

using BlockHash = uint64_t;

// Parent hash of a sequence's first block.
inline constexpr BlockHash kRootHash = 0x6a09e667f3bcc909ull;

// Default block hash: a 64-bit mix of the parent hash and every token id (not cryptographic;
// the block pool verifies the tokens on every hit, so a collision costs a miss, never a wrong reuse).
BlockHash hashBlockTokens(BlockHash parent, std::span<const int32_t> tokens);

// A hash function can be swapped in (tests force collisions with it).
using BlockHashFn = std::function<BlockHash(BlockHash parent, std::span<const int32_t> tokens)>;

// Hashes of every full block of `tokens` (blockSize tokens each), in order. A trailing partial
// block gets no hash.
std::vector<BlockHash> hashFullBlocks(std::span<const int32_t> tokens, int blockSize,
                                      const BlockHashFn& fn = hashBlockTokens);

} // namespace hearth::kv
