// Measures read memory bandwidth with the probe in read_probe.h over a buffer much larger than the
// caches; prints the median GB/s over repetitions (bench/vs-llamacpp uses it for the decode
// bandwidth limit). BENCH_MEMBW_DETAIL=1 prints the plain and prefetching figures on stderr.
// Usage: bench_membw [threads 2] [reps 7] [MiB 1024]
#include "read_probe.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
    const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
    const size_t bytes = size_t(argc > 3 ? std::max(64, std::atoi(argv[3])) : 1024) << 20;
    uint64_t* buf = hearth::bench::allocateProbeBuffer(bytes);
    if (!buf) {
        std::fprintf(stderr, "bench_membw: cannot allocate %zu bytes\n", bytes);
        return 1;
    }
    const size_t words = bytes / 8;
    for (size_t i = 0; i < words; ++i) buf[i] = i * 0x9E3779B97F4A7C15ull;
    const hearth::bench::ReadBandwidth bw = hearth::bench::readBandwidth(buf, words, threads, reps);
    if (std::getenv("BENCH_MEMBW_DETAIL"))
        std::fprintf(stderr, "plain %.2f, prefetched %.2f GB/s\n", bw.plain, bw.prefetched);
    std::printf("%.2f\n", bw.best());
    return 0;
}
