// Placement, memory and execution of step graphs across the devices of a load.
#include "runtime/model_runner.h"

#include "backend/cpu/thread_pool.h"
#include "backend/selftest.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace hearth::runtime {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;
using graph::TensorKind;

namespace {

constexpr size_t kMaxPlans = 32;

// State slots of layer l's larger state pool one binding of `limit` bytes addresses (limit 0:
// no limit; a layer without state: none asked). -1 when unlimited.
int stateSlotsInBinding(const model::LayerState& st, uint64_t limit) {
    const uint64_t row = uint64_t(std::max(st.convRow, st.ssmRow)) * 4;
    if (limit == 0 || row == 0) return -1;
    return int(std::min<uint64_t>(limit / row, 1u << 20));
}

} // namespace

struct ModelRunner::Dev {
    std::unique_ptr<backend::Device> device;
    std::unique_ptr<backend::KvPool> pool;
    std::vector<std::unique_ptr<backend::Buffer>> scratch; // shared by every plan's slots
    // Recurrent layers' state pools held here, by (layer, value): persistent across steps.
    std::map<std::pair<int32_t, bool>, std::unique_ptr<backend::Buffer>> states;
    uint64_t generation = 0;                                // bumped when a scratch buffer moves
    uint64_t weightBytes = 0, mappedBytes = 0;
};

// One step shape's plan with its compiled programs (one per run of nodes).
struct ModelRunner::Plan {
    StepPlan step;
    std::vector<std::unique_ptr<backend::Program>> programs; // per segment
    std::vector<uint64_t> compiledAt;                        // [device]: Dev::generation at compile
};

ModelRunner::~ModelRunner() = default;

backend::Device& ModelRunner::device(size_t i) { return *m_devices[i].device; }
size_t ModelRunner::deviceCount() const { return m_devices.size(); }

const std::string& ModelRunner::deviceId() const { return m_devices.front().device->info().id; }

Devices ModelRunner::devices() const {
    Devices d;
    d.count = int(m_devices.size());
    d.gpuLayers = m_gpuLayers;
    d.cpuExpertLayers = m_cpuMoeLayers;
    d.supports = [this](int i, const graph::Graph& g, const graph::Node& n) {
        return m_devices[size_t(i)].device->supportsOp(g, n);
    };
    return d;
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
    bool gpu = config.device != "cpu" && config.device != "ref" && !config.device.empty();
    // A device is checked before it is trusted: the quick self-test, on an instance of its own
    // (devices keep uploaded weights by index, so the test's must not stay in the one the model
    // loads into). Any failing case leaves the load on the CPU alone, and deviceWarning() names
    // the ops. HEARTH_SKIP_DEVICE_CHECK=1 skips the check.
    const char* skipCheck = std::getenv("HEARTH_SKIP_DEVICE_CHECK");
    if (gpu && config.gpuLayers != 0 && !(skipCheck && std::string(skipCheck) == "1")) {
        HEARTH_ASSIGN_OR_RETURN(auto checked, open(config.device, config.pool));
        backend::SelftestOptions quick;
        quick.quick = true;
        const auto report = backend::runSelftest(*checked, quick);
        if (!report) {
            r->m_deviceWarning = "device " + config.device + " was not checked: " + report.status().toString();
        } else if (!report->passed()) {
            std::string ops;
            for (const std::string& f : report->failing()) ops += (ops.empty() ? "" : ", ") + f;
            r->m_deviceWarning = "device " + config.device + " disagrees with the reference on " + ops +
                                 " (hearth-cli selftest --device " + config.device + "); running on the CPU only";
            gpu = false;
        }
    }
    if (gpu) {
        HEARTH_ASSIGN_OR_RETURN(auto dev, open(config.device, config.pool));
        r->m_devices.push_back(Dev{std::move(dev), nullptr, {}, {}, 0, 0, 0});
        r->m_gpuLayers = config.gpuLayers < 0 ? nLayer : std::min(config.gpuLayers, nLayer);
        r->m_cpuMoeLayers = config.cpuMoeLayers < 0 ? r->m_gpuLayers : std::min(config.cpuMoeLayers, r->m_gpuLayers);
    }
    HEARTH_ASSIGN_OR_RETURN(auto cpuDev, open(config.device == "ref" ? "ref" : "cpu", config.pool));
    r->m_devices.push_back(Dev{std::move(cpuDev), nullptr, {}, {}, 0, 0, 0});
    const int cpu = int(r->m_devices.size()) - 1;

    r->m_kv.type = kvElementType(config.kvType);
    r->m_kv.blockSize = std::max(1, config.blockSize);
    r->m_kv.numBlocks = std::max(1, config.numBlocks);
    r->m_kv.contextLength = std::max(0, config.contextLength);
    r->m_kv.stateSlots = dims.recurrent() ? std::max(1, config.stateSlots) : 0;
    // A GPU holds a layer's state pool in one binding: fewer slots (down to minStateSlots) rather
    // than the GPU's layers' states on the CPU.
    if (gpu && r->m_kv.stateSlots > 0) {
        const uint64_t limit = r->m_devices.front().device->info().maxBindRange;
        for (int l = 0; l < std::min(r->m_gpuLayers, nLayer); ++l) {
            const int most = stateSlotsInBinding(dims.state[size_t(l)], limit);
            if (most >= std::max(1, config.minStateSlots)) r->m_kv.stateSlots = std::min(r->m_kv.stateSlots, most);
        }
    }

    // Where each layer's K/V lives: on the GPU for its layers when it runs their K/V nodes.
    // A model that reads images probes with an image's row in the step: its graph then reads
    // every weight an image's step may (qwen35's M-RoPE section factors), and each is loaded.
    graph::StepShape probeShape = kProbeShape;
    if (dims.givenEmbeddings) probeShape.embeds = 1;
    if (dims.rankOutputs > 0) probeShape.hidden = 1; // a reranker's head reads its weights on pooled rows only
    graph::Graph probeGraph = arch.buildGraph(probeShape, r->m_kv);
    HEARTH_RETURN_IF_ERROR(probeGraph.status());
    r->m_kvDevice = chooseKvDevices(probeGraph, nLayer, r->devices(), &r->m_fallbacks);
    HEARTH_ASSIGN_OR_RETURN(StepPlan probe,
                            makeStepPlan(std::move(probeGraph), probeShape, nLayer, r->m_kvDevice, r->devices()));
    for (size_t i = 0; i < probe.graph.nodes().size(); ++i) {
        const Node& n = probe.graph.nodes()[i];
        const int layer = std::clamp(n.layer, 0, nLayer - 1);
        const bool expertsInRam = n.experts && layer < r->m_cpuMoeLayers;
        if (gpu && probe.nodeDevice[i] == cpu && layer < r->m_gpuLayers && !expertsInRam && n.op != Op::KvWrite &&
            n.op != Op::Attention) {
            const std::string what = std::string(graph::opName(n.op)) + "@" + std::to_string(n.layer);
            if (std::find(r->m_fallbacks.begin(), r->m_fallbacks.end(), what) == r->m_fallbacks.end())
                r->m_fallbacks.push_back(what);
        }
    }
    // Experts in RAM only mean something for a model with experts.
    if (std::none_of(probe.graph.nodes().begin(), probe.graph.nodes().end(), [](const Node& n) { return n.experts; }))
        r->m_cpuMoeLayers = 0;

    // K/V pools: one per device, for the layers whose K/V it holds, of as many blocks as the
    // smallest device allows.
    std::vector<backend::KvPoolSpec> pools;
    for (size_t d = 0; d < r->m_devices.size(); ++d) {
        HEARTH_ASSIGN_OR_RETURN(backend::KvPoolSpec spec,
                                kvPoolSpec(dims, r->m_kvDevice, int(d), config.kvType, r->m_kv.blockSize, r->m_kv.numBlocks));
        if (!spec.layers.empty()) {
            const int most = r->m_devices[d].device->maxKvBlocks(spec);
            if (most < 1) return unsupported("device " + r->m_devices[d].device->info().id + " cannot hold one K/V block");
            r->m_kv.numBlocks = std::min(r->m_kv.numBlocks, most);
        }
        pools.push_back(std::move(spec));
    }
    for (size_t d = 0; d < r->m_devices.size(); ++d) {
        if (pools[d].layers.empty()) continue;
        pools[d].numBlocks = r->m_kv.numBlocks;
        auto pool = r->m_devices[d].device->createKvPool(pools[d]);
        if (!pool) return pool.status().withContext("K/V cache on " + r->m_devices[d].device->info().id);
        r->m_devices[d].pool = std::move(pool).value();
    }

    // Recurrent state pools: each layer's on the device holding its memory (where its SsmConv and
    // DeltaNet run), every slot of both of its states; as many slots as one binding of each such
    // device addresses, down to minStateSlots.
    for (int l = 0; l < nLayer && r->m_kv.stateSlots > 0; ++l) {
        const backend::DeviceInfo& info = r->m_devices[size_t(r->m_kvDevice[size_t(l)])].device->info();
        const int most = stateSlotsInBinding(dims.state[size_t(l)], info.maxBindRange);
        if (most < 0) continue;
        if (most < std::max(1, config.minStateSlots))
            return outOfMemory("the recurrent state of layer " + std::to_string(l) + " (" +
                               std::to_string(dims.state[size_t(l)].bytes() >> 10) + " KiB per sequence) fits " +
                               std::to_string(most) + " sequences in one binding of " + info.id + ", fewer than the " +
                               std::to_string(config.minStateSlots) + " asked for");
        r->m_kv.stateSlots = std::min(r->m_kv.stateSlots, most);
    }
    for (int l = 0; l < nLayer && r->m_kv.stateSlots > 0; ++l) {
        const model::LayerState& st = dims.state[size_t(l)];
        for (const bool value : {false, true}) {
            const int64_t row = value ? st.ssmRow : st.convRow;
            if (row <= 0) continue;
            Dev& dev = r->m_devices[size_t(r->m_kvDevice[size_t(l)])];
            auto buffer = dev.device->allocate(uint64_t(row) * 4 * uint64_t(r->m_kv.stateSlots));
            if (!buffer) return buffer.status().withContext("recurrent state on " + dev.device->info().id);
            dev.states[{l, value}] = std::move(buffer).value();
        }
    }

    // Weights: each device loads what its nodes read (the GPU first: the CPU may release pages).
    r->m_devices[size_t(cpu)].device->setFileReader(arch.reader());
    for (size_t d = 0; d < r->m_devices.size(); ++d) {
        const WeightUses u = weightUses(probe, int(d));
        std::map<int32_t, backend::WeightUse> uses;
        for (int32_t w : u.matMul) uses[w].matMul = true;
        for (int32_t w : u.rows) uses[w].rows = true;
        for (int32_t w : u.other) uses[w].other = true;
        for (auto& [index, use] : uses) use.index = index;
        std::vector<backend::WeightUse> list;
        for (const auto& [index, use] : uses) list.push_back(use);
        Dev& dev = r->m_devices[d];
        if (config.shareWeights)
            for (const Dev& other : config.shareWeights->m_devices)
                if (other.device->info().id == dev.device->info().id) dev.device->shareWeightsWith(*other.device);
        if (config.onWeights) config.onWeights(dev.device->info().id, int(d), int(r->m_devices.size()));
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

Status ModelRunner::copyState(int32_t src, int32_t dst) {
    if (src < 0 || dst < 0 || src >= m_kv.stateSlots || dst >= m_kv.stateSlots)
        return outOfRange("state slot outside the pool");
    if (src == dst) return Status::ok();
    for (Dev& d : m_devices)
        for (auto& [key, buffer] : d.states) {
            const uint64_t row = buffer->size() / uint64_t(m_kv.stateSlots);
            if (uint8_t* p = buffer->host()) {
                std::memmove(p + uint64_t(dst) * row, p + uint64_t(src) * row, row);
                continue;
            }
            m_staging.resize(size_t(row));
            HEARTH_RETURN_IF_ERROR(buffer->read(uint64_t(src) * row, m_staging.data(), row));
            HEARTH_RETURN_IF_ERROR(buffer->write(uint64_t(dst) * row, m_staging.data(), row));
        }
    return Status::ok();
}

uint64_t ModelRunner::stateBytes() const {
    uint64_t total = 0;
    for (const Dev& d : m_devices)
        for (const auto& [key, buffer] : d.states) total += buffer->size();
    return total;
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
        for (const auto& [key, buffer] : d.states) m.stateBytes += buffer->size();
        m.activationBytes = scratchBytes(d);
        out.push_back(m);
    }
    return out;
}

uint64_t ModelRunner::scratchBytes(const Dev& d) {
    uint64_t total = 0;
    for (const auto& b : d.scratch) total += b ? b->size() : 0;
    return total;
}

uint64_t ModelRunner::hostActivationBytes() const {
    return m_devices.empty() ? 0 : scratchBytes(m_devices.back()); // the last: the CPU
}

Result<std::shared_ptr<ModelRunner::Plan>> ModelRunner::planFor(const graph::StepShape& shape) {
    for (auto it = m_plans.begin(); it != m_plans.end(); ++it)
        if ((*it)->step.shape == shape) {
            auto plan = *it;
            if (it != m_plans.begin()) m_plans.splice(m_plans.begin(), m_plans, it);
            return plan;
        }
    auto plan = std::make_shared<Plan>();
    HEARTH_ASSIGN_OR_RETURN(plan->step, makeStepPlan(m_arch->buildGraph(shape, m_kv), shape, m_arch->dims().nLayer,
                                                     m_kvDevice, devices()));
    plan->programs.resize(plan->step.segments.size());
    plan->compiledAt.assign(m_devices.size(), ~uint64_t(0));
    if (m_plans.size() >= kMaxPlans) m_plans.pop_back();
    m_plans.push_front(plan);
    return plan;
}

Status ModelRunner::compilePlan(Plan& plan) {
    const StepPlan& step = plan.step;
    // Scratch buffers big enough for this plan (a move drops every plan's programs on that device).
    for (size_t d = 0; d < m_devices.size(); ++d) {
        Dev& dev = m_devices[d];
        const auto& sizes = step.slotBytes[d];
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
    for (size_t k = 0; k < step.segments.size(); ++k) {
        const StepPlan::Segment& seg = step.segments[k];
        Dev& dev = m_devices[size_t(seg.device)];
        backend::ProgramSpec spec;
        spec.graph = &step.graph;
        spec.nodes = seg.nodes;
        spec.kv = dev.pool.get();
        spec.bindings.assign(step.graph.tensors().size(), {});
        const auto& slots = step.slotOf[size_t(seg.device)];
        for (size_t t = 0; t < slots.size(); ++t)
            if (slots[t] >= 0) spec.bindings[t] = {dev.scratch[size_t(slots[t])].get(), 0};
        for (size_t t = 0; t < step.graph.tensors().size(); ++t) {
            const Tensor& tensor = step.graph.tensors()[t];
            if (tensor.kind != TensorKind::State) continue;
            const auto it = dev.states.find({tensor.layer, tensor.value});
            if (it != dev.states.end()) spec.bindings[t] = {it->second.get(), 0};
        }
        plan.programs[k].reset();
        auto program = dev.device->compile(spec);
        if (!program) return program.status().withContext("compiling a step for " + dev.device->info().id);
        plan.programs[k] = std::move(program).value();
    }
    for (size_t d = 0; d < m_devices.size(); ++d) plan.compiledAt[d] = m_devices[d].generation;
    return Status::ok();
}

Status ModelRunner::forward(const graph::Batch& batch, std::vector<float>& logits, std::vector<float>* hidden) {
    logits.clear();
    if (hidden) hidden->clear();
    if (batch.tokens.empty()) return Status::ok();
    const model::ModelDims& dims = m_arch->dims();
    HEARTH_ASSIGN_OR_RETURN(const graph::StepShape shape,
                            graph::prepareStep(batch, dims.nVocab, m_kv.blockSize, m_kv.numBlocks, m_inputs,
                                                               m_kv.stateSlots));
    HEARTH_ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, planFor(shape));
    bool stale = false;
    for (size_t d = 0; d < m_devices.size(); ++d) stale = stale || plan->compiledAt[d] != m_devices[d].generation;
    if (stale) HEARTH_RETURN_IF_ERROR(compilePlan(*plan));
    m_builtPlan = stale;

    const StepPlan& step = plan->step;
    const graph::Graph& g = step.graph;
    auto bufferOf = [&](int d, TensorId t) {
        return m_devices[size_t(d)].scratch[size_t(step.slotOf[size_t(d)][size_t(t)])].get();
    };
    for (size_t d = 0; d < m_devices.size(); ++d)
        for (TensorId t : step.inputs[d]) {
            const std::vector<int32_t>* v = nullptr;
            const std::vector<float>* f = &m_inputs.hiddenIn;
            switch (g.tensor(t).input) {
            case graph::StepInput::TokenIds: v = &m_inputs.ids; break;
            case graph::StepInput::Positions: v = &m_inputs.positions; break;
            case graph::StepInput::KvSlots: v = &m_inputs.slots; break;
            case graph::StepInput::AttnInfo: v = &m_inputs.info; break;
            case graph::StepInput::BlockTables: v = &m_inputs.tables; break;
            case graph::StepInput::WantedRows: v = &m_inputs.wanted; break;
            case graph::StepInput::StateInfo: v = &m_inputs.stateInfo; break;
            case graph::StepInput::HiddenRows: v = &m_inputs.hidden; break;
            case graph::StepInput::EmbedIndex: v = &m_inputs.embedIndex; break;
            case graph::StepInput::GridX: v = &m_inputs.gridX; break;
            case graph::StepInput::GridY: v = &m_inputs.gridY; break;
            case graph::StepInput::RopeT: v = &m_inputs.ropeT; break;
            case graph::StepInput::RopeH: v = &m_inputs.ropeH; break;
            case graph::StepInput::RopeW: v = &m_inputs.ropeW; break;
            case graph::StepInput::EmbedRows: f = &m_inputs.embeds; break;
            case graph::StepInput::HiddenIn: break;
            }
            const void* data = v ? static_cast<const void*>(v->data()) : f->data();
            const uint64_t have = (v ? v->size() : f->size()) * 4;
            if (!v && have < g.tensor(t).bytes())
                return invalidArgument(std::string("the step gives too few values for its input ") +
                                       graph::stepInputName(g.tensor(t).input));
            const uint64_t bytes = std::min<uint64_t>(g.tensor(t).bytes(), have);
            HEARTH_RETURN_IF_ERROR(bufferOf(int(d), t)->write(0, data, bytes));
        }
    for (size_t k = 0; k < step.segments.size(); ++k) {
        const StepPlan::Segment& seg = step.segments[k];
        for (const StepPlan::Copy& c : seg.copiesIn) {
            backend::Buffer* src = bufferOf(c.from, c.tensor);
            backend::Buffer* dst = bufferOf(seg.device, c.tensor);
            const uint64_t bytes = g.tensor(c.tensor).bytes();
            if (src->host()) {
                HEARTH_RETURN_IF_ERROR(dst->write(0, src->host(), bytes));
            } else if (dst->host()) {
                HEARTH_RETURN_IF_ERROR(src->read(0, dst->host(), bytes));
            } else {
                m_staging.resize(size_t(bytes));
                HEARTH_RETURN_IF_ERROR(src->read(0, m_staging.data(), bytes));
                HEARTH_RETURN_IF_ERROR(dst->write(0, m_staging.data(), bytes));
            }
        }
        HEARTH_RETURN_IF_ERROR(plan->programs[k]->run());
    }
    if (hidden && step.hiddenOutput != graph::kNone) {
        const Tensor& h = g.tensor(step.hiddenOutput);
        hidden->resize(size_t(h.elements()));
        HEARTH_RETURN_IF_ERROR(bufferOf(step.hiddenDevice, g.root(step.hiddenOutput))->read(0, hidden->data(), h.bytes()));
    }
    if (step.output == graph::kNone) return Status::ok();
    const Tensor& out = g.tensor(step.output);
    logits.resize(size_t(out.elements()));
    return bufferOf(step.outputDevice, g.root(step.output))->read(0, logits.data(), out.bytes());
}

} // namespace hearth::runtime
