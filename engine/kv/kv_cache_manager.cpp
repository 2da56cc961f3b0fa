// KV cache manager: block tables, prefix lookup and caching, forks with copy-on-write.
#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <string>

namespace hearth::kv {

KvCacheManager::KvCacheManager(KvCacheConfig config)
    : m_config(std::move(config)), m_pool(m_config.numBlocks) {
    if (m_config.blockSize <= 0) m_config.blockSize = 16;
    if (!m_config.hashFn) m_config.hashFn = hashBlockTokens;
}

CachedPrefix KvCacheManager::findCachedPrefix(std::span<const int32_t> prompt) const {
    CachedPrefix out;
    if (!m_config.prefixCaching || prompt.size() < 2) return out;
    const size_t bs = size_t(m_config.blockSize);
    const size_t maxTokens = prompt.size() - 1; // the last prompt token is always computed
    BlockHash parent = kRootHash;
    for (size_t start = 0; start + bs <= maxTokens; start += bs) {
        const auto tokens = prompt.subspan(start, bs);
        const BlockHash h = m_config.hashFn(parent, tokens);
        const std::optional<BlockId> id = m_pool.lookup(h, parent, tokens);
        if (!id) break;
        out.blocks.push_back(*id);
        out.hashes.push_back(h);
        parent = h;
    }
    out.numTokens = int(out.blocks.size() * bs);
    return out;
}

void KvCacheManager::recordPrefixLookup(int queried, int hit) const {
    m_queryTokens += uint64_t(std::max(queried, 0));
    m_hitTokens += uint64_t(std::max(hit, 0));
}

int KvCacheManager::blocksNeeded(SeqId seq, int totalTokens, const CachedPrefix* prefix) const {
    const int bs = m_config.blockSize;
    const int target = (std::max(totalTokens, 0) + bs - 1) / bs;
    auto it = m_seqs.find(seq);
    if (it != m_seqs.end()) return std::max(0, target - int(it->second.blocks.size()));
    int have = 0, revived = 0;
    if (prefix) {
        have = int(prefix->blocks.size());
        for (BlockId id : prefix->blocks)
            if (m_pool.refCount(id) == 0) ++revived; // leaves the free queue when adopted
    }
    return std::max(0, target - have) + revived;
}

bool KvCacheManager::allocateSlots(SeqId seq, int totalTokens, const CachedPrefix* prefix) {
    const int bs = m_config.blockSize;
    auto it = m_seqs.find(seq);
    const bool fresh = it == m_seqs.end();
    if (!fresh) prefix = nullptr;
    if (blocksNeeded(seq, totalTokens, prefix) > m_pool.numFree()) return false;

    if (fresh) {
        Sequence s;
        if (prefix && !prefix->blocks.empty()) {
            m_pool.touch(prefix->blocks);
            s.blocks = prefix->blocks;
            s.numHashed = int(prefix->blocks.size());
            s.lastHash = prefix->hashes.back();
        }
        it = m_seqs.emplace(seq, std::move(s)).first;
    }
    Sequence& s = it->second;
    const int target = (std::max(totalTokens, 0) + bs - 1) / bs;
    const int missing = target - int(s.blocks.size());
    if (missing > 0) {
        std::optional<std::vector<BlockId>> fresh_blocks = m_pool.allocate(missing);
        if (!fresh_blocks) return false; // cannot happen after the check above
        s.blocks.insert(s.blocks.end(), fresh_blocks->begin(), fresh_blocks->end());
    }
    return true;
}

void KvCacheManager::cacheComputedBlocks(SeqId seq, std::span<const int32_t> tokens,
                                         int numComputed) {
    if (!m_config.prefixCaching) return;
    auto it = m_seqs.find(seq);
    if (it == m_seqs.end()) return;
    Sequence& s = it->second;
    const size_t bs = size_t(m_config.blockSize);
    const size_t computed = std::min(size_t(std::max(numComputed, 0)), tokens.size());
    const size_t fullBlocks = std::min(computed / bs, s.blocks.size());
    while (size_t(s.numHashed) < fullBlocks) {
        const auto blockTokens = tokens.subspan(size_t(s.numHashed) * bs, bs);
        const BlockHash h = m_config.hashFn(s.lastHash, blockTokens);
        m_pool.cacheBlock(s.blocks[size_t(s.numHashed)], h, s.lastHash, blockTokens);
        s.lastHash = h;
        ++s.numHashed;
    }
}

Status KvCacheManager::fork(SeqId parent, SeqId child) {
    auto it = m_seqs.find(parent);
    if (it == m_seqs.end()) return notFound("fork: unknown sequence " + std::to_string(parent));
    if (m_seqs.count(child))
        return invalidArgument("fork: sequence " + std::to_string(child) + " already exists");
    Sequence copy = it->second;
    m_pool.touch(copy.blocks);
    m_seqs.emplace(child, std::move(copy));
    return Status::ok();
}

Result<std::optional<BlockCopy>> KvCacheManager::prepareWrite(SeqId seq, int pos) {
    auto it = m_seqs.find(seq);
    if (it == m_seqs.end())
        return notFound("write: unknown sequence " + std::to_string(seq));
    Sequence& s = it->second;
    const int index = pos / m_config.blockSize;
    if (pos < 0 || index >= int(s.blocks.size()))
        return invalidArgument("write: position " + std::to_string(pos) +
                               " has no allocated slot in sequence " + std::to_string(seq));
    if (index < s.numHashed)
        return invalidArgument("write: position " + std::to_string(pos) +
                               " lies in a full block that is already computed");
    const BlockId src = s.blocks[size_t(index)];
    if (m_pool.refCount(src) <= 1) return std::optional<BlockCopy>{};
    std::optional<std::vector<BlockId>> dst = m_pool.allocate(1);
    if (!dst) return outOfMemory("no free KV block for copy-on-write");
    const BlockId src_ids[] = {src};
    m_pool.release(src_ids);
    s.blocks[size_t(index)] = dst->front();
    return std::optional<BlockCopy>{BlockCopy{src, dst->front()}};
}

void KvCacheManager::free(SeqId seq) {
    auto it = m_seqs.find(seq);
    if (it == m_seqs.end()) return;
    std::vector<BlockId> reversed(it->second.blocks.rbegin(), it->second.blocks.rend());
    m_pool.release(reversed);
    m_seqs.erase(it);
}

void KvCacheManager::truncate(SeqId seq, int numTokens) {
    auto it = m_seqs.find(seq);
    if (it == m_seqs.end()) return;
    Sequence& s = it->second;
    const size_t keep = std::max(size_t(std::max(0, numTokens) + m_config.blockSize - 1) / size_t(m_config.blockSize),
                                 size_t(s.numHashed));
    if (s.blocks.size() <= keep) return;
    // Last first, so the next allocation takes them back in table order.
    std::vector<BlockId> cut(s.blocks.rbegin(), s.blocks.rend() - std::ptrdiff_t(keep));
    m_pool.releaseToHead(cut);
    s.blocks.resize(keep);
}

std::span<const BlockId> KvCacheManager::blockTable(SeqId seq) const {
    auto it = m_seqs.find(seq);
    if (it == m_seqs.end()) return {};
    return it->second.blocks;
}

} // namespace hearth::kv
