// Times the scalar reference matVec against matMul at each instruction-set level (1 and 2
// threads) for 2048x2048 Q4_K, Q4_0 and Q8_0 weights at batch sizes 1 and 64.
#include "backend/cpu/matmul.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/thread_pool.h"
#include "hearth/quant.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace hearth;
using namespace hearth::cpu;
using quant::Type;

namespace {

using Clock = std::chrono::steady_clock;

// Best-of time in seconds of fn(), repeated until ~0.3 s have passed (at least 3 runs).
template <typename Fn> double bestTime(Fn&& fn, double budget = 0.3) {
    double best = 1e30, total = 0;
    for (int rep = 0; rep < 3 || total < budget; ++rep) {
        const auto t0 = Clock::now();
        fn();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        best = std::min(best, s);
        total += s;
        if (rep > 1000) break;
    }
    return best;
}

} // namespace

int main(int argc, char** argv) {
    const int64_t rows = 2048, cols = 2048;
    const double budget = argc > 1 ? std::atof(argv[1]) : 0.3;
    std::printf("bench_matmul: %lldx%lld weights, detected ISA %s\n", (long long)rows,
                (long long)cols, isaName(detectIsa()));
    std::mt19937 rng(42);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> wf(size_t(rows * cols));
    for (auto& v : wf) v = dist(rng);
    std::vector<float> x(size_t(64 * cols));
    for (auto& v : x) v = dist(rng);
    ThreadPool pool1(1), pool2(2);

    for (Type t : {Type::Q4_K, Type::Q4_0, Type::Q8_0}) {
        const uint64_t rb = *quant::rowBytes(t, cols);
        std::vector<uint8_t> data(rb * uint64_t(rows));
        if (!quant::quantizeRows(t, wf.data(), data.data(), rows, cols, 2).isOk()) return 1;
        const ref::Matrix w{data.data(), t, cols, rows, rb};
        for (int64_t n : {int64_t(1), int64_t(64)}) {
            const double flop = 2.0 * double(rows) * double(cols) * double(n);
            std::vector<float> y(size_t(n * rows));
            // The reference does one row of x per call; time n=1 and scale (it is linear in n).
            const double refS = bestTime([&] { (void)ref::matVec(w, x.data(), y.data()); },
                                         budget) * double(n);
            std::printf("%-5s n=%-3lld ref          %8.3f ms  %7.2f GFLOP/s\n",
                        std::string(quant::typeName(t)).c_str(), (long long)n, refS * 1e3,
                        flop / refS * 1e-9);
            for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
                if (!isaSupported(isa)) continue;
                for (ThreadPool* pool : {&pool1, &pool2}) {
                    const double s = bestTime(
                        [&] { (void)matMul(w, x.data(), n, y.data(), pool, isa); }, budget);
                    std::printf("%-5s n=%-3lld %-6s %dT    %8.3f ms  %7.2f GFLOP/s  ratio vs ref "
                                "%6.1fx\n",
                                std::string(quant::typeName(t)).c_str(), (long long)n,
                                isaName(isa), pool->size(), s * 1e3, flop / s * 1e-9, refS / s);
                }
            }
        }
    }
    return 0;
}
