// A step as the engine hands it over (tokens of several sequences with their block tables), its
// shape (what a graph is built for) and the input arrays every backend reads: token ids,
// positions, K/V slots, per-token attention info, the block tables and the wanted rows.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <span>
#include <vector>

namespace hearth::graph {

// One token of a batch: which sequence, at which position, and whether its logits are wanted.
struct BatchToken {
    int32_t token = 0;
    int32_t pos = 0;
    int seq = 0;            // index into Batch::blockTables
    bool wantLogits = false;
    bool wantHidden = false; // its final normed hidden state (an embedding's rows)
    int32_t embed = -1;      // >= 0: its input is row `embed` of Batch::embeds, not its token's row
    int32_t gridX = 0, gridY = 0; // its column and row in a 2-D grid (StepInput::GridX, GridY)
    // M-RoPE models (qwen35): the position its rotation takes, which an image's tokens share and
    // text after an image continues from (-1: pos); an image's token also rotates by
    // (ropePos + gridY, ropePos + gridX) in M-RoPE's height and width sections.
    int32_t ropePos = -1;
};

// A sequence's recurrent state for a step (models with recurrent layers): the slot its first
// token of the step reads (-1: start from zeros, position 0), the slot the step leaves it in, and
// snapshots to take on the way: (p, slot) stores the state after the first p tokens (after the
// token at position p - 1, which must be in the step).
struct SequenceState {
    int32_t read = -1;
    int32_t write = -1;
    std::vector<std::pair<int32_t, int32_t>> snapshots;
};

struct Batch {
    std::vector<BatchToken> tokens;
    std::vector<std::span<const int32_t>> blockTables; // per sequence
    // Per sequence, for models with recurrent layers (else empty): then every sequence's tokens
    // are consecutive in the batch and in position order.
    std::vector<SequenceState> states;
    // Models that read StepInput::HiddenIn: one row of hiddenWidth values per token, in order.
    std::span<const float> hiddenIn;
    int64_t hiddenWidth = 0;
    // Input embeddings (an image's) that tokens with embed >= 0 take in place of their token's
    // row: rows of embedWidth values (the model's width), each used by at most one token.
    std::span<const float> embeds;
    int64_t embedWidth = 0;
    // The step's tokens attend within their sequences, not causally (an image's tokens seen at
    // once, graph::AttentionParams::causal false): each sequence's new tokens must all be here.
    bool withinSequence = false;
};

// What a step's graph depends on: the token count, how many rows want logits, and the length of
// the block-table array (rounded up so that steps of one size share a graph).
struct StepShape {
    int64_t tokens = 0;
    int64_t wanted = 0;
    int64_t tableLen = 0;
    int64_t hidden = 0; // rows whose final normed hidden state is wanted
    int64_t embeds = 0; // input embeddings given with the batch (StepInput::EmbedRows rows)
    bool withinSequence = false; // Batch::withinSequence
    bool operator==(const StepShape&) const = default;
};

// The table length a step with `len` block ids is built for: 64, 128, 256, ...
int64_t roundTableLength(int64_t len);

struct StepInputs {
    std::vector<int32_t> ids, positions, slots, info, tables, wanted, hidden;
    std::vector<int32_t> gridX, gridY; // [n] (StepInput::GridX, GridY)
    std::vector<int32_t> ropeT, ropeH, ropeW; // [n] (StepInput::RopeT, RopeH, RopeW)
    std::vector<int32_t> stateInfo; // [n][3] (see StepInput::StateInfo); empty without states
    std::vector<float> hiddenIn;    // [n][hiddenWidth] (see StepInput::HiddenIn); empty without
    std::vector<float> embeds;      // [m][embedWidth] (StepInput::EmbedRows); empty without
    std::vector<int32_t> embedIndex; // [n] (StepInput::EmbedIndex); empty without embeds
    std::vector<int32_t> seqOffsets; // scratch: where each sequence's table starts in `tables`
};

// Checks the batch (token ids in the vocabulary, known sequences, non-negative positions, every
// position of each sequence up to its furthest one mapped by its table, block ids in the pool)
// and fills `in` (reusing its memory). With states (stateSlots > 0): every sequence has one, its
// tokens are one run in position order, slots are in [0, stateSlots), no two sequences write one
// slot, and snapshots fall inside the step. Returns the step's shape.
Result<StepShape> prepareStep(const Batch& batch, int64_t nVocab, int blockSize, int numBlocks, StepInputs& in,
                              int stateSlots = 0);

} // namespace hearth::graph
