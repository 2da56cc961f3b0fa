// The multiply-accumulate rate one core reaches with each 256-bit integer product form the CPU
// kernels use, in register-only loops written in assembly (no memory traffic but the broadcasts;
// enough independent accumulators that no latency chain limits): the ceiling a repacked kernel of
// that form can approach (bench_matmul ceiling).
#include "int8_ceiling.h"

#include <chrono>
#include <cstdint>

namespace hearth::bench {

namespace {

constexpr long kSteps = 1 << 16;

// Seconds per call of loop(steps), best of several calls until `budget` has passed.
double bestSeconds(void (*loop)(long), double budget) {
    using Clock = std::chrono::steady_clock;
    double best = 1e30, total = 0;
    for (int rep = 0; rep < 3 || total < budget; ++rep) {
        const auto t0 = Clock::now();
        loop(kSteps);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        best = s < best ? s : best;
        total += s;
    }
    return best;
}

alignas(64) int32_t g_pairs[64];

// One product into accumulator ymm<acc> from weights ymm<w> (8 or 9) and activations ymm<a>
// (10 or 11), through the temporary ymm<t> (12-15).
#define HEARTH_WIDE(acc, w, a, t)                                                                  \
    "vpmaddwd %%ymm" #a ", %%ymm" #w ", %%ymm" #t "\n\tvpaddd %%ymm" #t ", %%ymm" #acc             \
    ", %%ymm" #acc "\n\t"
#define HEARTH_BCAST(off, a) "vpbroadcastd " #off "(%[p]), %%ymm" #a "\n\t"
#define HEARTH_SIGN(acc, t)                                                                        \
    "vpsignb %%ymm8, %%ymm10, %%ymm" #t                                                            \
    "\n\tvpsignb %%ymm8, %%ymm8, %%ymm9\n\tvpmaddubsw %%ymm" #t ", %%ymm9, %%ymm" #t               \
    "\n\tvpmaddwd %%ymm11, %%ymm" #t ", %%ymm" #t "\n\tvpaddd %%ymm" #t ", %%ymm" #acc             \
    ", %%ymm" #acc "\n\t"
#define HEARTH_SMALL(acc, w, t)                                                                    \
    "vpmaddubsw %%ymm10, %%ymm" #w ", %%ymm" #t "\n\tvpaddw %%ymm" #t ", %%ymm" #acc               \
    ", %%ymm" #acc "\n\t"
#define HEARTH_VNNI(acc, w) "%{vex%} vpdpbusd %%ymm10, %%ymm" #w ", %%ymm" #acc "\n\t"

#define HEARTH_LOOP(body)                                                                          \
    __asm__ volatile("1:\n\t" body "dec %[n]\n\tjnz 1b"                                            \
                     : [n] "+r"(steps)                                                             \
                     : [p] "r"(g_pairs)                                                            \
                     : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",     \
                       "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",        \
                       "xmm15")

// 16 vpmaddwd + vpaddd (16-bit pairs): 256 MACs a step.
void wideLoop(long steps) {
    HEARTH_LOOP(HEARTH_WIDE(0, 8, 10, 12) HEARTH_WIDE(1, 9, 11, 13) HEARTH_WIDE(2, 8, 10, 14)
                    HEARTH_WIDE(3, 9, 11, 15) HEARTH_WIDE(4, 8, 10, 12) HEARTH_WIDE(5, 9, 11, 13)
                        HEARTH_WIDE(6, 8, 10, 14) HEARTH_WIDE(7, 9, 11, 15)
                            HEARTH_WIDE(0, 8, 10, 12) HEARTH_WIDE(1, 9, 11, 13)
                                HEARTH_WIDE(2, 8, 10, 14) HEARTH_WIDE(3, 9, 11, 15)
                                    HEARTH_WIDE(4, 8, 10, 12) HEARTH_WIDE(5, 9, 11, 13)
                                        HEARTH_WIDE(6, 8, 10, 14) HEARTH_WIDE(7, 9, 11, 15));
}

// The same with each activation pair broadcast from memory first (the IQ4_XS prompt tile's form).
void wideBcastLoop(long steps) {
    HEARTH_LOOP(
        HEARTH_BCAST(0, 10) HEARTH_WIDE(0, 8, 10, 12) HEARTH_BCAST(4, 11) HEARTH_WIDE(1, 9, 11, 13)
            HEARTH_BCAST(8, 10) HEARTH_WIDE(2, 8, 10, 14) HEARTH_BCAST(12, 11)
                HEARTH_WIDE(3, 9, 11, 15) HEARTH_BCAST(16, 10) HEARTH_WIDE(4, 8, 10, 12)
                    HEARTH_BCAST(20, 11) HEARTH_WIDE(5, 9, 11, 13) HEARTH_BCAST(24, 10)
                        HEARTH_WIDE(6, 8, 10, 14) HEARTH_BCAST(28, 11) HEARTH_WIDE(7, 9, 11, 15)
                            HEARTH_BCAST(32, 10) HEARTH_WIDE(0, 8, 10, 12) HEARTH_BCAST(36, 11)
                                HEARTH_WIDE(1, 9, 11, 13) HEARTH_BCAST(40, 10)
                                    HEARTH_WIDE(2, 8, 10, 14) HEARTH_BCAST(44, 11)
                                        HEARTH_WIDE(3, 9, 11, 15) HEARTH_BCAST(48, 10)
                                            HEARTH_WIDE(4, 8, 10, 12) HEARTH_BCAST(52, 11)
                                                HEARTH_WIDE(5, 9, 11, 13) HEARTH_BCAST(56, 10)
                                                    HEARTH_WIDE(6, 8, 10, 14) HEARTH_BCAST(60, 11)
                                                        HEARTH_WIDE(7, 9, 11, 15));
}

// 8 × (2 vpsignb + vpmaddubsw + vpmaddwd + vpaddd): signed 8-bit by signed 8-bit as ggml's haswell
// kernels take it, 256 MACs a step.
void signLoop(long steps) {
    HEARTH_LOOP(HEARTH_SIGN(0, 12) HEARTH_SIGN(1, 13) HEARTH_SIGN(2, 14) HEARTH_SIGN(3, 15)
                    HEARTH_SIGN(4, 12) HEARTH_SIGN(5, 13) HEARTH_SIGN(6, 14) HEARTH_SIGN(7, 15));
}

// 8 × (vpmaddubsw + vpaddw): 4-bit unsigned weights by signed 8-bit, 256 MACs a step.
void smallLoop(long steps) {
    HEARTH_LOOP(HEARTH_SMALL(0, 8, 12) HEARTH_SMALL(1, 9, 13) HEARTH_SMALL(2, 8, 14)
                    HEARTH_SMALL(3, 9, 15) HEARTH_SMALL(4, 8, 12) HEARTH_SMALL(5, 9, 13)
                        HEARTH_SMALL(6, 8, 14) HEARTH_SMALL(7, 9, 15));
}

// 8 vpdpbusd on ymm into 8 accumulators: 256 MACs a step.
void vnniLoop(long steps) {
    HEARTH_LOOP(HEARTH_VNNI(0, 8) HEARTH_VNNI(1, 9) HEARTH_VNNI(2, 8) HEARTH_VNNI(3, 9)
                    HEARTH_VNNI(4, 8) HEARTH_VNNI(5, 9) HEARTH_VNNI(6, 8) HEARTH_VNNI(7, 9));
}

double rate(void (*loop)(long), double budget) {
    return 256.0 * double(kSteps) / bestSeconds(loop, budget) * 1e-9;
}

} // namespace

std::vector<CeilingRate> int8Ceilings(double budget) {
    std::vector<CeilingRate> out;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) return out;
    out.push_back({"wide", "vpmaddwd + vpaddd (16-bit pairs: IQ4_XS prompts at avx2)",
                   rate(wideLoop, budget)});
    out.push_back({"wide-bcast", "vpbroadcastd + vpmaddwd + vpaddd (the same, each pair broadcast)",
                   rate(wideBcastLoop, budget)});
    out.push_back({"sign",
                   "2 vpsignb + vpmaddubsw + vpmaddwd + vpaddd (signed 8-bit, ggml's haswell form)",
                   rate(signLoop, budget)});
    out.push_back({"small", "vpmaddubsw + vpaddw (4-bit unsigned weights: Q4_0, Q4_K)",
                   rate(smallLoop, budget)});
    if (__builtin_cpu_supports("avxvnni"))
        out.push_back({"vnni", "vpdpbusd on ymm (AVX-VNNI)", rate(vnniLoop, budget)});
    return out;
}

} // namespace hearth::bench
