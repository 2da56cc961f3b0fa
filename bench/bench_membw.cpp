// Measures read memory bandwidth: threads sum a buffer much larger than the caches; prints the
// median GB/s over repetitions (bench/vs-llamacpp uses it for the decode bandwidth limit).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
    const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 7;
    const size_t bytes = size_t(argc > 3 ? std::max(64, std::atoi(argv[3])) : 1024) << 20;
    std::vector<uint64_t> buf(bytes / 8);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = i * 0x9E3779B97F4A7C15ull;
    std::vector<double> gbs;
    volatile uint64_t sink = 0;
    for (int r = 0; r < reps; ++r) {
        std::vector<uint64_t> sums(size_t(threads), 0);
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                const size_t n = buf.size(), b = n * size_t(t) / size_t(threads),
                             e = n * size_t(t + 1) / size_t(threads);
                uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                size_t i = b;
                for (; i + 4 <= e; i += 4) {
                    s0 += buf[i];
                    s1 += buf[i + 1];
                    s2 += buf[i + 2];
                    s3 += buf[i + 3];
                }
                for (; i < e; ++i) s0 += buf[i];
                sums[size_t(t)] = s0 + s1 + s2 + s3;
            });
        for (auto& th : pool) th.join();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (uint64_t v : sums) sink = sink + v;
        gbs.push_back(double(bytes) / s / 1e9);
    }
    std::sort(gbs.begin(), gbs.end());
    std::printf("%.2f\n", gbs[gbs.size() / 2]);
    return 0;
}
