// Page release for weight memory (page_release.h): /proc/self/maps to tell file mappings from
// anonymous memory, madvise to hand pages back.
#include "backend/cpu/page_release.h"

#include <cstdio>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace hearth::cpu {

bool fileBacked(const void* p) {
#if defined(__linux__)
    FILE* maps = std::fopen("/proc/self/maps", "r");
    if (!maps) return false;
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    char line[512];
    bool found = false;
    while (std::fgets(line, sizeof line, maps)) {
        unsigned long begin = 0, end = 0, offset = 0, inode = 0;
        char perms[8] = {}, dev[16] = {};
        if (std::sscanf(line, "%lx-%lx %7s %lx %15s %lu", &begin, &end, perms, &offset, dev, &inode) != 6)
            continue;
        if (at >= begin && at < end) {
            found = inode != 0;
            break;
        }
    }
    std::fclose(maps);
    return found;
#else
    (void)p;
    return false;
#endif
}

void releasePages(const uint8_t* p, uint64_t bytes, bool fromFile) {
#if defined(__linux__)
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + uintptr_t(page) - 1) &
                            ~uintptr_t(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~uintptr_t(page - 1);
    if (end > begin)
        (void)madvise(reinterpret_cast<void*>(begin), end - begin, fromFile ? MADV_DONTNEED : MADV_PAGEOUT);
#else
    (void)p;
    (void)bytes;
    (void)fromFile;
#endif
}

} // namespace hearth::cpu
