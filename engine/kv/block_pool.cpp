// Block pool: an intrusive doubly linked free queue over a fixed array of blocks, plus the
// hash -> block multimap of the prefix cache.
#include "kv/block_pool.h"

#include <algorithm>
#include <cassert>

namespace hearth::kv {

BlockPool::BlockPool(int numBlocks) : m_blocks(size_t(std::max(numBlocks, 0))) {
    for (BlockId id = 0; id < BlockId(m_blocks.size()); ++id) pushTail(id);
}

void BlockPool::pushTail(BlockId id) {
    Block& b = m_blocks[size_t(id)];
    assert(!b.inFreeQueue);
    b.prev = m_tail;
    b.next = kNoBlock;
    if (m_tail != kNoBlock)
        m_blocks[size_t(m_tail)].next = id;
    else
        m_head = id;
    m_tail = id;
    b.inFreeQueue = true;
    ++m_numFree;
}

void BlockPool::pushHead(BlockId id) {
    Block& b = m_blocks[size_t(id)];
    assert(!b.inFreeQueue);
    b.prev = kNoBlock;
    b.next = m_head;
    if (m_head != kNoBlock)
        m_blocks[size_t(m_head)].prev = id;
    else
        m_tail = id;
    m_head = id;
    b.inFreeQueue = true;
    ++m_numFree;
}

void BlockPool::unlink(BlockId id) {
    Block& b = m_blocks[size_t(id)];
    assert(b.inFreeQueue);
    if (b.prev != kNoBlock)
        m_blocks[size_t(b.prev)].next = b.next;
    else
        m_head = b.next;
    if (b.next != kNoBlock)
        m_blocks[size_t(b.next)].prev = b.prev;
    else
        m_tail = b.prev;
    b.prev = b.next = kNoBlock;
    b.inFreeQueue = false;
    --m_numFree;
}

void BlockPool::uncache(BlockId id) {
    Block& b = m_blocks[size_t(id)];
    if (!b.cached) return;
    auto [first, last] = m_cache.equal_range(b.hash);
    for (auto it = first; it != last; ++it) {
        if (it->second == id) {
            m_cache.erase(it);
            break;
        }
    }
    b.cached = false;
    b.tokens.clear();
    b.tokens.shrink_to_fit();
}

std::optional<std::vector<BlockId>> BlockPool::allocate(int n) {
    if (n < 0 || n > m_numFree) return std::nullopt;
    std::vector<BlockId> out;
    out.reserve(size_t(n));
    for (int i = 0; i < n; ++i) {
        const BlockId id = m_head;
        unlink(id);
        uncache(id);
        m_blocks[size_t(id)].refCount = 1;
        out.push_back(id);
    }
    return out;
}

void BlockPool::touch(std::span<const BlockId> ids) {
    for (BlockId id : ids) {
        Block& b = m_blocks[size_t(id)];
        if (b.refCount == 0 && b.inFreeQueue) unlink(id);
        ++b.refCount;
    }
}

void BlockPool::release(std::span<const BlockId> ids) {
    for (BlockId id : ids) {
        Block& b = m_blocks[size_t(id)];
        assert(b.refCount > 0);
        if (b.refCount <= 0) continue;
        if (--b.refCount == 0) pushTail(id);
    }
}

void BlockPool::releaseToHead(std::span<const BlockId> ids) {
    for (BlockId id : ids) {
        Block& b = m_blocks[size_t(id)];
        assert(b.refCount > 0);
        if (b.refCount <= 0) continue;
        if (--b.refCount == 0) pushHead(id);
    }
}

std::optional<BlockId> BlockPool::lookup(BlockHash hash, BlockHash parent,
                                         std::span<const int32_t> tokens) const {
    auto [first, last] = m_cache.equal_range(hash);
    for (auto it = first; it != last; ++it) {
        const Block& b = m_blocks[size_t(it->second)];
        if (b.parent == parent && std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(),
                                             tokens.end()))
            return it->second;
    }
    return std::nullopt;
}

bool BlockPool::cacheBlock(BlockId id, BlockHash hash, BlockHash parent,
                           std::span<const int32_t> tokens) {
    Block& b = m_blocks[size_t(id)];
    if (b.cached || lookup(hash, parent, tokens)) return false;
    b.cached = true;
    b.hash = hash;
    b.parent = parent;
    b.tokens.assign(tokens.begin(), tokens.end());
    m_cache.emplace(hash, id);
    return true;
}

std::vector<BlockId> BlockPool::freeQueue() const {
    std::vector<BlockId> out;
    for (BlockId id = m_head; id != kNoBlock; id = m_blocks[size_t(id)].next) out.push_back(id);
    return out;
}

} // namespace hearth::kv
