// Turning a batch into a step's input arrays, with the checks every backend relies on.
#include "graph/step.h"

#include <algorithm>
#include <string>

namespace hearth::graph {

int64_t roundTableLength(int64_t len) {
    int64_t r = 64;
    while (r < len) r *= 2;
    return r;
}

Result<StepShape> prepareStep(const Batch& batch, int64_t nVocab, int blockSize, int numBlocks, StepInputs& in) {
    if (blockSize <= 0) return invalidArgument("step: block size must be positive");
    const size_t n = batch.tokens.size(), nSeq = batch.blockTables.size();
    in.ids.resize(n);
    in.positions.resize(n);
    in.slots.resize(n);
    in.info.resize(2 * n);
    in.wanted.clear();
    in.tables.clear();
    size_t total = 0;
    for (const auto& t : batch.blockTables) total += t.size();
    const int64_t tableLen = roundTableLength(int64_t(total));
    in.tables.reserve(size_t(tableLen));
    in.seqOffsets.resize(nSeq);
    for (size_t s = 0; s < nSeq; ++s) {
        in.seqOffsets[s] = int32_t(in.tables.size());
        for (int32_t b : batch.blockTables[s]) {
            if (b < 0 || b >= numBlocks)
                return invalidArgument("block id " + std::to_string(b) + " outside the K/V pool");
            in.tables.push_back(b);
        }
    }
    in.tables.resize(size_t(tableLen), 0);
    for (size_t i = 0; i < n; ++i) {
        const BatchToken& t = batch.tokens[i];
        if (t.token < 0 || int64_t(t.token) >= nVocab)
            return outOfRange("token id " + std::to_string(t.token) + " outside the vocabulary");
        if (t.seq < 0 || size_t(t.seq) >= nSeq) return invalidArgument("batch token names an unknown sequence");
        if (t.pos < 0) return invalidArgument("negative position");
        const auto& table = batch.blockTables[size_t(t.seq)];
        if (size_t(t.pos / blockSize) >= table.size())
            return invalidArgument("position " + std::to_string(t.pos) + " of a sequence has no KV slot");
        const int32_t offset = in.seqOffsets[size_t(t.seq)];
        in.ids[i] = t.token;
        in.positions[i] = t.pos;
        in.slots[i] = table[size_t(t.pos / blockSize)] * blockSize + t.pos % blockSize;
        in.info[2 * i] = t.pos;
        in.info[2 * i + 1] = offset;
        if (t.wantLogits) in.wanted.push_back(int32_t(i));
    }
    return StepShape{int64_t(n), int64_t(in.wanted.size()), tableLen};
}

} // namespace hearth::graph
