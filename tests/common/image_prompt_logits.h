// What the vision reference tests share to read a prompt with an image through Hearth's text
// model alone: the three steps (the text before the image, the image's embeddings in place of
// placeholder tokens, the text after it) on one device, and the last logits compared with
// llama.cpp's (imagePromptLogits, compareLogits).
#pragma once

#include "model/arch.h"
#include "runtime/model_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace hearth::test {

// A prompt's text ids around one image (mtmd's chunks) and how the model reads the image.
struct ImagePrompt {
    std::vector<int32_t> before, after;
    const std::vector<float>* embeds = nullptr; // [tokens][width], the image's
    int64_t width = 0;                          // the model's
    bool atOnce = false;   // the image's tokens in a step of their own seen at once (Batch::withinSequence)
    bool recurrent = false; // the model has recurrent layers: one state slot, carried from step to step
    // > 0: M-RoPE positions (qwen35): the image's tokens at the temporal position where it starts,
    // by row and column of a grid `columns` wide; the text after it from there plus
    // max(columns, rows).
    int columns = 0, rows = 0;
};

// The last position's logits of the prompt through `arch` on `device`, in three steps as the
// engine takes them. The image's placeholder ids are not 0, as the engine's (a hash of the
// image's pixels).
inline Status imagePromptLogits(const model::Architecture& arch, const std::string& device, const ImagePrompt& p,
                                std::vector<float>& logits) {
    const int64_t tokens = p.width > 0 ? int64_t(p.embeds->size()) / p.width : 0;
    runtime::RunnerConfig rc;
    rc.device = device;
    // Blocks of 16 for the whole prompt, at least 8.
    rc.numBlocks = std::max(8, int((int64_t(p.before.size() + p.after.size()) + tokens) / 16 + 1));
    if (p.recurrent) rc.stateSlots = 1;
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<runtime::ModelRunner> runner, runtime::ModelRunner::create(arch, rc));
    std::vector<int32_t> table(size_t(rc.numBlocks));
    for (size_t i = 0; i < table.size(); ++i) table[i] = int32_t(i);
    const bool mrope = p.columns > 0;
    int32_t pos = 0, ropePos = 0;
    auto step = [&](const std::vector<int32_t>& ids, bool image, bool last) {
        graph::Batch b;
        b.blockTables.push_back(table);
        if (p.recurrent) b.states.push_back({pos == 0 ? -1 : 0, 0, {}});
        for (size_t i = 0; i < ids.size(); ++i) {
            graph::BatchToken t;
            t.token = ids[i];
            t.pos = pos++;
            t.wantLogits = last && i + 1 == ids.size();
            if (image) {
                t.embed = int32_t(i);
                if (mrope) {
                    t.ropePos = ropePos;
                    t.gridX = int32_t(i) % p.columns;
                    t.gridY = int32_t(i) / p.columns;
                }
            } else if (mrope) {
                t.ropePos = ropePos++;
            }
            b.tokens.push_back(t);
        }
        if (image) {
            b.embeds = *p.embeds;
            b.embedWidth = p.width;
            b.withinSequence = p.atOnce;
            if (mrope) ropePos += std::max(p.columns, p.rows);
        }
        return runner->forward(b, logits);
    };
    HEARTH_RETURN_IF_ERROR(step(p.before, false, false));
    std::vector<int32_t> holders(static_cast<size_t>(tokens));
    for (size_t i = 0; i < holders.size(); ++i) holders[i] = int32_t(1000 + 7 * i);
    HEARTH_RETURN_IF_ERROR(step(holders, true, false));
    return step(p.after, false, true);
}

// How far one row of logits is from another: the largest difference and both argmaxes.
struct LogitsDelta {
    float worst = 0.0f;
    size_t argmax = 0, wantArgmax = 0;
};

inline LogitsDelta compareLogits(const std::vector<float>& got, const std::vector<float>& want) {
    LogitsDelta d;
    for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
        d.worst = std::max(d.worst, std::fabs(got[i] - want[i]));
        if (got[i] > got[d.argmax]) d.argmax = i;
        if (want[i] > want[d.wantArgmax]) d.wantArgmax = i;
    }
    return d;
}

} // namespace hearth::test
