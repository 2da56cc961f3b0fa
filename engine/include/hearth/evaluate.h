// Scoring a model on text, outside the serving engine: the logits of every position of a
// sequence (one sequence, fresh cache each time), llama.cpp's perplexity over chunks of a token
// list, and an observer of the inputs of every weight matrix multiplication (for imatrix).
#pragma once

#include "hearth/engine.h"
#include "hearth/status.h"
#include "hearth/tokenizer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

// Sees the activations that multiply the model's weights, as the CPU program runs them. The
// program calls it only when one is set (nullptr by default: no cost to normal inference).
class ActivationObserver {
public:
    virtual ~ActivationObserver() = default;
    // out = x · Wᵀ with x [rows][cols] (contiguous) and W the weight named `weight`.
    virtual void onMatMul(std::string_view weight, const float* x, int64_t rows, int64_t cols) = 0;
    // Experts: for token t and slot e, expert ids[t * used + e] of W [nExperts][..][cols]
    // multiplies x[t][shared ? 0 : e][cols] (x rows: tokens * (shared ? 1 : used)).
    virtual void onMatMulId(std::string_view weight, const float* x, bool shared, const int32_t* ids,
                            int64_t tokens, int64_t used, int64_t cols, int64_t nExperts) = 0;
};

struct EvaluatorConfig {
    std::string modelPath;
    int32_t contextLength = 512; // longest sequence scored at once
    int32_t threads = 0;         // 0: all cores
    KvType kvType = KvType::F32;
};

class Evaluator {
public:
    static Result<std::unique_ptr<Evaluator>> open(const EvaluatorConfig& config);
    virtual ~Evaluator() = default;

    virtual const tokenizer::Tokenizer& tokenizer() const = 0;
    virtual int32_t nVocab() const = 0;
    virtual int32_t bosToken() const = 0;     // -1 when the model has none
    virtual bool addsBos() const = 0;          // the vocabulary asks for BOS (llama.cpp's add_bos)
    virtual int32_t contextLength() const = 0;
    // Weight names of the model's matrix multiplications' matrices, for checks.
    virtual std::vector<std::string> weightNames() const = 0;

    // Runs tokens as one sequence from position 0 (a fresh cache) and returns the logits of
    // positions [firstWanted, size) as [size - firstWanted][vocab].
    virtual Status logits(std::span<const int32_t> tokens, int32_t firstWanted, std::vector<float>& out) = 0;
    // Observer of the next runs' matrix inputs (nullptr: none). Set it before the first run.
    virtual Status setObserver(ActivationObserver* observer) = 0;
};

// llama.cpp's perplexity: the tokens (BOS first when the model adds one) cut into chunks of ctx
// tokens, each run alone with its first token replaced by BOS, and the second half of each
// chunk scored (each logits row predicts the next token; the last row predicts nothing).
struct PerplexityResult {
    int32_t chunks = 0;
    int64_t scored = 0;           // tokens scored
    double ppl = 0.0;
    double pplError = 0.0;        // ± estimate, as llama.cpp prints it
    std::vector<double> running;  // ppl after each chunk
};
// Errors: fewer than 2 * ctx tokens (as llama.cpp), ctx < 16. allRows asks for every row's
// logits, as llama.cpp's imatrix tool does (so that a graph that trims the last layer to the
// wanted rows still shows every token to an observer).
Result<PerplexityResult> perplexity(Evaluator& eval, std::span<const int32_t> tokens, int32_t ctx,
                                    int32_t maxChunks = -1,
                                    const std::function<void(int32_t chunk, double ppl)>& progress = {},
                                    bool allRows = false);
// NLL of the scored rows of one chunk's logits (rows predict tokens[first + 1 ...]); exposed so
// tests can score another engine's logits the same way.
void accumulateNll(std::span<const float> logits, int32_t nVocab, std::span<const int32_t> next, double& nll,
                   double& nll2);

} // namespace hearth
