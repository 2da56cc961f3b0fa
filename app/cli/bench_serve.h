// The workload and measurements behind `hearth-cli bench-serve`.
#pragma once

#include "hearth/engine.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace hearth::cli {

struct BenchOptions {
    std::vector<int> concurrency{1, 4, 16};
    int promptLen = 128;
    int genLen = 64;
    int sharedPrefix = 0;
    int longPrompt = 0;
    int requests = 0; // per run; 0: the concurrency
    bool sequential = true;
};

// One run at concurrency c (and its baselines): the fields of one entry of "runs".
Result<nlohmann::ordered_json> runOne(Engine& engine, const BenchOptions& options, int c, uint64_t& seed);

// The cache's size and how many `seqLen`-token sequences fit, paged vs contiguous allocation.
nlohmann::ordered_json kvCapacity(const Engine& engine, int seqLen);

void printTableHeader(const nlohmann::ordered_json& report);
void printTableRow(const nlohmann::ordered_json& run);

} // namespace hearth::cli
