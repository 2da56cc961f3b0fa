// The activation of a vision tower's feed-forward as llama.cpp's projector files choose it
// (clip.use_gelu, clip.use_silu, else quick GELU): one reading for the towers that honour the
// keys (clip_mlp.cpp, pixtral.cpp).
#pragma once

#include "hearth/gguf.h"
#include "hearth/status.h"

#include <cstdint>

namespace hearth::model {

enum class FfnOp : uint8_t { Gelu, Silu, QuickGelu };

// GELU with clip.use_gelu, SiLU with clip.use_silu, quick GELU (x·σ(1.702x)) with neither; both
// set is an error.
inline Result<FfnOp> visionFfnOp(const gguf::File& f) {
    bool gelu = false, silu = false;
    if (f.has("clip.use_gelu")) {
        HEARTH_ASSIGN_OR_RETURN(gelu, f.getBool("clip.use_gelu"));
    }
    if (f.has("clip.use_silu")) {
        HEARTH_ASSIGN_OR_RETURN(silu, f.getBool("clip.use_silu"));
    }
    if (gelu && silu) return invalidFormat("clip.use_gelu and clip.use_silu are both set");
    return gelu ? FfnOp::Gelu : silu ? FfnOp::Silu : FfnOp::QuickGelu;
}

} // namespace hearth::model
