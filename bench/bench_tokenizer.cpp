// Times our tokenizer: encodes a text file with a GGUF vocabulary, REPS times, and prints the
// best time and the token count (bench/tokenizer.sh runs it beside llama.cpp's tokenizer).
#include "hearth/gguf.h"
#include "hearth/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: bench_tokenizer VOCAB.gguf TEXT_FILE [REPS]\n");
        return 2;
    }
    const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
    hearth::gguf::ReadOptions options;
    options.requireTensorData = false;
    auto file = hearth::gguf::File::open(argv[1], options);
    if (!file) {
        std::fprintf(stderr, "%s: %s\n", argv[1], file.status().toString().c_str());
        return 2;
    }
    auto tok = hearth::tokenizer::Tokenizer::fromGguf(*file);
    if (!tok) {
        std::fprintf(stderr, "%s: %s\n", argv[1], tok.status().toString().c_str());
        return 2;
    }
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    double best = 1e30;
    size_t count = 0;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        auto ids = tok->encode(text, false, false);
        const auto t1 = std::chrono::steady_clock::now();
        if (!ids) {
            std::fprintf(stderr, "encode failed: %s\n", ids.status().toString().c_str());
            return 1;
        }
        count = ids->size();
        best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::printf("%.1f %zu\n", best, count);
    return 0;
}
