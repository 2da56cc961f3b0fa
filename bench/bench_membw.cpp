// Measures read memory bandwidth: threads sum a buffer much larger than the caches; prints the
// median GB/s over repetitions (bench/vs-llamacpp uses it for the decode bandwidth limit). The
// buffer lies on transparent huge pages where the kernel allows (as the engine's repacked weights
// do), and the figure is the better of a plain sum and one that also prefetches 4 KiB ahead in
// software (as the decode kernels do): one core's hardware prefetchers alone keep too few misses
// in flight, and a limit that a kernel can beat is no limit. BENCH_MEMBW_DETAIL=1 prints both
// figures on stderr.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace {

// `bytes` of memory starting on a 2 MiB boundary, huge pages asked for; nullptr on failure.
uint64_t* allocate(size_t bytes) {
#if defined(__linux__)
    constexpr size_t kHuge = size_t(2) << 20;
    void* p = mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    const uintptr_t at = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~uintptr_t(kHuge - 1);
    (void)madvise(reinterpret_cast<void*>(at), bytes, MADV_HUGEPAGE);
    return reinterpret_cast<uint64_t*>(at);
#else
    return static_cast<uint64_t*>(std::malloc(bytes));
#endif
}

template <bool kPrefetch> uint64_t sumRange(const uint64_t* buf, size_t b, size_t e) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = b;
    for (; i + 8 <= e; i += 8) { // one 64-byte line per iteration
        if constexpr (kPrefetch) __builtin_prefetch(buf + i + 512, 0, 3);
        s0 += buf[i] + buf[i + 4];
        s1 += buf[i + 1] + buf[i + 5];
        s2 += buf[i + 2] + buf[i + 6];
        s3 += buf[i + 3] + buf[i + 7];
    }
    for (; i < e; ++i) s0 += buf[i];
    return s0 + s1 + s2 + s3;
}

template <bool kPrefetch> double medianGbs(const uint64_t* buf, size_t words, int threads, int reps) {
    std::vector<double> gbs;
    volatile uint64_t sink = 0;
    for (int r = 0; r < reps; ++r) {
        std::vector<uint64_t> sums(size_t(threads), 0);
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                const size_t b = words * size_t(t) / size_t(threads) / 8 * 8,
                             e = t + 1 == threads ? words : words * size_t(t + 1) / size_t(threads) / 8 * 8;
                sums[size_t(t)] = sumRange<kPrefetch>(buf, b, e);
            });
        for (auto& th : pool) th.join();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (uint64_t v : sums) sink = sink + v;
        gbs.push_back(double(words * 8) / s / 1e9);
    }
    std::sort(gbs.begin(), gbs.end());
    return gbs[gbs.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
    const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
    const size_t bytes = size_t(argc > 3 ? std::max(64, std::atoi(argv[3])) : 1024) << 20;
    uint64_t* buf = allocate(bytes);
    if (!buf) {
        std::fprintf(stderr, "bench_membw: cannot allocate %zu bytes\n", bytes);
        return 1;
    }
    const size_t words = bytes / 8;
    for (size_t i = 0; i < words; ++i) buf[i] = i * 0x9E3779B97F4A7C15ull;
    const double plain = medianGbs<false>(buf, words, threads, reps);
    const double prefetched = medianGbs<true>(buf, words, threads, reps);
    if (std::getenv("BENCH_MEMBW_DETAIL")) std::fprintf(stderr, "plain %.2f, prefetched %.2f GB/s\n", plain, prefetched);
    std::printf("%.2f\n", std::max(plain, prefetched));
    return 0;
}
