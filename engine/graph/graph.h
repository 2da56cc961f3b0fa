// The backend-neutral description of one forward step: tensors of up to four dimensions (weights
// bound from the model file, the step's inputs, the layers' paged K/V caches, and activations)
// and a list of nodes, each one op of the set below, in execution order. An architecture builds
// it once per step shape (model/arch.h); the reference, the CPU, Vulkan and CUDA all execute the
// same list (backend/device.h).
//
// Shapes follow the GGUF convention: ne[0] is the contiguous dimension, so a [n][E] activation
// has ne = {E, n, 1, 1}. Activations are F32 and contiguous; a view (reshape, or a slice of rows)
// shares its source's storage. Index tensors (token ids, positions, expert ids) are I32.
#pragma once

#include "hearth/quant.h"
#include "hearth/status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace hearth::graph {

inline constexpr int kMaxDims = 4;
inline constexpr int kMaxSrc = 6;

using TensorId = int32_t;
inline constexpr TensorId kNone = -1;

enum class TensorKind : uint8_t {
    Weight,     // a tensor of the model file (Weights below), read-only
    Input,      // one of the step's inputs (StepInput), written by the runtime before each run
    KvCache,    // one layer's paged K or V pool: [slots][kvRow] in the cache's type
    Activation, // written by exactly one node of this graph
    State,      // one recurrent layer's per-sequence state pool: F32 [stateSlots][row]; `value`
                // false: the convolution window, true: the delta-net matrices. Persistent like
                // the K/V pools; read and written in place by SsmConv / DeltaNet
};

// The inputs every step provides (graph/step.h fills them from a batch).
enum class StepInput : uint8_t {
    TokenIds,   // I32 [n]
    Positions,  // I32 [n]: each token's position in its sequence
    KvSlots,    // I32 [n]: where each token's K/V row goes (block * blockSize + offset)
    AttnInfo,   // I32 [n][2]: (position, offset of the token's block table in BlockTables)
    BlockTables,// I32 [T]: every sequence's block table back to back (T rounded up)
    WantedRows, // I32 [w]: the rows whose logits are wanted, ascending
    StateInfo,  // I32 [n][3]: each token's recurrent state (read slot, write slot, snapshot slot),
                // see Op::SsmConv
    HiddenRows, // I32 [h]: the rows whose final normed hidden state is wanted (embeddings), ascending
    HiddenIn,   // F32 [n][E]: a hidden row per token given with the batch (a multi-token-prediction
                // head's input: its target model's final normed hidden state)
    EmbedRows,  // F32 [m][E]: input embeddings given with the batch (an image's), in place of
                // some tokens' embedding rows
    EmbedIndex, // I32 [n]: per token, its input row among [token embeddings; EmbedRows]: i for
                // token i's own, n + k for EmbedRows row k
    GridX,      // I32 [n]: each token's column in a 2-D grid (an image's patches, for 2-D RoPE)
    GridY,      // I32 [n]: each token's row in that grid
    RopeT,      // I32 [n]: M-RoPE's temporal position (BatchToken::ropePos, else the position)
    RopeH,      // I32 [n]: M-RoPE's height position (RopeT + the token's grid row)
    RopeW,      // I32 [n]: M-RoPE's width position (RopeT + the token's grid column)
};
inline constexpr int kStepInputs = 16;
const char* stepInputName(StepInput which);

struct Tensor {
    TensorKind kind = TensorKind::Activation;
    quant::Type type = quant::Type::F32;
    std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
    std::array<uint64_t, kMaxDims> nb{0, 0, 0, 0}; // byte strides (nb[0] = element or block)
    TensorId viewOf = kNone; // a view: shares storage with this tensor, from byte `offset`
    uint64_t offset = 0;
    int32_t weight = -1;     // Weight: index into Weights
    StepInput input = StepInput::TokenIds; // Input
    int32_t layer = -1;      // KvCache, State: the model layer; Activation: the layer that made it
    bool value = false;      // KvCache: the V pool (else K); State: the delta-net matrices (else the conv window)
    std::string name;

    int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
    uint64_t bytes() const; // contiguous size: nb[3] * ne[3]
    bool contiguous() const;
};

// A weight of the model file: its bytes stay in the file's mapping (or a copy the binding keeps).
struct Weight {
    std::string name;
    quant::Type type = quant::Type::F32;
    std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
    int nDims = 1;
    const uint8_t* data = nullptr;
    uint64_t rowBytes = 0; // bytes of one ne[0] row
    int32_t layer = -1;    // the layer that uses it; -1 before the first, nLayer after the last
    uint64_t bytes() const { return rowBytes * uint64_t(ne[1] * ne[2] * ne[3]); }
};

enum class Op : uint8_t {
    GetRows,   // out[i][:] = table[ids[i]][:] (any table type, dequantized)   src: table, ids
    MatMul,    // out[r][j] = Σ_c x[r][c] · W[j][c]                              src: W, x
    MatMulId,  // out[t][e][j] = Σ_c x[t][e or 0][c] · W[ids[t][e]][j][c]       src: W [nExp][rows][cols], x, ids
    RmsNorm,   // out = x / sqrt(mean(x²) + eps) (· w)      per ne0 row          src: x, [w]
    LayerNorm, // out = (x - mean) / sqrt(var + eps) (· w) (+ b)                 src: x, [w], [b]
    Rope,      // rotates the first nRot dims of each head of x [n][heads][d]   src: x, positions, [freq factors]
    KvWrite,   // cache[slots[i]] = rows[i] (converted to the cache's type)     src: cache, rows, slots; out: the cache
    Attention, // paged attention (causal, or within the sequence), see AttentionParams   src: q, kCache, vCache, info, tables, [sinks]
    Add,       // out = a + b, b broadcast over a's rows when it is one row     src: a, b
    Mul,       // out = a * b, likewise                                          src: a, b
    Scale,     // out = x * scale                                                src: x
    Silu,      // out = x / (1 + e^-x)                                           src: x
    Gelu,      // out = 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))               src: x
    SwiGlu,    // out = silu(gate) * up                                          src: gate, up
    GeGlu,     // out = gelu(gate) * up                                          src: gate, up
    Softmax,   // per ne0 row, after multiplying by scale                        src: x
    Softcap,   // out = cap · tanh(x / cap)                                       src: x
    TopK,      // out I32 [rows][k]: indices of the k largest of each row, largest first   src: x
    ArgSort,   // out I32 [rows][ne0]: indices by descending value (stable)      src: x
    Concat,    // out = a and b joined along dim                                 src: a, b
    Copy,      // out = x as a contiguous tensor (of a strided view)             src: x
    Gather,    // out[r][e] = x[r][ids[r][e]]  (F32 [rows][k])                   src: x [rows][N], ids I32 [rows][k]
    WeightedSum, // out[t][j] = Σ_e w[t][e] · y[t][e][j]  (mixing the experts)  src: y [t][k][J], w [t][k]
    SwiGluOai, // gpt-oss: g = min(gate, limit), u = clamp(up, ±limit); out = g·σ(alpha·g)·(u + 1)   src: gate, up
    Sigmoid,   // out = 1 / (1 + e^-x)                                           src: x
    Softplus,  // out = ln(1 + e^x)                                              src: x
    RmsNormGated, // out = x / sqrt(mean(x²) + eps) · w · silu(z)  per ne0 row   src: x, w [ne0], z (x's shape)
    // The recurrent ops read and write a State pool in place. Tokens are taken in batch order in
    // runs: a run is a maximal stretch of consecutive tokens with the same write slot (one
    // sequence's tokens of the step, in position order). A run starts from the state in its first
    // token's read slot (zeros when it is -1), each token advances it, a token with a snapshot
    // slot >= 0 copies the state after it there, and the run ends by storing it in its write slot.
    // Read slots are never another run's write or snapshot slot in the same step.
    SsmConv,   // causal depth-wise convolution over a rolling window of the last K inputs:
               // out[t][c] = Σ_k w[c][k] · x[t - K + 1 + k][c], earlier inputs from the state
               // (its row: the previous K - 1 inputs, oldest first, [K-1][C])
               //                                                                src: x [n][C], w [C][K], state, info
    DeltaNet,  // the gated delta rule over heads of size S (qkv from the convolution: Hk q heads,
               // Hk k heads, Hv v heads per token; v head h reads q/k head h % Hk). q and k are
               // L2-normalized (x / sqrt(Σx² + eps)), q also scaled by 1/sqrt(S); per head,
               // M ← e^g·M; M += beta·(v − M·k)·kᵀ; out = M·q  (M [S v][S k], the state row
               // holds Hv of them)                                              src: qkv [n][(2Hk + Hv)·S], g [n][Hv], beta [n][Hv], state, info
};
inline constexpr int kOpCount = int(Op::DeltaNet) + 1;
const char* opName(Op op);

struct RopeParams {
    int32_t nRot = 0;          // rotated dims per head (even, <= head size)
    bool neox = false;         // pairs (i, i + nRot/2) instead of (2i, 2i + 1)
    float freqBase = 10000.0f;
    float freqScale = 1.0f;    // linear position scaling (1: none)
    // YaRN (extFactor 0: off): ramp between interpolated and extrapolated frequencies over
    // [betaSlow, betaFast] rotations of the original context, magnitude times attnFactor.
    float extFactor = 0.0f;
    float attnFactor = 1.0f;
    float betaFast = 32.0f;
    float betaSlow = 1.0f;
    int32_t nCtxOrig = 0;
    // Attention temperature (mistral3, llama 4; tempScale 0: off): the rotated vector's magnitude
    // also times 1 + tempScale · ln(1 + floor(position / tempLength)). Only for q, and only when
    // every dim of the head rotates (nRot = head size), so that the whole of q is scaled.
    float tempScale = 0.0f;
    int32_t tempLength = 0;
    bool plain() const { return freqScale == 1.0f && extFactor == 0.0f && attnFactor == 1.0f && tempScale == 0.0f; }
    bool operator==(const RopeParams&) const = default;
};

struct AttentionParams {
    int32_t nHeadKv = 0;    // q has nHead heads; head h reads KV head h / (nHead / nHeadKv)
    float scale = 1.0f;     // on q · k
    int32_t window = 0;     // > 0: a token at p attends to positions (p - window, p] only
    float softcap = 0.0f;   // > 0: scores become softcap · tanh(score / softcap)
    int32_t blockSize = 16; // positions per K/V block
    // false (encoders, and an image's tokens in models that see them at once): every token
    // attends to every position of its sequence that the step holds, [0, the furthest position
    // of any of its tokens in the step], a window counted back from its own position; a
    // sequence's tokens (identified by their block table's offset in AttnInfo) must then all be
    // in one step.
    bool causal = true;
};

struct Node {
    Op op = Op::Add;
    TensorId out = kNone;
    std::array<TensorId, kMaxSrc> src{kNone, kNone, kNone, kNone, kNone, kNone};
    int32_t layer = -1;   // the model layer (-1 before the first, nLayer after the last)
    // Part of a mixture's experts (their matrix products over the chosen experts, activations,
    // biases and weighted sum; not the router): what keeping a layer's experts in RAM moves to
    // the CPU (runtime::Devices::cpuExpertLayers).
    bool experts = false;
    float eps = 0.0f;     // RmsNorm, LayerNorm
    float scale = 1.0f;   // Scale, Softmax; SwiGluOai: alpha
    float cap = 0.0f;     // Softcap; SwiGluOai: limit
    int32_t k = 0;        // TopK; DeltaNet: Hk (q/k heads)
    int32_t dim = 0;      // Concat
    RopeParams rope;
    AttentionParams attn;
};

// One step's description. Built through the methods below, which check shapes: the first
// mistake is kept (status()) and later calls return kNone, so an architecture checks once.
class Graph {
public:
    explicit Graph(const std::vector<Weight>* weights = nullptr) : m_weights(weights) {}

    const std::vector<Tensor>& tensors() const { return m_tensors; }
    const std::vector<Node>& nodes() const { return m_nodes; }
    const Tensor& tensor(TensorId id) const { return m_tensors[size_t(id)]; }
    const std::vector<Weight>& weights() const { return *m_weights; }
    const Status& status() const { return m_status; }
    // The tensor holding storage for id (follows views to their root).
    TensorId root(TensorId id) const;

    // The logits [w][vocab] (kNone when no row wants them) and the hidden state before the head.
    TensorId output() const { return m_output; }
    void setOutput(TensorId t) { m_output = t; }
    // The final normed hidden state [h][E] of the HiddenRows (embeddings); kNone when none is wanted.
    TensorId hiddenOutput() const { return m_hiddenOutput; }
    void setHiddenOutput(TensorId t) { m_hiddenOutput = t; }

    // Nodes made from now on belong to this layer.
    void setLayer(int32_t layer) { m_layer = layer; }
    // Nodes made from now on are (not) part of a mixture's experts (Node::experts).
    void setExperts(bool experts) { m_experts = experts; }

    // ---- leaves
    TensorId weight(int32_t index);
    TensorId input(StepInput which, int64_t n, int64_t n1 = 1, quant::Type type = quant::Type::I32);
    TensorId kvCache(int32_t layer, bool value, quant::Type type, int64_t slots, int64_t rowSize);
    TensorId state(int32_t layer, bool value, int64_t slots, int64_t rowSize);

    // ---- views (no node; share storage)
    TensorId reshape(TensorId x, int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1);
    // Rows [first, first + count) of a tensor taken as [rows][ne0].
    TensorId rows(TensorId x, int64_t first, int64_t count);
    // Columns [first, first + count) of each row: a strided view (Copy makes it contiguous).
    TensorId columns(TensorId x, int64_t first, int64_t count);

    // ---- ops
    TensorId getRows(TensorId table, TensorId ids);
    TensorId matMul(TensorId w, TensorId x);
    TensorId matMulId(TensorId w, TensorId x, TensorId ids);
    TensorId rmsNorm(TensorId x, TensorId w, float eps);
    TensorId layerNorm(TensorId x, TensorId w, TensorId b, float eps);
    TensorId rope(TensorId x, TensorId positions, TensorId freqFactors, const RopeParams& p);
    TensorId kvWrite(TensorId cache, TensorId rows, TensorId slots);
    TensorId attention(TensorId q, TensorId kCache, TensorId vCache, TensorId info, TensorId tables,
                       TensorId sinks, int64_t headDimV, const AttentionParams& p);
    TensorId add(TensorId a, TensorId b);
    TensorId mul(TensorId a, TensorId b);
    TensorId scale(TensorId x, float s);
    TensorId silu(TensorId x);
    TensorId gelu(TensorId x);
    TensorId swiGlu(TensorId gate, TensorId up);
    TensorId geGlu(TensorId gate, TensorId up);
    TensorId swiGluOai(TensorId gate, TensorId up, float alpha, float limit);
    TensorId softmax(TensorId x, float scale = 1.0f);
    TensorId softcap(TensorId x, float cap);
    TensorId topK(TensorId x, int32_t k);
    TensorId argSort(TensorId x);
    TensorId concat(TensorId a, TensorId b, int32_t dim);
    TensorId copy(TensorId x);
    // Each row's values at that row's indices (the router's weights of the chosen experts).
    TensorId gather(TensorId x, TensorId ids);
    // The rows of y [t][k][J] summed per t with the weights w [t][k]: [t][J].
    TensorId weightedSum(TensorId y, TensorId w);
    TensorId sigmoid(TensorId x);
    TensorId softplus(TensorId x);
    TensorId rmsNormGated(TensorId x, TensorId w, TensorId z, float eps);
    // x [n][C] through the convolution w [C][K] (GGUF ne {K, C}) with the layer's window state.
    TensorId ssmConv(TensorId x, TensorId w, TensorId state, TensorId info);
    // [n][Hv][S]: see Op::DeltaNet; nHeadK = Hk, headSize = S.
    TensorId deltaNet(TensorId qkv, TensorId g, TensorId beta, TensorId state, TensorId info, int32_t nHeadK,
                      int64_t headSize, float eps);

    // Adds a node as given (for op tests); its output tensor must already exist.
    TensorId addNode(const Node& node);
    TensorId newActivation(quant::Type type, std::array<int64_t, kMaxDims> ne, const std::string& name = {});

    // A short listing (one line per node) for logs and test failures.
    std::string describe() const;

private:
    bool fail(const std::string& message);
    bool valid(TensorId id) const { return id >= 0 && size_t(id) < m_tensors.size(); }
    TensorId push(Tensor t);
    TensorId emit(Node node, quant::Type type, std::array<int64_t, kMaxDims> ne);
    TensorId gated(Op op, TensorId gate, TensorId up);   // SwiGlu, GeGlu
    TensorId broadcastOp(Op op, TensorId a, TensorId b); // Add, Mul

    const std::vector<Weight>* m_weights = nullptr;
    std::vector<Tensor> m_tensors;
    std::vector<Node> m_nodes;
    TensorId m_output = kNone;
    TensorId m_hiddenOutput = kNone;
    int32_t m_layer = -1;
    bool m_experts = false;
    Status m_status;
};

// Fills nb for a contiguous tensor of this type and shape.
void setContiguousStrides(Tensor& t);

} // namespace hearth::graph
