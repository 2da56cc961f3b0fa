// Qwen3 MoE (Qwen3-30B-A3B, 235B-A22B): Qwen3's attention (per-head q/k RMS norms, NeoX RoPE, no
// biases) over the dense decoder's layers, with each feed-forward a mixture of SwiGLU experts:
// a softmax router picks the top expert_used_count of expert_count experts per token, their
// weights renormalized to sum to one.
#include "model/architectures.h"
#include "model/dense_decoder.h"

namespace hearth::model {

Result<std::unique_ptr<Architecture>> loadQwen3Moe(const gguf::File& file) {
    DenseVariant v;
    v.arch = "qwen3moe";
    v.qkNorm = true;
    v.neox = true;
    v.ffn = DenseVariant::Ffn::Experts;
    v.gating = MoeGating::SoftmaxNormalized;
    return bindArchitecture<DenseDecoder>(file, v);
}

} // namespace hearth::model
