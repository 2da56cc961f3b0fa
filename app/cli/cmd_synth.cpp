// `hearth-cli synth`: writes a random-weight model of a real shape with a real tokenizer.
#include "commands.h"

#include "hearth/gguf.h"
#include "hearth/projector.h"
#include "hearth/synth.h"

#include <charconv>
#include <cstdio>
#include <string>

namespace hearth::cli {

namespace {
const char* kSynthHelp =
    "usage: hearth-cli synth --preset NAME --type TYPE_OR_MIX --vocab VOCAB.gguf -o OUT.gguf\n"
    "                        [--seed S] [--threads N] [--layers N] [--experts N] [--pooling N]\n"
    "                        [--mmproj PROJ.gguf]\n"
    "       hearth-cli synth --list\n"
    "  Weights are normal(0, 0.02) from a generator keyed by (seed, tensor, index): the same seed\n"
    "  gives the same weights in every type. The tokenizer is copied from VOCAB.gguf.\n"
    "  Types llama.cpp only makes with an importance matrix (IQ1_*, IQ2_*, IQ3_XXS) get a flat one\n"
    "  (all ones): random weights have no activations to calibrate, and a flat importance is what\n"
    "  llama.cpp's own backend tests quantize random tensors with.\n"
    "  --mmproj also writes a random-weight vision projector of the family's real layout beside the\n"
    "  model (gemma3 presets: SigLIP, Gemma 3's tower for full shapes, a 2-layer 224-pixel one for\n"
    "  the tiny preset; gemma4 presets: Gemma 4's vision tower, 16-pixel patches pooled 3 x 3, 2 layers\n"
    "  of 64 for the tiny presets; qwen35 presets: Qwen3.5's (Qwen3-VL's) tower, 16-pixel patches\n"
    "  merged 2 x 2, 2 layers of 64 over an 8 x 8 position table for the tiny presets; mistral3\n"
    "  presets: Pixtral, 14-pixel patches merged 2 x 2, Ministral 3's tower for full shapes, 2 layers\n"
    "  of 64 for the tiny preset; llama presets: LLaVA's CLIP with the MLP projector, LLaVA 1.5's\n"
    "  tower for full shapes, 3 layers of 64 on 224 pixels for the tiny preset), its embeddings the\n"
    "  model's width.\n";

// A family's projector: its type, patch side and merge, and its tower for the tiny presets and
// for full shapes (the real model's, F16 as converted files are).
struct Tower {
    int imageSize, nEmbd, nFf, nLayer, nHead;
    int positionSize; // 0: the family's default
};
struct ProjectorPreset {
    const char* arch;
    const char* family;
    int patchSize, merge;
    Tower tiny, full;
};

constexpr ProjectorPreset kProjectorPresets[] = {
    // Gemma 3's SigLIP (a 2-layer 224-pixel one for the tiny preset).
    {"gemma3", "gemma3", 14, 4, {224, 64, 128, 2, 4, 0}, {896, 1152, 4304, 27, 16, 0}},
    // Gemma 4's tower (its image size unused), 16-pixel patches pooled 3 x 3.
    {"gemma4", "gemma4v", 16, 3, {896, 64, 128, 2, 4, 256}, {896, 768, 3072, 16, 12, 0}},
    // Qwen3.5's vision config (Qwen3-VL's): 24 layers of 1024, 16 heads, 48 x 48 positions.
    {"qwen35", "qwen3vl_merger", 16, 2, {896, 64, 128, 2, 4, 64}, {896, 1024, 4096, 24, 16, 0}},
    {"qwen35moe", "qwen3vl_merger", 16, 2, {896, 64, 128, 2, 4, 64}, {896, 1024, 4096, 24, 16, 0}},
    // Ministral 3's Pixtral, 14-pixel patches merged 2 x 2.
    {"mistral3", "pixtral", 14, 2, {448, 64, 128, 2, 4, 0}, {1540, 1024, 4096, 24, 16, 0}},
    // LLaVA 1.5's CLIP ViT-L/14 at 336 pixels with the MLP projector.
    {"llama", "mlp", 14, 1, {224, 64, 128, 3, 4, 0}, {336, 1024, 4096, 24, 16, 0}},
};

// The projector of the model just written at o.outPath: its family from the architecture, its
// output the model's width; the tiny preset gets a tiny tower.
Status writeProjectorFor(const SynthOptions& o, const std::string& path) {
    HEARTH_ASSIGN_OR_RETURN(gguf::File model, gguf::File::open(o.outPath));
    HEARTH_ASSIGN_OR_RETURN(const std::string arch, model.getString("general.architecture"));
    const ProjectorPreset* preset = nullptr;
    std::string known;
    for (const ProjectorPreset& p : kProjectorPresets) {
        if (arch == p.arch) preset = &p;
        known += std::string(known.empty() ? "" : ", ") + p.arch;
    }
    if (!preset)
        return invalidArgument("--mmproj: no projector family for '" + arch + "' models (" + known + " have one)");
    const gguf::TensorInfo* embd = model.findTensor("token_embd.weight");
    if (!embd) return invalidFormat("the model has no token_embd.weight");
    const bool tiny = o.preset.find("tiny") != std::string::npos;
    const Tower& t = tiny ? preset->tiny : preset->full;
    ProjectorSynthOptions p;
    p.family = preset->family;
    p.projectionDim = int(embd->ne[0]);
    p.seed = o.seed;
    p.outPath = path;
    p.patchSize = preset->patchSize;
    p.merge = preset->merge;
    p.imageSize = t.imageSize;
    p.nEmbd = t.nEmbd;
    p.nFf = t.nFf;
    p.nLayer = t.nLayer;
    p.nHead = t.nHead;
    p.positionSize = t.positionSize;
    p.f16 = !tiny;
    return synthesizeProjector(p);
}

template <typename T> bool number(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}
} // namespace

int runSynth(Args args) {
    SynthOptions o;
    std::string mmproj;
    o.threads = 2;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        const bool hasValue = i + 1 < args.size();
        bool ok = true;
        if (a == "-h" || a == "--help") {
            std::fputs(kSynthHelp, stdout);
            return 0;
        } else if (a == "--list") {
            for (const SynthPreset& p : synthPresets())
                std::printf("%-14s %s\n", p.name.c_str(), p.description.c_str());
            return 0;
        } else if (a == "--preset" && hasValue) {
            o.preset = std::string(args[++i]);
        } else if (a == "--type" && hasValue) {
            o.typeOrMix = std::string(args[++i]);
        } else if (a == "--vocab" && hasValue) {
            o.vocabPath = std::string(args[++i]);
        } else if ((a == "-o" || a == "--output") && hasValue) {
            o.outPath = std::string(args[++i]);
        } else if (a == "--seed" && hasValue) {
            ok = number(args[++i], o.seed);
        } else if (a == "--threads" && hasValue) {
            ok = number(args[++i], o.threads) && o.threads > 0 && o.threads <= 256;
        } else if (a == "--layers" && hasValue) {
            ok = number(args[++i], o.layers) && o.layers > 0;
        } else if (a == "--experts" && hasValue) { // fewer (or more) experts of the preset's shape
            ok = number(args[++i], o.experts) && o.experts > 0;
        } else if (a == "--mmproj" && hasValue) {
            mmproj = std::string(args[++i]);
        } else if (a == "--pooling" && hasValue) { // <arch>.pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank
            ok = number(args[++i], o.pooling) && o.pooling >= 0 && o.pooling <= 4;
        } else {
            std::fprintf(stderr, "hearth-cli synth: unknown or incomplete option '%.*s'\n",
                         int(a.size()), a.data());
            return 2;
        }
        if (!ok) {
            std::fprintf(stderr, "hearth-cli synth: bad value for '%.*s'\n", int(a.size()), a.data());
            return 2;
        }
    }
    if (o.preset.empty() || o.typeOrMix.empty() || o.vocabPath.empty() || o.outPath.empty()) {
        std::fputs(kSynthHelp, stderr);
        return 2;
    }
    o.progress = [](size_t i, size_t n, const std::string& name) {
        std::fprintf(stderr, "\r[%zu/%zu] %-40s", i, n, name.c_str());
        if (i == n) std::fprintf(stderr, "\n");
    };
    Status s = synthesizeModel(o);
    if (!s.isOk()) {
        std::fprintf(stderr, "\nhearth-cli: %s: %s\n", o.outPath.c_str(), s.toString().c_str());
        return s.code() == ErrorCode::InvalidArgument || s.code() == ErrorCode::NotFound ||
                       s.code() == ErrorCode::InvalidFormat || s.code() == ErrorCode::IoError
                   ? 2
                   : 1;
    }
    if (!mmproj.empty()) {
        s = writeProjectorFor(o, mmproj);
        if (!s.isOk()) {
            std::fprintf(stderr, "hearth-cli: %s: %s\n", mmproj.c_str(), s.toString().c_str());
            return s.code() == ErrorCode::InvalidArgument ? 2 : 1;
        }
    }
    return 0;
}

} // namespace hearth::cli
