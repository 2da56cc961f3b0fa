// The read-bandwidth probe shared by bench_membw and bench_decode_stream: threads sum a buffer much
// larger than the caches, once plainly and once prefetching 4 KiB ahead in software (one core's
// hardware prefetchers alone keep too few misses in flight); the better of the two is the figure.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace hearth::bench {

// `bytes` of memory starting on a 2 MiB boundary, transparent huge pages asked for (as the
// engine's repacked weights get); nullptr on failure. Lives until the process ends.
inline uint64_t* allocateProbeBuffer(size_t bytes) {
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

// Median GB/s over reps of summing buf[0, words) with `threads` threads.
template <bool kPrefetch> double medianReadGbs(const uint64_t* buf, size_t words, int threads, int reps) {
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

struct ReadBandwidth {
    double plain = 0, prefetched = 0;
    double best() const { return std::max(plain, prefetched); }
};

inline ReadBandwidth readBandwidth(const uint64_t* buf, size_t words, int threads, int reps) {
    return {medianReadGbs<false>(buf, words, threads, reps), medianReadGbs<true>(buf, words, threads, reps)};
}

} // namespace hearth::bench
