// The compute-device interface every accelerator backend implements (Vulkan here, CUDA next), in
// the ggml style device -> buffer -> op: a Device allocates Buffers, records ops on them into the
// current step, and run() executes the step in order. supportsOp(op, type) says which ops and
// weight types a device runs, so callers keep the rest on the CPU (the CPU path is the fallback).
// No backend API types appear here.
#pragma once

#include "hearth/engine.h"
#include "hearth/quant.h"
#include "hearth/status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace hearth::backend {

enum class Op { MatMul, GetRows, RmsNorm, Rope, Add, Swiglu, KvWrite, Attention };
inline const char* opName(Op op) {
    switch (op) {
    case Op::MatMul: return "matMul";
    case Op::GetRows: return "getRows";
    case Op::RmsNorm: return "rmsNorm";
    case Op::Rope: return "rope";
    case Op::Add: return "add";
    case Op::Swiglu: return "swiglu";
    case Op::KvWrite: return "kvWrite";
    case Op::Attention: return "attention";
    }
    return "?";
}

struct DeviceInfo {
    std::string api;              // "vulkan", "cuda"
    std::string name;             // "llvmpipe (LLVM 15.0.6, 256 bits)"
    std::string type;             // "discrete", "integrated", "virtual", "cpu", "other"
    uint64_t deviceMemory = 0;    // bytes of the largest device-local heap
    uint64_t freeMemory = 0;      // of that heap, free now when the driver says (else 0)
    bool sharesHostMemory = false; // integrated and CPU devices use system RAM
    uint64_t maxBindRange = 0;    // largest range one kernel argument can address
    uint32_t subgroupSize = 0;
    bool fp16 = false;            // shader float16 arithmetic
    bool int8 = false;            // shader int8 arithmetic
};

// Device memory. write/read are synchronous host copies; ops recorded but not yet run see the
// contents at run() time.
class Buffer {
public:
    virtual ~Buffer() = default;
    virtual uint64_t size() const = 0;
    virtual Status write(uint64_t offset, const void* src, uint64_t bytes) = 0;
    virtual Status read(uint64_t offset, void* dst, uint64_t bytes) const = 0;
};

// A weight matrix resident on a device: W[rows][cols] of `type`, rows rowBytes apart from byte 0.
struct DeviceMatrix {
    const Buffer* buffer = nullptr;
    quant::Type type = quant::Type::F32;
    int64_t cols = 0;
    int64_t rows = 0;
    uint64_t rowBytes = 0;
};

struct RopeParams {
    int64_t n = 0;        // tokens
    int nHeads = 0;
    int headDim = 0;
    int nRot = 0;         // rotated dims per head (<= headDim)
    float freqBase = 10000.0f;
    bool neox = false;
    int nFreqFactors = 0; // values in the factors buffer (0: none)
};

struct AttentionParams {
    int64_t n = 0;        // query tokens
    int nHead = 0;
    int nHeadKv = 0;
    int headDim = 0;      // <= 256
    int blockSize = 0;    // KV positions per block
    float scale = 1.0f;   // applied to q . k
    KvType kvType = KvType::F16;
};

class Device {
public:
    virtual ~Device() = default;
    virtual const DeviceInfo& info() const = 0;
    // Whether `op` runs here; `type` is the weight type for MatMul/GetRows (F32 otherwise).
    virtual bool supportsOp(Op op, quant::Type type = quant::Type::F32) const = 0;
    // `hostVisible`: inputs and outputs the host writes or reads every step.
    virtual Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes, bool hostVisible = false) = 0;

    // Ops, recorded into the current step. Activations are F32, row-major.
    // y[n][w.rows] = x[n][w.cols] . W^T
    virtual Status matMul(const DeviceMatrix& w, const Buffer& x, int64_t n, Buffer& y) = 0;
    // out[n][w.cols] = W[ids[t]] (ids: int32 [n])
    virtual Status getRows(const DeviceMatrix& w, const Buffer& ids, int64_t n, Buffer& out) = 0;
    // out[rows][dim] = rmsnorm(x[rows][dim]) * weight[dim]; out may be x.
    virtual Status rmsNorm(const Buffer& x, const Buffer& weight, int64_t rows, int64_t dim,
                           float eps, Buffer& out) = 0;
    // In place on x[n][nHeads][headDim] at positions pos (int32 [n]); freqFactors may be null.
    virtual Status rope(Buffer& x, const Buffer& pos, const Buffer* freqFactors, const RopeParams& p) = 0;
    // out[i] = a[i] + b[i % bLen] for i < count; out may be a.
    virtual Status add(const Buffer& a, const Buffer& b, int64_t count, int64_t bLen, Buffer& out) = 0;
    // out[i] = silu(gate[i]) * up[i]; out may be gate.
    virtual Status swiglu(const Buffer& gate, const Buffer& up, int64_t count, Buffer& out) = 0;
    // cache[slots[t]][rowSize] = src[t][rowSize] in the cache's type (slots: int32 [n]).
    virtual Status kvWrite(const Buffer& src, const Buffer& slots, int64_t n, int64_t rowSize,
                           KvType type, Buffer& cache) = 0;
    // out[n][nHead][headDim]: causal attention of q[n][nHead][headDim] over paged K/V. info holds
    // int32 (pos, tableOffset) per token; tables the concatenated block tables.
    virtual Status attention(const Buffer& q, const Buffer& kCache, const Buffer& vCache,
                             const Buffer& info, const Buffer& tables, const AttentionParams& p,
                             Buffer& out) = 0;

    // dst[dstOffset, +bytes) = src[srcOffset, +bytes), in order with the other ops (K/V block
    // copies when sequences fork).
    virtual Status copy(const Buffer& src, uint64_t srcOffset, Buffer& dst, uint64_t dstOffset, uint64_t bytes) = 0;

    // Executes the recorded ops in order and waits for them.
    virtual Status run() = 0;
    // Drops the ops recorded since the last run() (after a failure part-way through a step).
    virtual void discard() = 0;
};

} // namespace hearth::backend
