// The default KV cache budget from the machine's available memory.
#include "runtime/memory_budget.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hearth::runtime {

uint64_t availableMemoryBytes() {
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    uint64_t kb = 0;
    while (std::fgets(line, sizeof line, f)) {
        unsigned long long v = 0;
        if (std::strncmp(line, "MemAvailable:", 13) == 0 && std::sscanf(line + 13, "%llu", &v) == 1) {
            kb = v;
            break;
        }
    }
    std::fclose(f);
    return kb * 1024;
}

uint64_t autoKvBudget(uint64_t bytesPerBlock, int blockSize, int contextLength, int maxNumSeqs) {
    const uint64_t blocksPerSeq = (uint64_t(std::max(1, contextLength)) + uint64_t(blockSize) - 1) /
                                  uint64_t(std::max(1, blockSize));
    const uint64_t oneSeq = blocksPerSeq * bytesPerBlock;
    const uint64_t wanted = oneSeq * uint64_t(std::max(1, maxNumSeqs));
    const uint64_t available = availableMemoryBytes();
    const uint64_t cap = available > 0 ? available / 4 : uint64_t(1) << 30;
    return std::max(oneSeq, std::min(wanted, cap));
}

int stateSlotsFor(uint64_t perState, int live, uint64_t kvBudget, uint64_t snapshotBytes, bool prefixCaching,
                  uint64_t available) {
    if (perState == 0) return 0;
    live = std::max(1, live);
    if (snapshotBytes == 0) {
        snapshotBytes = std::max(kvBudget / 4, perState * 16);
        if (available > 0) snapshotBytes = std::min(snapshotBytes, available / 8);
    }
    const uint64_t snapshots = prefixCaching ? std::min<uint64_t>(snapshotBytes / perState, 4096) : 0;
    return live + int(std::max<uint64_t>(snapshots, uint64_t(live)));
}

} // namespace hearth::runtime
