// Per-request sampling settings as the OpenAI API and llama.cpp expose them.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace hearth {

struct SamplingParams {
    float temperature = 1.0f;      // <= 0: greedy (argmax)
    int32_t topK = 0;              // 0: off
    float topP = 1.0f;             // 1: off
    float minP = 0.0f;             // 0: off (relative to the most likely token)
    float typicalP = 1.0f;         // 1: off (locally typical sampling)
    float repetitionPenalty = 1.0f; // llama.cpp style: divide positive logits, multiply negative
    float presencePenalty = 0.0f;  // OpenAI: subtract once for any token already generated
    float frequencyPenalty = 0.0f; // OpenAI: subtract per occurrence
    int32_t penaltyLastN = 64;     // how many recent tokens the penalties look at (-1: all)
    std::vector<std::pair<int32_t, float>> logitBias; // added to the logit; -inf bans
    uint64_t seed = 0;             // same seed + same logits -> same tokens
    bool logprobs = false;         // report the chosen token's log-probability (costs a pass
                                   // over the vocabulary per token)
    int32_t topLogprobs = 0;       // alternatives to report per token (0..20; implies logprobs)

    // Checks ranges; an error names the offending field.
    Status validate(int32_t vocabSize) const;
};

} // namespace hearth
