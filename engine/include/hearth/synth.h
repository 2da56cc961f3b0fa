// Random-weight models of real shapes with real tokenizers, for tests and benchmarks: the same
// seed gives the same underlying weights in every type, so quantized files compare to F32 ones.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hearth {

struct SynthOptions {
    std::string preset;     // see synthPresets()
    std::string typeOrMix;  // "F32", "Q8_0", "Q4_K_M", ...
    std::string vocabPath;  // a GGUF whose tokenizer.* keys are copied
    std::string outPath;
    uint64_t seed = 42;
    int threads = 1;
    int layers = 0;         // override the preset's layer count (0: keep it)
    int experts = 0;        // override a mixture-of-experts preset's expert count (0: keep it)
    int pooling = -1;       // >= 0: write <arch>.pooling_type (embeddings: 1 mean, 2 cls, 3 last)
    // Called after each tensor: (index, count, name).
    std::function<void(size_t, size_t, const std::string&)> progress;
};

struct SynthPreset {
    std::string name;
    std::string description;
};

std::vector<SynthPreset> synthPresets();

// Writes the model; weights are normal(0, 0.02), norms 1, biases normal(0, 0.02).
Status synthesizeModel(const SynthOptions& options);

} // namespace hearth
