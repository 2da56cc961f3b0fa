// Which pages of an address range this process has mapped in, read from /proc/self/pagemap:
// tests that check a file is read without being mapped (or pages were handed back) count them.
#pragma once

#include <cstdint>
#include <sys/types.h>
#include <unistd.h>

namespace hearth::test {

// Pages firstPage .. lastPage - 1 (page numbers: address / 4096) that are present, given an open
// /proc/self/pagemap; -1 when an entry cannot be read.
inline int presentPages(int pagemapFd, uintptr_t firstPage, uintptr_t lastPage) {
    int count = 0;
    for (uintptr_t pg = firstPage; pg < lastPage; ++pg) {
        uint64_t entry = 0;
        if (::pread(pagemapFd, &entry, 8, off_t(pg * 8)) != 8) return -1;
        count += int(entry >> 63);
    }
    return count;
}

} // namespace hearth::test
