// The GPU/CPU memory estimate (hearth/model_info.h) from the step description: the architecture's
// graph placed and given memory slots exactly as ModelRunner does (runtime/step_plan.h).
#include "hearth/model_info.h"

#include "graph/step.h"
#include "model/arch.h"
#include "runtime/memory_budget.h"
#include "runtime/step_plan.h"

#include <algorithm>
#include <set>

namespace hearth {

namespace {

constexpr int kBlockSize = 16; // the engine's default K/V block

KvType kvTypeOf(quant::Type t) {
    return t == quant::Type::F32 ? KvType::F32 : t == quant::Type::Q8_0 ? KvType::Q8_0 : KvType::F16;
}

// The layer a tensor belongs to ("blk.12.attn_q.weight" -> 12), or -1.
int layerOf(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    int layer = 0;
    size_t i = 4;
    if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') {
        layer = layer * 10 + (name[i] - '0');
        if (layer > 1000000) return -1;
        ++i;
    }
    return i < name.size() && name[i] == '.' ? layer : -1;
}

// For files the engine cannot bind: layer tensors with their layer, the output head with the
// last one, the embedding with the first; K/V by attention layer and recurrent state by recurrent
// layer (multi-token-prediction layers hold neither); activations left out.
SplitEstimate byTensorNames(const gguf::File& file, const ModelInfo& info, int gpuLayers, uint32_t contextLength,
                            quant::Type kvType, int sequences, int cpuMoeLayers) {
    SplitEstimate e;
    const int layers = int(info.blockCount);
    e.gpuLayers = std::clamp(gpuLayers, 0, layers);
    e.cpuMoeLayers = info.expertCount > 0 ? std::clamp(cpuMoeLayers < 0 ? e.gpuLayers : cpuMoeLayers, 0, e.gpuLayers) : 0;
    for (const gguf::TensorInfo& t : file.tensors()) {
        const int layer = layerOf(t.name);
        const bool experts = layer >= 0 && layer < e.cpuMoeLayers && t.name.find("_exps.") != std::string::npos;
        const bool gpu = layer >= 0 ? layer < e.gpuLayers && !experts
                         : t.name.rfind("output", 0) == 0 ? layers > 0 && e.gpuLayers == layers
                                                          : e.gpuLayers > 0;
        (gpu ? e.weightsGpu : e.weightsCpu) += t.bytes;
        if (experts) e.expertsCpu += t.bytes;
    }
    const uint64_t seqs = uint64_t(std::max(1, sequences));
    const MemoryEstimate m = estimateMemory(info, contextLength, kvType);
    const uint64_t kvAll = m.kvBytes * seqs;
    const uint64_t perState = (info.ssmConvValues + info.ssmMatrixValues) * 4 * info.recurrentLayers;
    const uint64_t slots = uint64_t(
        runtime::stateSlotsFor(perState, int(seqs), kvAll, 0, true, runtime::availableMemoryBytes()));
    const uint64_t statePerLayer = (info.ssmConvValues + info.ssmMatrixValues) * 4 * slots;
    // Attention layers: every one but the recurrent and MTP ones.
    const int run = layers - int(std::min(info.nextnLayers, info.blockCount));
    int attention = 0, attentionOnGpu = 0;
    for (int l = 0; l < run; ++l) {
        const bool recurrent = size_t(l) < info.recurrentLayer.size() && info.recurrentLayer[size_t(l)];
        if (recurrent) {
            (l < e.gpuLayers ? e.stateGpu : e.stateCpu) += statePerLayer;
        } else {
            ++attention;
            attentionOnGpu += l < e.gpuLayers ? 1 : 0;
        }
    }
    e.kvGpu = attention > 0 ? kvAll / uint64_t(attention) * uint64_t(attentionOnGpu) : 0;
    e.kvCpu = kvAll - e.kvGpu;
    return e;
}

// The estimate for an architecture bound once (the fits ask for many layer counts).
SplitEstimate fromDescription(const model::Architecture& arch, int gpuLayers, uint32_t contextLength, quant::Type kvType,
                              int sequences, int batchTokens, int cpuMoeLayers, bool& ok) {
    const model::ModelDims& dims = arch.dims();
    SplitEstimate e;
    e.gpuLayers = std::clamp(gpuLayers, 0, dims.nLayer);
    e.cpuMoeLayers = std::clamp(cpuMoeLayers < 0 ? e.gpuLayers : cpuMoeLayers, 0, e.gpuLayers);
    const int seqs = std::max(1, sequences);
    const int blocksPerSeq = int((uint64_t(std::max<uint32_t>(1, contextLength)) + kBlockSize - 1) / kBlockSize);
    const KvType kvStored = kvTypeOf(kvType);
    model::KvSetup kv;
    kv.type = kvElementType(kvStored);
    kv.blockSize = kBlockSize;
    kv.numBlocks = blocksPerSeq * seqs;
    kv.contextLength = int64_t(std::max<uint32_t>(1, contextLength));
    // As many recurrent-state slots as the engine takes: the live sequences', snapshots', forks'.
    const uint64_t kvAll = uint64_t(kv.numBlocks) * kBlockSize * runtime::kvBytesPerToken(dims, kvStored);
    kv.stateSlots = runtime::stateSlotsFor(dims.stateBytesPerSlot(), seqs, kvAll, 0, true, runtime::availableMemoryBytes());
    runtime::Devices devices;
    devices.count = 2;
    devices.gpuLayers = e.gpuLayers;
    devices.cpuExpertLayers = e.cpuMoeLayers;
    devices.supports = [](int, const graph::Graph&, const graph::Node&) { return true; };
    const int tokens = std::max(1, batchTokens);
    const graph::StepShape shape{tokens, std::min(tokens, seqs), graph::roundTableLength(kv.numBlocks)};
    const std::vector<int> kvDevice =
        runtime::chooseKvDevices(arch.buildGraph(runtime::kProbeShape, kv), dims.nLayer, devices);
    auto plan = runtime::makeStepPlan(arch.buildGraph(shape, kv), shape, dims.nLayer, kvDevice, devices);
    ok = plan.isOk();
    if (!ok) return e;
    // The weights are those the engine loads: for a model that reads images, what a step with an
    // image's row reads too (qwen35's M-RoPE section factors), as the engine's probe has it.
    graph::StepShape imageShape = shape;
    imageShape.embeds = 1;
    auto imagePlan = dims.givenEmbeddings
                         ? runtime::makeStepPlan(arch.buildGraph(imageShape, kv), imageShape, dims.nLayer, kvDevice, devices)
                         : Result<runtime::StepPlan>(invalidArgument("no image step"));
    const runtime::StepPlan& weightPlan = imagePlan ? *imagePlan : *plan;
    const auto& nodes = plan->graph.nodes();
    if (std::none_of(nodes.begin(), nodes.end(), [](const graph::Node& n) { return n.experts; })) e.cpuMoeLayers = 0;
    uint64_t* weights[2] = {&e.weightsGpu, &e.weightsCpu};
    uint64_t* kvBytes[2] = {&e.kvGpu, &e.kvCpu};
    uint64_t* stateBytes[2] = {&e.stateGpu, &e.stateCpu};
    uint64_t* compute[2] = {&e.computeGpu, &e.computeCpu};
    // A recurrent layer's state lives where its K/V would: every slot of both of its states.
    for (int l = 0; l < dims.nLayer && size_t(l) < dims.state.size(); ++l)
        *stateBytes[std::clamp(kvDevice[size_t(l)], 0, 1)] += dims.state[size_t(l)].bytes() * uint64_t(kv.stateSlots);
    for (int d = 0; d < 2; ++d) {
        const runtime::WeightUses u = runtime::weightUses(weightPlan, d);
        std::set<int32_t> all(u.matMul.begin(), u.matMul.end());
        all.insert(u.rows.begin(), u.rows.end());
        all.insert(u.other.begin(), u.other.end());
        for (int32_t w : all) *weights[d] += arch.weights()[size_t(w)].bytes();
        if (d == 1) {
            // The CPU's share of the experts of layers that are otherwise on the GPU.
            std::set<int32_t> experts;
            for (size_t i = 0; i < nodes.size(); ++i) {
                const graph::Node& n = nodes[i];
                if (plan->nodeDevice[i] != 1 || !n.experts || std::clamp(n.layer, 0, dims.nLayer - 1) >= e.cpuMoeLayers)
                    continue;
                for (graph::TensorId src : n.src) {
                    if (src == graph::kNone) continue;
                    const graph::Tensor& t = plan->graph.tensor(plan->graph.root(src));
                    if (t.kind == graph::TensorKind::Weight) experts.insert(t.weight);
                }
            }
            for (int32_t w : experts) e.expertsCpu += arch.weights()[size_t(w)].bytes();
        }
        auto spec = runtime::kvPoolSpec(dims, kvDevice, d, kvStored, kv.blockSize, kv.numBlocks);
        if (spec && !spec->layers.empty()) *kvBytes[d] = runtime::kvPoolBytes(*spec);
        for (uint64_t b : plan->slotBytes[size_t(d)]) *compute[d] += b;
    }
    return e;
}

} // namespace

SplitEstimate estimateSplit(const gguf::File& file, const ModelInfo& info, int gpuLayers, uint32_t contextLength,
                            quant::Type kvType, int sequences, int batchTokens, int cpuMoeLayers) {
    auto arch = model::loadArchitecture(file);
    bool ok = false;
    if (arch) {
        const SplitEstimate e =
            fromDescription(**arch, gpuLayers, contextLength, kvType, sequences, batchTokens, cpuMoeLayers, ok);
        if (ok) return e;
    }
    return byTensorNames(file, info, gpuLayers, contextLength, kvType, sequences, cpuMoeLayers);
}

namespace {

// Estimates for one file with the architecture bound once (the fits ask for many splits).
class Estimator {
public:
    Estimator(const gguf::File& file, const ModelInfo& info, uint32_t contextLength, quant::Type kvType, int sequences,
              int batchTokens)
        : m_file(file), m_info(info), m_ctx(contextLength), m_kv(kvType), m_seqs(sequences), m_batch(batchTokens),
          m_arch(model::loadArchitecture(file)) {}
    SplitEstimate operator()(int gpuLayers, int cpuMoeLayers) const {
        bool ok = false;
        SplitEstimate e;
        if (m_arch) e = fromDescription(**m_arch, gpuLayers, m_ctx, m_kv, m_seqs, m_batch, cpuMoeLayers, ok);
        if (!ok) e = byTensorNames(m_file, m_info, gpuLayers, m_ctx, m_kv, m_seqs, cpuMoeLayers);
        return e;
    }

private:
    const gguf::File& m_file;
    const ModelInfo& m_info;
    uint32_t m_ctx;
    quant::Type m_kv;
    int m_seqs, m_batch;
    Result<std::unique_ptr<model::Architecture>> m_arch;
};

} // namespace

int maxGpuLayersThatFit(const gguf::File& file, const ModelInfo& info, uint64_t gpuBytes, uint32_t contextLength,
                        quant::Type kvType, int sequences, int batchTokens) {
    return fitOnGpu(file, info, gpuBytes, contextLength, kvType, sequences, batchTokens, 0).gpuLayers;
}

GpuFit fitOnGpu(const gguf::File& file, const ModelInfo& info, uint64_t gpuBytes, uint32_t contextLength,
                quant::Type kvType, int sequences, int batchTokens, int cpuMoeLayers) {
    const Estimator estimate(file, info, contextLength, kvType, sequences, batchTokens);
    const int layers = int(info.blockCount);
    if (cpuMoeLayers != kFitExperts) {
        // The experts in RAM given: the most layers that fit with them.
        for (int n = layers; n >= 1; --n) {
            const SplitEstimate e = estimate(n, cpuMoeLayers);
            if (e.gpuTotal() <= gpuBytes) return {n, e.cpuMoeLayers};
        }
        return {};
    }
    if (layers > 0 && estimate(layers, 0).gpuTotal() <= gpuBytes) return {layers, 0};
    // Every layer on the GPU with the experts of the first n in RAM, n as small as fits (more
    // experts in RAM never take more of the GPU, so the first n that fits is the least).
    if (info.expertCount > 0 && layers > 0 && estimate(layers, layers).gpuTotal() <= gpuBytes) {
        int lo = 1, hi = layers; // estimate(layers, hi) fits
        while (lo < hi) {
            const int mid = lo + (hi - lo) / 2;
            if (estimate(layers, mid).gpuTotal() <= gpuBytes) hi = mid;
            else lo = mid + 1;
        }
        return {layers, hi};
    }
    // Fewer layers, each with its experts in RAM when it has any.
    GpuFit best;
    const int moe = info.expertCount > 0 ? -1 : 0;
    for (int n = 1; n < layers; ++n) {
        const SplitEstimate e = estimate(n, moe);
        if (e.gpuTotal() <= gpuBytes) best = {n, e.cpuMoeLayers};
    }
    return best;
}

} // namespace hearth
