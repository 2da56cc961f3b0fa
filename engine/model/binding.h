// Reading an architecture's hyper-parameters ("<arch>.<key>") and binding its tensors as graph
// weights, with the checks every architecture needs (shape, type, data present), and the pieces
// most decoder layers share: the step inputs, self-attention over the paged cache, the logits.
#pragma once

#include "model/arch.h"

#include <array>
#include <optional>
#include <string>
#include <utility>

namespace hearth::model {

class Binder {
public:
    Binder(const gguf::File& file, std::string arch, std::vector<graph::Weight>& weights,
           std::deque<std::vector<float>>& copies)
        : m_file(file), m_arch(std::move(arch)), m_weights(weights), m_copies(copies) {}

    const gguf::File& file() const { return m_file; }
    const std::string& arch() const { return m_arch; }
    bool has(const std::string& key) const { return m_file.has(m_arch + "." + key); }
    // "<arch>.<key>" as an integer (at most 2^30) or float; the fallback when absent.
    Result<int> integer(const std::string& key, std::optional<int> fallback = {}) const;
    Result<float> real(const std::string& key, std::optional<float> fallback = {}) const;
    // block_count: the length of every per-layer key (multi-token-prediction layers included).
    Result<int> layerCount() const;
    // "<arch>.<key>" as one count per layer (each at most 2^30), given once for all layers or as
    // an array of one per layer, in any integer type (llama.cpp's get_key_or_arr); the fallback
    // for every layer when absent.
    Result<std::vector<int>> counts(const std::string& key, std::optional<int> fallback = {}) const;
    // counts() where the architecture needs one value on every layer: that value, or an
    // unsupported error naming the key when the layers differ.
    Result<int> sameCount(const std::string& key, std::optional<int> fallback = {}) const;
    // "<arch>.<key>" as one flag per layer: a bool or integer given once, or an array of them.
    Result<std::vector<bool>> flags(const std::string& key) const;

    bool hasTensor(const std::string& name) const { return m_file.findTensor(name) != nullptr; }
    // A 2-D weight [rows][cols] of a type we can compute with; returns its index.
    Result<int32_t> matrix(const std::string& name, int64_t cols, int64_t rows, int32_t layer);
    // A 3-D weight [nExp][rows][cols] (one matrix per expert); returns its index.
    Result<int32_t> experts(const std::string& name, int64_t cols, int64_t rows, int64_t nExp, int32_t layer);
    // A fused 2-D weight [sum of rows][cols] (q/k/v, or gate and up, stacked along the rows)
    // bound as one weight per row range, in order, each over its part of the same bytes (rows
    // of any type are whole blocks); returns their indices. Shape errors name the whole tensor.
    Result<std::vector<int32_t>> matrixParts(const std::string& name, int64_t cols, const std::vector<int64_t>& rows,
                                             int32_t layer);
    // The first `keep` rows of a 2-D weight [rows][cols] (its shape checked whole); its index.
    Result<int32_t> matrixRows(const std::string& name, int64_t cols, int64_t rows, int64_t keep, int32_t layer);
    // An F32 vector of n values, copied out of the file (tiny, read every step, and between the
    // big matrices, whose pages are released once repacked or uploaded).
    Result<int32_t> vector(const std::string& name, int64_t n, int32_t layer);
    // vector() when the file has it, else -1.
    Result<int32_t> optionalVector(const std::string& name, int64_t n, int32_t layer);
    // An F32 vector the architecture makes itself (not read from the file), as a weight.
    int32_t ownVector(const std::string& name, std::vector<float> values, int32_t layer = -1);
    // A tensor of the file's shape `fileNe` (nDims dimensions) read as a matrix [rows][cols] of
    // the same bytes: a convolution kernel [E][channels][P][P] as [E][channels * P * P]. cols
    // must be a multiple of ne[0], so that each matrix row is whole rows of the file's.
    Result<int32_t> reshapedMatrix(const std::string& name, std::array<int64_t, 4> fileNe, int nDims, int64_t cols,
                                   int64_t rows, int32_t layer);
    // The transpose of a 2-D tensor of the file: its ne {a, b} becomes an F32 matrix [a][b]
    // (ne {b, a}), copied (llama.cpp's projections that the graph transposes before use).
    Result<int32_t> transposedMatrix(const std::string& name, int64_t a, int64_t b, int32_t layer);
    // matrix() as F32, converted once where the file stores another type (small tensors that ops
    // read as floats, such as convolution kernels [C][K]).
    Result<int32_t> f32Matrix(const std::string& name, int64_t cols, int64_t rows, int32_t layer);

private:
    Result<int32_t> tensor(const std::string& name, std::array<int64_t, 4> ne, int nDims, int32_t layer);

    const gguf::File& m_file;
    std::string m_arch;
    std::vector<graph::Weight>& m_weights;
    std::deque<std::vector<float>>& m_copies;
};

// An architecture of class T (constructed from args) bound to the file: what each file's loader returns.
template <typename T, typename... Args>
Result<std::unique_ptr<Architecture>> bindArchitecture(const gguf::File& file, Args&&... args) {
    auto m = std::make_unique<T>(std::forward<Args>(args)...);
    HEARTH_RETURN_IF_ERROR(m->bind(file));
    return std::unique_ptr<Architecture>(std::move(m));
}

// The hyper-parameters of a decoder-only transformer under the usual GGUF keys.
struct DecoderHParams {
    int nLayer = 0, nEmbd = 0, nFf = 0, nHead = 0, nHeadKv = 0;
    int headDim = 0;  // attention.key_length (default nEmbd / nHead)
    int headDimV = 0; // attention.value_length (default headDim)
    int nRot = 0;     // rope.dimension_count (default headDim)
    float ropeBase = 10000.0f;
    float normEps = 1e-5f; // attention.layer_norm_rms_epsilon
    int nVocab = 0;        // rows of token_embd.weight
    int nCtxTrain = 0;
};
// feedForward: whether feed_forward_length is required (MoE files may give only the experts').
// withoutKv: when given, attention.head_count_kv may be 0 on some layers (those without
// attention: lfm2's convolutions), which it marks; the other layers must agree.
Result<DecoderHParams> readDecoderHParams(const Binder& b, bool feedForward = true,
                                          std::vector<bool>* withoutKv = nullptr);
// Which layers use sliding-window attention: attention.sliding_window_pattern as an array of one
// flag per layer (bool or integer), or as n (all but every n-th layer slide; 0: all), else every
// layer but each `defaultEvery`-th. All false when window is 0.
Result<std::vector<bool>> readSlidingLayers(const Binder& b, int nLayer, int window, int defaultEvery);
// RoPE scaling from rope.scaling.{type,factor,original_context_length,attn_factor}: linear
// (positions divided by the factor) or YaRN (as llama.cpp applies it), on top of `base`.
Result<graph::RopeParams> readRopeScaling(const Binder& b, const DecoderHParams& hp, graph::RopeParams base);
// A reranker's output rows: cls.output.weight [outputs][E] (1 <= outputs <= E) and its optional
// bias, bound with `layer`; returns the number of outputs.
struct ClsOutput {
    int32_t weight = -1, bias = -1;
    int outputs = 0;
};
Result<ClsOutput> bindClsOutput(Binder& b, const gguf::TensorInfo& weight, int64_t E, int32_t layer);
// The dimensions the runtime sees, every layer with the same K/V shape.
ModelDims decoderDims(const std::string& arch, const DecoderHParams& hp);

// The step's input tensors, made once per graph.
struct StepTensors {
    graph::TensorId ids = graph::kNone, positions = graph::kNone, slots = graph::kNone, info = graph::kNone,
                    tables = graph::kNone, wanted = graph::kNone, hidden = graph::kNone;
    int64_t n = 0;
    // M-RoPE models: the positions rotations take (StepInput::RopeT, and for a step with an
    // image's tokens RopeH and RopeW); kNone: RoPE by the positions.
    graph::TensorId ropeT = graph::kNone, ropeH = graph::kNone, ropeW = graph::kNone;
    int64_t embeds = 0;          // rows of input embeddings given with the step (StepShape::embeds)
    bool withinSequence = false; // StepShape::withinSequence
};
StepTensors stepTensors(graph::Graph& g, const graph::StepShape& shape);

// The first layer's input [n][E]: x, the tokens' embedding rows as the architecture makes them,
// with the rows of tokens given an input embedding (an image's, used as it is) in their place;
// x itself when the step gives none.
graph::TensorId withGivenEmbeddings(graph::Graph& g, const StepTensors& in, graph::TensorId x);

// The weights of a self-attention block; -1 where the architecture has none.
struct AttentionWeights {
    int32_t wq = -1, wk = -1, wv = -1, wo = -1; // wv -1: V is K's projection (gemma4's full layers)
    int32_t bq = -1, bk = -1, bv = -1;      // projection biases (qwen2)
    int32_t qNorm = -1, kNorm = -1;         // per-head RMS norms before RoPE (qwen3, gemma3)
    int32_t ropeFactors = -1;               // per-dimension frequency factors (llama3)
    // M-RoPE (StepTensors::ropeH set): frequency factors that keep the pairs of the temporal,
    // height and width sections (1) and leave the others unrotated (+inf).
    int32_t mropeFactors[3] = {-1, -1, -1};
    int32_t bo = -1;                        // output projection bias (gpt-oss)
    int32_t sinks = -1;                     // per-head attention sink logits [nHead] (gpt-oss)
    int32_t qMagnitude = -1;                // per-dimension multipliers of q after RoPE [headDim] (phi3)
};

struct AttentionSpec {
    int nHead = 0, nHeadKv = 0, headDim = 0, headDimV = 0;
    graph::RopeParams rope;
    bool rotate = true;     // false: q and k keep no position (NoPE layers: smollm3's every fourth)
    float normEps = 1e-6f;  // of the q/k norms
    float scale = 1.0f;     // on q · k
    int window = 0;         // sliding window (0: every earlier position)
    float softcap = 0.0f;   // attention logit soft-capping (0: none)
    bool vNorm = false;     // RMS-norm each V head (no weight) before caching it (gemma4)
    int kvLayer = -1;       // >= 0: no K/V of its own, attend over this layer's cache (gemma4's shared KV)
    // q's projection gives per head D query values then D gate values; the attention output is
    // multiplied by sigmoid(gate) before the output projection (qwen35's full-attention layers).
    bool qGate = false;
    bool causal = true;     // false: every position attends to every other one (encoders)
};

// The spec of a decoder's attention from its hyper-parameters: its heads and sizes, RoPE over
// nRot dims at the file's base (adjacent pairs; set neox for the other pairing), q/k norms at the
// model's epsilon, scores scaled by 1/sqrt(head size).
AttentionSpec attentionSpec(const DecoderHParams& hp);

// Self-attention of layer `layer` on the normed input x [n][E]: q/k/v projections (with biases and
// q/k norms when given), RoPE, K and V written into the layer's cache, paged attention, and the
// output projection. Returns [n][E].
graph::TensorId selfAttention(graph::Graph& g, const StepTensors& in, const KvSetup& kv, int layer,
                              graph::TensorId x, const AttentionWeights& w, const AttentionSpec& spec);

// The wanted rows of x [n][E], normed and projected to logits [w][vocab]; with a final soft cap
// when cap > 0. Sets g.output(). Does nothing when no row is wanted. The hidden rows, normed
// only, are g.hiddenOutput() [h][E] (what embeddings pool).
void logitsHead(graph::Graph& g, const StepTensors& in, graph::TensorId x, int32_t norm, int32_t output,
                float eps, float cap = 0.0f);

} // namespace hearth::model
