// Qwen3.5 MoE (qwen35moe: Qwen3.5-35B-A3B and larger): Qwen3.5's hybrid layers (qwen35.cpp)
// with each feed-forward a mixture of experts, softmax-routed over the top expert_used_count with
// renormalized weights, plus a shared expert of expert_shared_feed_forward_length gated by the
// sigmoid of its own one-row projection.
#include "model/architectures.h"

namespace hearth::model {

Result<std::unique_ptr<Architecture>> loadQwen35Moe(const gguf::File& file) { return loadQwen35Family(file, true); }

} // namespace hearth::model
