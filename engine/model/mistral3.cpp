// Mistral 3 (Ministral 3 and the like): the llama decoder (model/dense_decoder.h) with RoPE on
// adjacent pairs, YaRN from the file's rope.scaling keys, and llama 4's attention temperature on q
// past each original context's length of positions; experts when the file counts them. It reads
// an image's embeddings (Pixtral's, model/pixtral.cpp) in place of their placeholder tokens, seen
// causally as llama.cpp's mtmd decodes them.
#include "model/architectures.h"
#include "model/dense_decoder.h"

namespace hearth::model {

Result<std::unique_ptr<Architecture>> loadMistral3(const gguf::File& file) {
    DenseVariant v;
    v.arch = "mistral3";
    v.optionalBiases = true;
    v.attnTemperature = true;
    v.takesImages = true;
    v.ffn = DenseVariant::Ffn::ExpertsIfCounted;
    return bindArchitecture<DenseDecoder>(file, v);
}

} // namespace hearth::model
