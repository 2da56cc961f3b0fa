// Qwen3 (dense): the dense decoder (model/dense_decoder.h) with an RMS norm on each query and key
// head before RoPE, RoPE on the NeoX pairing, and no projection biases.
#include "model/architectures.h"
#include "model/dense_decoder.h"

namespace hearth::model {

Result<std::unique_ptr<Architecture>> loadQwen3(const gguf::File& file) {
    DenseVariant v;
    v.arch = "qwen3";
    v.qkNorm = true;
    v.neox = true;
    return bindArchitecture<DenseDecoder>(file, v);
}

} // namespace hearth::model
