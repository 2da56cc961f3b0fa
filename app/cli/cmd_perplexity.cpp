// `hearth-cli perplexity` and `hearth-cli imatrix`: llama.cpp's chunked perplexity of a model on a
// text file, and the importance matrix collected while computing it (written as GGUF).
#include "commands.h"

#include "hearth/evaluate.h"
#include "hearth/imatrix.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace hearth::cli {

namespace {

const char* kPerplexityHelp =
    "usage: hearth-cli perplexity MODEL.gguf --text FILE [--ctx N] [--chunks K] [--threads N]\n"
    "  llama.cpp's method: the text (BOS first) in chunks of N tokens (default 512), each run\n"
    "  alone with BOS as its first token; the second half of each chunk is scored.\n";
const char* kImatrixHelp =
    "usage: hearth-cli imatrix MODEL.gguf --text FILE -o OUT.imatrix [--ctx N] [--chunks K]\n"
    "                          [--threads N] [--process-output]\n"
    "  per weight matrix, the sum of each input channel's squared activation over the text's\n"
    "  chunks (per expert for MoE), and the token counts, in llama.cpp's GGUF imatrix format;\n"
    "  `hearth-cli quantize ... --imatrix OUT.imatrix` uses it.\n";

struct Options {
    std::string model, text, out;
    int ctx = 512, chunks = -1, threads = 0;
    bool processOutput = false;
};

// 0: parsed; otherwise the exit code (help printed: 0 via -1).
int parse(Args args, Options& o, const char* name, const char* help, bool imatrix) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        const bool hasValue = i + 1 < args.size();
        if (a == "-h" || a == "--help") {
            std::fputs(help, stdout);
            return -1;
        } else if ((a == "--text" || a == "-f") && hasValue) {
            o.text = std::string(args[++i]);
        } else if (imatrix && a == "-o" && hasValue) {
            o.out = std::string(args[++i]);
        } else if (a == "--ctx" && hasValue) {
            if (!parseInt(args[++i], o.ctx, 16, 1 << 20)) {
                std::fprintf(stderr, "hearth-cli %s: --ctx needs 16 or more\n", name);
                return 2;
            }
        } else if (a == "--chunks" && hasValue) {
            if (!parseInt(args[++i], o.chunks, 1, 1 << 30)) {
                std::fprintf(stderr, "hearth-cli %s: --chunks needs a positive count\n", name);
                return 2;
            }
        } else if (a == "--threads" && hasValue) {
            if (!parseInt(args[++i], o.threads, 1, 256)) {
                std::fprintf(stderr, "hearth-cli %s: --threads needs 1..256\n", name);
                return 2;
            }
        } else if (imatrix && a == "--process-output") {
            o.processOutput = true;
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "hearth-cli %s: unknown or incomplete option '%.*s'\n", name, int(a.size()), a.data());
            return 2;
        } else if (o.model.empty()) {
            o.model = std::string(a);
        } else {
            std::fprintf(stderr, "hearth-cli %s: unexpected argument '%.*s'\n", name, int(a.size()), a.data());
            return 2;
        }
    }
    if (o.model.empty() || o.text.empty() || (imatrix && o.out.empty())) {
        std::fputs(help, stderr);
        return 2;
    }
    return 0;
}

// Loads the model, tokenizes the text and runs perplexity (with `observer` watching); prints
// the running and final figures as llama.cpp does. Returns the exit code.
int evaluate(const Options& o, const char* name, ActivationObserver* observer, int32_t& chunksDone) {
    std::ifstream in(o.text, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "hearth-cli %s: cannot read %s\n", name, o.text.c_str());
        return 2;
    }
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    EvaluatorConfig cfg;
    cfg.modelPath = o.model;
    cfg.contextLength = o.ctx;
    cfg.threads = o.threads;
    auto eval = Evaluator::open(cfg);
    if (!eval) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", o.model.c_str(), eval.status().toString().c_str());
        return 2;
    }
    if (observer) {
        if (Status s = (*eval)->setObserver(observer); !s.isOk()) {
            std::fprintf(stderr, "hearth-cli %s: %s\n", name, s.toString().c_str());
            return 1;
        }
    }
    auto tokens = (*eval)->tokenizer().encode(text, /*addSpecial=*/true, /*parseSpecial=*/false);
    if (!tokens) {
        std::fprintf(stderr, "hearth-cli %s: %s: %s\n", name, o.text.c_str(), tokens.status().toString().c_str());
        return 2;
    }
    std::fprintf(stderr, "%s: %zu tokens, chunks of %d\n", o.text.c_str(), tokens->size(), o.ctx);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = perplexity(**eval, *tokens, o.ctx, o.chunks, [](int32_t c, double ppl) {
        std::printf("[%d]%.4f,", c + 1, ppl);
        std::fflush(stdout);
    }, /*allRows=*/observer != nullptr);
    std::printf("\n");
    if (!r) {
        std::fprintf(stderr, "hearth-cli %s: %s\n", name, r.status().toString().c_str());
        return 2;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r->ppl, r->pplError);
    std::fprintf(stderr, "%d chunks, %lld tokens scored, %.2f s\n", r->chunks, (long long)r->scored, secs);
    chunksDone = r->chunks;
    return 0;
}

} // namespace

int runPerplexity(Args args) {
    Options o;
    if (int rc = parse(args, o, "perplexity", kPerplexityHelp, false); rc != 0) return rc < 0 ? 0 : rc;
    int32_t chunks = 0;
    return evaluate(o, "perplexity", nullptr, chunks);
}

int runImatrix(Args args) {
    Options o;
    if (int rc = parse(args, o, "imatrix", kImatrixHelp, true); rc != 0) return rc < 0 ? 0 : rc;
    imatrix::Collector collector(o.processOutput);
    int32_t chunks = 0;
    if (int rc = evaluate(o, "imatrix", &collector, chunks); rc != 0) return rc;
    if (!collector.status().isOk()) {
        std::fprintf(stderr, "hearth-cli imatrix: %s\n", collector.status().toString().c_str());
        return 1;
    }
    if (collector.entries().empty()) {
        std::fprintf(stderr, "hearth-cli imatrix: no weight matmul was observed\n");
        return 1;
    }
    imatrix::Data data;
    data.entries = collector.entries();
    data.datasets = {o.text};
    data.chunkCount = uint32_t(chunks);
    data.chunkSize = uint32_t(o.ctx);
    if (Status s = imatrix::write(data, o.out); !s.isOk()) {
        std::fprintf(stderr, "hearth-cli imatrix: %s: %s\n", o.out.c_str(), s.toString().c_str());
        return 1;
    }
    std::fprintf(stderr, "hearth-cli: wrote %s (%zu matrices, %d chunks of %d)\n", o.out.c_str(), data.entries.size(),
                 chunks, o.ctx);
    return 0;
}

} // namespace hearth::cli
