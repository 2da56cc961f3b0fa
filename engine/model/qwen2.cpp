// Qwen2 / Qwen2.5: the dense decoder (model/dense_decoder.h) with biases on the q, k and v
// projections (required) and RoPE on the NeoX pairing (dimension i with i + nRot/2).
#include "model/architectures.h"
#include "model/dense_decoder.h"

namespace hearth::model {

Result<std::unique_ptr<Architecture>> loadQwen2(const gguf::File& file) {
    DenseVariant v;
    v.arch = "qwen2";
    v.biases = true;
    v.neox = true;
    return bindArchitecture<DenseDecoder>(file, v);
}

} // namespace hearth::model
