// Times the scalar reference matVec against matMul at each instruction-set level (1 and 2
// threads) for 2048x2048 Q4_K, Q4_0 and Q8_0 weights at batch sizes 1 and 64, then the plain
// AVX-512 kernels against the repacked ones (A/B, alternating) on llama-1B layer shapes.
// The "decode" mode instead compares the 4-bit types and the low-bit IQ2_XXS, IQ3_XXS, IQ3_S,
// IQ1_S and TQ1_0 on decode-shaped (one token) products.
// The "levels" mode times the repacked kernels of each level this CPU runs (avx2, avxvnni, avx512)
// on every repacked type, one thread, at 1 and 64 tokens, in GMAC/s (levels alternating).
// The "rows" mode times decode-sized batches (1-8 tokens, as a step verifying drafts) through
// matrices of llama-1B's ffn_up shape that together exceed the caches, 2 threads, at each level,
// as the time per token-count relative to one token (levels and counts alternating).
// The "tiny" mode times F32 products of stories260K's shapes (64 wide, a 512-token vocabulary),
// where the weights stay in the caches, at 1-16 tokens on one thread: the per-token cost a
// speculative step of a tiny model pays.
// The "ceiling" mode times each 256-bit product form in register-only loops (int8_ceiling.cpp),
// then the repacked kernels built on that form at 64 tokens, one thread, as a fraction of it.
// Usage: bench_matmul [budget seconds per figure, 0.3] [ab: only the A/B part | decode | levels | rows | tiny | ceiling]
#include "backend/cpu/matmul.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/thread_pool.h"
#include "hearth/quant.h"
#include "int8_ceiling.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Plain (A) against repacked (B) matMul at the avx512 level, samples alternating A B A B; prints
// the medians and the spread of the B/A time ratios (the machine is shared, so this is noisy).
int abRepacked(double budget) {
    if (!canRepack(Type::Q4_0, Isa::Avx512)) {
        std::printf("A/B repacked: this CPU has no AVX-512 VNNI, nothing to compare\n");
        return 0;
    }
    struct Shape {
        const char* name;
        int64_t rows, cols;
    };
    // llama3.2-1b: attn_q/attn_output, attn_k/attn_v, ffn_gate/ffn_up, ffn_down.
    const Shape shapes[] = {{"q/o", 2048, 2048}, {"k/v", 512, 2048}, {"gate/up", 8192, 2048},
                            {"down", 2048, 8192}};
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    ThreadPool pool1(1), pool2(2);
    std::printf("A/B plain avx512 (A) vs repacked (B); medians of 5 alternating samples\n");
    for (Type t : {Type::Q4_0, Type::Q8_0, Type::Q4_K}) {
        for (const Shape& sh : shapes) {
            std::vector<float> wf(size_t(sh.rows * sh.cols));
            for (auto& v : wf) v = dist(rng) * 0.02f;
            const uint64_t rb = *quant::rowBytes(t, uint64_t(sh.cols));
            std::vector<uint8_t> data(rb * uint64_t(sh.rows));
            if (!quant::quantizeRows(t, wf.data(), data.data(), sh.rows, sh.cols, 2).isOk()) return 1;
            const ref::Matrix w{data.data(), t, sh.cols, sh.rows, rb};
            auto packed = PackedMatrix::pack(w);
            if (!packed.isOk()) return 1;
            for (int64_t n : {int64_t(1), int64_t(8), int64_t(64), int64_t(512)}) {
                std::vector<float> x(size_t(n * sh.cols));
                for (auto& v : x) v = dist(rng);
                std::vector<float> y(size_t(n * sh.rows));
                const double flop = 2.0 * double(sh.rows) * double(sh.cols) * double(n);
                for (ThreadPool* pool : {&pool1, &pool2}) {
                    std::vector<double> a, b, ratio;
                    const double each = budget / 10;
                    for (int rep = 0; rep < 5; ++rep) {
                        a.push_back(bestTime(
                            [&] { (void)matMul(w, x.data(), n, y.data(), pool, Isa::Avx512); }, each));
                        b.push_back(bestTime(
                            [&] { (void)matMul(w, &*packed, x.data(), n, y.data(), pool, Isa::Avx512); },
                            each));
                        ratio.push_back(a.back() / b.back());
                    }
                    const auto [lo, hi] = std::minmax_element(ratio.begin(), ratio.end());
                    std::printf("%-5s %-7s n=%-4lld %dT  A %8.3f ms %6.1f GFLOP/s  B %8.3f ms "
                                "%6.1f GFLOP/s  speed-up %5.2fx (samples %.2f..%.2f)\n",
                                std::string(quant::typeName(t)).c_str(), sh.name, (long long)n,
                                pool->size(), median(a) * 1e3, flop / median(a) * 1e-9,
                                median(b) * 1e3, flop / median(b) * 1e-9, median(ratio), *lo, *hi);
                    std::fflush(stdout);
                }
            }
        }
    }
    return 0;
}

// One token through 4-bit weights of llama-1B's ffn_down and ffn_up shapes: IQ4_XS, IQ4_NL and
// MXFP4 against Q4_0 and Q4_K (plain kernels; Q4_0/Q4_K also repacked, the path the CPU program
// takes for them), each level and thread count. The types' samples alternate (A B C ... A B C)
// and the medians of 7 are printed, with the weight bytes streamed per second.
int decodeCompare(double budget) {
    struct Shape {
        const char* name;
        int64_t rows, cols;
    };
    const Shape shapes[] = {{"down 2048x8192", 2048, 8192}, {"up 8192x2048", 8192, 2048}};
    const Type types[] = {Type::Q4_0,  Type::Q4_K,    Type::IQ4_XS,  Type::IQ4_NL,
                          Type::MXFP4, Type::IQ2_XXS, Type::IQ3_XXS, Type::IQ3_S,
                          Type::IQ1_S, Type::TQ1_0};
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    ThreadPool pool1(1), pool2(2);
    std::printf(
        "decode matMul (n=1), medians of 7 alternating samples; GB/s = weight bytes / time\n");
    for (const Shape& sh : shapes) {
        std::vector<float> wf(size_t(sh.rows * sh.cols));
        for (auto& v : wf) v = dist(rng) * 0.02f;
        std::vector<float> x(size_t(sh.cols)), y(size_t(sh.rows));
        for (auto& v : x) v = dist(rng);
        struct Candidate {
            std::string name;
            uint64_t bytes;
            std::vector<uint8_t> data;
            ref::Matrix w;
            std::unique_ptr<PackedMatrix> packed;
        };
        std::vector<Candidate> cands;
        for (Type t : types) {
            Candidate c;
            c.name = std::string(quant::typeName(t));
            const uint64_t rb = *quant::rowBytes(t, uint64_t(sh.cols));
            c.bytes = rb * uint64_t(sh.rows);
            c.data.resize(size_t(c.bytes));
            if (!quant::typeInfo(t)->canQuantize) {
                // No quantizer: random blocks with a small fp16 scale (the first field).
                for (auto& b : c.data) b = uint8_t(rng());
                const uint16_t d = quant::f32ToF16(1e-3f);
                for (uint64_t b = 0; b < c.bytes; b += quant::typeInfo(t)->blockBytes)
                    std::memcpy(c.data.data() + b, &d, 2);
            } else if (!quant::quantizeRows(t, wf.data(), c.data.data(), sh.rows, sh.cols, 2)
                            .isOk()) {
                return 1;
            }
            c.w = {c.data.data(), t, sh.cols, sh.rows, rb};
            cands.push_back(std::move(c));
            if (canRepack(t, Isa::Avx512)) {
                auto packed = PackedMatrix::pack(cands.back().w);
                if (!packed.isOk()) return 1;
                Candidate p;
                p.name = cands.back().name + "-repacked";
                p.bytes = cands.back().bytes;
                p.w = cands.back().w;
                p.packed = std::make_unique<PackedMatrix>(std::move(*packed));
                cands.push_back(std::move(p));
            }
        }
        for (Isa isa : {Isa::Avx512, Isa::Avx2}) {
            if (!isaSupported(isa)) continue;
            for (ThreadPool* pool : {&pool1, &pool2}) {
                std::vector<std::vector<double>> samples(cands.size());
                for (int rep = 0; rep < 7; ++rep) {
                    for (size_t i = 0; i < cands.size(); ++i) {
                        const Candidate& c = cands[i];
                        if (c.packed && isa != Isa::Avx512) continue;
                        samples[i].push_back(bestTime(
                            [&] {
                                if (c.packed)
                                    (void)matMul(c.w, c.packed.get(), x.data(), 1, y.data(), pool,
                                                 isa);
                                else
                                    (void)matMul(c.w, x.data(), 1, y.data(), pool, isa);
                            },
                            budget / 10));
                    }
                }
                for (size_t i = 0; i < cands.size(); ++i) {
                    if (samples[i].empty()) continue;
                    const auto [lo, hi] = std::minmax_element(samples[i].begin(), samples[i].end());
                    const double m = median(samples[i]);
                    std::printf(
                        "%-15s %-6s %dT %-15s %8.1f us  %6.2f GB/s  (samples %.1f..%.1f us)\n",
                        sh.name, isaName(isa), pool->size(), cands[i].name.c_str(), m * 1e6,
                        double(cands[i].bytes) / m * 1e-9, *lo * 1e6, *hi * 1e6);
                }
                std::fflush(stdout);
            }
        }
    }
    return 0;
}

// The levels whose repacked kernels this CPU runs (avx2, avxvnni, avx512), lowest first.
std::vector<Isa> repackedLevels() {
    std::vector<Isa> levels;
    for (Isa isa : {Isa::Avx2, Isa::AvxVnni, Isa::Avx512})
        if (canRepack(Type::Q4_0, isa)) levels.push_back(isa);
    return levels;
}

// Every repacked type, in the order the modes print them.
constexpr Type kRepackedTypes[] = {Type::Q4_0, Type::Q5_0,  Type::Q8_0, Type::IQ4_NL, Type::MXFP4,
                                   Type::Q4_K, Type::Q5_K, Type::Q6_K, Type::IQ4_XS};

// rows × cols weights of type t in `data`: wf quantized, or (types without a quantizer) random
// blocks with a small E8M0 scale. False when quantizing fails.
bool benchWeights(Type t, const std::vector<float>& wf, int64_t rows, int64_t cols, std::mt19937& rng,
                  std::vector<uint8_t>& data) {
    data.assign(size_t(*quant::rowBytes(t, uint64_t(cols)) * uint64_t(rows)), 0);
    if (quant::typeInfo(t)->canQuantize) return quant::quantizeRows(t, wf.data(), data.data(), rows, cols, 2).isOk();
    for (auto& b : data) b = uint8_t(rng());
    for (uint64_t b = 0; b < data.size(); b += quant::typeInfo(t)->blockBytes) data[b] = 120;
    return true;
}

// The repacked kernels of each level, side by side (see the file comment).
int levelsCompare(double budget) {
    const std::vector<Isa> levels = repackedLevels();
    if (levels.empty()) {
        std::printf("levels: this CPU has no AVX2, no repacked kernels\n");
        return 0;
    }
    const int64_t rows = 2048, cols = 2048;
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> wf(size_t(rows * cols)), x(size_t(64 * cols)), y(size_t(64 * rows));
    for (auto& v : wf) v = dist(rng);
    for (auto& v : x) v = dist(rng);
    ThreadPool pool(1);
    std::printf("repacked kernels, %lldx%lld, 1 thread, GMAC/s (median of 5 alternating samples)\n", (long long)rows,
                (long long)cols);
    for (Type t : kRepackedTypes) {
        std::vector<uint8_t> data;
        if (!benchWeights(t, wf, rows, cols, rng, data)) return 1;
        const ref::Matrix w{data.data(), t, cols, rows, *quant::rowBytes(t, uint64_t(cols))};
        auto packed = PackedMatrix::pack(w);
        if (!packed.isOk()) return 1;
        for (int64_t n : {int64_t(1), int64_t(64)}) {
            std::vector<std::vector<double>> samples(levels.size());
            for (int rep = 0; rep < 5; ++rep)
                for (size_t i = 0; i < levels.size(); ++i)
                    samples[i].push_back(bestTime([&] { (void)matMul(w, &*packed, x.data(), n, y.data(), &pool, levels[i]); },
                                                  budget / 5));
            std::printf("%-6s n=%-3lld", std::string(quant::typeName(t)).c_str(), (long long)n);
            for (size_t i = 0; i < levels.size(); ++i)
                std::printf("  %s %7.1f", isaName(levels[i]), double(rows * cols * n) / median(samples[i]) * 1e-9);
            std::printf("\n");
            std::fflush(stdout);
        }
    }
    return 0;
}

// See the file comment: the product forms' ceilings, and the kernels against them.
int ceilingCompare(double budget) {
    const std::vector<bench::CeilingRate> forms = bench::int8Ceilings(budget);
    if (forms.empty()) {
        std::printf("ceiling: this CPU has no AVX2\n");
        return 0;
    }
    std::printf("256-bit integer products, register-only loops, 1 thread, GMAC/s\n");
    auto rateOf = [&](const char* key) {
        for (const auto& f : forms)
            if (f.key == key) return f.gmacs;
        return 0.0;
    };
    for (const auto& f : forms) std::printf("  %-11s %7.1f  %s\n", f.key.c_str(), f.gmacs, f.form.c_str());
    struct Kernel {
        Type type;
        Isa isa;
        const char* form;
    };
    const Kernel kernels[] = {{Type::IQ4_XS, Isa::Avx2, "wide-bcast"}, {Type::Q8_0, Isa::Avx2, "sign"},
                              {Type::Q4_0, Isa::Avx2, "small"},        {Type::Q4_K, Isa::Avx2, "small"},
                              {Type::IQ4_XS, Isa::AvxVnni, "vnni"},    {Type::Q8_0, Isa::AvxVnni, "vnni"}};
    const int64_t rows = 2048, cols = 2048, n = 64;
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> wf(size_t(rows * cols)), x(size_t(n * cols)), y(size_t(n * rows));
    for (auto& v : wf) v = dist(rng);
    for (auto& v : x) v = dist(rng);
    ThreadPool pool(1);
    std::printf("repacked kernels, %lldx%lld, %lld tokens, 1 thread, GMAC/s and the fraction of their form's ceiling\n",
                (long long)rows, (long long)cols, (long long)n);
    for (const Kernel& k : kernels) {
        if (!canRepack(k.type, k.isa) || rateOf(k.form) <= 0) continue;
        std::vector<uint8_t> data;
        if (!benchWeights(k.type, wf, rows, cols, rng, data)) return 1;
        const ref::Matrix w{data.data(), k.type, cols, rows, *quant::rowBytes(k.type, uint64_t(cols))};
        auto packed = PackedMatrix::pack(w);
        if (!packed.isOk()) return 1;
        const double s = bestTime([&] { (void)matMul(w, &*packed, x.data(), n, y.data(), &pool, k.isa); }, budget);
        const double gmacs = double(rows * cols * n) / s * 1e-9;
        std::printf("  %-6s %-7s %7.1f  %.2f of %s\n", std::string(quant::typeName(k.type)).c_str(), isaName(k.isa), gmacs,
                    gmacs / rateOf(k.form), k.form);
        std::fflush(stdout);
    }
    return 0;
}

// See the file comment: how much a step of n tokens costs against one of 1, per level.
int rowsCompare(double budget) {
    const std::vector<Isa> levels = repackedLevels();
    if (levels.empty()) {
        std::printf("rows: this CPU has no AVX2, no repacked kernels\n");
        return 0;
    }
    const int64_t rows = 8192, cols = 2048;
    const int64_t counts[] = {1, 4, 5, 6, 8, 16};
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> wf(size_t(rows * cols)), x(size_t(32 * cols)), y(size_t(32 * rows));
    for (auto& v : wf) v = dist(rng) * 0.02f;
    for (auto& v : x) v = dist(rng);
    ThreadPool pool(2);
    std::printf("decode-sized batches, %lldx%lld matrices cycled past the caches, 2 threads: us per matrix "
                "(ratio to n=1), medians of 5 alternating samples\n",
                (long long)rows, (long long)cols);
    const char* only = std::getenv("HEARTH_BENCH_TYPES"); // e.g. "Q4_0,Q6_K": only these
    for (Type t : kRepackedTypes) {
        const std::string name(quant::typeName(t));
        if (only && ("," + std::string(only) + ",").find("," + name + ",") == std::string::npos) continue;
        std::vector<uint8_t> data;
        if (!benchWeights(t, wf, rows, cols, rng, data)) return 1;
        const ref::Matrix w{data.data(), t, cols, rows, *quant::rowBytes(t, uint64_t(cols))};
        // Enough copies that one pass reads ~160 MB, so every call streams its weights from memory.
        const int copies = int(std::max<uint64_t>(2, 160'000'000 / data.size()));
        std::vector<PackedMatrix> packed;
        for (int c = 0; c < copies; ++c) {
            auto p = PackedMatrix::pack(w);
            if (!p.isOk()) return 1;
            packed.push_back(std::move(*p));
        }
        int next = 0;
        for (Isa isa : levels) {
            std::vector<std::vector<double>> samples(std::size(counts));
            for (int rep = 0; rep < 5; ++rep)
                for (size_t i = 0; i < std::size(counts); ++i)
                    samples[i].push_back(bestTime([&] {
                        (void)matMul(w, &packed[size_t(next)], x.data(), counts[i], y.data(), &pool, isa);
                        next = (next + 1) % copies;
                    }, budget / 5));
            std::printf("%-6s %-7s", std::string(quant::typeName(t)).c_str(), isaName(isa));
            const double one = median(samples[0]);
            for (size_t i = 0; i < std::size(counts); ++i)
                std::printf("  n=%lld %6.0f (%.2f)", (long long)counts[i], median(samples[i]) * 1e6,
                            median(samples[i]) / one);
            std::printf("\n");
            std::fflush(stdout);
        }
    }
    return 0;
}

int tinyCompare(double budget) {
    struct Shape {
        const char* name;
        int64_t rows, cols;
    };
    const Shape shapes[] = {{"attn 64x64", 64, 64}, {"ffn_up 172x64", 172, 64}, {"ffn_down 64x172", 64, 172},
                            {"output 512x64", 512, 64}};
    const int64_t counts[] = {1, 2, 4, 5, 8, 9, 16};
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::printf("F32, weights in cache, 1 thread: ns per product (per token), medians of 5 alternating samples\n");
    for (const Shape& sh : shapes) {
        std::vector<float> w(size_t(sh.rows * sh.cols)), x(size_t(16 * sh.cols)), y(size_t(16 * sh.rows));
        for (auto& v : w) v = dist(rng);
        for (auto& v : x) v = dist(rng);
        const ref::Matrix m{reinterpret_cast<const uint8_t*>(w.data()), Type::F32, sh.cols, sh.rows,
                            uint64_t(sh.cols) * sizeof(float)};
        std::vector<std::vector<double>> samples(std::size(counts));
        for (int rep = 0; rep < 5; ++rep)
            for (size_t i = 0; i < std::size(counts); ++i)
                samples[i].push_back(bestTime([&] {
                    for (int k = 0; k < 100; ++k) (void)matMul(m, nullptr, x.data(), counts[i], y.data(), nullptr);
                }, budget / 5) / 100);
        std::printf("%-16s", sh.name);
        for (size_t i = 0; i < std::size(counts); ++i)
            std::printf("  n=%lld %5.0f (%3.0f)", (long long)counts[i], median(samples[i]) * 1e9,
                        median(samples[i]) * 1e9 / double(counts[i]));
        std::printf("\n");
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    const int64_t rows = 2048, cols = 2048;
    const double budget = argc > 1 ? std::atof(argv[1]) : 0.3;
    if (argc > 2 && std::strcmp(argv[2], "ab") == 0) return abRepacked(budget);
    if (argc > 2 && std::strcmp(argv[2], "decode") == 0) return decodeCompare(budget);
    if (argc > 2 && std::strcmp(argv[2], "levels") == 0) return levelsCompare(budget);
    if (argc > 2 && std::strcmp(argv[2], "rows") == 0) return rowsCompare(budget);
    if (argc > 2 && std::strcmp(argv[2], "tiny") == 0) return tinyCompare(budget);
    if (argc > 2 && std::strcmp(argv[2], "ceiling") == 0) return ceilingCompare(budget);
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
    return abRepacked(budget);
}
