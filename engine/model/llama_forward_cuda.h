// The llama-family forward pass on one CUDA device through the op API of backend/cuda/cuda_ops.h:
// weights uploaded once, K/V in paged blocks in device memory, each step a sequence of kernels on
// one stream mirroring LlamaModel::forwardCpu, and only the wanted logits copied back. A layer
// split runs the first N layers here and the rest on the CPU (LlamaModel::forwardCpuFrom).
// Compiled only when the CUDA backend is built (HEARTH_HAS_CUDA).
#pragma once

#include "hearth/engine.h" // defines: KvType
#include "hearth/status.h"
#include "model/llama_model.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hearth::cpu {
class PagedKvStore;
class ThreadPool;
} // namespace hearth::cpu

namespace hearth::model {

class CudaLlamaForward {
public:
    // Uploads the weights of `model` (which must outlive this) for its first gpuLayers layers
    // (-1 or more than the model has: all, and then the output layer too) to CUDA device
    // `deviceIndex`, and allocates a K/V pool of numBlocks blocks of blockSize positions for each
    // of those layers. Weight types the kernels lack, Q8_0 K/V or headDim > 256 give Unsupported
    // naming them; no device or driver gives the runtime's reason.
    static Result<std::unique_ptr<CudaLlamaForward>> create(const LlamaModel& model, int deviceIndex,
                                                            int numBlocks, int blockSize, KvType kvType,
                                                            int gpuLayers = -1);
    ~CudaLlamaForward();

    int gpuLayers() const;

    // Same contract as LlamaModel::forwardCpu, with the device layers' K/V held on the device:
    // block ids in the batch's tables index this object's pool (and cpuKv's, the same ids). With a
    // layer split the hidden state comes back after the device layers and the CPU kernels run the
    // rest with cpuKv (its layer i is model layer gpuLayers() + i) and pool.
    Status forward(const Batch& batch, std::vector<float>& logits, cpu::PagedKvStore* cpuKv = nullptr,
                   cpu::ThreadPool* pool = nullptr);

    // Copies K/V block src to dst in every layer (copy-on-write of a shared prefix block).
    Status copyBlock(int32_t src, int32_t dst);

    uint64_t weightBytes() const;
    uint64_t kvBytes() const;

private:
    struct Impl;
    explicit CudaLlamaForward(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace hearth::model
