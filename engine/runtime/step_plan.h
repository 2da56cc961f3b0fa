// The device-independent part of running a step: where each node of a step's graph goes (the
// first gpuLayers layers on the GPU but for the experts of the first cpuExpertLayers, nodes the
// GPU refuses on the CPU, K/V nodes where their layer's K/V lives), the runs of nodes per device,
// the tensors copied between devices, and which memory slot each tensor takes on each device. The
// runner executes it; the memory estimate (hearth/model_info.h) sums it without opening any
// device, so both count the same things.
#pragma once

#include "backend/device.h"
#include "graph/graph.h"
#include "graph/step.h"
#include "model/arch.h"

#include <functional>
#include <vector>

namespace hearth::runtime {

// Devices are indexed 0..n-1; with a GPU it is 0 and the CPU is the last.
struct Devices {
    int count = 1;
    int gpuLayers = 0; // layers whose nodes go to device 0 when count > 1
    // Of those, the layers below this keep their experts' nodes (graph::Node::experts) on the CPU,
    // which then holds their expert weights (llama.cpp's --n-cpu-moe).
    int cpuExpertLayers = 0;
    // Whether device d runs the node (the CPU, count - 1, must run everything).
    std::function<bool(int d, const graph::Graph&, const graph::Node&)> supports;
    int cpu() const { return count - 1; }
};

struct StepPlan {
    graph::StepShape shape;
    graph::Graph graph;
    std::vector<int> nodeDevice; // per node
    struct Copy {
        graph::TensorId tensor;
        int from;
    };
    struct Segment {
        int device = 0;
        int firstNode = 0;
        std::vector<int> nodes;
        std::vector<Copy> copiesIn; // tensors made on another device, copied here first
    };
    std::vector<Segment> segments;
    std::vector<std::vector<int>> slotOf;         // [device][tensor root]: scratch slot, -1 if none
    std::vector<std::vector<uint64_t>> slotBytes; // [device][slot]
    std::vector<std::vector<graph::TensorId>> inputs; // [device]: step inputs read there
    graph::TensorId output = graph::kNone;
    int outputDevice = -1;
    graph::TensorId hiddenOutput = graph::kNone; // the graph's hiddenOutput(), made on hiddenDevice
    int hiddenDevice = -1;
};

// Per layer, the device holding its K/V: the GPU for its layers when it runs their K/V nodes
// (checked on `probe`), else the CPU. `refused` collects "op@layer" of the K/V nodes it refused.
std::vector<int> chooseKvDevices(const graph::Graph& probe, int nLayer, const Devices& devices,
                                 std::vector<std::string>* refused = nullptr);

// Places, splits and gives memory slots to one step's graph.
Result<StepPlan> makeStepPlan(graph::Graph graph, const graph::StepShape& shape, int nLayer,
                              const std::vector<int>& kvDevice, const Devices& devices);

// Every weight the nodes placed on device d read, with how they read it.
struct WeightUses {
    std::vector<int32_t> matMul, rows, other; // weight indices (each once per list)
};
WeightUses weightUses(const StepPlan& plan, int device);

// The K/V pool device d holds (spec.layers empty when none): every layer whose K/V is there.
// Errors when those layers' K/V rows differ in shape.
Result<backend::KvPoolSpec> kvPoolSpec(const model::ModelDims& dims, const std::vector<int>& kvDevice, int device,
                                       KvType type, int blockSize, int numBlocks);
// Bytes of such a pool: K and V rows of every block of every layer.
uint64_t kvPoolBytes(const backend::KvPoolSpec& spec);

// Bytes one token's K and V take over every layer of the model (0 without attention layers).
uint64_t kvBytesPerToken(const model::ModelDims& dims, KvType type);

// The graph of one token wanting logits: it holds every node kind, so placement decisions and
// weight uses made on it hold for every step.
inline constexpr graph::StepShape kProbeShape{1, 1, 64};

} // namespace hearth::runtime
