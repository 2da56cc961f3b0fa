// A model loaded for a forward test: the GGUF file, its architecture, and a ModelRunner on one
// device ("ref", "cpu", "vulkan:0", "cuda:0", with an optional layer split), plus the steps over
// two sequences every backend's forward test compares against the reference device.
#pragma once

#include "backend/cpu/thread_pool.h"
#include "graph/step.h"
#include "hearth/gguf.h"
#include "logit_diff.h"
#include "model/arch.h"
#include "runtime/model_runner.h"

#include <QtGlobal>

#include <array>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hearth::test {

struct LoadedModel {
    std::optional<gguf::File> file; // the weights point into it: declared first, destroyed last
    std::unique_ptr<model::Architecture> arch;
    std::unique_ptr<runtime::ModelRunner> runner;
    const model::ModelDims& dims() const { return arch->dims(); }
};

struct LoadOptions {
    std::string device = "cpu";
    KvType kvType = KvType::F32;
    int numBlocks = 8;
    int blockSize = 16;
    int gpuLayers = -1;
    int cpuMoeLayers = 0;  // of those, the layers whose experts run on the CPU (-1: all)
    int contextLength = 0; // per sequence (RunnerConfig::contextLength); 0: not given
    int stateSlots = 4;    // recurrent models' state slots (RunnerConfig::stateSlots)
    cpu::ThreadPool* pool = nullptr;
};

// Gives a batch's sequences the recurrent state a runner with state slots needs: sequence s in
// slot s, starting empty when its first token is at position 0, else continuing.
inline void addStates(graph::Batch& batch, const runtime::ModelRunner& runner) {
    batch.states.clear();
    if (runner.stateSlots() == 0) return;
    for (size_t s = 0; s < batch.blockTables.size(); ++s) {
        int32_t first = -1;
        for (const graph::BatchToken& t : batch.tokens)
            if (t.seq == int(s)) {
                first = t.pos;
                break;
            }
        batch.states.push_back({first == 0 ? -1 : int32_t(s), int32_t(s), {}});
    }
}

// The model at `path` on options.device; the error is the status's text.
inline Result<std::unique_ptr<LoadedModel>> loadModel(const std::string& path, const LoadOptions& o) {
    auto m = std::make_unique<LoadedModel>();
    HEARTH_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(path));
    m->file.emplace(std::move(f));
    HEARTH_ASSIGN_OR_RETURN(m->arch, model::loadArchitecture(*m->file));
    runtime::RunnerConfig rc;
    rc.device = o.device;
    rc.gpuLayers = o.gpuLayers;
    rc.cpuMoeLayers = o.cpuMoeLayers;
    rc.kvType = o.kvType;
    rc.blockSize = o.blockSize;
    rc.numBlocks = o.numBlocks;
    rc.contextLength = o.contextLength;
    rc.stateSlots = o.stateSlots;
    rc.pool = o.pool;
    HEARTH_ASSIGN_OR_RETURN(m->runner, runtime::ModelRunner::create(*m->arch, rc));
    return m;
}

// "a, b, c" (or "(none)"), for messages listing fallbacks.
inline std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "(none)" : s;
}

// Teacher-forced logits [ids][vocab] of the model at `path` on `device`, its blocks in reverse
// order (so paging is really used); empty on failure (with a warning). The load serves the
// context per sequence that ref_logits gives llama.cpp (tokens + 16, which llama.cpp pads to
// 256), so both choose the same LongRoPE factors.
inline std::vector<float> teacherForced(const std::string& path, const std::vector<int32_t>& ids,
                                        const std::string& device) {
    LoadOptions o;
    o.device = device;
    o.numBlocks = int(ids.size() + 15) / 16;
    o.contextLength = int(ids.size() + 16 + 255) / 256 * 256;
    auto m = loadModel(path, o);
    if (!m) {
        qWarning("%s", m.status().toString().c_str());
        return {};
    }
    std::vector<int32_t> table(static_cast<size_t>(o.numBlocks));
    std::iota(table.rbegin(), table.rend(), 0);
    graph::Batch batch;
    batch.blockTables.emplace_back(table);
    for (size_t i = 0; i < ids.size(); ++i) batch.tokens.push_back({ids[i], int32_t(i), 0, true});
    addStates(batch, *(*m)->runner);
    std::vector<float> logits;
    const Status s = (*m)->runner->forward(batch, logits);
    if (!s.isOk()) qWarning("%s", s.toString().c_str());
    return s.isOk() ? logits : std::vector<float>{};
}

struct Comparison : LogitDiff {
    std::string error;
};

inline Status runBoth(runtime::ModelRunner& ours, runtime::ModelRunner& ref, int nVocab, const graph::Batch& batch,
                      Comparison& c) {
    std::vector<float> expected, got;
    HEARTH_RETURN_IF_ERROR(ref.forward(batch, expected).withContext("reference"));
    HEARTH_RETURN_IF_ERROR(ours.forward(batch, got));
    return c.add(expected, got, size_t(nVocab)) ? Status::ok() : internalError("logit count differs");
}

// Steps of 30 + 12 and 7 + 9 tokens of two sequences (the second in blocks 7 and 5; block 0 of the
// first copied to 4 before the second step, which replaces it in its table: a fork's
// copy-on-write), then with `decode` three decode steps of one or two tokens; logits of every
// token (allLogits) or of each sequence's last.
inline Comparison compareSteps(runtime::ModelRunner& ours, runtime::ModelRunner& ref, int nVocab, bool allLogits,
                               bool decode = true) {
    Comparison c;
    std::vector<int32_t> t0{1}, t1{1};
    for (int i = 0; i < 40; ++i) t0.push_back((i * 7919 + 13) % (nVocab - 300) + 256);
    for (int i = 0; i < 24; ++i) t1.push_back((i * 104729 + 71) % (nVocab - 300) + 256);
    std::vector<int32_t> table0{0, 1, 2};
    const std::vector<int32_t> table1{7, 5};
    const std::array<int, 4> steps[] = {{0, 30, 0, 12}, {30, 37, 12, 21}, {37, 38, 21, 22}, {38, 39, 22, 22}, {39, 40, 22, 23}};
    for (const auto& [a0, b0, a1, b1] : std::span(steps, decode ? 5 : 2)) {
        if (a0 == 30) {
            for (runtime::ModelRunner* r : {&ours, &ref})
                if (const Status s = r->copyBlock(0, 4); !s.isOk()) return c.error = s.toString(), c;
            table0[0] = 4;
        }
        graph::Batch batch;
        batch.blockTables = {table0, table1};
        for (int p = a0; p < b0; ++p) batch.tokens.push_back({t0[size_t(p)], p, 0, allLogits || p == b0 - 1});
        for (int p = a1; p < b1; ++p) batch.tokens.push_back({t1[size_t(p)], p, 1, allLogits || p == b1 - 1});
        addStates(batch, ref); // recurrent models: sequence s in state slot s
        if (const Status s = runBoth(ours, ref, nVocab, batch, c); !s.isOk()) return c.error = s.toString(), c;
    }
    return c;
}

// The model at `path` on options.device and on "ref" (every layer), compared by compareSteps; the
// device's fallbacks into *fallbacks.
inline Comparison compareOn(const std::string& path, const LoadOptions& options, bool allLogits,
                            std::vector<std::string>* fallbacks = nullptr, bool decode = true) {
    Comparison c;
    auto ours = loadModel(path, options);
    if (!ours) return c.error = ours.status().toString(), c;
    LoadOptions refOptions = options;
    refOptions.device = "ref";
    refOptions.gpuLayers = -1;
    refOptions.cpuMoeLayers = 0;
    refOptions.pool = nullptr;
    auto ref = loadModel(path, refOptions);
    if (!ref) return c.error = "reference: " + ref.status().toString(), c;
    if (fallbacks) *fallbacks = (*ours)->runner->fallbacks();
    return compareSteps(*(*ours)->runner, *(*ref)->runner, (*ref)->dims().nVocab, allLogits, decode);
}

// compareSteps' two prefill steps only (no decode), on options.device and on the reference device.
inline Comparison compareWithReference(const std::string& path, const LoadOptions& options, bool allLogits) {
    return compareOn(path, options, allLogits, nullptr, false);
}

// Greedy generation of `steps` tokens after `prompt` (prefilled in one step), one sequence in
// blocks 0, 1, 2, ...; returns the ids and each chosen token's logits row. With `forced`, step i
// feeds forced[i] on instead of its own choice (teacher forcing: two models compared step by
// step on the same history).
struct Greedy {
    std::vector<int32_t> ids;
    std::vector<float> logits; // [steps][vocab]
    std::string error;
};
inline Greedy greedy(LoadedModel& m, const std::vector<int32_t>& prompt, int steps,
                     const std::vector<int32_t>* forced = nullptr) {
    Greedy g;
    const int V = m.dims().nVocab, bs = 16;
    std::vector<int32_t> tokens = prompt, table;
    int computed = 0;
    for (int step = 0; step < steps; ++step) {
        while (int(table.size()) * bs < int(tokens.size())) table.push_back(int32_t(table.size()));
        graph::Batch batch;
        batch.blockTables = {table};
        for (int p = computed; p < int(tokens.size()); ++p)
            batch.tokens.push_back({tokens[size_t(p)], p, 0, p == int(tokens.size()) - 1});
        computed = int(tokens.size());
        addStates(batch, *m.runner);
        std::vector<float> logits;
        const Status s = m.runner->forward(batch, logits);
        if (!s.isOk()) return g.error = s.toString(), g;
        if (logits.size() != size_t(V)) return g.error = "expected one row of logits", g;
        const int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        g.ids.push_back(next);
        g.logits.insert(g.logits.end(), logits.begin(), logits.end());
        tokens.push_back(forced && size_t(step) < forced->size() ? (*forced)[size_t(step)] : next);
    }
    return g;
}

} // namespace hearth::test
