// The CUDA operators of the forward pass: host functions taking device pointers and a stream,
// enqueueing one kernel each and returning a Status (bad arguments, or the launch's CUDA error).
// Shapes are row-major with the last index contiguous. backend/cuda/cuda_graph_device.h runs step
// graphs through these.
#pragma once

#include "backend/cuda/cuda_device.h"
#include "hearth/quant.h"  // defines: quant::Type
#include "hearth/status.h"

#include <cstdint>

namespace hearth::cuda {

namespace math {
struct ActChunk; // int8_math.h: 32 activations as int8 with their scale
}

// A 2-D weight in device memory as GGUF stores it: W[rows][cols], each row rowBytes long.
// Supported types: F32, F16, BF16 (any cols), Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (cols % 32 == 0),
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (cols % 256 == 0).
struct DeviceMatrix {
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
Status matVec(const DeviceMatrix& w, const float* x, float* y, int n, StreamHandle stream);

// Prefill: y[n][rows] = x[n][cols] · W[rows][cols]ᵀ for any n; tensor-core (WMMA) tiles of fp16
// with fp32 accumulation, weights dequantized into shared memory. Needs compute capability 7.0+.
Status matMul(const DeviceMatrix& w, const float* x, float* y, int64_t n, StreamHandle stream);

// Whether matMulInt8 handles this type: every quantized type matVec takes (not F32/F16/BF16).
bool int8TypeSupported(quant::Type type);

// out[n][cols / 32]: each 32 values of x[n][cols] quantized to int8 with one scale
// (math::quantizeActChunk). cols % 32 == 0.
Status quantizeActivations(const float* x, int64_t n, int64_t cols, math::ActChunk* out, StreamHandle stream);

// Prefill with int8 dot products: y[n][rows] = xq[n][cols / 32] · W[rows][cols]ᵀ where xq comes
// from quantizeActivations; weights unpacked to int8 with per-16/32 scales and offsets
// (math::intChunk), products summed by dp4a, scales applied in fp32 per 32-value chunk.
Status matMulInt8(const DeviceMatrix& w, const math::ActChunk* xq, float* y, int64_t n, StreamHandle stream);

// out[nRows][n] = x[nRows][n] / sqrt(mean(x²) + eps) * weight[n]; in place allowed.
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

// out[n] = a[n] + b[n] (out may alias a or b)
Status add(const float* a, const float* b, float* out, int64_t n, StreamHandle stream);

// x[nRows][dim] += bias[dim] (bias broadcast over rows)
Status addRows(float* x, const float* bias, int64_t nRows, int64_t dim, StreamHandle stream);

// out[i][dim] = x[rows[i]][dim] for i < nRows (rows: device, int32, each inside x).
Status gatherRows(const float* x, const int32_t* rows, int64_t nRows, int64_t dim, float* out,
                  StreamHandle stream);

// In-place softmax of each of x[nRows][n].
Status softmax(float* x, int64_t nRows, int64_t n, StreamHandle stream);

// Embedding lookup: out[nIds][cols] = dequant(table[ids[i]]). ids are device memory; an id outside
// [0, rows) yields a row of zeros (the host checks ids before upload).
Status getRows(const DeviceMatrix& table, const int32_t* ids, int64_t nIds, float* out,
               StreamHandle stream);

// Element type of the CUDA K/V cache (the engine's KvType::Q8_0 is not supported on CUDA yet).
enum class KvFormat { F32, F16 };

// One layer's paged K/V in device memory, laid out as the CPU PagedKvStore: k and v are
// [numBlocks][blockSize][nKvHeads * headDim] of F32 or F16; slot = block * blockSize + offset.
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

// Causal paged attention of a batch: query token t (q[t][nHeads][headDim]) attends to its
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
};
Status pagedAttention(const PagedKvView& kv, const AttentionArgs& args, StreamHandle stream);

} // namespace hearth::cuda
