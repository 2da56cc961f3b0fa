// The op-level compute interface of the accelerator backends (Vulkan and CUDA): an OpDevice
// allocates buffers (the same backend::Buffer as device.h), records ops on them, and run()
// executes the recorded ops in order, or record() keeps them as a list that submit() runs again.
// One graph device (op_graph_device.h) is built over every op device: it translates a step graph's
// nodes into these ops. OpCapabilities says which ops, weight types and shapes a device runs. No
// backend API types appear here.
#pragma once

#include "backend/device.h"
#include "hearth/engine.h"
#include "hearth/quant.h"
#include "hearth/status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hearth::backend {

namespace ops {

enum class Op {
    MatMul,
    GetRows,
    RmsNorm,
    Rope,
    Add,
    Mul,
    Scale,
    Silu,
    Gelu,
    Softcap,
    Swiglu,
    Geglu,
    KvWrite,
    Attention,
    MatMulId,
    Gather,
    WeightedSum,
    Softmax,
    TopK,
    SwigluOai,
    Copy,
    LayerNorm,
    Concat,
    RmsNormGated,
    SsmConv,
    DeltaNet,
    Sigmoid,
    Softplus
};
inline const char* opName(Op op) {
    switch (op) {
    case Op::MatMul: return "matMul";
    case Op::GetRows: return "getRows";
    case Op::RmsNorm: return "rmsNorm";
    case Op::Rope: return "rope";
    case Op::Add: return "add";
    case Op::Mul: return "mul";
    case Op::Scale: return "scale";
    case Op::Silu: return "silu";
    case Op::Gelu: return "gelu";
    case Op::Softcap: return "softcap";
    case Op::Swiglu: return "swiglu";
    case Op::Geglu: return "geglu";
    case Op::KvWrite: return "kvWrite";
    case Op::Attention: return "attention";
    case Op::MatMulId: return "matMulId";
    case Op::Gather: return "gather";
    case Op::WeightedSum: return "weightedSum";
    case Op::Softmax: return "softmax";
    case Op::TopK: return "topK";
    case Op::SwigluOai: return "swigluOai";
    case Op::Copy: return "copy";
    case Op::LayerNorm: return "layerNorm";
    case Op::Concat: return "concat";
    case Op::RmsNormGated: return "rmsNormGated";
    case Op::SsmConv: return "ssmConv";
    case Op::DeltaNet: return "deltaNet";
    case Op::Sigmoid: return "sigmoid";
    case Op::Softplus: return "softplus";
    }
    return "?";
}

// A weight matrix resident on a device: W[rows][cols] of `type`, rows rowBytes apart from byte 0.
struct DeviceMatrix {
    const Buffer* buffer = nullptr;
    quant::Type type = quant::Type::F32;
    int64_t cols = 0;
    int64_t rows = 0;
    uint64_t rowBytes = 0;
};

struct RopeParams {
    int64_t n = 0;          // tokens
    int nHeads = 0;
    int headDim = 0;
    int nRot = 0;           // rotated dims per head (<= headDim)
    float freqBase = 10000.0f;
    bool neox = false;
    int nFreqFactors = 0;   // values in the factors buffer (0: none)
    float freqScale = 1.0f; // linear position scaling: every angle times this
    // YaRN (extFactor 0: off), as graph::RopeParams; the device derives its ramp and magnitude.
    float extFactor = 0.0f;
    float attnFactor = 1.0f;
    float betaFast = 32.0f;
    float betaSlow = 1.0f;
    int nCtxOrig = 0;
    float tempScale = 0.0f; // attention temperature (graph::RopeParams)
    int tempLength = 0;
};

struct AttentionParams {
    int64_t n = 0;        // query tokens
    int nHead = 0;
    int nHeadKv = 0;
    int headDim = 0;      // <= 256 (K and V alike)
    int blockSize = 0;    // KV positions per block
    float scale = 1.0f;   // applied to q . k
    KvType kvType = KvType::F16;
    int window = 0;       // > 0: a token at p attends to (p - window, p] only
    float softcap = 0.0f; // > 0: scores become softcap * tanh(score / softcap)
    bool causal = true;   // false (encoders, window 0): a token attends to its sequence's positions
                          // up to the furthest any token of the step with its table offset reaches
};

// The stacked experts of a mixture-of-experts layer: W[nExp][expertRows][cols] seen as one matrix
// of nExp * expertRows rows (matrix.rows).
struct DeviceExperts {
    DeviceMatrix matrix;
    int64_t expertRows = 0;
};

// Element-wise ops of one input (out[i] = f(x[i])): Scale (x * param), Silu, Gelu (tanh form),
// Softcap (param * tanh(x / param)), Sigmoid (1 / (1 + e^-x)), Softplus (ln(1 + e^x)).
enum class Unary { Scale, Silu, Gelu, Softcap, Sigmoid, Softplus };
// Element-wise ops of two inputs: Add and Mul broadcast b (out[i] = a[i] op b[i % bLen]); Swiglu
// and Geglu take gate = a, up = b of the same length (out = silu(gate) * up, gelu(gate) * up).
enum class Binary { Add, Mul, Swiglu, Geglu };

// A concatenation as blocks: a [outer][aBlock] and b [outer][bBlock] give out [outer][aBlock + bBlock].
struct ConcatShape {
    int64_t outer = 0, aBlock = 0, bBlock = 0;
};

// The causal convolution of the hybrid models (graph Op::SsmConv): tokens, channels, kernel
// width, state slots.
struct ConvShape {
    int64_t n = 0, C = 0, K = 0, slots = 0;
};

// The gated delta rule (graph Op::DeltaNet): tokens, head size, q/k heads, v heads, state slots.
struct DeltaShape {
    int64_t n = 0, S = 0, Hk = 0, Hv = 0, slots = 0;
    float eps = 1e-6f;
};

// What bounds the buffers a device's ops take.
struct OpLimits {
    uint64_t maxBindRange = 0;   // bytes one operand may span (0: no limit)
    uint64_t offsetAlign = 4;    // a view must start at a multiple of this many bytes
    uint64_t maxWeightRange = 0; // bytes of a weight one op binds at once (0: no limit); a row must fit
    int64_t maxMatMulTokens = 0; // tokens one matMul call takes (0: no limit)
};

} // namespace ops

// Which ops, weight types and shapes a device runs: what the graph device asks before it places a
// node there (op_graph_device.h), known without opening the device.
class OpCapabilities {
public:
    virtual ~OpCapabilities() = default;
    // Whether `op` runs here; `type` is the weight type for MatMul/MatMulId/GetRows (F32 otherwise).
    virtual bool supportsOp(ops::Op op, quant::Type type = quant::Type::F32) const = 0;
    // The device's own limits on node n beyond its op and weight type (grid sizes, head sizes,
    // kernel widths); the graph device has checked its operands' kinds, types and shapes.
    virtual bool nodeFits(const graph::Graph& g, const graph::Node& n) const = 0;
    // Whether K/V rows of this layer shape can be cached in this type here.
    virtual bool kvShapeFits(const KvLayerShape& shape, KvType type) const = 0;
    virtual ops::OpLimits limits() const = 0;
};

// Ops recorded once (OpDevice::record), run any number of times; the buffers they name must
// outlive it.
class OpList {
public:
    virtual ~OpList() = default;
};

class OpDevice : public OpCapabilities {
public:
    virtual const DeviceInfo& info() const = 0;
    // `hostVisible`: inputs and outputs the host writes or reads every step.
    virtual Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes, bool hostVisible = false) = 0;
    // A buffer naming bytes [offset, offset + bytes) of `parent` (a buffer of this device or a view
    // of one); offset a multiple of limits().offsetAlign. The parent must outlive it.
    virtual Result<std::unique_ptr<Buffer>> view(const Buffer& parent, uint64_t offset, uint64_t bytes) = 0;
    // Bytes the device can still give its K/V caches (0: unknown, no bound from memory).
    virtual uint64_t availableMemory() const { return 0; }

    // Ops, recorded into the current step. Activations are F32, row-major.
    // y[n][w.rows] = x[n][w.cols] . W^T
    virtual Status matMul(const ops::DeviceMatrix& w, const Buffer& x, int64_t n, Buffer& y) = 0;
    // out[n][w.cols] = W[ids[t]] (ids: int32 [n])
    virtual Status getRows(const ops::DeviceMatrix& w, const Buffer& ids, int64_t n, Buffer& out) = 0;
    // out[rows][dim] = rmsnorm(x[rows][dim]) (* weight[dim] when weight is given); out may be x.
    virtual Status rmsNorm(const Buffer& x, const Buffer* weight, int64_t rows, int64_t dim, float eps,
                           Buffer& out) = 0;
    // out = x[n][nHeads][headDim] rotated at positions pos (int32 [n]); freqFactors may be null;
    // out may be x.
    virtual Status rope(const Buffer& x, const Buffer& pos, const Buffer* freqFactors, const ops::RopeParams& p,
                        Buffer& out) = 0;
    // out[i] = f(x[i]) for i < count (see ops::Unary); out may be x.
    virtual Status unary(ops::Unary op, const Buffer& x, int64_t count, float param, Buffer& out) = 0;
    // out[i] = a[i] op b[i % bLen] for i < count (see ops::Binary); out may be a.
    virtual Status binary(ops::Binary op, const Buffer& a, const Buffer& b, int64_t count, int64_t bLen,
                          Buffer& out) = 0;
    // out[i] = a[i] + b[i % bLen] for i < count; out may be a.
    Status add(const Buffer& a, const Buffer& b, int64_t count, int64_t bLen, Buffer& out) {
        return binary(ops::Binary::Add, a, b, count, bLen, out);
    }
    // out[i] = silu(gate[i]) * up[i]; out may be gate.
    Status swiglu(const Buffer& gate, const Buffer& up, int64_t count, Buffer& out) {
        return binary(ops::Binary::Swiglu, gate, up, count, count, out);
    }
    // out[i] = g * sigmoid(alpha * g) * (u + 1) with g = min(gate[i], limit), u = clamp(up[i],
    // -limit, limit) (gpt-oss); out may be gate.
    virtual Status swigluOai(const Buffer& gate, const Buffer& up, int64_t count, float alpha, float limit,
                             Buffer& out) = 0;

    // Mixture of experts. y[n][k][expertRows] = x[t][e or 0] . W[ids[t][e]]^T for each token t and
    // slot e: x is [n][xSlots][cols] with xSlots 1 (one row shared by the k experts) or k; ids are
    // int32 [n][k]. Only the chosen experts' rows are read. `scratch` (may be null) of at least
    // matMulIdScratchBytes() lets many tokens take a faster path.
    virtual Status matMulId(const ops::DeviceExperts& w, const Buffer& x, int64_t xSlots, const Buffer& ids,
                            int64_t k, int64_t n, Buffer& y, Buffer* scratch) = 0;
    // Bytes of matMulId's scratch for n tokens of k experts out of nExp; 0 when it wants none.
    virtual uint64_t matMulIdScratchBytes(int64_t nExp, int64_t k, int64_t n) const = 0;
    // out[rows][k] = x[r][ids[r][e]] (x: [rows][width], ids: int32 [rows][k]).
    virtual Status gather(const Buffer& x, const Buffer& ids, int64_t rows, int64_t width, int64_t k,
                          Buffer& out) = 0;
    // out[rows][width] = x[offset + r * stride + c] (in floats): a strided view's rows made
    // contiguous (column slices, row ranges at an offset).
    virtual Status copyRows(const Buffer& x, uint64_t offset, int64_t rows, int64_t width, int64_t stride,
                            Buffer& out) = 0;
    // out[n][width] = sum over e of w[t][e] * y[t][e][:] (y: [n][k][width], w: [n][k]).
    virtual Status weightedSum(const Buffer& y, const Buffer& w, int64_t n, int64_t k, int64_t width,
                               Buffer& out) = 0;
    // out[rows][width] = softmax(x[r] * scale) per row; out may be x.
    virtual Status softmax(const Buffer& x, int64_t rows, int64_t width, float scale, Buffer& out) = 0;
    // out int32 [rows][k]: the indices of the k largest values of each row of x [rows][width],
    // largest first, equal values in index order (k == width: an argsort).
    virtual Status topK(const Buffer& x, int64_t rows, int64_t width, int64_t k, Buffer& out) = 0;

    // cache[slots[t]][rowSize] = src[t][rowSize] in the cache's type (slots: int32 [n]).
    virtual Status kvWrite(const Buffer& src, const Buffer& slots, int64_t n, int64_t rowSize, KvType type,
                           Buffer& cache) = 0;
    // out[n][nHead][headDim]: causal attention of q[n][nHead][headDim] over paged K/V. info holds
    // int32 (pos, tableOffset) per token; tables the concatenated block tables; sinks (may be null)
    // F32 [nHead]: per head, a score in the softmax with no value (gpt-oss).
    virtual Status attention(const Buffer& q, const Buffer& kCache, const Buffer& vCache, const Buffer& info,
                             const Buffer& tables, const Buffer* sinks, const ops::AttentionParams& p,
                             Buffer& out) = 0;

    // dst[dstOffset, +bytes) = src[srcOffset, +bytes), in order with the other ops (K/V block
    // copies when sequences fork).
    virtual Status copy(const Buffer& src, uint64_t srcOffset, Buffer& dst, uint64_t dstOffset, uint64_t bytes) = 0;

    // The encoders' ops. out[rows][dim] = (x - mean) / sqrt(var + eps) (* w) (+ b) per row; w, b
    // [dim] or null.
    virtual Status layerNorm(const Buffer& x, const Buffer* w, const Buffer* b, int64_t rows, int64_t dim, float eps,
                             Buffer& out) = 0;
    // out [outer][aBlock + bBlock] = a [outer][aBlock] and b [outer][bBlock] side by side.
    virtual Status concat(const Buffer& a, const Buffer& b, const ops::ConcatShape& s, Buffer& out) = 0;

    // The hybrid models' ops. out[rows][dim] = x / sqrt(mean(x²) + eps) · w · silu(z) per row.
    virtual Status rmsNormGated(const Buffer& x, const Buffer& w, const Buffer& z, int64_t rows, int64_t dim,
                                float eps, Buffer& out) = 0;
    // out [n][C]: graph Op::SsmConv over x [n][C], w [C][K], the state pool [slots][(K-1)·C] and
    // info int32 [n][3].
    virtual Status ssmConv(const Buffer& x, const Buffer& w, Buffer& state, const Buffer& info,
                           const ops::ConvShape& s, Buffer& out) = 0;
    // out [n][Hv][S]: graph Op::DeltaNet over qkv [n][(2Hk + Hv)·S], g and beta [n][Hv], the state
    // pool [slots][Hv·S·S] and info int32 [n][3].
    virtual Status deltaNet(const Buffer& qkv, const Buffer& g, const Buffer& beta, Buffer& state, const Buffer& info,
                            const ops::DeltaShape& s, Buffer& out) = 0;

    // Executes the recorded ops in order and waits for them.
    virtual Status run() = 0;
    // Drops the ops recorded since the last run() (after a failure part-way through a step).
    virtual void discard() = 0;
    // Records the ops `body` issues into a list of their own instead of the current step.
    // `repeated`: the list will be submitted many times with new contents in the same buffers
    // (decode steps), which a device may exploit (CUDA captures it as a graph).
    virtual Result<std::unique_ptr<OpList>> record(const std::function<Status()>& body, bool repeated) = 0;
    // Runs a recorded list and waits for it.
    virtual Status submit(const OpList& list) = 0;
};

} // namespace hearth::backend
