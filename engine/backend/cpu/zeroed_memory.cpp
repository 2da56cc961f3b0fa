// Zero-filled buffers from anonymous mappings (calloc elsewhere), pages faulted in on first use.
#include "backend/cpu/zeroed_memory.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#if defined(__unix__)
#include <sys/mman.h>
#endif

namespace hearth::cpu {

namespace {

#if defined(__unix__)
// A fresh anonymous mapping of `bytes` (page-rounded), starting on a 2 MiB boundary, huge pages
// asked for on its whole 2 MiB pages; nullptr on failure.
void* mapHuge(size_t bytes) {
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t mapped = bytes + kHuge;
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    // Keep [begin, begin + bytes) of the mapping, begin the first 2 MiB boundary; unmap the rest.
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    const uintptr_t begin = (at + kHuge - 1) & ~uintptr_t(kHuge - 1);
    const uintptr_t end = begin + ((bytes + 4095) & ~size_t(4095));
    if (begin > at) (void)::munmap(p, begin - at);
    if (at + mapped > end) (void)::munmap(reinterpret_cast<void*>(end), at + mapped - end);
#if defined(MADV_HUGEPAGE)
    (void)::madvise(reinterpret_cast<void*>(begin), bytes & ~(kHuge - 1), MADV_HUGEPAGE);
#endif
    return reinterpret_cast<void*>(begin);
}

bool hugePagesAllowed() {
    static const bool allowed = [] {
        const char* env = std::getenv("HEARTH_CPU_HUGEPAGES");
        return !(env && std::string(env) == "0");
    }();
    return allowed;
}
#endif

} // namespace

ZeroedMemory::ZeroedMemory(size_t bytes, bool hugePages) : m_size(bytes) {
    if (bytes == 0) return;
#if defined(__unix__)
    // Fresh anonymous pages read as zeros and take memory only once written; calloc could hand
    // back recycled heap memory and clear it page by page.
    void* p = hugePages && bytes >= (size_t(2) << 20) && hugePagesAllowed()
                  ? mapHuge(bytes)
                  : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p && p != MAP_FAILED) {
        m_data = static_cast<uint8_t*>(p);
        m_mapped = true;
        return;
    }
#else
    (void)hugePages;
#endif
    m_data = static_cast<uint8_t*>(std::calloc(bytes, 1));
}

ZeroedMemory::~ZeroedMemory() { release(); }

ZeroedMemory::ZeroedMemory(ZeroedMemory&& o) noexcept
    : m_data(std::exchange(o.m_data, nullptr)), m_size(std::exchange(o.m_size, 0)),
      m_mapped(std::exchange(o.m_mapped, false)) {}

ZeroedMemory& ZeroedMemory::operator=(ZeroedMemory&& o) noexcept {
    if (this != &o) {
        release();
        m_data = std::exchange(o.m_data, nullptr);
        m_size = std::exchange(o.m_size, 0);
        m_mapped = std::exchange(o.m_mapped, false);
    }
    return *this;
}

void ZeroedMemory::release() {
    if (!m_data) return;
#if defined(__unix__)
    if (m_mapped) {
        ::munmap(m_data, m_size);
        m_data = nullptr;
        return;
    }
#endif
    std::free(m_data);
    m_data = nullptr;
}

} // namespace hearth::cpu
