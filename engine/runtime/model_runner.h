// Runs an architecture's step graphs on the devices of a load: places each node (the first
// gpuLayers layers on the GPU, the rest and every node the GPU lacks on the CPU), loads each
// device's weights and K/V pools once, and per step shape builds the graph, splits it into runs
// of nodes per device, gives its tensors memory (reused between tensors whose lives do not
// overlap, and between shapes), compiles each run into a program and keeps the result for the
// next step of that shape. Tensors that cross devices are copied between the runs.
#pragma once

#include "backend/device.h"
#include "graph/step.h"
#include "model/arch.h"
#include "runtime/step_plan.h"

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

namespace hearth::cpu {
class ThreadPool;
}

namespace hearth::runtime {

class ModelRunner;

struct RunnerConfig {
    std::string device = "cpu";  // "cpu", "ref" or a GPU id ("vulkan:0", "cuda:0")
    int gpuLayers = -1;          // with a GPU: layers on it (-1: all)
    int cpuMoeLayers = 0;        // of those, the first N keep their experts on the CPU (-1: all)
    KvType kvType = KvType::F16;
    int blockSize = 16;
    int numBlocks = 0;           // wanted; a GPU may hold fewer (numBlocks() says)
    int contextLength = 0;       // per sequence (model::KvSetup::contextLength); 0: not given
    int stateSlots = 0;          // recurrent models: per-sequence state slots (model::KvSetup::stateSlots);
    int minStateSlots = 1;       // fewer than this (a device's binding limit) is an error, else slots are cut
    cpu::ThreadPool* pool = nullptr;
    // A runner of the same file mapping whose devices' weight copies this load uses instead of
    // its own where both read a weight (Device::shareWeightsWith); it must outlive this runner.
    const ModelRunner* shareWeights = nullptr;
    // Told before each device loads its weights (device id, its index, the device count).
    std::function<void(const std::string&, int, int)> onWeights;
    // Opens devices by id (tests substitute one); defaults to backend::openDevice.
    std::function<Result<std::unique_ptr<backend::Device>>(const std::string&, cpu::ThreadPool*)> open;
};

// What one device holds for a load.
struct DeviceMemory {
    std::string id;
    uint64_t weightBytes = 0;     // uploaded or repacked weights (beyond the file's mapping)
    uint64_t mappedBytes = 0;     // weights read in place from the file's mapping (CPU)
    uint64_t kvBytes = 0;
    uint64_t stateBytes = 0;      // recurrent layers' per-sequence state pools
    uint64_t activationBytes = 0; // step buffers allocated so far
};

class ModelRunner {
public:
    static Result<std::unique_ptr<ModelRunner>> create(const model::Architecture& arch, const RunnerConfig& config);
    ~ModelRunner();

    // Runs one step; logits [wanted][vocab] in batch order of the tokens that want them, and
    // (when given) the final normed hidden rows [h][nEmbd] of the tokens that want those.
    Status forward(const graph::Batch& batch, std::vector<float>& logits, std::vector<float>* hidden = nullptr);
    // Copies K/V block src to dst on every device (before the next step's work).
    Status copyBlock(int32_t src, int32_t dst);
    // Copies recurrent state slot src to dst in every layer (a fork's state).
    Status copyState(int32_t src, int32_t dst);

    // Whether the last forward() built or compiled its step's plan (its time is not a step's).
    bool builtPlan() const { return m_builtPlan; }
    int numBlocks() const { return m_kv.numBlocks; }
    int gpuLayers() const { return m_gpuLayers; }
    int cpuMoeLayers() const { return m_cpuMoeLayers; } // resolved: 0..gpuLayers, 0 without experts
    const std::string& deviceId() const;          // the first device: the GPU, else "cpu"/"ref"
    uint64_t kvBytes() const;
    int stateSlots() const { return m_kv.stateSlots; }
    uint64_t stateBytes() const;
    std::vector<DeviceMemory> memory() const;
    // Host memory of the CPU's step buffers (activations), grown to the largest step so far.
    uint64_t hostActivationBytes() const;
    // "op@layer" of the nodes the GPU does not run and the CPU does instead.
    const std::vector<std::string>& fallbacks() const { return m_fallbacks; }
    // Why the configured GPU is not used (it failed the quick self-test run before a GPU is
    // trusted, backend/selftest.h; HEARTH_SKIP_DEVICE_CHECK=1 skips that), or a note that the
    // check could not run; empty otherwise.
    const std::string& deviceWarning() const { return m_deviceWarning; }
    backend::Device& device(size_t i);
    size_t deviceCount() const;

    struct Plan;
    struct Dev;

private:
    ModelRunner() = default;
    Devices devices() const;
    Result<std::shared_ptr<Plan>> planFor(const graph::StepShape& shape);
    static uint64_t scratchBytes(const Dev& d); // a device's step buffers
    Status compilePlan(Plan& plan);

    const model::Architecture* m_arch = nullptr;
    RunnerConfig m_config;
    model::KvSetup m_kv;
    int m_gpuLayers = 0;
    int m_cpuMoeLayers = 0;
    std::vector<Dev> m_devices; // [0]: the GPU if any; the last: the CPU
    std::vector<int> m_kvDevice; // per layer
    std::vector<std::string> m_fallbacks;
    std::string m_deviceWarning;
    std::list<std::shared_ptr<Plan>> m_plans; // most recently used first
    graph::StepInputs m_inputs;
    bool m_builtPlan = false;
    std::vector<uint8_t> m_staging; // tensors copied between two devices that are not host memory
};

} // namespace hearth::runtime
