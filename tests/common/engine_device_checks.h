// What the engine tests check on every compute device: stories260K's prompt and the reference
// engine's 64 greedy tokens, a sink that collects each choice's tokens, and the check that an
// engine gives those greedy tokens and that n > 1 sampled choices (forked K/V blocks) equal
// single requests with the matching seeds.
#pragma once

#include "hearth/engine.h"
#include "test_support.h"
#include "token_collector.h"

#include <QtTest>

#include <memory>
#include <string>
#include <vector>

namespace hearth::test {

inline const std::vector<int32_t> kStoriesPrompt{1, 403, 407, 261, 378};
// llama.cpp's greedy continuation of kStoriesPrompt on stories260K.
inline const std::vector<int32_t> kStoriesGreedy{
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
    410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394,
    261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432,
    398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};

// stories260K on `device` with gpuLayers of its 5 layers there (-1: all), a small context and cache.
inline EngineConfig storiesConfig(const std::string& device, int gpuLayers) {
    EngineConfig c;
    c.modelPath = testDataPath("models/stories260K.gguf");
    c.contextLength = 256;
    c.kvMemoryBytes = 4ull << 20;
    c.device = device;
    c.gpuLayers = gpuLayers;
    return c;
}

inline GenerationRequest storiesRequest(std::shared_ptr<TokenCollector> sink, int maxTokens, int n,
                                        float temperature, uint64_t seed) {
    GenerationRequest r = greedyRequest(kStoriesPrompt, std::move(sink), maxTokens, n);
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    return r;
}

// Greedy gives kStoriesGreedy; sampled n = 3 gives, as choice i, what one request with seed + i
// gives, and the choices differ. Call with QVERIFY-style macros' context (a test function).
inline void checkGreedyAndForkedChoices(Engine& engine) {
    auto greedy = std::make_shared<TokenCollector>();
    QVERIFY(engine.submit(storiesRequest(greedy, 64, 1, 0.0f, 0)).isOk());
    QVERIFY(greedy->waitDone());
    QVERIFY2(greedy->error.isOk(), greedy->error.toString().c_str());
    QCOMPARE(greedy->choiceTokens.size(), size_t(1));
    QCOMPARE(greedy->choiceTokens[0], kStoriesGreedy);
    auto multi = std::make_shared<TokenCollector>();
    QVERIFY(engine.submit(storiesRequest(multi, 30, 3, 1.0f, 77)).isOk());
    QVERIFY(multi->waitDone());
    QVERIFY2(multi->error.isOk(), multi->error.toString().c_str());
    QCOMPARE(multi->choiceTokens.size(), size_t(3));
    for (int i = 0; i < 3; ++i) {
        auto single = std::make_shared<TokenCollector>();
        QVERIFY(engine.submit(storiesRequest(single, 30, 1, 1.0f, 77 + uint64_t(i))).isOk());
        QVERIFY(single->waitDone());
        QCOMPARE(single->choiceTokens.size(), size_t(1));
        QCOMPARE(multi->choiceTokens[size_t(i)], single->choiceTokens[0]);
    }
    QVERIFY(multi->choiceTokens[0] != multi->choiceTokens[1]);
}

} // namespace hearth::test
