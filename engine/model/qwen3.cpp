// Qwen3 (dense): the dense decoder (model/dense_decoder.h) with an RMS norm on each query and key
// head before RoPE, RoPE on the NeoX pairing, and no projection biases; with pooling_type 4, a
// reranker (Qwen3-Reranker: the yes / no head on the last token, softmaxed).
#include "model/architectures.h"
#include "model/dense_decoder.h"

namespace hearth::model {

Result<std::unique_ptr<Architecture>> loadQwen3(const gguf::File& file) {
    DenseVariant v;
    v.arch = "qwen3";
    v.qkNorm = true;
    v.neox = true;
    v.rankHead = true; // Qwen3-Reranker
    return bindArchitecture<DenseDecoder>(file, v);
}

} // namespace hearth::model
