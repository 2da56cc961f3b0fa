// The llama-family forward pass on a compute device (backend::Device; Vulkan today): weights
// uploaded once, K/V in paged blocks in device memory, every step recorded as one sequence of ops
// mirroring LlamaModel::forwardCpu, and only the wanted logits copied back. A layer split runs the
// first gpuLayers layers on the device and the rest (with the output) on the CPU kernels.
#pragma once

#include "backend/device.h"
#include "model/llama_model.h"

#include <memory>
#include <string>
#include <vector>

namespace hearth::cpu {
class ThreadPool;
}

namespace hearth::model {

// Opens a GPU by its listDevices() id ("vulkan:0"); Unsupported when its backend is not built
// into this binary or cannot start (the status says why).
Result<std::unique_ptr<backend::Device>> openComputeDevice(const std::string& id);

class DeviceForward {
public:
    // Uploads the weights of layers [0, gpuLayers) (all when gpuLayers < 0 or >= nLayer; the
    // output matrix too in that case) to `device` (which must outlive this) and allocates their
    // K/V pool of numBlocks blocks of blockSize positions per layer. Unsupported weight or KV
    // types give an Unsupported status naming them (the caller stays on the CPU).
    static Result<std::unique_ptr<DeviceForward>> create(const LlamaModel& model, backend::Device& device,
                                                         int numBlocks, int blockSize, KvType kvType,
                                                         int gpuLayers = -1);
    ~DeviceForward();

    // The most K/V blocks one layer's cache can hold on `device` (a cache is one binding).
    static int maxBlocks(const backend::Device& device, const LlamaHParams& hp, int blockSize, KvType kvType);

    // Same contract as LlamaModel::forwardCpu. The device layers keep K/V on the device; the CPU
    // layers [gpuLayers(), nLayer) use `cpuKv`, a store of nLayer - gpuLayers() layers (layer l
    // of the model is its layer l - gpuLayers()), with the block ids of the batch's tables.
    Status forward(const Batch& batch, std::vector<float>& logits, cpu::PagedKvStore* cpuKv = nullptr,
                   cpu::ThreadPool* pool = nullptr);
    // Copies K/V block src to dst in every device layer (done before the next step's ops).
    Status copyBlock(int32_t src, int32_t dst);

    int gpuLayers() const;
    uint64_t weightBytes() const { return m_weightBytes; }
    uint64_t kvBytes() const { return m_kvBytes; }

private:
    struct Impl;
    explicit DeviceForward(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
    uint64_t m_weightBytes = 0, m_kvBytes = 0;
};

} // namespace hearth::model
