// The CUDA kernels' launchers: host functions taking device pointers and a stream, enqueueing one
// kernel each and returning a Status (bad arguments, or the launch's CUDA error). Shapes are
// row-major with the last index contiguous. Only the CUDA op device (cuda_op_device.cpp, the
// backend::OpDevice every graph runs through) and the kernels' own tests call them.
#pragma once

#include "backend/cuda/cuda_device.h"
#include "hearth/quant.h"  // defines: quant::Type
#include "hearth/status.h"

#include <cstdint>

namespace hearth::cuda {

namespace math {
struct ActChunk; // int8_math.h: 32 activations as int8 with their scale
}

// A 2-D weight in device memory as GGUF stores it: W[rows][cols], each row rowBytes long (the raw
// address the kernels take; the op device makes it from a backend::ops::DeviceMatrix).
// Supported types: F32, F16, BF16 (any cols), Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, IQ4_NL, MXFP4
// (cols % 32 == 0), Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_XS, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS,
// IQ2_S, IQ3_XXS, IQ3_S, TQ1_0, TQ2_0 (cols % 256 == 0).
struct KernelMatrix {
    const void* data = nullptr;
    quant::Type type = quant::Type::F32;
    int64_t cols = 0; // ne0
    int64_t rows = 0; // ne1
    uint64_t rowBytes = 0;
};

// Whether matVec / matMul / getRows handle this type.
bool weightTypeSupported(quant::Type type);

inline constexpr int kMatVecMaxBatch = 8;

// Decode: y[n][rows] = x[n][cols] · W[rows][cols]ᵀ for 1 <= n <= 8, one warp per output row with
// shuffle reductions, weights dequantized in registers, fp32 accumulation. x is read as float4
// when 16-byte aligned with cols a multiple of 32.
Status matVec(const KernelMatrix& w, const float* x, float* y, int n, StreamHandle stream);

// Prefill: y[n][rows] = x[n][cols] · W[rows][cols]ᵀ for any n; tensor-core (WMMA) tiles of fp16
// with fp32 accumulation, weights dequantized into shared memory. Needs compute capability 7.0+.
Status matMul(const KernelMatrix& w, const float* x, float* y, int64_t n, StreamHandle stream);

// Whether matMulInt8 handles this type: the quantized types with an int8 view (not F32/F16/BF16,
// the grid i-quants, TQ, Q8_1/Q8_K, whose prefill is matMul's).
bool int8TypeSupported(quant::Type type);

// out[n][cols / 32]: each 32 values of x[n][cols] quantized to int8 with one scale
// (math::quantizeActChunk). cols % 32 == 0.
Status quantizeActivations(const float* x, int64_t n, int64_t cols, math::ActChunk* out, StreamHandle stream);

// Prefill with int8 dot products: y[n][rows] = xq[n][cols / 32] · W[rows][cols]ᵀ where xq comes
// from quantizeActivations; weights unpacked to int8 with per-16/32 scales and offsets
// (math::intChunk), products summed by dp4a, scales applied in fp32 per 32-value chunk.
Status matMulInt8(const KernelMatrix& w, const math::ActChunk* xq, float* y, int64_t n, StreamHandle stream);

// out[nRows][n] = x[nRows][n] / sqrt(mean(x²) + eps) * weight[n] (weight null: times 1); in place allowed.
Status rmsNorm(const float* x, const float* weight, float* out, int64_t nRows, int64_t n, float eps,
               StreamHandle stream);

struct RopeParams {
    int nHeads = 0;
    int headDim = 0;
    int nRot = 0;                      // dims that rotate (<= headDim, even)
    float freqBase = 10000.0f;
    float freqScale = 1.0f;            // linear position scaling (angles multiplied by it)
    bool neox = false;                 // NeoX pairing (i, i + nRot/2) instead of (2i, 2i+1)
    const float* freqFactors = nullptr; // device, nRot/2 values, or null
    // YaRN (extFactor 0: off): the ramp over pairs [yarnLow, yarnHigh] (math::ropeThetaYarn).
    float extFactor = 0.0f;
    float yarnLow = 0.0f;
    float yarnHigh = 0.0f;
    float magnitude = 1.0f;            // the rotation's magnitude (attnFactor, YaRN's raise)
    float tempScale = 0.0f;            // attention temperature (math::ropeTemperature; 0: off)
    int tempLength = 0;
};

// Rotates x[nTokens][nHeads][headDim] in place; token t is at positions[t] (device).
Status rope(float* x, const int32_t* positions, int64_t nTokens, const RopeParams& p,
            StreamHandle stream);

// out[n] = silu(gate[n]) * up[n]
Status swiglu(const float* gate, const float* up, float* out, int64_t n, StreamHandle stream);

// out[n] = gelu(gate[n]) * up[n] (tanh GELU, math::geglu)
Status geglu(const float* gate, const float* up, float* out, int64_t n, StreamHandle stream);

// out[n] = x[n] * s (out may alias x)
Status scale(const float* x, float s, float* out, int64_t n, StreamHandle stream);

// out[n] = cap * tanh(x[n] / cap), cap > 0 (out may alias x)
Status softcap(const float* x, float cap, float* out, int64_t n, StreamHandle stream);

// out[n] = silu(x[n]), gelu(x[n]), sigmoid(x[n]) or softplus(x[n]) (math::silu ...; out may alias x)
enum class UnaryOp { Silu, Gelu, Sigmoid, Softplus };
Status unary(UnaryOp op, const float* x, float* out, int64_t n, StreamHandle stream);

// out[n] = math::swigluOai(gate[n], up[n], alpha, limit) (gpt-oss)
Status swigluOai(const float* gate, const float* up, float* out, int64_t n, float alpha, float limit,
                 StreamHandle stream);

// out[i] = a[i] * b[i % bn] for i < n (b the same size, or one row repeated; out may alias a)
Status mul(const float* a, const float* b, float* out, int64_t n, int64_t bn, StreamHandle stream);

// out[nRows][n] = x / sqrt(mean(x²) + eps) * weight[n] * silu(z[nRows][n]) (qwen35's gated norm)
Status rmsNormGated(const float* x, const float* weight, const float* z, float* out, int64_t nRows, int64_t n,
                    float eps, StreamHandle stream);

// out[nRows][n] = (x - mean) / sqrt(var + eps) (* weight[n]) (+ bias[n]) per row; weight and
// bias may be null.
Status layerNorm(const float* x, const float* weight, const float* bias, float* out, int64_t nRows, int64_t n,
                 float eps, StreamHandle stream);

// out[n] = a[n] + b[n] (out may alias a or b)
Status add(const float* a, const float* b, float* out, int64_t n, StreamHandle stream);

// x[nRows][dim] += bias[dim] (bias broadcast over rows)
Status addRows(float* x, const float* bias, int64_t nRows, int64_t dim, StreamHandle stream);

// out[i][dim] = x[rows[i]][dim] for i < nRows (rows: device, int32, each inside x).
Status gatherRows(const float* x, const int32_t* rows, int64_t nRows, int64_t dim, float* out,
                  StreamHandle stream);

// In-place softmax of each of x[nRows][n].
Status softmax(float* x, int64_t nRows, int64_t n, StreamHandle stream);

// out[r][:] = softmax(x[r][:] * scale) for each of nRows rows (out may alias x).
Status softmaxScaled(const float* x, float* out, int64_t nRows, int64_t n, float scale, StreamHandle stream);

// An F32 tensor of any strides: element (i0, i1, i2, i3) at data + Σ i_d · nb[d] bytes.
struct StridedF32 {
    const void* data = nullptr;
    int64_t ne[4] = {1, 1, 1, 1};
    int64_t nb[4] = {4, 4, 4, 4};
};

// out = a as a contiguous tensor of a's shape.
Status copyStrided(const StridedF32& a, float* out, StreamHandle stream);

// out (contiguous) = a and b joined along dim 0..3: out's shape is a's with ne[dim] += b.ne[dim].
Status concat(const StridedF32& a, const StridedF32& b, int dim, float* out, StreamHandle stream);

// ---- recurrent ops (recurrent.cu) ---------------------------------------------------------------
// Both walk the step's tokens in order; info [n][3] holds each token's (read, write, snapshot)
// state slot and runs are maximal stretches of one write slot (graph/graph.h, Op::SsmConv). The
// host checks the slots.

inline constexpr int kMaxConvKernel = 8;
inline constexpr int kMaxDeltaHead = 256;

// out[t][c] = Σ_k w[c][k] · (the last K inputs of channel c)[k], x [n][C], w [C][K], state rows
// [slots][(K-1)·C] (the previous K - 1 inputs, oldest first). 2 <= K <= kMaxConvKernel.
Status ssmConv(const float* x, const float* w, float* state, const int32_t* info, float* out, int64_t n, int64_t C,
               int K, StreamHandle stream);

// The gated delta rule: qkv [n][(2Hk + Hv)·S], g and beta [n][Hv], state rows [slots][Hv·S·S],
// out [n][Hv][S] (Op::DeltaNet). S a multiple of 32 up to kMaxDeltaHead.
Status deltaNet(const float* qkv, const float* g, const float* beta, float* state, const int32_t* info, float* out,
                int64_t n, int Hk, int Hv, int S, float eps, StreamHandle stream);

// ---- experts (experts.cu) ------------------------------------------------------------------------

// Expert weights [nExperts][rows][cols]: expert e's matrix starts at data + e * expertBytes.
struct KernelExperts {
    KernelMatrix matrix;     // one expert's shape and type (data: expert 0)
    int64_t nExperts = 0;
    uint64_t expertBytes = 0;
};

// y[t][e][rows] = W[ids[t][e]] · x[t][shared ? 0 : e] for t < tokens, e < k, where x is
// [tokens][shared ? 1 : k][cols] and ids [tokens][k] (device, int32). One warp per output row
// and (token, slot), launched in runs of 65535 pairs; an id outside [0, nExperts) yields zeros
// (the reference reports it).
Status matMulId(const KernelExperts& w, const float* x, bool shared, const int32_t* ids, int64_t tokens, int k,
                float* y, StreamHandle stream);

// The same product with the pairs grouped by expert on the device (counted, scanned and scattered
// into runs per expert, cut into tiles of up to 8 pairs): one warp per output row and tile reads
// the expert's row once for the whole tile. For prefill, where many tokens share an expert.
// scratch: matMulIdGroupedScratchBytes of device memory (int32 counts, runs and tiles).
uint64_t matMulIdGroupedScratchBytes(int64_t nExperts, int64_t tokens, int k);
Status matMulIdGrouped(const KernelExperts& w, const float* x, bool shared, const int32_t* ids, int64_t tokens, int k,
                       float* y, void* scratch, StreamHandle stream);

// out[r][0..k) = indices of the k largest of x[r][0..n), largest first, ties to the lower index
// (a stable descending sort; k == n: the whole argsort). n <= kMaxSortWidth.
inline constexpr int64_t kMaxSortWidth = 4096;
Status topK(const float* x, int64_t nRows, int64_t n, int k, int32_t* out, StreamHandle stream);

// out[r][e] = x[r][ids[r][e]] for r < nRows, e < k (x [nRows][n]; an id outside [0, n) gives 0).
Status gather(const float* x, int64_t n, const int32_t* ids, int64_t nRows, int k, float* out, StreamHandle stream);

// out[t][j] = Σ_e w[t][e] · y[t][e][j] (y [tokens][k][J], w [tokens][k]): mixing the experts.
Status weightedSum(const float* y, const float* w, int64_t tokens, int k, int64_t J, float* out,
                   StreamHandle stream);

// Embedding lookup: out[nIds][cols] = dequant(table[ids[i]]). ids are device memory; an id outside
// [0, rows) yields a row of zeros (the host checks ids before upload).
Status getRows(const KernelMatrix& table, const int32_t* ids, int64_t nIds, float* out,
               StreamHandle stream);

// Element type of the CUDA K/V cache: F32, F16, or Q8_0 blocks of 32 along each row (34 bytes:
// an fp16 scale and 32 int8, math::quantizeQ8Block), as the CPU's store lays a Q8_0 row out.
enum class KvFormat { F32, F16, Q8_0 };

// Bytes of one cache row of rowSize values (Q8_0: rowSize a multiple of 32).
inline uint64_t kvRowBytes(KvFormat f, int64_t rowSize) {
    return f == KvFormat::Q8_0 ? uint64_t(rowSize) / 32 * 34 : uint64_t(rowSize) * (f == KvFormat::F32 ? 4 : 2);
}

// One layer's paged K/V in device memory, laid out as the CPU PagedKvStore: k and v are
// [numBlocks][blockSize][nKvHeads * headDim] of F32, F16 or Q8_0 (headDim a multiple of 32);
// slot = block * blockSize + offset.
struct PagedKvView {
    void* k = nullptr;
    void* v = nullptr;
    KvFormat type = KvFormat::F16;
    int numBlocks = 0;
    int blockSize = 0;
    int nKvHeads = 0;
    int headDim = 0;
};

// Stores rows[n][rowSize] (F32) into one K or V cache of nSlots rows of `type` at slots[n]
// (device, int32; a slot outside [0, nSlots) is skipped: the host checks them).
Status kvWrite(void* cache, KvFormat type, int64_t nSlots, int64_t rowSize, const float* rows, const int32_t* slots,
               int64_t n, StreamHandle stream);

// Paged attention of a batch (causal unless args.causal is false): query token t (q[t][nHeads][headDim]) attends to its
// sequence's keys at positions [first, info[t][0]] (first = 0, or info[t][0] - window + 1 with a
// sliding window; the keys must already be written), found through that sequence's block table at
// tables + info[t][1]. Tokens of many sequences (decode) and runs of one sequence (prefill chunks)
// mix freely; every array is device memory, so one launch serves the whole batch and a captured
// graph can replay it with new contents. GQA: head h reads kv head h / (nHeads / nKvHeads).
// Flash-style: one thread block per (token, head), warps split the keys and keep an online
// softmax each, merged at the end. headDim <= 256.
struct AttentionArgs {
    const float* q = nullptr;          // [nTokens][nHeads][headDim]
    float* out = nullptr;              // [nTokens][nHeads][headDim]
    const int32_t* tables = nullptr;   // the sequences' block tables back to back
    const int32_t* info = nullptr;     // [nTokens][2]: token t's position, offset of its table in tables
    int64_t nTokens = 0;
    int nHeads = 0;
    float scale = 0.0f;                // on q · k, usually 1/sqrt(headDim)
    int window = 0;                    // > 0: the last `window` positions only
    float softcap = 0.0f;              // > 0: scores become softcap * tanh(score / softcap)
    const float* sinks = nullptr;      // [nHeads] or null: a score per head that adds no value (gpt-oss)
    // false (encoders): token t attends to its sequence's positions up to the furthest that any
    // token of the step with the same table offset holds.
    bool causal = true;
};
Status pagedAttention(const PagedKvView& kv, const AttentionArgs& args, StreamHandle stream);

} // namespace hearth::cuda
