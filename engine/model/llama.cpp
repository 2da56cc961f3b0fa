// Llama 2 / 3.x (and Mistral, TinyLlama, SmolLM): the dense decoder (model/dense_decoder.h) with
// RoPE on adjacent pairs, llama3's per-dimension frequency factors when the file has rope_freqs,
// q/k/v biases when the file has them, and a mixture of experts (Mixtral) when it counts experts.
// Loaded with a projector (LLaVA's CLIP and MLP, model/clip_mlp.cpp), it reads an image's
// embeddings in place of their placeholder tokens, seen causally as llama.cpp's mtmd decodes them.
#include "model/architectures.h"
#include "model/dense_decoder.h"

namespace hearth::model {

Result<std::unique_ptr<Architecture>> loadLlama(const gguf::File& file, const ArchitectureOptions& options) {
    DenseVariant v;
    v.arch = "llama";
    v.optionalBiases = true;
    v.takesImages = options.projector;
    v.ffn = DenseVariant::Ffn::ExpertsIfCounted;
    return bindArchitecture<DenseDecoder>(file, v);
}

} // namespace hearth::model
