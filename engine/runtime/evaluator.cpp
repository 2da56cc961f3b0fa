// The Evaluator (hearth/evaluate.h): a model on the CPU with one sequence's worth of KV cache,
// run one whole sequence per call; and llama.cpp's chunked perplexity on top of it.
#include "hearth/evaluate.h"

#include "backend/cpu/thread_pool.h"
#include "hearth/gguf.h"
#include "model/arch.h"
#include "runtime/model_runner.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <thread>

namespace hearth {

namespace {

constexpr int kBlock = 16;

class EvaluatorImpl final : public Evaluator {
public:
    static Result<std::unique_ptr<Evaluator>> create(const EvaluatorConfig& c) {
        if (c.contextLength < 1) return invalidArgument("context length must be positive");
        auto e = std::unique_ptr<EvaluatorImpl>(new EvaluatorImpl());
        HEARTH_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(c.modelPath));
        e->m_file.emplace(std::move(f));
        HEARTH_ASSIGN_OR_RETURN(e->m_arch, model::loadArchitecture(*e->m_file));
        Result<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::fromGguf(*e->m_file);
        if (!tok) return tok.status().withContext("the model's tokenizer");
        e->m_tokenizer.emplace(std::move(*tok));
        const int threads = c.threads > 0 ? c.threads : int(std::max(1u, std::thread::hardware_concurrency()));
        e->m_pool = std::make_unique<cpu::ThreadPool>(std::clamp(threads, 1, 256));
        e->m_ctx = c.contextLength;
        runtime::RunnerConfig rc;
        rc.device = "cpu";
        rc.kvType = c.kvType;
        rc.blockSize = kBlock;
        rc.numBlocks = (c.contextLength + kBlock - 1) / kBlock;
        rc.contextLength = c.contextLength;
        rc.stateSlots = 1; // hybrid models: the one sequence's recurrent state
        rc.pool = e->m_pool.get();
        HEARTH_ASSIGN_OR_RETURN(e->m_runner, runtime::ModelRunner::create(*e->m_arch, rc));
        for (int32_t b = 0; b < rc.numBlocks; ++b) e->m_table.push_back(b);
        return std::unique_ptr<Evaluator>(std::move(e));
    }

    const tokenizer::Tokenizer& tokenizer() const override { return *m_tokenizer; }
    int32_t nVocab() const override { return m_arch->dims().nVocab; }
    int32_t bosToken() const override { return m_tokenizer->bos(); }
    bool addsBos() const override { return m_tokenizer->addBos(); }
    int32_t contextLength() const override { return m_ctx; }
    std::vector<std::string> weightNames() const override {
        std::vector<std::string> names;
        for (const graph::Weight& w : m_arch->weights()) names.push_back(w.name);
        return names;
    }

    Status logits(std::span<const int32_t> tokens, int32_t firstWanted, std::vector<float>& out) override {
        const int64_t n = int64_t(tokens.size());
        if (n < 1 || n > m_ctx)
            return outOfRange(std::to_string(n) + " tokens do not fit the evaluator's context of " + std::to_string(m_ctx));
        if (firstWanted < 0 || firstWanted >= n) return invalidArgument("first wanted row outside the sequence");
        for (int32_t t : tokens)
            if (t < 0 || t >= nVocab()) return outOfRange("token id " + std::to_string(t) + " outside the vocabulary");
        graph::Batch batch;
        batch.blockTables = {std::span<const int32_t>(m_table.data(), size_t((n + kBlock - 1) / kBlock))};
        for (int64_t p = 0; p < n; ++p) batch.tokens.push_back({tokens[size_t(p)], int32_t(p), 0, p >= firstWanted});
        if (m_runner->stateSlots() > 0) batch.states.push_back({-1, 0, {}}); // from position 0, every time
        return m_runner->forward(batch, out);
    }

    Status setObserver(ActivationObserver* observer) override {
        for (size_t i = 0; i < m_runner->deviceCount(); ++i)
            HEARTH_RETURN_IF_ERROR(m_runner->device(i).setActivationObserver(observer));
        return Status::ok();
    }

private:
    EvaluatorImpl() = default;
    std::optional<gguf::File> m_file; // the weights point into it: destroyed last
    std::unique_ptr<model::Architecture> m_arch;
    std::optional<tokenizer::Tokenizer> m_tokenizer;
    std::unique_ptr<cpu::ThreadPool> m_pool;
    std::unique_ptr<runtime::ModelRunner> m_runner;
    std::vector<int32_t> m_table;
    int32_t m_ctx = 0;
};

} // namespace

Result<std::unique_ptr<Evaluator>> Evaluator::open(const EvaluatorConfig& config) {
    return EvaluatorImpl::create(config);
}

void accumulateNll(std::span<const float> logits, int32_t nVocab, std::span<const int32_t> next, double& nll,
                   double& nll2) {
    for (size_t r = 0; r < next.size(); ++r) {
        const float* row = logits.data() + r * size_t(nVocab);
        float max = row[0];
        for (int32_t i = 1; i < nVocab; ++i) max = std::max(max, row[i]);
        double sum = 0.0;
        for (int32_t i = 0; i < nVocab; ++i) sum += std::exp(row[i] - max);
        const double v = -(double(row[next[r]] - max) - std::log(sum));
        nll += v;
        nll2 += v * v;
    }
}

Result<PerplexityResult> perplexity(Evaluator& eval, std::span<const int32_t> tokens, int32_t ctx, int32_t maxChunks,
                                    const std::function<void(int32_t, double)>& progress, bool allRows) {
    if (ctx < 16) return invalidArgument("the context must be at least 16 tokens");
    if (ctx > eval.contextLength())
        return invalidArgument("context " + std::to_string(ctx) + " exceeds the evaluator's " +
                               std::to_string(eval.contextLength()));
    if (int64_t(tokens.size()) < 2 * int64_t(ctx))
        return invalidArgument("the text has " + std::to_string(tokens.size()) + " tokens; perplexity with a context of " +
                               std::to_string(ctx) + " needs at least " + std::to_string(2 * ctx));
    const int32_t available = int32_t(tokens.size() / size_t(ctx));
    const int32_t chunks = maxChunks < 0 ? available : std::min(maxChunks, available);
    if (chunks < 1) return invalidArgument("no chunk to score");
    const int32_t first = ctx / 2, nVocab = eval.nVocab();
    PerplexityResult r;
    double nll = 0.0, nll2 = 0.0;
    std::vector<int32_t> chunk(static_cast<size_t>(ctx));
    std::vector<float> logits;
    for (int32_t c = 0; c < chunks; ++c) {
        std::copy_n(tokens.begin() + int64_t(c) * ctx, ctx, chunk.begin());
        if (eval.addsBos() && eval.bosToken() >= 0) chunk[0] = eval.bosToken();
        // Rows first .. ctx-2 predict tokens first+1 .. ctx-1 (of the original chunk).
        HEARTH_RETURN_IF_ERROR(eval.logits(chunk, allRows ? 0 : first, logits));
        const std::span<const int32_t> next(tokens.data() + int64_t(c) * ctx + first + 1, size_t(ctx - first - 1));
        const size_t skip = allRows ? size_t(first) * size_t(nVocab) : 0;
        accumulateNll(std::span<const float>(logits).subspan(skip), nVocab, next, nll, nll2);
        r.scored += ctx - first - 1;
        r.running.push_back(std::exp(nll / double(r.scored)));
        if (progress) progress(c, r.running.back());
    }
    r.chunks = chunks;
    const double mean = nll / double(r.scored);
    double var = nll2 / double(r.scored) - mean * mean;
    r.ppl = std::exp(mean);
    r.pplError = var > 0.0 && r.scored > 1 ? std::sqrt(var / double(r.scored - 1)) * r.ppl : 0.0;
    return r;
}

} // namespace hearth
