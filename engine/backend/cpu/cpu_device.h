// The CPU as a backend::Device, in two flavours: "cpu" (the optimized kernels: repacked weights,
// batched and fused matMuls, paged attention, threads) and "ref" (the scalar reference: plain
// loops, double accumulation, the oracle every other device is checked against). Both keep
// tensors in host memory and K/V in a PagedKvStore, and both run every op of the set: the CPU
// program uses the reference implementation for any node its kernels do not cover.
#pragma once

#include "backend/cpu/paged_kv.h"
#include "backend/cpu/zeroed_memory.h"
#include "backend/device.h"
#include "hearth/gguf.h"

#include <memory>
#include <span>
#include <vector>

namespace hearth::cpu {

class ThreadPool;
class RepackedWeights;

// Host memory, 64-byte aligned and zeroed.
class HostBuffer final : public backend::Buffer {
public:
    static Result<std::unique_ptr<HostBuffer>> create(uint64_t bytes);
    uint64_t size() const override { return m_size; }
    Status write(uint64_t offset, const void* src, uint64_t bytes) override;
    Status read(uint64_t offset, void* dst, uint64_t bytes) const override;
    uint8_t* host() override { return m_data; }

private:
    HostBuffer() = default;
    ZeroedMemory m_memory; // zero pages supplied on first write: a large arena costs nothing until used
    uint8_t* m_data = nullptr;
    uint64_t m_size = 0;
};

// One store per distinct K/V shape among the pool's layers (one for most models; gemma4's
// sliding and full layers differ), each pool layer a layer of its shape's store.
class CpuKvPool final : public backend::KvPool {
public:
    struct Place {
        int store = 0; // index into the stores
        int layer = 0; // the layer within that store
    };
    CpuKvPool(const backend::KvPoolSpec& spec, std::vector<PagedKvStore> stores, std::vector<Place> places)
        : m_spec(spec), m_stores(std::move(stores)), m_places(std::move(places)) {}
    const backend::KvPoolSpec& spec() const override { return m_spec; }
    Status copyBlock(int32_t src, int32_t dst) override;
    uint64_t bytes() const override;
    // The store holding the pool's layer number `index`, and that layer's index in it.
    PagedKvStore& store(int index) { return m_stores[size_t(m_places[size_t(index)].store)]; }
    int storeLayer(int index) const { return m_places[size_t(index)].layer; }
    int blockSize() const { return m_spec.blockSize; }

private:
    backend::KvPoolSpec m_spec;
    std::vector<PagedKvStore> m_stores;
    std::vector<Place> m_places; // per pool layer
};

// What the programs of one CPU device share: the weights as bound, their repacked copies, and
// the file reader the embedding rows come through.
struct CpuWeights {
    const std::vector<graph::Weight>* all = nullptr;
    std::shared_ptr<RepackedWeights> packed;          // null: plain kernels on the mapping
    std::shared_ptr<const gguf::DataReader> reader;   // read embedding rows through it when set
    std::vector<bool> readRows;                       // per weight: GetRows reads through `reader`
    ActivationObserver* observer = nullptr;           // sees matmul inputs when set (imatrix)
};

class CpuDevice final : public backend::Device {
public:
    // reference: the scalar "ref" device; otherwise the optimized "cpu" one.
    CpuDevice(bool reference, ThreadPool* pool);
    ~CpuDevice() override;

    const backend::DeviceInfo& info() const override { return m_info; }
    bool supportsOp(const graph::Graph& g, const graph::Node& node) const override;
    Result<std::unique_ptr<backend::Buffer>> allocate(uint64_t bytes) override;
    Result<uint64_t> loadWeights(const std::vector<graph::Weight>& all, std::span<const backend::WeightUse> used) override;
    Result<std::unique_ptr<backend::KvPool>> createKvPool(const backend::KvPoolSpec& spec) override;
    int maxKvBlocks(const backend::KvPoolSpec&) const override { return 1 << 24; }
    Result<std::unique_ptr<backend::Program>> compile(const backend::ProgramSpec& spec) override;

    // Embedding rows are then read from the file instead of through its mapping (see CpuWeights).
    void setFileReader(std::shared_ptr<const gguf::DataReader> reader) override { m_weights->reader = std::move(reader); }
    void shareWeightsWith(const backend::Device& other) override;
    Status setActivationObserver(ActivationObserver* observer) override {
        m_weights->observer = observer;
        return Status::ok();
    }
    bool reference() const { return m_reference; }
    // Bytes of the repacked weight copies (0 for the reference or with HEARTH_CPU_REPACK=0).
    uint64_t repackedBytes() const;

private:
    bool m_reference = false;
    ThreadPool* m_pool = nullptr;
    backend::DeviceInfo m_info;
    std::shared_ptr<CpuWeights> m_weights;
    std::shared_ptr<const RepackedWeights> m_sharedPacked; // shareWeightsWith's copies
};

// Storage of every tensor a host program touches: base pointers (views resolved), K/V stores.
struct HostTensors {
    const graph::Graph* graph = nullptr;
    std::vector<uint8_t*> ptr; // per tensor id; nullptr for K/V caches
    CpuKvPool* kv = nullptr;
    const CpuWeights* weights = nullptr;

    Status resolve(const backend::ProgramSpec& spec, const CpuWeights& w);
    const graph::Tensor& t(graph::TensorId id) const { return graph->tensor(id); }
    float* f(graph::TensorId id) const { return reinterpret_cast<float*>(ptr[size_t(id)]); }
    int32_t* i(graph::TensorId id) const { return reinterpret_cast<int32_t*>(ptr[size_t(id)]); }
    // The K/V store of a cache tensor, and the cache's layer within it.
    PagedKvStore& kvStore(graph::TensorId cache) const { return kv->store(kv->spec().indexOf(t(cache).layer)); }
    int kvLayer(graph::TensorId cache) const { return kv->storeLayer(kv->spec().indexOf(t(cache).layer)); }
};

// The scalar reference implementation of one node (ref_program.cpp): every op, every shape the
// graph allows. The CPU program calls it for nodes its kernels do not cover.
Status runReferenceNode(const HostTensors& h, const graph::Node& node);

// A program of the reference device: runReferenceNode for each node in order.
Result<std::unique_ptr<backend::Program>> compileReference(const backend::ProgramSpec& spec,
                                                           std::shared_ptr<const CpuWeights> weights);
// A program of the optimized CPU device (cpu_program.cpp).
Result<std::unique_ptr<backend::Program>> compileCpu(const backend::ProgramSpec& spec,
                                                     std::shared_ptr<const CpuWeights> weights, ThreadPool* pool);

} // namespace hearth::cpu
