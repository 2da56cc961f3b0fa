// CPU paged attention timing: a prompt chunk against a long history, and decode (one token)
// calls, on the shapes of the models we benchmark; prints nanoseconds per (query head, position)
// pair, the median of repetitions, for comparing builds of the kernel.
#include "backend/cpu/attention.h"
#include "backend/cpu/paged_kv.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

using namespace hearth;

namespace {

struct Shape {
    const char* name;
    int headDim, nKvHeads, group, history, nTokens;
};

double timeShape(const Shape& s, KvType type, int reps) {
    const int bs = 16, blocks = (s.history + bs - 1) / bs;
    auto kv = cpu::PagedKvStore::create(1, blocks + 1, bs, s.nKvHeads, s.headDim, type);
    if (!kv) return -1.0;
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    const int64_t row = int64_t(s.nKvHeads) * s.headDim;
    std::vector<float> r(static_cast<size_t>(row));
    // Blocks in a shuffled order, as a cache serving several sequences hands them out.
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    std::iota(table.begin(), table.end(), 1);
    std::shuffle(table.begin(), table.end(), rng);
    for (int p = 0; p < s.history; ++p) {
        for (float& x : r) x = dist(rng);
        const int64_t slot = int64_t(table[size_t(p / bs)]) * bs + p % bs;
        kv->writeKey(0, slot, r.data());
        kv->writeValue(0, slot, r.data());
    }
    const int64_t H = int64_t(s.nKvHeads) * s.group, stride = H * s.headDim;
    std::vector<float> q(size_t(s.nTokens * stride)), out(q.size());
    for (float& x : q) x = dist(rng);
    std::vector<int64_t> rows(size_t(s.nTokens));
    std::vector<int32_t> pos(size_t(s.nTokens));
    for (int t = 0; t < s.nTokens; ++t) {
        rows[size_t(t)] = t;
        pos[size_t(t)] = s.history - s.nTokens + t;
    }
    std::vector<double> ns;
    for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int h = 0; h < s.nKvHeads; ++h) {
            cpu::PagedAttentionCall c;
            c.kv = &*kv;
            c.blockTable = table;
            c.kvHead = h;
            c.group = s.group;
            c.headDim = s.headDim;
            c.scale = 0.125f;
            c.q = q.data();
            c.out = out.data();
            c.rowStride = stride;
            c.rows = rows.data();
            c.positions = pos.data();
            c.nTokens = s.nTokens;
            if (!cpu::pagedAttention(c).isOk()) return -1.0;
        }
        const double dt = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        double pairs = 0.0;
        for (int t = 0; t < s.nTokens; ++t) pairs += double(pos[size_t(t)] + 1);
        ns.push_back(dt / (pairs * double(H)));
    }
    std::sort(ns.begin(), ns.end());
    return ns[ns.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
    const Shape shapes[] = {
        {"1B prompt chunk: 512 tokens, history 1024, D64 gqa4", 64, 8, 4, 1024, 512},
        {"1B decode: history 1000, D64 gqa4", 64, 8, 4, 1000, 1},
        {"tiny prompt chunk: 41 tokens, history 1033, D32 gqa2", 32, 4, 2, 1033, 41},
        {"tiny decode: history 144, D32 gqa2", 32, 4, 2, 144, 1},
        {"qwen0.5B decode: history 1000, D64 gqa7", 64, 2, 7, 1000, 1},
        {"stories260K decode: history 200, D8 gqa2", 8, 4, 2, 200, 1},
        {"stories260K 9-token step: history 200, D8 gqa2", 8, 4, 2, 200, 9},
    };
    std::printf("%-56s %10s %10s\n", "shape (one thread)", "f16 ns", "q8_0 ns");
    for (const Shape& s : shapes)
        std::printf("%-56s %10.3f %10.3f\n", s.name, timeShape(s, KvType::F16, reps), timeShape(s, KvType::Q8_0, reps));
    return 0;
}
