// The one interface every backend implements (the reference, the CPU, Vulkan, CUDA), in the ggml
// style registry -> device -> buffer -> program: a Device says which graph nodes it runs
// (supportsOp), allocates Buffers, keeps its copies of the weights and its K/V pools, and compiles
// a run of a step graph's nodes into a Program that can be run again with new step inputs. The
// runner (runtime/model_runner.h) places nodes on devices, a node no accelerator runs falls back
// to the CPU, and copies tensors between them. No backend API types appear here.
#pragma once

#include "graph/graph.h"
#include "hearth/engine.h"
#include "hearth/evaluate.h"
#include "hearth/gguf.h"
#include "hearth/status.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace hearth::cpu {
class ThreadPool;
}

namespace hearth::backend {

struct DeviceInfo {
    std::string id;               // "cpu", "ref", "vulkan:0", "cuda:0"
    std::string api;              // "cpu", "vulkan", "cuda"
    std::string name;             // "llvmpipe (LLVM 15.0.6, 256 bits)"
    std::string type;             // "discrete", "integrated", "virtual", "cpu", "other"
    uint64_t deviceMemory = 0;    // bytes of the largest device-local heap
    uint64_t freeMemory = 0;      // of that heap, free now when the driver says (else 0)
    bool sharesHostMemory = false; // integrated and CPU devices use system RAM
    uint64_t maxBindRange = 0;    // largest range one kernel argument can address (0: no limit)
    uint32_t subgroupSize = 0;
    bool subgroupArithmetic = false; // subgroupAdd and friends in compute shaders
    // Quantized matrix products run in their row-per-invocation form (shaders/matmul_rows.comp):
    // CPU implementations of Vulkan with subgroup broadcasts over at least 8 lanes.
    bool rowKernels = false;
    bool fp16 = false;            // shader float16 arithmetic
    bool int8 = false;            // shader int8 arithmetic
    bool host = false;            // buffers are host memory (the CPU and the reference)
};

// Device memory. write/read are synchronous host copies.
class Buffer {
public:
    virtual ~Buffer() = default;
    virtual uint64_t size() const = 0;
    virtual Status write(uint64_t offset, const void* src, uint64_t bytes) = 0;
    virtual Status read(uint64_t offset, void* dst, uint64_t bytes) const = 0;
    // The bytes themselves, for devices whose buffers are host memory; else nullptr.
    virtual uint8_t* host() { return nullptr; }
};

// Where a tensor's bytes are for a program: a buffer of the program's device and an offset.
struct Binding {
    Buffer* buffer = nullptr;
    uint64_t offset = 0;
};

// The K/V pools of a range of layers on one device: per layer, a K and a V pool of
// numBlocks * blockSize rows, addressed by the block ids of the engine's KV manager.
struct KvLayerShape {
    int64_t kRow = 0, vRow = 0; // values per token row
    int headDim = 0;
    bool operator==(const KvLayerShape&) const = default;
};

struct KvPoolSpec {
    std::vector<int32_t> layers; // the model layers it holds, ascending
    int64_t kRow = 0, vRow = 0;  // values per token row: every layer's, or the largest when `shapes` differ
    int headDim = 0;
    // Per entry of `layers`, when layers differ in K/V shape (gemma4: sliding and full layers);
    // empty when every layer has kRow / vRow / headDim.
    std::vector<KvLayerShape> shapes;
    KvType type = KvType::F16;
    int numBlocks = 0;
    int blockSize = 16;
    // The pool's index of a model layer, or -1.
    int indexOf(int32_t layer) const {
        for (size_t i = 0; i < layers.size(); ++i)
            if (layers[i] == layer) return int(i);
        return -1;
    }
    // The K/V shape of the pool's layer number `index`.
    KvLayerShape shapeAt(size_t index) const {
        return index < shapes.size() ? shapes[index] : KvLayerShape{kRow, vRow, headDim};
    }
    bool uniform() const {
        for (const KvLayerShape& s : shapes)
            if (!(s == KvLayerShape{kRow, vRow, headDim})) return false;
        return true;
    }
};

class KvPool {
public:
    virtual ~KvPool() = default;
    virtual const KvPoolSpec& spec() const = 0;
    // Copies block src to dst in every layer (copy-on-write of a shared prefix block).
    virtual Status copyBlock(int32_t src, int32_t dst) = 0;
    virtual uint64_t bytes() const = 0;
};

// A compiled run of nodes; run() executes them with the current contents of their inputs and
// returns when the results are in their buffers.
class Program {
public:
    virtual ~Program() = default;
    virtual Status run() = 0;
};

struct ProgramSpec {
    const graph::Graph* graph = nullptr;
    std::vector<int> nodes;          // indices into graph->nodes(), in order
    std::vector<Binding> bindings;   // per tensor id: storage of activations and inputs (roots)
    KvPool* kv = nullptr;            // this device's pools for the nodes' layers
};

// How a step's nodes on one device read a weight.
struct WeightUse {
    int32_t index = -1;
    bool matMul = false; // as a MatMul / MatMulId matrix
    bool rows = false;   // as a GetRows table
    bool other = false;  // as an operand of another op (norm weights, biases, ...)
};

class Device {
public:
    virtual ~Device() = default;
    virtual const DeviceInfo& info() const = 0;

    // Whether this device runs the node (its op, its operands' types and shapes).
    virtual bool supportsOp(const graph::Graph& g, const graph::Node& node) const = 0;

    virtual Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes) = 0;

    // Makes the weights usable by this device's programs (uploads them, or repacks them for the
    // CPU's kernels); called once per load with every weight a node placed here reads. Returns
    // the bytes this device holds for them beyond the file's mapping.
    virtual Result<uint64_t> loadWeights(const std::vector<graph::Weight>& all, std::span<const WeightUse> used) = 0;

    virtual Result<std::unique_ptr<KvPool>> createKvPool(const KvPoolSpec& spec) = 0;
    // The largest numBlocks a pool of this spec can have here (a pool is one binding on GPUs).
    virtual int maxKvBlocks(const KvPoolSpec& spec) const = 0;

    virtual Result<std::unique_ptr<Program>> compile(const ProgramSpec& spec) = 0;

    // The file's bytes through reads rather than its mapping, for weights the device reads a few
    // rows of per step (the CPU's embedding lookups); others ignore it.
    virtual void setFileReader(std::shared_ptr<const gguf::DataReader> reader) { (void)reader; }

    // Another load of the same file mapping (a model's multi-token-prediction head beside the
    // model) uses what `other`, a device of the same kind, made of the weights both read instead
    // of making its own copies (the CPU's repacked matrices); others ignore it. Before loadWeights.
    virtual void shareWeightsWith(const Device& other) { (void)other; }

    // Shows every weight matmul's input to `observer` (nullptr: none, the default); only the
    // CPU devices can.
    virtual Status setActivationObserver(ActivationObserver* observer) {
        return observer ? unsupported(info().id + " cannot observe activations") : Status::ok();
    }
};

// Opens a device by id: "cpu", "ref" (the scalar reference), "vulkan:N", "cuda:N". `pool` gives
// the CPU devices their threads (nullptr: the calling thread). Unsupported when the backend is
// not built into this binary or cannot start (the status says why).
Result<std::unique_ptr<Device>> openDevice(const std::string& id, cpu::ThreadPool* pool = nullptr);

// Bytes a K/V row of `values` values takes in the cache.
uint64_t kvRowBytes(int64_t values, KvType type);

} // namespace hearth::backend
