// The interface every drafter of speculative decoding implements: given a sequence's tokens so
// far, propose how it continues; the engine verifies the proposal in one batched step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hearth::spec {

class Drafter {
public:
    virtual ~Drafter() = default;
    // tokens: the prompt followed by the generated tokens; the first promptLength are the
    // prompt. Appends at most maxDraft proposed next tokens to `out` (none: no proposal).
    virtual void propose(std::span<const int32_t> tokens, int promptLength, int maxDraft,
                         std::vector<int32_t>& out) = 0;
};

} // namespace hearth::spec
