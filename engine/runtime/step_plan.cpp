// Placement, runs per device, cross-device copies and memory slots of one step's graph.
#include "runtime/step_plan.h"

#include <algorithm>
#include <map>
#include <set>

namespace hearth::runtime {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;
using graph::TensorKind;

namespace {

// The layer whose K/V (or recurrent state) a KvWrite, Attention, SsmConv or DeltaNet node touches.
int kvLayerOf(const graph::Graph& g, const Node& n) {
    switch (n.op) {
    case Op::KvWrite: return g.tensor(n.src[0]).layer;
    case Op::SsmConv: return g.tensor(n.src[2]).layer;
    case Op::DeltaNet: return g.tensor(n.src[3]).layer;
    default: return g.tensor(n.src[1]).layer;
    }
}

// Nodes that must run where their layer's per-sequence memory is.
bool touchesKv(const Node& n) {
    return n.op == Op::KvWrite || n.op == Op::Attention || n.op == Op::SsmConv || n.op == Op::DeltaNet;
}

struct Need {
    int start = 0, end = 0;
    uint64_t bytes = 0;
};

// Gives each needed tensor a slot so that tensors whose lives overlap never share one; a slot's
// size is the largest tensor it holds. Tensors are visited by start, each taking the free slot
// closest in size (growing the largest free one rather than opening a new slot).
std::vector<int> assignSlots(const std::vector<std::pair<TensorId, Need>>& needs, std::vector<uint64_t>& slotBytes) {
    std::vector<size_t> order(needs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return needs[a].second.start < needs[b].second.start; });
    std::vector<int> slotEnd; // last use of the slot's current tensor
    std::vector<int> slot(needs.size(), -1);
    for (size_t k : order) {
        const Need& n = needs[k].second;
        int best = -1;
        for (size_t s = 0; s < slotEnd.size(); ++s) {
            if (slotEnd[s] >= n.start) continue;
            if (best < 0) {
                best = int(s);
                continue;
            }
            const bool fits = slotBytes[s] >= n.bytes, bestFits = slotBytes[size_t(best)] >= n.bytes;
            if ((fits && (!bestFits || slotBytes[s] < slotBytes[size_t(best)])) ||
                (!fits && !bestFits && slotBytes[s] > slotBytes[size_t(best)]))
                best = int(s);
        }
        if (best < 0) {
            best = int(slotEnd.size());
            slotEnd.push_back(0);
            slotBytes.push_back(0);
        }
        slotEnd[size_t(best)] = n.end;
        slotBytes[size_t(best)] = std::max(slotBytes[size_t(best)], n.bytes);
        slot[k] = best;
    }
    return slot;
}

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

} // namespace

std::vector<int> chooseKvDevices(const graph::Graph& probe, int nLayer, const Devices& devices,
                                 std::vector<std::string>* refused) {
    std::vector<int> kv(size_t(nLayer), devices.cpu());
    if (devices.count < 2) return kv;
    for (int l = 0; l < std::min(devices.gpuLayers, nLayer); ++l) kv[size_t(l)] = 0;
    std::vector<bool> refusedLayer(size_t(nLayer), false);
    for (const Node& n : probe.nodes()) {
        if (!touchesKv(n)) continue;
        const int layer = kvLayerOf(probe, n);
        if (layer < 0 || layer >= nLayer || kv[size_t(layer)] != 0 || devices.supports(0, probe, n)) continue;
        refusedLayer[size_t(layer)] = true;
        const std::string what = std::string(graph::opName(n.op)) + "@" + std::to_string(layer) + " (its layer's K/V)";
        if (refused && std::find(refused->begin(), refused->end(), what) == refused->end()) refused->push_back(what);
    }
    for (int l = 0; l < nLayer; ++l)
        if (refusedLayer[size_t(l)]) kv[size_t(l)] = devices.cpu();
    return kv;
}

Result<StepPlan> makeStepPlan(graph::Graph graph, const graph::StepShape& shape, int nLayer,
                              const std::vector<int>& kvDevice, const Devices& devices) {
    StepPlan plan;
    plan.shape = shape;
    plan.graph = std::move(graph);
    HEARTH_RETURN_IF_ERROR(plan.graph.status());
    const graph::Graph& g = plan.graph;
    const auto& nodes = g.nodes();
    const int last = int(nodes.size());
    const int cpu = devices.cpu();

    // Placement.
    plan.nodeDevice.resize(nodes.size());
    for (int i = 0; i < last; ++i) {
        const Node& n = nodes[size_t(i)];
        int d;
        if (touchesKv(n)) {
            const int layer = kvLayerOf(g, n);
            d = kvDevice[size_t(std::clamp(layer, 0, nLayer - 1))];
            if (!devices.supports(d, g, n))
                return unsupported(std::string("no device runs ") + graph::opName(n.op) + " of layer " +
                                   std::to_string(layer) + " where its K/V is");
        } else {
            const int layer = std::clamp(n.layer, 0, nLayer - 1);
            d = layer < devices.gpuLayers && devices.count > 1 ? 0 : cpu;
            if (n.experts && layer < devices.cpuExpertLayers) d = cpu;
            if (d != cpu && !devices.supports(d, g, n)) d = cpu;
        }
        plan.nodeDevice[size_t(i)] = d;
    }
    // Runs of nodes on one device.
    for (int i = 0; i < last; ++i) {
        const int d = plan.nodeDevice[size_t(i)];
        if (plan.segments.empty() || plan.segments.back().device != d) {
            StepPlan::Segment s;
            s.device = d;
            s.firstNode = i;
            plan.segments.push_back(std::move(s));
        }
        plan.segments.back().nodes.push_back(i);
    }
    // Which device makes each tensor, and the last node that reads it.
    std::vector<int> producer(g.tensors().size(), -1), lastUse(g.tensors().size(), -1);
    for (int i = 0; i < last; ++i) {
        const Node& n = nodes[size_t(i)];
        if (g.tensor(n.out).kind == TensorKind::Activation) producer[size_t(g.root(n.out))] = plan.nodeDevice[size_t(i)];
        for (TensorId s : n.src)
            if (s != graph::kNone) lastUse[size_t(g.root(s))] = i;
    }
    plan.output = g.output();
    if (plan.output != graph::kNone) {
        lastUse[size_t(g.root(plan.output))] = last;
        plan.outputDevice = producer[size_t(g.root(plan.output))];
    }
    plan.hiddenOutput = g.hiddenOutput();
    if (plan.hiddenOutput != graph::kNone) {
        lastUse[size_t(g.root(plan.hiddenOutput))] = last;
        plan.hiddenDevice = producer[size_t(g.root(plan.hiddenOutput))];
    }
    // What each device stores: what it makes, the step inputs it reads, copies of what it reads
    // from other devices (made at the start of the first run that reads them).
    std::vector<std::map<TensorId, Need>> needs(size_t(devices.count));
    plan.inputs.assign(size_t(devices.count), {});
    for (StepPlan::Segment& seg : plan.segments) {
        for (int i : seg.nodes) {
            const Node& n = nodes[size_t(i)];
            const TensorId out = g.root(n.out);
            if (g.tensor(out).kind == TensorKind::Activation) {
                Need& need = needs[size_t(seg.device)][out];
                need.start = i;
                need.end = std::max(lastUse[size_t(out)], i);
                need.bytes = g.tensor(out).bytes();
            }
            for (TensorId s : n.src) {
                if (s == graph::kNone) continue;
                const TensorId r = g.root(s);
                const Tensor& t = g.tensor(r);
                if (t.kind == TensorKind::Input) {
                    auto& list = plan.inputs[size_t(seg.device)];
                    if (std::find(list.begin(), list.end(), r) == list.end()) list.push_back(r);
                    needs[size_t(seg.device)][r] = Need{0, last, t.bytes()};
                } else if (t.kind == TensorKind::Activation && producer[size_t(r)] != seg.device) {
                    auto& map = needs[size_t(seg.device)];
                    if (!map.count(r)) {
                        map[r] = Need{seg.firstNode, i, t.bytes()};
                        seg.copiesIn.push_back({r, producer[size_t(r)]});
                    } else {
                        map[r].end = std::max(map[r].end, i);
                    }
                }
            }
        }
    }
    plan.slotOf.assign(size_t(devices.count), std::vector<int>(g.tensors().size(), -1));
    plan.slotBytes.assign(size_t(devices.count), {});
    for (size_t d = 0; d < size_t(devices.count); ++d) {
        std::vector<std::pair<TensorId, Need>> list(needs[d].begin(), needs[d].end());
        for (auto& [id, need] : list) need.bytes = roundUp(std::max<uint64_t>(need.bytes, 4), 256);
        const std::vector<int> slots = assignSlots(list, plan.slotBytes[d]);
        for (size_t k = 0; k < list.size(); ++k) plan.slotOf[d][size_t(list[k].first)] = slots[k];
    }
    return plan;
}

Result<backend::KvPoolSpec> kvPoolSpec(const model::ModelDims& dims, const std::vector<int>& kvDevice, int device,
                                       KvType type, int blockSize, int numBlocks) {
    backend::KvPoolSpec spec;
    // Layers without K/V of their own (gemma4's shared-KV layers read an earlier layer's) hold none.
    for (int l = 0; l < dims.nLayer; ++l)
        if (kvDevice[size_t(l)] == device && dims.kv[size_t(l)].kRow() > 0) spec.layers.push_back(l);
    spec.type = type;
    spec.blockSize = blockSize;
    spec.numBlocks = numBlocks;
    if (spec.layers.empty()) return spec;
    const model::LayerKv& kv = dims.kv[size_t(spec.layers.front())];
    spec.kRow = kv.kRow();
    spec.vRow = kv.vRow();
    spec.headDim = kv.headDimK;
    bool uniform = true;
    for (int32_t l : spec.layers) {
        const model::LayerKv& other = dims.kv[size_t(l)];
        spec.shapes.push_back({other.kRow(), other.vRow(), other.headDimK});
        uniform = uniform && spec.shapes.back() == backend::KvLayerShape{kv.kRow(), kv.vRow(), kv.headDimK};
        spec.kRow = std::max(spec.kRow, other.kRow());
        spec.vRow = std::max(spec.vRow, other.vRow());
        spec.headDim = std::max(spec.headDim, other.headDimK);
    }
    if (uniform) spec.shapes.clear();
    return spec;
}

uint64_t kvBytesPerToken(const model::ModelDims& dims, KvType type) {
    uint64_t bytes = 0;
    for (const model::LayerKv& kv : dims.kv)
        bytes += backend::kvRowBytes(kv.kRow(), type) + backend::kvRowBytes(kv.vRow(), type);
    return bytes;
}

uint64_t kvPoolBytes(const backend::KvPoolSpec& spec) {
    const uint64_t rows = uint64_t(spec.numBlocks) * uint64_t(spec.blockSize);
    uint64_t bytes = 0;
    for (size_t i = 0; i < spec.layers.size(); ++i) {
        const backend::KvLayerShape s = spec.shapeAt(i);
        bytes += rows * (backend::kvRowBytes(s.kRow, spec.type) + backend::kvRowBytes(s.vRow, spec.type));
    }
    return bytes;
}

WeightUses weightUses(const StepPlan& plan, int device) {
    const graph::Graph& g = plan.graph;
    std::set<int32_t> matMul, rows, other;
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        if (plan.nodeDevice[i] != device) continue;
        const Node& n = g.nodes()[i];
        for (size_t s = 0; s < n.src.size(); ++s) {
            if (n.src[s] == graph::kNone) continue;
            const Tensor& t = g.tensor(g.root(n.src[s]));
            if (t.kind != TensorKind::Weight) continue;
            if (s == 0 && (n.op == Op::MatMul || n.op == Op::MatMulId)) matMul.insert(t.weight);
            else if (s == 0 && n.op == Op::GetRows) rows.insert(t.weight);
            else other.insert(t.weight);
        }
    }
    return {{matMul.begin(), matMul.end()}, {rows.begin(), rows.end()}, {other.begin(), other.end()}};
}

} // namespace hearth::runtime
