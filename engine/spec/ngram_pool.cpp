// The shared n-gram table: FNV-style hashing of the key, overwrite on collision.
#include "spec/ngram_pool.h"

#include <algorithm>
#include <bit>

namespace hearth::spec {

NgramPool::NgramPool(size_t entries) : m_entries(std::bit_ceil(std::max<size_t>(entries, 16))) {}

size_t NgramPool::slotOf(std::span<const int32_t> key) const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t t : key) {
        h ^= uint64_t(uint32_t(t));
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return size_t(h) & (m_entries.size() - 1);
}

void NgramPool::add(std::span<const int32_t> tokens) {
    if (tokens.size() <= size_t(kKey)) return;
    for (size_t i = 0; i + kKey < tokens.size(); ++i) {
        const std::span<const int32_t> key = tokens.subspan(i, kKey);
        Entry& e = m_entries[slotOf(key)];
        if (e.length == 0) ++m_used;
        std::copy(key.begin(), key.end(), e.key.begin());
        const size_t n = std::min<size_t>(kNext, tokens.size() - i - kKey);
        std::copy_n(tokens.begin() + std::ptrdiff_t(i + kKey), n, e.next.begin());
        e.length = uint8_t(n);
    }
}

void NgramPool::propose(std::span<const int32_t> tokens, int maxDraft, std::vector<int32_t>& out) const {
    if (maxDraft <= 0 || tokens.size() < size_t(kKey)) return;
    const std::span<const int32_t> key = tokens.subspan(tokens.size() - kKey);
    const Entry& e = m_entries[slotOf(key)];
    if (e.length == 0 || !std::equal(key.begin(), key.end(), e.key.begin())) return;
    out.insert(out.end(), e.next.begin(), e.next.begin() + std::min<int>(maxDraft, e.length));
}

} // namespace hearth::spec
