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

namespace {

// The [n][3] state rows of a batch whose tokens are already checked.
Status fillStateInfo(const Batch& batch, int stateSlots, StepInputs& in) {
    const size_t n = batch.tokens.size(), nSeq = batch.blockTables.size();
    in.stateInfo.clear();
    if (stateSlots <= 0) return Status::ok();
    if (batch.states.size() != nSeq)
        return invalidArgument("step: a model with recurrent layers needs a state for every sequence");
    auto inRange = [&](int32_t s) { return s >= 0 && s < stateSlots; };
    std::vector<int32_t> writer(size_t(stateSlots), -1); // sequence writing each slot
    for (size_t s = 0; s < nSeq; ++s) {
        const SequenceState& st = batch.states[s];
        if (!inRange(st.write) || (st.read != -1 && !inRange(st.read)))
            return invalidArgument("step: state slot outside the pool");
        if (writer[size_t(st.write)] >= 0) return invalidArgument("step: two sequences write one state slot");
        writer[size_t(st.write)] = int32_t(s);
        for (const auto& [p, slot] : st.snapshots) {
            if (!inRange(slot)) return invalidArgument("step: snapshot slot outside the pool");
            if (writer[size_t(slot)] >= 0 && writer[size_t(slot)] != int32_t(s))
                return invalidArgument("step: two sequences write one state slot");
            writer[size_t(slot)] = int32_t(s);
            (void)p;
        }
    }
    for (size_t s = 0; s < nSeq; ++s) {
        const int32_t r = batch.states[s].read;
        if (r >= 0 && writer[size_t(r)] >= 0 && writer[size_t(r)] != int32_t(s))
            return invalidArgument("step: a sequence reads a state slot another one writes");
    }
    in.stateInfo.assign(3 * n, -1);
    std::vector<int32_t> seen(nSeq, -1); // the last position of each sequence in the step
    int prevSeq = -1;
    size_t placed = 0;
    for (size_t i = 0; i < n; ++i) {
        const BatchToken& t = batch.tokens[i];
        const SequenceState& st = batch.states[size_t(t.seq)];
        const bool first = seen[size_t(t.seq)] < 0;
        if (!first && (prevSeq != t.seq || t.pos != seen[size_t(t.seq)] + 1))
            return invalidArgument("step: a sequence's tokens must be consecutive and in position order");
        if (first && st.read < 0 && t.pos != 0)
            return invalidArgument("step: a sequence starting from an empty state must start at position 0");
        seen[size_t(t.seq)] = t.pos;
        prevSeq = t.seq;
        in.stateInfo[3 * i] = first ? st.read : st.write;
        in.stateInfo[3 * i + 1] = st.write;
        for (const auto& [p, slot] : st.snapshots)
            if (p == t.pos + 1) {
                if (in.stateInfo[3 * i + 2] >= 0) return invalidArgument("step: two snapshots at one position");
                in.stateInfo[3 * i + 2] = slot;
                ++placed;
            }
    }
    // Every snapshot must have found its token (positions within a sequence are distinct).
    size_t wanted = 0;
    for (const SequenceState& st : batch.states) wanted += st.snapshots.size();
    if (placed != wanted) return invalidArgument("step: a snapshot position lies outside the step");
    return Status::ok();
}

// The given input embeddings: whole rows, each taken by exactly one token (so that a graph of m
// rows serves every step of m given rows).
Status fillEmbeds(const Batch& batch, StepInputs& in) {
    in.embeds.clear();
    in.embedIndex.clear();
    const size_t n = batch.tokens.size();
    if (batch.embeds.empty()) {
        for (const BatchToken& t : batch.tokens)
            if (t.embed >= 0) return invalidArgument("step: a token takes an input embedding the batch does not give");
        return Status::ok();
    }
    if (batch.embedWidth <= 0 || batch.embeds.size() % uint64_t(batch.embedWidth) != 0)
        return invalidArgument("step: input embeddings are not whole rows of width " + std::to_string(batch.embedWidth));
    const int64_t rows = int64_t(batch.embeds.size()) / batch.embedWidth;
    std::vector<uint8_t> used(size_t(rows), 0);
    in.embedIndex.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const int32_t e = batch.tokens[i].embed;
        if (e >= rows) return invalidArgument("step: input embedding row " + std::to_string(e) + " of " + std::to_string(rows));
        if (e >= 0 && used[size_t(e)]++) return invalidArgument("step: two tokens take input embedding row " + std::to_string(e));
        in.embedIndex[i] = e >= 0 ? int32_t(n) + e : int32_t(i);
    }
    for (uint8_t u : used)
        if (!u) return invalidArgument("step: an input embedding row no token takes");
    in.embeds.assign(batch.embeds.begin(), batch.embeds.end());
    return Status::ok();
}

} // namespace

Result<StepShape> prepareStep(const Batch& batch, int64_t nVocab, int blockSize, int numBlocks, StepInputs& in,
                              int stateSlots) {
    if (blockSize <= 0) return invalidArgument("step: block size must be positive");
    const size_t n = batch.tokens.size(), nSeq = batch.blockTables.size();
    in.ids.resize(n);
    in.positions.resize(n);
    in.gridX.resize(n);
    in.gridY.resize(n);
    in.ropeT.resize(n);
    in.ropeH.resize(n);
    in.ropeW.resize(n);
    in.slots.resize(n);
    in.info.resize(2 * n);
    in.wanted.clear();
    in.hidden.clear();
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
        in.gridX[i] = t.gridX;
        in.gridY[i] = t.gridY;
        in.ropeT[i] = t.ropePos >= 0 ? t.ropePos : t.pos;
        in.ropeH[i] = in.ropeT[i] + t.gridY;
        in.ropeW[i] = in.ropeT[i] + t.gridX;
        in.slots[i] = table[size_t(t.pos / blockSize)] * blockSize + t.pos % blockSize;
        in.info[2 * i] = t.pos;
        in.info[2 * i + 1] = offset;
        if (t.wantLogits) in.wanted.push_back(int32_t(i));
        if (t.wantHidden) in.hidden.push_back(int32_t(i));
    }
    HEARTH_RETURN_IF_ERROR(fillStateInfo(batch, stateSlots, in));
    in.hiddenIn.clear();
    if (batch.hiddenWidth > 0 || !batch.hiddenIn.empty()) {
        if (batch.hiddenWidth <= 0 || batch.hiddenIn.size() != n * uint64_t(batch.hiddenWidth))
            return invalidArgument("step: " + std::to_string(batch.hiddenIn.size()) + " hidden input values for " +
                                   std::to_string(n) + " tokens of width " + std::to_string(batch.hiddenWidth));
        in.hiddenIn.assign(batch.hiddenIn.begin(), batch.hiddenIn.end());
    }
    HEARTH_RETURN_IF_ERROR(fillEmbeds(batch, in));
    StepShape shape{int64_t(n), int64_t(in.wanted.size()), tableLen, int64_t(in.hidden.size())};
    shape.embeds = batch.embedWidth > 0 ? int64_t(batch.embeds.size()) / batch.embedWidth : 0;
    shape.withinSequence = batch.withinSequence;
    return shape;
}

} // namespace hearth::graph
