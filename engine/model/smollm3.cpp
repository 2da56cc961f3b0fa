// SmolLM3: the llama decoder (model/dense_decoder.h) with RoPE on adjacent pairs, except every
// fourth layer (3, 7, 11, ...), which attends without positions (NoPE), as llama.cpp runs it.
#include "model/architectures.h"
#include "model/dense_decoder.h"

namespace hearth::model {

Result<std::unique_ptr<Architecture>> loadSmolLm3(const gguf::File& file) {
    DenseVariant v;
    v.arch = "smollm3";
    v.noRopeEvery = 4;
    return bindArchitecture<DenseDecoder>(file, v);
}

} // namespace hearth::model
