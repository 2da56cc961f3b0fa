// Large zero-filled buffers whose pages the kernel supplies on first write: a K/V cache sized for
// many full contexts costs memory only for the blocks actually used, and creating it is instant.
// Optionally on transparent huge pages, for memory streamed in full (repacked weights).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hearth::cpu {

class ZeroedMemory {
public:
    ZeroedMemory() = default;
    // bytes of zeros; data() is null when bytes is 0 or the allocation failed (check ok()).
    // With hugePages (Linux), a buffer of 2 MiB or more starts on a 2 MiB boundary and asks for
    // transparent huge pages over its whole 2 MiB pages (HEARTH_CPU_HUGEPAGES=0 turns that off,
    // for A/B measurements); the tail keeps small pages, so nothing is wasted rounding up.
    explicit ZeroedMemory(size_t bytes, bool hugePages = false);
    ~ZeroedMemory();
    ZeroedMemory(ZeroedMemory&& o) noexcept;
    ZeroedMemory& operator=(ZeroedMemory&& o) noexcept;
    ZeroedMemory(const ZeroedMemory&) = delete;
    ZeroedMemory& operator=(const ZeroedMemory&) = delete;

    bool ok() const { return m_size == 0 || m_data != nullptr; }
    uint8_t* data() { return m_data; }
    const uint8_t* data() const { return m_data; }
    size_t size() const { return m_size; }

private:
    void release();
    uint8_t* m_data = nullptr;
    size_t m_size = 0;
    bool m_mapped = false; // from mmap (else calloc)
};

} // namespace hearth::cpu
