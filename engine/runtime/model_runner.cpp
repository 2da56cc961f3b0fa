// Placement, memory and execution of step graphs across the devices of a load.
#include "runtime/model_runner.h"

#include "backend/cpu/thread_pool.h"

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

constexpr size_t kMaxPlans = 16;

quant::Type kvQuantType(KvType t) {
    switch (t) {
    case KvType::F32: return quant::Type::F32;
    case KvType::F16: return quant::Type::F16;
    case KvType::Q8_0: return quant::Type::Q8_0;
    }
    return quant::Type::F16;
}

// The shape every load is placed with: one token wanting logits covers every node kind.
constexpr graph::StepShape kProbeShape{1, 1, 64};

} // namespace

struct ModelRunner::Dev {
    std::unique_ptr<backend::Device> device;
    std::unique_ptr<backend::KvPool> pool;
    std::vector<std::unique_ptr<backend::Buffer>> scratch; // shared by every plan's slots
    uint64_t generation = 0;                                // bumped when a scratch buffer moves
    uint64_t weightBytes = 0, mappedBytes = 0;
};

// One step shape's graph, placement, memory and programs.
struct ModelRunner::Plan {
    graph::StepShape shape;
    graph::Graph graph;
    Placement placement;
    struct Copy {
        TensorId tensor;
        int from;
    };
    struct Segment {
        int device = 0;
        int firstNode = 0;
        std::vector<int> nodes;
        std::vector<Copy> copiesIn; // tensors made on another device, copied here first
        std::unique_ptr<backend::Program> program;
    };
    std::vector<Segment> segments;
    std::vector<std::vector<int>> slotOf;        // [device][tensor root]: scratch slot, -1 if none
    std::vector<std::vector<uint64_t>> slotBytes; // [device][slot]
    std::vector<std::vector<TensorId>> inputs;   // [device]: step inputs read there
    std::vector<uint64_t> compiledAt;            // [device]: Dev::generation at compile
    TensorId output = graph::kNone;
    int outputDevice = -1;
};

ModelRunner::~ModelRunner() = default;

backend::Device& ModelRunner::device(size_t i) { return *m_devices[i].device; }
size_t ModelRunner::deviceCount() const { return m_devices.size(); }

const std::string& ModelRunner::deviceId() const { return m_devices.front().device->info().id; }

Result<Placement> ModelRunner::place(const graph::Graph& g) const {
    const int nLayer = m_arch->dims().nLayer;
    const int cpu = int(m_devices.size()) - 1;
    Placement p;
    p.kvDevice = m_kvDevice;
    p.nodeDevice.resize(g.nodes().size());
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        const Node& n = g.nodes()[i];
        if (n.op == Op::KvWrite || n.op == Op::Attention) {
            const int layer = g.tensor(n.src[n.op == Op::KvWrite ? 0 : 1]).layer;
            p.nodeDevice[i] = m_kvDevice[size_t(std::clamp(layer, 0, nLayer - 1))];
            if (!m_devices[size_t(p.nodeDevice[i])].device->supportsOp(g, n))
                return unsupported(std::string("no device runs ") + graph::opName(n.op) + " of layer " +
                                   std::to_string(layer) + " where its K/V is");
            continue;
        }
        const int layer = std::clamp(n.layer, 0, nLayer - 1);
        int d = layer < m_gpuLayers ? 0 : cpu;
        if (d != cpu && !m_devices[size_t(d)].device->supportsOp(g, n)) d = cpu;
        p.nodeDevice[i] = d;
    }
    return p;
}

Result<std::unique_ptr<ModelRunner>> ModelRunner::create(const model::Architecture& arch, const RunnerConfig& config) {
    auto r = std::unique_ptr<ModelRunner>(new ModelRunner());
    r->m_arch = &arch;
    r->m_config = config;
    const model::ModelDims& dims = arch.dims();
    const int nLayer = dims.nLayer;
    auto open = config.open ? config.open : [](const std::string& id, cpu::ThreadPool* pool) {
        return backend::openDevice(id, pool);
    };
    const bool gpu = config.device != "cpu" && config.device != "ref" && !config.device.empty();
    if (gpu) {
        HEARTH_ASSIGN_OR_RETURN(auto dev, open(config.device, config.pool));
        r->m_devices.push_back(Dev{std::move(dev), nullptr, {}, 0, 0, 0});
        r->m_gpuLayers = config.gpuLayers < 0 ? nLayer : std::min(config.gpuLayers, nLayer);
    }
    HEARTH_ASSIGN_OR_RETURN(auto cpuDev, open(config.device == "ref" ? "ref" : "cpu", config.pool));
    r->m_devices.push_back(Dev{std::move(cpuDev), nullptr, {}, 0, 0, 0});
    const int cpu = int(r->m_devices.size()) - 1;

    r->m_kv.type = kvQuantType(config.kvType);
    r->m_kv.blockSize = std::max(1, config.blockSize);
    r->m_kv.numBlocks = std::max(1, config.numBlocks);

    // Where each layer's K/V lives: on the GPU for its layers when it runs their K/V nodes.
    graph::Graph probe = arch.buildGraph(kProbeShape, r->m_kv);
    HEARTH_RETURN_IF_ERROR(probe.status());
    r->m_kvDevice.assign(size_t(nLayer), cpu);
    for (int l = 0; l < r->m_gpuLayers; ++l) r->m_kvDevice[size_t(l)] = 0;
    for (const Node& n : probe.nodes()) {
        if (n.op != Op::KvWrite && n.op != Op::Attention) continue;
        const int layer = probe.tensor(n.src[n.op == Op::KvWrite ? 0 : 1]).layer;
        if (layer < 0 || layer >= nLayer || r->m_kvDevice[size_t(layer)] == cpu) continue;
        if (!r->m_devices[0].device->supportsOp(probe, n)) {
            r->m_kvDevice[size_t(layer)] = cpu;
            r->m_fallbacks.push_back(std::string(graph::opName(n.op)) + "@" + std::to_string(layer) + " (its layer's K/V)");
        }
    }
    HEARTH_ASSIGN_OR_RETURN(Placement placement, r->place(probe));
    for (size_t i = 0; i < probe.nodes().size(); ++i) {
        const Node& n = probe.nodes()[i];
        if (gpu && placement.nodeDevice[i] == cpu && std::clamp(n.layer, 0, nLayer - 1) < r->m_gpuLayers &&
            n.op != Op::KvWrite && n.op != Op::Attention) {
            const std::string what = std::string(graph::opName(n.op)) + "@" + std::to_string(n.layer);
            if (std::find(r->m_fallbacks.begin(), r->m_fallbacks.end(), what) == r->m_fallbacks.end())
                r->m_fallbacks.push_back(what);
        }
    }

    // K/V pools: one per device, for the layers whose K/V it holds.
    for (size_t d = 0; d < r->m_devices.size(); ++d) {
        backend::KvPoolSpec spec;
        for (int l = 0; l < nLayer; ++l)
            if (r->m_kvDevice[size_t(l)] == int(d)) spec.layers.push_back(l);
        if (spec.layers.empty()) continue;
        const model::LayerKv& kv = dims.kv[size_t(spec.layers.front())];
        for (int32_t l : spec.layers) {
            const model::LayerKv& other = dims.kv[size_t(l)];
            if (other.kRow() != kv.kRow() || other.vRow() != kv.vRow() || other.headDimK != kv.headDimK)
                return unsupported("layers with different K/V shapes in one pool");
        }
        spec.kRow = kv.kRow();
        spec.vRow = kv.vRow();
        spec.headDim = kv.headDimK;
        spec.type = config.kvType;
        spec.blockSize = r->m_kv.blockSize;
        spec.numBlocks = r->m_kv.numBlocks;
        const int most = r->m_devices[d].device->maxKvBlocks(spec);
        if (most < 1) return unsupported("device " + r->m_devices[d].device->info().id + " cannot hold one K/V block");
        r->m_kv.numBlocks = std::min(r->m_kv.numBlocks, most);
    }
    for (size_t d = 0; d < r->m_devices.size(); ++d) {
        backend::KvPoolSpec spec;
        for (int l = 0; l < nLayer; ++l)
            if (r->m_kvDevice[size_t(l)] == int(d)) spec.layers.push_back(l);
        if (spec.layers.empty()) continue;
        const model::LayerKv& kv = dims.kv[size_t(spec.layers.front())];
        spec.kRow = kv.kRow();
        spec.vRow = kv.vRow();
        spec.headDim = kv.headDimK;
        spec.type = config.kvType;
        spec.blockSize = r->m_kv.blockSize;
        spec.numBlocks = r->m_kv.numBlocks;
        auto pool = r->m_devices[d].device->createKvPool(spec);
        if (!pool) return pool.status().withContext("K/V cache on " + r->m_devices[d].device->info().id);
        r->m_devices[d].pool = std::move(pool).value();
    }

    // Weights: each device loads what its nodes read (the GPU first: the CPU may release pages).
    r->m_devices[size_t(cpu)].device->setFileReader(arch.reader());
    for (size_t d = 0; d < r->m_devices.size(); ++d) {
        std::map<int32_t, backend::WeightUse> uses;
        for (size_t i = 0; i < probe.nodes().size(); ++i) {
            if (placement.nodeDevice[i] != int(d)) continue;
            const Node& n = probe.nodes()[i];
            for (size_t s = 0; s < n.src.size(); ++s) {
                if (n.src[s] == graph::kNone) continue;
                const Tensor& t = probe.tensor(probe.root(n.src[s]));
                if (t.kind != TensorKind::Weight) continue;
                backend::WeightUse& u = uses[t.weight];
                u.index = t.weight;
                if (s == 0 && (n.op == Op::MatMul || n.op == Op::MatMulId)) u.matMul = true;
                else if (s == 0 && n.op == Op::GetRows) u.rows = true;
                else u.other = true;
            }
        }
        std::vector<backend::WeightUse> list;
        for (const auto& [index, use] : uses) list.push_back(use);
        Dev& dev = r->m_devices[d];
        auto loaded = dev.device->loadWeights(arch.weights(), list);
        if (!loaded) return loaded.status().withContext("weights on " + dev.device->info().id);
        dev.weightBytes = *loaded;
        if (dev.device->info().host)
            for (const backend::WeightUse& u : list) dev.mappedBytes += arch.weights()[size_t(u.index)].bytes();
    }
    return r;
}

Status ModelRunner::copyBlock(int32_t src, int32_t dst) {
    for (Dev& d : m_devices)
        if (d.pool) HEARTH_RETURN_IF_ERROR(d.pool->copyBlock(src, dst));
    return Status::ok();
}

uint64_t ModelRunner::kvBytes() const {
    uint64_t total = 0;
    for (const Dev& d : m_devices)
        if (d.pool) total += d.pool->bytes();
    return total;
}

std::vector<DeviceMemory> ModelRunner::memory() const {
    std::vector<DeviceMemory> out;
    for (const Dev& d : m_devices) {
        DeviceMemory m;
        m.id = d.device->info().id;
        m.weightBytes = d.weightBytes;
        m.mappedBytes = d.mappedBytes;
        m.kvBytes = d.pool ? d.pool->bytes() : 0;
        for (const auto& b : d.scratch) m.activationBytes += b ? b->size() : 0;
        out.push_back(m);
    }
    return out;
}

namespace {

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

Result<std::shared_ptr<ModelRunner::Plan>> ModelRunner::planFor(const graph::StepShape& shape) {
    for (auto it = m_plans.begin(); it != m_plans.end(); ++it)
        if ((*it)->shape == shape) {
            auto plan = *it;
            if (it != m_plans.begin()) m_plans.splice(m_plans.begin(), m_plans, it);
            return plan;
        }
    auto plan = std::make_shared<Plan>();
    plan->shape = shape;
    plan->graph = m_arch->buildGraph(shape, m_kv);
    HEARTH_RETURN_IF_ERROR(plan->graph.status());
    HEARTH_ASSIGN_OR_RETURN(plan->placement, place(plan->graph));
    const graph::Graph& g = plan->graph;
    const auto& nodes = g.nodes();
    const size_t nDev = m_devices.size();
    const int last = int(nodes.size());

    // Runs of nodes on one device.
    for (int i = 0; i < last; ++i) {
        const int d = plan->placement.nodeDevice[size_t(i)];
        if (plan->segments.empty() || plan->segments.back().device != d) {
            Plan::Segment s;
            s.device = d;
            s.firstNode = i;
            plan->segments.push_back(std::move(s));
        }
        plan->segments.back().nodes.push_back(i);
    }
    // Which device makes each tensor, and the last node that reads it.
    std::vector<int> producer(g.tensors().size(), -1), lastUse(g.tensors().size(), -1);
    for (int i = 0; i < last; ++i) {
        const Node& n = nodes[size_t(i)];
        if (g.tensor(n.out).kind == TensorKind::Activation) producer[size_t(g.root(n.out))] = plan->placement.nodeDevice[size_t(i)];
        for (TensorId s : n.src)
            if (s != graph::kNone) lastUse[size_t(g.root(s))] = i;
    }
    plan->output = g.output();
    if (plan->output != graph::kNone) {
        lastUse[size_t(g.root(plan->output))] = last;
        plan->outputDevice = producer[size_t(g.root(plan->output))];
    }
    // What each device stores: what it makes, the step inputs it reads, copies of what it reads
    // from other devices (made at the start of the first run that reads them).
    std::vector<std::map<TensorId, Need>> needs(nDev);
    plan->inputs.assign(nDev, {});
    for (Plan::Segment& seg : plan->segments) {
        std::set<TensorId> copied;
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
                    auto& list = plan->inputs[size_t(seg.device)];
                    if (std::find(list.begin(), list.end(), r) == list.end()) list.push_back(r);
                    Need& need = needs[size_t(seg.device)][r];
                    need.start = 0;
                    need.end = last;
                    need.bytes = t.bytes();
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
    plan->slotOf.assign(nDev, std::vector<int>(g.tensors().size(), -1));
    plan->slotBytes.assign(nDev, {});
    for (size_t d = 0; d < nDev; ++d) {
        std::vector<std::pair<TensorId, Need>> list(needs[d].begin(), needs[d].end());
        for (auto& [id, need] : list) need.bytes = roundUp(std::max<uint64_t>(need.bytes, 4), 256);
        const std::vector<int> slots = assignSlots(list, plan->slotBytes[d]);
        for (size_t k = 0; k < list.size(); ++k) plan->slotOf[d][size_t(list[k].first)] = slots[k];
    }
    plan->compiledAt.assign(nDev, ~uint64_t(0));
    if (m_plans.size() >= kMaxPlans) m_plans.pop_back();
    m_plans.push_front(plan);
    return plan;
}

Status ModelRunner::compilePlan(Plan& plan) {
    // Scratch buffers big enough for this plan (a move drops every plan's programs on that device).
    for (size_t d = 0; d < m_devices.size(); ++d) {
        Dev& dev = m_devices[d];
        const auto& sizes = plan.slotBytes[d];
        if (dev.scratch.size() < sizes.size()) dev.scratch.resize(sizes.size());
        for (size_t s = 0; s < sizes.size(); ++s) {
            if (dev.scratch[s] && dev.scratch[s]->size() >= sizes[s]) continue;
            const uint64_t old = dev.scratch[s] ? dev.scratch[s]->size() : 0;
            const uint64_t bytes = std::max(sizes[s], old + old / 2);
            dev.scratch[s].reset();
            auto buffer = dev.device->allocate(bytes);
            if (!buffer) return buffer.status().withContext("step buffers on " + dev.device->info().id);
            dev.scratch[s] = std::move(buffer).value();
            ++dev.generation;
        }
    }
    for (Plan::Segment& seg : plan.segments) {
        backend::ProgramSpec spec;
        spec.graph = &plan.graph;
        spec.nodes = seg.nodes;
        spec.kv = m_devices[size_t(seg.device)].pool.get();
        spec.bindings.assign(plan.graph.tensors().size(), {});
        const auto& slots = plan.slotOf[size_t(seg.device)];
        for (size_t t = 0; t < slots.size(); ++t)
            if (slots[t] >= 0) spec.bindings[t] = {m_devices[size_t(seg.device)].scratch[size_t(slots[t])].get(), 0};
        seg.program.reset();
        auto program = m_devices[size_t(seg.device)].device->compile(spec);
        if (!program) return program.status().withContext("compiling a step for " + m_devices[size_t(seg.device)].device->info().id);
        seg.program = std::move(program).value();
    }
    for (size_t d = 0; d < m_devices.size(); ++d) plan.compiledAt[d] = m_devices[d].generation;
    return Status::ok();
}

Status ModelRunner::forward(const graph::Batch& batch, std::vector<float>& logits) {
    logits.clear();
    if (batch.tokens.empty()) return Status::ok();
    const model::ModelDims& dims = m_arch->dims();
    HEARTH_ASSIGN_OR_RETURN(const graph::StepShape shape,
                            graph::prepareStep(batch, dims.nVocab, m_kv.blockSize, m_kv.numBlocks, m_inputs));
    HEARTH_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, planFor(shape));
    bool stale = false;
    for (size_t d = 0; d < m_devices.size(); ++d) stale = stale || plan->compiledAt[d] != m_devices[d].generation;
    if (stale) HEARTH_RETURN_IF_ERROR(compilePlan(*plan));

    const graph::Graph& g = plan->graph;
    auto bufferOf = [&](int d, TensorId t) { return m_devices[size_t(d)].scratch[size_t(plan->slotOf[size_t(d)][size_t(t)])].get(); };
    for (size_t d = 0; d < m_devices.size(); ++d)
        for (TensorId t : plan->inputs[d]) {
            const std::vector<int32_t>* v = nullptr;
            switch (g.tensor(t).input) {
            case graph::StepInput::TokenIds: v = &m_inputs.ids; break;
            case graph::StepInput::Positions: v = &m_inputs.positions; break;
            case graph::StepInput::KvSlots: v = &m_inputs.slots; break;
            case graph::StepInput::AttnInfo: v = &m_inputs.info; break;
            case graph::StepInput::BlockTables: v = &m_inputs.tables; break;
            case graph::StepInput::WantedRows: v = &m_inputs.wanted; break;
            }
            const uint64_t bytes = std::min<uint64_t>(g.tensor(t).bytes(), v->size() * 4);
            HEARTH_RETURN_IF_ERROR(bufferOf(int(d), t)->write(0, v->data(), bytes));
        }
    std::vector<uint8_t> staging;
    for (Plan::Segment& seg : plan->segments) {
        for (const Plan::Copy& c : seg.copiesIn) {
            backend::Buffer* src = bufferOf(c.from, c.tensor);
            backend::Buffer* dst = bufferOf(seg.device, c.tensor);
            const uint64_t bytes = g.tensor(c.tensor).bytes();
            if (src->host()) {
                HEARTH_RETURN_IF_ERROR(dst->write(0, src->host(), bytes));
            } else if (dst->host()) {
                HEARTH_RETURN_IF_ERROR(src->read(0, dst->host(), bytes));
            } else {
                staging.resize(size_t(bytes));
                HEARTH_RETURN_IF_ERROR(src->read(0, staging.data(), bytes));
                HEARTH_RETURN_IF_ERROR(dst->write(0, staging.data(), bytes));
            }
        }
        HEARTH_RETURN_IF_ERROR(seg.program->run());
    }
    if (plan->output == graph::kNone) return Status::ok();
    const Tensor& out = g.tensor(plan->output);
    logits.resize(size_t(out.elements()));
    return bufferOf(plan->outputDevice, g.root(plan->output))->read(0, logits.data(), out.bytes());
}

std::vector<DeviceMemory> ModelRunner::plannedMemory(const graph::StepShape& shape) const {
    std::vector<DeviceMemory> out = memory();
    auto* self = const_cast<ModelRunner*>(this);
    auto plan = self->planFor(shape);
    if (!plan) return out;
    for (size_t d = 0; d < out.size(); ++d) {
        uint64_t bytes = 0;
        for (uint64_t b : (*plan)->slotBytes[d]) bytes += b;
        out[d].activationBytes = bytes;
    }
    return out;
}

} // namespace hearth::runtime
