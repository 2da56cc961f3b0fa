// Times grammar-constrained decoding: the token-mask cost per generated token on a vocabulary
// (cold states walk the trie, repeated states hit the mask cache), and, given a model, decoding
// with and without a grammar side by side (A B A B) through the engine.
#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "hearth/grammar.h"
#include "hearth/tokenizer.h"
#include "sample/grammar_constraint.h"
#include "sample/sampler.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

using namespace hearth;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

// JSON documents of the kind structured output produces.
const char* const kDocuments[] = {
    "{\"name\": \"Ada Lovelace\", \"born\": 1815, \"fields\": [\"mathematics\", \"computing\"], \"notes\": "
    "\"She wrote the first published algorithm intended for a machine, and foresaw that such engines could "
    "compose music.\"}",
    "{\"city\": \"Oslo\", \"forecast\": [{\"day\": \"Mon\", \"high\": 3.5, \"low\": -2, \"sky\": \"cloudy\"}, "
    "{\"day\": \"Tue\", \"high\": 5, \"low\": 0.25, \"sky\": \"rain\"}], \"alerts\": null, \"ok\": true}",
    "{\"items\": [{\"id\": 1, \"title\": \"Fix the \\\"quoted\\\" bug\", \"tags\": [\"bug\", \"ui\"]}, {\"id\": 2, "
    "\"title\": \"Ünïcödé — 日本語 text\", \"tags\": []}], \"total\": 2}",
};

int maskCost(const char* vocabPath) {
    gguf::ReadOptions options;
    options.requireTensorData = false;
    auto file = gguf::File::open(vocabPath, options);
    if (!file) {
        std::fprintf(stderr, "%s: %s\n", vocabPath, file.status().toString().c_str());
        return 2;
    }
    auto tok = tokenizer::Tokenizer::fromGguf(*file);
    if (!tok) {
        std::fprintf(stderr, "%s: %s\n", vocabPath, tok.status().toString().c_str());
        return 2;
    }
    auto t0 = Clock::now();
    auto trie = grammar::TokenTrie::build(*tok);
    std::printf("vocabulary %d tokens, trie %zu nodes, built in %.1f ms\n", tok->vocabSize(), trie->numNodes(),
                msSince(t0));
    auto g = grammar::parseGbnf(grammar::anyJsonObjectGbnf());
    if (!g) {
        std::fprintf(stderr, "json grammar: %s\n", g.status().toString().c_str());
        return 1;
    }
    std::vector<float> logits(size_t(tok->vocabSize()));
    sample::Rng rng(1);
    for (float& l : logits) l = float(rng.uniform() * 10.0);
    SamplingParams sp;
    sp.temperature = 1.0f;
    sample::Sampler sampler(sp);

    std::vector<double> all, cold, warm, sampleMasked, samplePlain;
    for (int pass = 0; pass < 2; ++pass) {
        for (const char* doc : kDocuments) {
            auto ids = tok->encode(doc, false, false);
            if (!ids) return 1;
            grammar::GrammarConstraint c(*g, trie, tok->eogTokens());
            for (int32_t id : *ids) {
                auto t = Clock::now();
                const auto mask = c.allowed();
                const double maskMs = msSince(t);
                t = Clock::now();
                sampler.sample(logits, {}, mask);
                sampleMasked.push_back(msSince(t));
                t = Clock::now();
                sampler.sample(logits, {});
                samplePlain.push_back(msSince(t));
                t = Clock::now();
                if (!c.accept(id).isOk()) {
                    std::fprintf(stderr, "the grammar refused token %d of: %s\n", id, doc);
                    return 1;
                }
                const double ms = maskMs + msSince(t);
                all.push_back(ms);
                (pass == 0 ? cold : warm).push_back(ms);
            }
        }
    }
    std::printf("mask + advance per token (ms): first pass median %.3f p90 %.3f max %.3f | "
                "second pass median %.3f p90 %.3f max %.3f (%zu tokens per pass)\n",
                percentile(cold, 0.5), percentile(cold, 0.9), percentile(cold, 1.0), percentile(warm, 0.5),
                percentile(warm, 0.9), percentile(warm, 1.0), cold.size());
    std::printf("sampling at temperature 1 (ms): with the mask median %.3f, without %.3f\n",
                percentile(sampleMasked, 0.5), percentile(samplePlain, 0.5));
    return 0;
}

// A sink that records the token count and wakes the caller at the end.
class WaitSink final : public TokenSink {
public:
    void onToken(const TokenInfo& t) override {
        if (t.id >= 0) ++tokens;
    }
    void onFinish(FinishReason, const Usage& u) override {
        std::lock_guard<std::mutex> lock(mu);
        usage = u;
        done = true;
        cv.notify_all();
    }
    void onError(const Status& e) override {
        std::lock_guard<std::mutex> lock(mu);
        error = e.toString();
        done = true;
        cv.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return done; });
    }
    int tokens = 0;
    Usage usage;
    std::string error;

private:
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
};

int decodeAB(const char* modelPath, int pairs, int maxTokens) {
    EngineConfig cfg;
    cfg.modelPath = modelPath;
    cfg.contextLength = 1024;
    auto engine = Engine::create(cfg);
    if (!engine) {
        std::fprintf(stderr, "%s: %s\n", modelPath, engine.status().toString().c_str());
        return 2;
    }
    // Free text inside one JSON string: the model decides every token, the grammar checks each.
    auto g = grammar::parseGbnf("root ::= \"{\\\"story\\\": \\\"\" ( [^\"\\\\\\x00-\\x1f] | \"\\\\\" [\"\\\\nt] )* \"\\\"}\"");
    if (!g) {
        std::fprintf(stderr, "grammar: %s\n", g.status().toString().c_str());
        return 1;
    }
    auto prompt = (*engine)->tokenizer().encode("Once upon a time", true, false);
    if (!prompt) return 1;
    auto run = [&](bool constrained, double& msPerToken) {
        GenerationRequest r;
        r.prompt = *prompt;
        r.sampling.temperature = 0.0f;
        r.maxTokens = maxTokens;
        r.ignoreEos = true;
        if (constrained) r.grammar = *g;
        auto sink = std::make_shared<WaitSink>();
        r.sink = sink;
        if (!(*engine)->submit(std::move(r))) return false;
        sink->wait();
        if (!sink->error.empty() || sink->usage.completionTokens < 2) return false;
        msPerToken = sink->usage.generationMs / double(sink->usage.completionTokens - 1);
        return true;
    };
    double warm = 0.0;
    run(false, warm);
    run(true, warm);
    std::vector<double> plain, constrained;
    for (int i = 0; i < pairs; ++i) {
        double a = 0.0, b = 0.0;
        if (!run(false, a) || !run(true, b)) {
            std::fprintf(stderr, "a generation failed\n");
            return 1;
        }
        plain.push_back(a);
        constrained.push_back(b);
        std::printf("pair %d: %.2f ms/token plain, %.2f ms/token with the grammar\n", i + 1, a, b);
    }
    const double mp = percentile(plain, 0.5), mc = percentile(constrained, 0.5);
    std::printf("decode median: %.2f ms/token plain, %.2f with the grammar (x%.3f; spread plain %.2f-%.2f, "
                "grammar %.2f-%.2f)\n",
                mp, mc, mc / mp, percentile(plain, 0.0), percentile(plain, 1.0), percentile(constrained, 0.0),
                percentile(constrained, 1.0));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc >= 3 && std::strcmp(argv[1], "--model") == 0) {
        const int pairs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
        const int tokens = argc > 4 ? std::max(8, std::atoi(argv[4])) : 64;
        return decodeAB(argv[2], pairs, tokens);
    }
    if (argc != 2) {
        std::fprintf(stderr, "usage: bench_grammar VOCAB.gguf\n       bench_grammar --model MODEL.gguf [PAIRS] [TOKENS]\n");
        return 2;
    }
    return maskCost(argv[1]);
}
