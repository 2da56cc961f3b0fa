// Zero-filled buffers from anonymous mappings (calloc elsewhere), pages faulted in on first use.
#include "backend/cpu/zeroed_memory.h"

#include <cstdlib>
#include <utility>

#if defined(__unix__)
#include <sys/mman.h>
#endif

namespace hearth::cpu {

ZeroedMemory::ZeroedMemory(size_t bytes) : m_size(bytes) {
    if (bytes == 0) return;
#if defined(__unix__)
    // Fresh anonymous pages read as zeros and take memory only once written; calloc could hand
    // back recycled heap memory and clear it page by page.
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        m_data = static_cast<uint8_t*>(p);
        m_mapped = true;
        return;
    }
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
