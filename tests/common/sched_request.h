// The scheduler tests' requests: a prompt of consecutive token ids and a token budget.
#pragma once

#include "sched/scheduler.h"

#include <numeric>

namespace hearth::test {

// Request `id` with a prompt of promptLen tokens firstToken, firstToken + 1, ... and maxTokens to
// generate.
inline sched::Request makeRequest(sched::RequestId id, int promptLen, int maxTokens, int firstToken = 1000) {
    sched::Request r;
    r.id = id;
    r.tokens.resize(static_cast<size_t>(promptLen));
    std::iota(r.tokens.begin(), r.tokens.end(), firstToken);
    r.maxTokens = maxTokens;
    return r;
}

} // namespace hearth::test
