// Decode's weight streaming without the rest of the model: the matrices of a llama3.2-1b-shaped
// model (16 layers of q, k, v, o, gate, up, down, then a tied 128256-row output matrix) repacked
// as the engine does, multiplied by one token in layer order, against bench_membw's read probe on
// a buffer as large (the bound). Samples alternate A B A B; prints GB/s and the fraction of the
// read bound, for the whole stream and for its two parts (the layers, the output matrix).
// Usage: bench_decode_stream [threads 2] [type Q4_0|Q8_0] [pairs 5]
#include "backend/cpu/matmul.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/thread_pool.h"
#include "hearth/quant.h"
#include "read_probe.h"

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

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// A rows × cols matrix of type t whose rows repeat a quantized random 64-row template (the
// values do not matter for timing; quantizing 1 GB would).
struct Weights {
    std::vector<uint8_t> data;
    ref::Matrix m;
    std::unique_ptr<PackedMatrix> packed;
};

bool makeWeights(Type t, int64_t rows, int64_t cols, std::mt19937& rng, Weights& out) {
    constexpr int64_t kTemplate = 64;
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> f(size_t(kTemplate * cols));
    for (auto& v : f) v = dist(rng);
    const uint64_t rb = *quant::rowBytes(t, uint64_t(cols));
    std::vector<uint8_t> tmpl(rb * kTemplate);
    if (!quant::quantizeRows(t, f.data(), tmpl.data(), kTemplate, cols, 1).isOk()) return false;
    out.data.resize(rb * uint64_t(rows));
    for (int64_t r = 0; r < rows; ++r)
        std::memcpy(out.data.data() + rb * uint64_t(r), tmpl.data() + rb * uint64_t(r % kTemplate), rb);
    out.m = ref::Matrix{out.data.data(), t, cols, rows, rb};
    auto p = PackedMatrix::pack(out.m);
    if (!p.isOk()) return false;
    out.packed = std::make_unique<PackedMatrix>(std::move(*p));
    out.data.clear();
    out.data.shrink_to_fit(); // only the repacked copy is read, as in the engine
    return true;
}

} // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
    const std::string typeName = argc > 2 ? argv[2] : "Q4_0";
    const int pairs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
    const Type t = typeName == "Q8_0" ? Type::Q8_0 : Type::Q4_0;
    if (!canRepack(t, Isa::Avx512) || !canRepack(Type::Q6_K, Isa::Avx512)) {
        std::printf("bench_decode_stream: this CPU has no AVX-512 VNNI repacked kernels\n");
        return 0;
    }
    constexpr int64_t E = 2048, kvDim = 512, F = 8192, kLayers = 16, kVocab = 128256;
    struct Shape {
        int64_t rows, cols;
    };
    const Shape layer[] = {{E, E}, {kvDim, E}, {kvDim, E}, {E, E}, {F, E}, {F, E}, {E, F}};
    std::mt19937 rng(11);
    std::vector<Weights> ws;
    ws.reserve(kLayers * 7 + 1);
    for (int l = 0; l < kLayers; ++l)
        for (const Shape& s : layer) {
            ws.emplace_back();
            if (!makeWeights(t, s.rows, s.cols, rng, ws.back())) return 1;
        }
    ws.emplace_back(); // output: Q6_K for Q4_0 models, Q8_0 for Q8_0 ones (as llama.cpp writes)
    if (!makeWeights(t == Type::Q8_0 ? Type::Q8_0 : Type::Q6_K, kVocab, E, rng, ws.back())) return 1;
    size_t bytes = 0;
    for (const Weights& w : ws) bytes += w.packed->bytes();

    ThreadPool pool(threads);
    std::vector<float> x(size_t(F), 0.5f);
    std::vector<float> y(static_cast<size_t>(kVocab));
    const size_t words = bytes / 8;
    uint64_t* buf = hearth::bench::allocateProbeBuffer(words * 8);
    if (!buf) return 1;
    for (size_t i = 0; i < words; ++i) buf[i] = i * 0x9E3779B97F4A7C15ull;
    const size_t outBytes = ws.back().packed->bytes();
    std::vector<double> stream, read, layers, output;
    for (int p = 0; p < pairs; ++p) {
        const auto t0 = Clock::now();
        for (size_t i = 0; i + 1 < ws.size(); ++i)
            if (!matMul(ws[i].m, ws[i].packed.get(), x.data(), 1, y.data(), &pool, Isa::Avx512).isOk())
                return 1;
        const auto t1 = Clock::now();
        if (!matMul(ws.back().m, ws.back().packed.get(), x.data(), 1, y.data(), &pool, Isa::Avx512).isOk())
            return 1;
        const auto t2 = Clock::now();
        const auto secs = [](auto d) { return std::chrono::duration<double>(d).count(); };
        stream.push_back(double(bytes) / secs(t2 - t0) * 1e-9);
        layers.push_back(double(bytes - outBytes) / secs(t1 - t0) * 1e-9);
        output.push_back(double(outBytes) / secs(t2 - t1) * 1e-9);
        read.push_back(hearth::bench::readBandwidth(buf, words, threads, 1).best());
    }
    const double s = median(stream), r = median(read);
    std::printf("%s decode stream, %d thread(s), %.0f MB: matMul %.1f GB/s, read probe %.1f GB/s "
                "(%.0f%% of it; %.1f ms per token)\n",
                typeName.c_str(), threads, double(bytes) * 1e-6, s, r, 100.0 * s / r,
                double(bytes) / s * 1e-6);
    // The same stream split: the layers' small matrices, then the one large output matrix.
    std::printf("  layers %.0f MB at %.1f GB/s (%.0f%%), output %.0f MB (%s) at %.1f GB/s (%.0f%%)\n",
                double(bytes - outBytes) * 1e-6, median(layers), 100.0 * median(layers) / r,
                double(outBytes) * 1e-6, t == Type::Q8_0 ? "Q8_0" : "Q6_K", median(output),
                100.0 * median(output) / r);
    return 0;
}
