// The CUDA GPU as a backend::Device: device buffers, K/V pools, weights and step-graph programs.
// Programs run their nodes as the kernels of cuda_ops.h on the device's one stream, and replay
// decode-sized steps from a CUDA graph captured on their first run.
//
// What it runs (supportsOp): GetRows of weights and row gathers of F32 activations, MatMul and
// MatMulId (experts, routed by ids on the device) of a weight type the kernels handle
// (cuda::weightTypeSupported), RmsNorm and LayerNorm, RoPE (linear scaling, YaRN, frequency
// factors, the attention temperature), KvWrite and Attention on F32, F16 and Q8_0 caches (causal
// or not, window, score soft-capping and sinks allowed, K and V heads alike of <= 256 values;
// Q8_0 heads a multiple of 32), Add of the same shape or of one broadcast row, Mul of a repeated
// operand, Scale, Softmax, Softcap, SiLU, GELU, sigmoid, softplus, SwiGlu, GeGlu and gpt-oss's
// gated unit, TopK/ArgSort of rows up to 4096 wide, Gather and WeightedSum, strided Copy and
// Concat of F32 activations, the gated RmsNorm and the recurrent SsmConv (kernels up to 8) and
// DeltaNet (heads of 32..256, a multiple of 32) on the State pools; every other operand without a
// view offset. Anything else the runner places on the CPU.
#pragma once

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/device.h"

#include <memory>
#include <vector>

namespace hearth::cuda {

// What a device's buffers, pools and programs share: the GPU, the one stream every copy and
// kernel goes through, and the switches read when the device opens.
struct CudaContext {
    int device = 0;
    Stream stream;
    bool useGraphs = true; // HEARTH_CUDA_GRAPHS=0: decode-sized steps launch directly
    bool useInt8 = true;   // HEARTH_CUDA_INT8=0: prefill of quantized weights on tensor cores
    // The int8 copy of a prefill's activations (math::ActChunk), shared by every program (they run
    // one at a time): replaced by a larger one when a program needs more; programs keep theirs.
    std::shared_ptr<DeviceBuffer> actQ;
};

// Device memory; write/read copy through the device's stream and wait for it.
class CudaBuffer final : public backend::Buffer {
public:
    CudaBuffer(std::shared_ptr<CudaContext> ctx, DeviceBuffer memory)
        : m_ctx(std::move(ctx)), m_memory(std::move(memory)) {}
    uint64_t size() const override { return m_memory.bytes(); }
    Status write(uint64_t offset, const void* src, uint64_t bytes) override;
    Status read(uint64_t offset, void* dst, uint64_t bytes) const override;
    uint8_t* data() const { return m_memory.as<uint8_t>(); }

private:
    std::shared_ptr<CudaContext> m_ctx;
    DeviceBuffer m_memory;
};

// Per pooled layer a K and a V cache of numBlocks * blockSize rows (F16 or F32).
class CudaKvPool final : public backend::KvPool {
public:
    static Result<std::unique_ptr<CudaKvPool>> create(std::shared_ptr<CudaContext> ctx, const backend::KvPoolSpec& spec);
    const backend::KvPoolSpec& spec() const override { return m_spec; }
    Status copyBlock(int32_t src, int32_t dst) override;
    uint64_t bytes() const override { return m_bytes; }

    KvFormat format() const { return m_format; }
    int64_t slots() const { return int64_t(m_spec.numBlocks) * m_spec.blockSize; }
    // The K (value = false) or V cache of the pool's layer `index` (KvPoolSpec::indexOf).
    uint8_t* cache(int index, bool value) const;

private:
    CudaKvPool() = default;
    std::shared_ptr<CudaContext> m_ctx;
    backend::KvPoolSpec m_spec;
    KvFormat m_format = KvFormat::F16;
    std::vector<DeviceBuffer> m_k, m_v;
    std::vector<uint64_t> m_kBlockBytes, m_vBlockBytes; // per layer of the pool
    uint64_t m_bytes = 0;
};

// The weights loadWeights uploaded, by weight index (empty where not uploaded).
struct CudaWeights {
    std::vector<DeviceBuffer> buffers;
    uint64_t bytes = 0;
    const uint8_t* data(int32_t index) const {
        return index >= 0 && size_t(index) < buffers.size() ? buffers[size_t(index)].as<uint8_t>() : nullptr;
    }
};

class CudaGraphDevice final : public backend::Device {
public:
    static Result<std::unique_ptr<CudaGraphDevice>> open(int index);

    const backend::DeviceInfo& info() const override { return m_info; }
    bool supportsOp(const graph::Graph& g, const graph::Node& node) const override;
    Result<std::unique_ptr<backend::Buffer>> allocate(uint64_t bytes) override;
    Result<uint64_t> loadWeights(const std::vector<graph::Weight>& all, std::span<const backend::WeightUse> used) override;
    Result<std::unique_ptr<backend::KvPool>> createKvPool(const backend::KvPoolSpec& spec) override;
    int maxKvBlocks(const backend::KvPoolSpec& spec) const override;
    Result<std::unique_ptr<backend::Program>> compile(const backend::ProgramSpec& spec) override;

private:
    CudaGraphDevice() = default;
    backend::DeviceInfo m_info;
    std::shared_ptr<CudaContext> m_ctx;
    std::shared_ptr<CudaWeights> m_weights;
};

// Whether the CUDA kernels compute this node as the reference does (CudaGraphDevice::supportsOp).
bool cudaSupportsNode(const graph::Graph& g, const graph::Node& node);

// Compiles a run of nodes into the launch list of one stream (cuda_program.cpp).
Result<std::unique_ptr<backend::Program>> compileCudaProgram(const backend::ProgramSpec& spec,
                                                             std::shared_ptr<CudaContext> ctx,
                                                             std::shared_ptr<const CudaWeights> weights);

// The device behind openDevice("cuda:N"); the runtime's reason when there is no driver or device.
Result<std::unique_ptr<backend::Device>> openCudaDevice(int index);

} // namespace hearth::cuda
