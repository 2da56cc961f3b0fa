// The steps every device's forward test runs on two runners of one model, ours and the reference
// device's, comparing the logits: a chunked prefill of two sequences (the second in scattered
// blocks), a copy-on-write of a block between steps, and decode steps of one or two tokens.
#pragma once

#include "model_harness.h"

#include <array>
#include <string>
#include <vector>

namespace hearth::test {

inline Status runBoth(runtime::ModelRunner& ours, runtime::ModelRunner& ref, int nVocab, const graph::Batch& batch,
                      Comparison& c) {
    std::vector<float> expected, got;
    HEARTH_RETURN_IF_ERROR(ref.forward(batch, expected).withContext("reference"));
    HEARTH_RETURN_IF_ERROR(ours.forward(batch, got));
    return c.add(expected, got, size_t(nVocab)) ? Status::ok() : internalError("logit count differs");
}

// Steps of 30 + 12 and 7 + 9 tokens of two sequences (the second in blocks 7 and 5; block 0 of the
// first copied to 4 before the second step, which replaces it in its table), then three decode
// steps of one or two tokens; logits of every token (allLogits) or of each sequence's last.
inline Comparison compareSteps(runtime::ModelRunner& ours, runtime::ModelRunner& ref, int nVocab, bool allLogits) {
    Comparison c;
    std::vector<int32_t> t0{1}, t1{1};
    for (int i = 0; i < 40; ++i) t0.push_back((i * 7919 + 13) % (nVocab - 300) + 256);
    for (int i = 0; i < 24; ++i) t1.push_back((i * 104729 + 71) % (nVocab - 300) + 256);
    std::vector<int32_t> table0{0, 1, 2};
    const std::vector<int32_t> table1{7, 5};
    for (auto [a0, b0, a1, b1] : {std::array<int, 4>{0, 30, 0, 12}, std::array<int, 4>{30, 37, 12, 21},
                                  std::array<int, 4>{37, 38, 21, 22}, std::array<int, 4>{38, 39, 22, 22},
                                  std::array<int, 4>{39, 40, 22, 23}}) {
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
                            std::vector<std::string>* fallbacks = nullptr) {
    Comparison c;
    auto ours = loadModel(path, options);
    if (!ours) return c.error = ours.status().toString(), c;
    LoadOptions refOptions = options;
    refOptions.device = "ref";
    refOptions.gpuLayers = -1;
    refOptions.cpuMoeLayers = 0;
    auto ref = loadModel(path, refOptions);
    if (!ref) return c.error = "reference: " + ref.status().toString(), c;
    if (fallbacks) *fallbacks = (*ours)->runner->fallbacks();
    return compareSteps(*(*ours)->runner, *(*ref)->runner, (*ref)->dims().nVocab, allLogits);
}

} // namespace hearth::test
