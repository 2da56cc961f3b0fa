// `hearth-cli inspect`: a model's architecture, hyper-parameters, tokenizer, tensor table, size and
// memory estimate, as text or as one JSON object.
#include "commands.h"

#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "hearth/model_info.h"
#include "hearth/projector.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>

namespace hearth::cli {

namespace {

const char* kInspectHelp =
    "usage: hearth-cli inspect MODEL.gguf [--json] [--ctx N] [--kv-type F16|Q8_0|F32]\n"
    "                          [--device ID | --gpu-memory SIZE] [-ngl N] [--cpu-moe | --n-cpu-moe N]\n"
    "                          [--mmproj FILE | --no-mmproj]\n"
    "  Prints the architecture, hyper-parameters, tokenizer, tensor table, total size, and the\n"
    "  memory for weights and for the KV cache at --ctx tokens (default: min(model's, 4096)).\n"
    "  Hybrid models (qwen35): which layers are gated delta nets, full attention or multi-token\n"
    "  prediction, the delta net's sizes, and the recurrent state each sequence keeps.\n"
    "  A split model is inspected through its first part (NAME-00001-of-0000N.gguf), all parts counted.\n"
    "  A vision projector beside the model (*mmproj*.gguf that fits it), or --mmproj FILE, is\n"
    "  named and counted in the memory; --no-mmproj leaves it out.\n"
    "Placement on a GPU, from the estimate a load makes (what runs where, bytes per device):\n"
    "  --device ID         a GPU from 'hearth-cli devices' (its usable memory is the budget)\n"
    "  --gpu-memory SIZE   or a budget of SIZE (e.g. 8G) for a GPU this machine does not have\n"
    "  -ngl N              layers on the GPU (default: as many as fit, experts in RAM first)\n"
    "  --cpu-moe           every layer's MoE experts in RAM; --n-cpu-moe N: the first N layers'\n"
    "  --parallel N        sequences of --ctx tokens each (default 1)\n";

// A multimodal projector file (general.architecture "clip"): its vision encoder.
int inspectProjector(const std::string& path, bool json);

std::string humanBytes(uint64_t b) {
    char buf[32];
    if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / double(1ull << 30));
    else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(b) / double(1ull << 20));
    else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024.0);
    else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
    return buf;
}

// One letter per block: R gated delta net (recurrent), A full attention, M multi-token prediction.
std::string layerKinds(const ModelInfo& m) {
    std::string kinds;
    for (uint32_t l = 0; l < m.blockCount; ++l)
        kinds += l >= m.blockCount - m.nextnLayers ? 'M'
                 : l < m.recurrentLayer.size() && m.recurrentLayer[l] ? 'R'
                                                                      : 'A';
    return kinds;
}

bool hybrid(const ModelInfo& m) { return !m.recurrentLayer.empty(); }

std::string optionalId(const std::optional<uint32_t>& v) {
    return v ? std::to_string(*v) : std::string("-");
}

nlohmann::ordered_json toJson(const gguf::File& file, const ModelInfo& m, uint32_t ctx,
                              quant::Type kvType, const MemoryEstimate& mem) {
    nlohmann::ordered_json j;
    j["architecture"] = m.architecture;
    j["name"] = m.name;
    j["file_type"] = m.fileType ? nlohmann::ordered_json(fileTypeName(*m.fileType)) : nullptr;
    j["gguf_version"] = file.version();
    j["hyperparameters"] = {{"context_length", m.contextLength},
                            {"embedding_length", m.embeddingLength},
                            {"block_count", m.blockCount},
                            {"feed_forward_length", m.feedForwardLength},
                            {"expert_count", m.expertCount},
                            {"expert_used_count", m.expertUsedCount},
                            {"head_count", m.headCount},
                            {"head_count_kv", m.headCountKv},
                            {"key_length", m.keyLength},
                            {"value_length", m.valueLength},
                            {"rope_dimension_count", m.ropeDimensions},
                            {"rope_freq_base", m.ropeFreqBase},
                            {"rms_epsilon", m.rmsEpsilon},
                            {"vocab_size", m.vocabSize},
                            {"tied_embeddings", m.tiedEmbeddings}};
    auto id = [](const std::optional<uint32_t>& v) {
        return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
    };
    if (hybrid(m)) {
        j["hybrid"] = {{"attention_layers", m.attentionLayers()},
                       {"recurrent_layers", m.recurrentLayers},
                       {"nextn_layers", m.nextnLayers},
                       {"layer_kinds", layerKinds(m)},
                       {"ssm", {{"conv_kernel", m.ssmConvKernel},
                                {"state_size", m.ssmStateSize},
                                {"inner_size", m.ssmInnerSize},
                                {"time_step_rank", m.ssmTimeStepRank},
                                {"group_count", m.ssmGroupCount},
                                {"conv_values_per_layer", m.ssmConvValues},
                                {"matrix_values_per_layer", m.ssmMatrixValues}}}};
    }
    j["tokenizer"] = {{"model", m.tokenizer.model},       {"pre", m.tokenizer.pre},
                      {"tokens", m.tokenizer.tokens},     {"bos", id(m.tokenizer.bos)},
                      {"eos", id(m.tokenizer.eos)},       {"eot", id(m.tokenizer.eot)},
                      {"unk", id(m.tokenizer.unk)},
                      {"has_chat_template", m.tokenizer.hasChatTemplate}};
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (const gguf::TensorInfo& t : file.tensors()) {
        nlohmann::ordered_json shape = nlohmann::ordered_json::array();
        for (uint32_t d = 0; d < t.nDims; ++d) shape.push_back(t.ne[d]);
        tensors.push_back({{"name", t.name},
                           {"type", std::string(quant::typeName(t.type))},
                           {"shape", shape},
                           {"bytes", t.bytes}});
    }
    j["tensors"] = tensors;
    j["tensor_count"] = file.tensors().size();
    j["tensors_by_type"] = m.tensorsByType;
    j["parameter_count"] = m.parameterCount;
    j["file_bytes"] = file.fileSize(); // all parts of a split model
    nlohmann::ordered_json parts = nlohmann::ordered_json::array();
    for (const gguf::PartInfo& p : file.parts())
        parts.push_back({{"path", p.path}, {"bytes", p.fileSize}, {"tensors", p.tensorCount}});
    j["parts"] = parts;
    j["memory"] = {{"context", ctx},
                   {"kv_type", std::string(quant::typeName(kvType))},
                   {"weights_bytes", mem.weightBytes},
                   {"kv_cache_bytes", mem.kvBytes},
                   {"kv_bytes_per_token", estimateMemory(m, 1, kvType).kvBytes},
                   {"state_bytes_per_sequence", mem.stateBytes},
                   {"projector_bytes", mem.projectorBytes},
                   {"total_bytes", mem.totalBytes()}};
    return j;
}

void printText(const std::string& path, const gguf::File& file, const ModelInfo& m, uint32_t ctx,
               quant::Type kvType, const MemoryEstimate& mem) {
    std::printf("%s\n", path.c_str());
    std::printf("  architecture      %s%s%s\n", m.architecture.c_str(), m.name.empty() ? "" : "  name: ",
                m.name.c_str());
    if (m.fileType) std::printf("  file type         %s\n", fileTypeName(*m.fileType).c_str());
    std::printf("  gguf version      %u, %zu tensors, %s", file.version(), file.tensors().size(),
                humanBytes(file.fileSize()).c_str());
    if (file.parts().size() > 1) std::printf(" in %zu parts", file.parts().size());
    std::printf("\n");
    std::printf("  parameters        %llu (%.2fM)\n",
                static_cast<unsigned long long>(m.parameterCount), double(m.parameterCount) / 1e6);
    std::printf("hyper-parameters\n");
    std::printf("  context length    %u\n", m.contextLength);
    std::printf("  embedding length  %u\n", m.embeddingLength);
    std::printf("  layers            %u\n", m.blockCount);
    std::printf("  feed forward      %u\n", m.feedForwardLength);
    if (m.expertCount > 0) std::printf("  experts           %u, %u per token\n", m.expertCount, m.expertUsedCount);
    std::printf("  heads             %u (kv %u), head dim %u\n", m.headCount, m.headCountKv,
                m.keyLength);
    std::printf("  rope              %u dims, base %g\n", m.ropeDimensions, double(m.ropeFreqBase));
    std::printf("  rms epsilon       %g\n", double(m.rmsEpsilon));
    std::printf("  vocabulary        %u%s\n", m.vocabSize, m.tiedEmbeddings ? " (tied output)" : "");
    if (hybrid(m)) {
        std::printf("hybrid layout\n");
        if (m.architecture == "lfm2") {
            std::printf("  layers            %u short convolution, %u attention\n", m.recurrentLayers, m.attentionLayers());
            std::printf("  layer kinds       %s (R convolution, A attention)\n", layerKinds(m).c_str());
            std::printf("  convolution       %u taps; state per layer %llu values (%s F32)\n", m.ssmConvKernel,
                        static_cast<unsigned long long>(m.ssmConvValues), humanBytes(m.ssmConvValues * 4).c_str());
        } else {
            std::printf("  layers            %u gated delta-net, %u full attention, %u multi-token prediction (not run)\n",
                        m.recurrentLayers, m.attentionLayers(), m.nextnLayers);
            std::printf("  layer kinds       %s (R delta net, A attention, M prediction)\n", layerKinds(m).c_str());
            std::printf("  delta net         conv kernel %u, state size %u, %u q/k heads, %u v heads, inner %u\n",
                        m.ssmConvKernel, m.ssmStateSize, m.ssmGroupCount, m.ssmTimeStepRank, m.ssmInnerSize);
            std::printf("  state per layer   %llu conv window + %llu delta-net values (%s F32)\n",
                        static_cast<unsigned long long>(m.ssmConvValues),
                        static_cast<unsigned long long>(m.ssmMatrixValues),
                        humanBytes((m.ssmConvValues + m.ssmMatrixValues) * 4).c_str());
        }
    }
    const TokenizerSummary& t = m.tokenizer;
    std::printf("tokenizer\n");
    std::printf("  model             %s%s%s\n", t.model.empty() ? "-" : t.model.c_str(),
                t.pre.empty() ? "" : ", pre ", t.pre.c_str());
    std::printf("  tokens            %u  bos %s  eos %s  eot %s  unk %s\n", t.tokens,
                optionalId(t.bos).c_str(), optionalId(t.eos).c_str(), optionalId(t.eot).c_str(),
                optionalId(t.unk).c_str());
    std::printf("  chat template     %s\n", t.hasChatTemplate ? "yes" : "no");
    std::printf("tensors\n");
    for (const gguf::TensorInfo& ti : file.tensors())
        std::printf("  %-32s %-5s %-20s %s\n", ti.name.c_str(), quant::typeName(ti.type).data(),
                    ti.shapeString().c_str(), humanBytes(ti.bytes).c_str());
    std::printf("  by type          ");
    for (const auto& [type, count] : m.tensorsByType) std::printf(" %s: %u", type.c_str(), count);
    std::printf("\nmemory at context %u (KV %s)\n", ctx, quant::typeName(kvType).data());
    std::printf("  weights           %s\n", humanBytes(mem.weightBytes).c_str());
    const uint32_t kvLayers = m.attentionLayers();
    std::printf("  KV cache          %s (%u layer%s, %s per token)\n", humanBytes(mem.kvBytes).c_str(), kvLayers,
                kvLayers == 1 ? "" : "s", humanBytes(estimateMemory(m, 1, kvType).kvBytes).c_str());
    if (hybrid(m))
        std::printf("  recurrent state   %s per sequence (%u layer%s)\n", humanBytes(mem.stateBytes).c_str(),
                    m.recurrentLayers, m.recurrentLayers == 1 ? "" : "s");
    if (mem.projectorBytes > 0)
        std::printf("  vision projector  %s (weights and one image's encoding)\n", humanBytes(mem.projectorBytes).c_str());
    std::printf("  total             %s\n", humanBytes(mem.totalBytes()).c_str());
}

// Where a load would put the model: asked for, or "as many as fit" in the budget.
struct PlacementRequest {
    std::string device;       // the GPU's id, or "" with --gpu-memory
    uint64_t budget = 0;      // usable bytes on it
    int gpuLayers = -1;       // -1: as many as fit
    int cpuMoeLayers = kFitExperts; // chosen by the fit (none when -ngl is given); -1: all
    int sequences = 1;
};

struct Placement {
    bool fitted = false; // layers chosen by the fit
    SplitEstimate split;
};

Placement place(const gguf::File& file, const ModelInfo& m, uint32_t ctx, quant::Type kvType,
                const PlacementRequest& r) {
    Placement p;
    int layers = r.gpuLayers, moe = r.cpuMoeLayers;
    if (layers < 0) {
        const GpuFit fit = fitOnGpu(file, m, r.budget, ctx, kvType, r.sequences, 512, moe);
        layers = fit.gpuLayers;
        moe = fit.cpuMoeLayers;
        p.fitted = true;
    }
    if (moe == kFitExperts) moe = 0;
    p.split = estimateSplit(file, m, layers, ctx, kvType, r.sequences, 512, moe);
    return p;
}

nlohmann::ordered_json placementJson(const PlacementRequest& r, const Placement& p) {
    const SplitEstimate& e = p.split;
    return {{"device", r.device.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.device)},
            {"gpu_budget_bytes", r.budget},
            {"sequences", r.sequences},
            {"fitted", p.fitted},
            {"gpu_layers", e.gpuLayers},
            {"cpu_moe_layers", e.cpuMoeLayers},
            {"fits", e.gpuTotal() <= r.budget},
            {"gpu", {{"weights_bytes", e.weightsGpu}, {"kv_cache_bytes", e.kvGpu}, {"state_bytes", e.stateGpu},
                     {"compute_bytes", e.computeGpu}, {"total_bytes", e.gpuTotal()}}},
            {"cpu", {{"weights_bytes", e.weightsCpu}, {"experts_bytes", e.expertsCpu}, {"kv_cache_bytes", e.kvCpu},
                     {"state_bytes", e.stateCpu}, {"compute_bytes", e.computeCpu}, {"total_bytes", e.cpuTotal()}}}};
}

void printPlacement(const ModelInfo& m, const PlacementRequest& r, const Placement& p) {
    const SplitEstimate& e = p.split;
    std::printf("placement on %s (%s usable), %d sequence%s\n", r.device.empty() ? "a GPU" : r.device.c_str(),
                humanBytes(r.budget).c_str(), r.sequences, r.sequences == 1 ? "" : "s");
    std::printf("  layers            %d of %u on the GPU", e.gpuLayers, m.blockCount);
    if (e.cpuMoeLayers > 0) std::printf(", the experts of the first %d in RAM", e.cpuMoeLayers);
    std::printf("%s\n", p.fitted ? " (as many as fit)" : "");
    std::printf("  GPU               %s: weights %s, KV %s, state %s, compute %s%s\n", humanBytes(e.gpuTotal()).c_str(),
                humanBytes(e.weightsGpu).c_str(), humanBytes(e.kvGpu).c_str(), humanBytes(e.stateGpu).c_str(),
                humanBytes(e.computeGpu).c_str(), e.gpuTotal() > r.budget ? " (over the budget)" : "");
    std::printf("  RAM               %s: weights %s", humanBytes(e.cpuTotal()).c_str(), humanBytes(e.weightsCpu).c_str());
    if (e.expertsCpu > 0) std::printf(" (experts %s)", humanBytes(e.expertsCpu).c_str());
    std::printf(", KV %s, state %s, compute %s\n", humanBytes(e.kvCpu).c_str(), humanBytes(e.stateCpu).c_str(),
                humanBytes(e.computeCpu).c_str());
}

template <typename T> bool parseCount(std::string_view v, T& out, T lo) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return ec == std::errc() && p == v.data() + v.size() && out >= lo;
}

} // namespace

int runInspect(Args args) {
    std::string path;
    bool json = false;
    uint32_t ctx = 0;
    quant::Type kvType = quant::Type::F16;
    std::string projectorPath;
    bool findProjector = true;
    PlacementRequest placement;
    bool placed = false;
    std::string gpuMemory;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "-h" || a == "--help") {
            std::fputs(kInspectHelp, stdout);
            return 0;
        } else if (a == "--json") {
            json = true;
        } else if (a == "--mmproj" && i + 1 < args.size()) {
            projectorPath = std::string(args[++i]);
        } else if (a == "--no-mmproj") {
            findProjector = false;
        } else if (a == "--ctx" && i + 1 < args.size()) {
            const std::string_view v = args[++i];
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), ctx);
            if (ec != std::errc() || p != v.data() + v.size() || ctx == 0) {
                std::fprintf(stderr, "hearth-cli inspect: --ctx needs a positive number\n");
                return 2;
            }
        } else if (a == "--kv-type" && i + 1 < args.size()) {
            auto t = quant::typeFromName(args[++i]);
            if (!t || (*t != quant::Type::F16 && *t != quant::Type::F32 && *t != quant::Type::Q8_0)) {
                std::fprintf(stderr, "hearth-cli inspect: --kv-type must be F16, Q8_0 or F32\n");
                return 2;
            }
            kvType = *t;
        } else if (a == "--device" && i + 1 < args.size()) {
            placement.device = std::string(args[++i]);
            placed = true;
        } else if (a == "--gpu-memory" && i + 1 < args.size()) {
            if (!parseByteSize(args[++i], placement.budget)) {
                std::fprintf(stderr, "hearth-cli inspect: --gpu-memory needs a size such as 8G or 512M\n");
                return 2;
            }
            placed = true;
        } else if ((a == "-ngl" || a == "--gpu-layers") && i + 1 < args.size()) {
            if (!parseCount(args[++i], placement.gpuLayers, -1)) {
                std::fprintf(stderr, "hearth-cli inspect: -ngl needs a layer count\n");
                return 2;
            }
        } else if (a == "--cpu-moe") {
            placement.cpuMoeLayers = -1;
        } else if (a == "--n-cpu-moe" && i + 1 < args.size()) {
            if (!parseCount(args[++i], placement.cpuMoeLayers, 0)) {
                std::fprintf(stderr, "hearth-cli inspect: --n-cpu-moe needs a layer count\n");
                return 2;
            }
        } else if (a == "--parallel" && i + 1 < args.size()) {
            if (!parseCount(args[++i], placement.sequences, 1)) {
                std::fprintf(stderr, "hearth-cli inspect: --parallel needs a positive number\n");
                return 2;
            }
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "hearth-cli inspect: unknown or incomplete option '%.*s'\n",
                         int(a.size()), a.data());
            return 2;
        } else if (path.empty()) {
            path = std::string(a);
        } else {
            std::fprintf(stderr, "hearth-cli inspect: one model at a time\n");
            return 2;
        }
    }
    if (path.empty()) {
        std::fputs(kInspectHelp, stderr);
        return 2;
    }
    auto file = gguf::File::open(path);
    if (!file) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", path.c_str(), file.status().toString().c_str());
        return 2;
    }
    if (auto arch = file->getString("general.architecture"); arch && *arch == "clip") return inspectProjector(path, json);
    auto info = readModelInfo(*file);
    if (!info) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", path.c_str(), info.status().toString().c_str());
        return 2;
    }
    if (ctx == 0) ctx = std::min<uint32_t>(info->contextLength ? info->contextLength : 4096, 4096);
    if (placed && placement.budget == 0) {
        // A device's usable memory, unless --gpu-memory gave the budget.
        const DeviceList devices = listDevices();
        const DeviceDescription* d = findDevice(devices, placement.device);
        if (!d || d->kind == DeviceKind::Cpu) {
            std::fprintf(stderr, "hearth-cli inspect: no GPU '%s' here ('hearth-cli devices' lists them)\n",
                         placement.device.c_str());
            return 2;
        }
        placement.budget = usableMemory(*d);
    }
    MemoryEstimate mem = estimateMemory(*info, ctx, kvType);
    if (projectorPath.empty() && findProjector) {
        Result<std::string> found = findProjectorFor(path);
        if (found) projectorPath = *found;
    }
    std::optional<ProjectorInfo> projector;
    if (!projectorPath.empty()) {
        Result<ProjectorInfo> p = readProjector(projectorPath);
        if (!p) {
            std::fprintf(stderr, "hearth-cli: %s: %s\n", projectorPath.c_str(), p.status().toString().c_str());
            return 2;
        }
        if (Status fits = checkProjectorFor(*p, path); !fits.isOk()) {
            std::fprintf(stderr, "hearth-cli: %s: %s\n", projectorPath.c_str(), fits.toString().c_str());
            return 2;
        }
        mem.projectorBytes = projectorMemoryBytes(*p);
        projector = std::move(*p);
    }
    if (json) {
        nlohmann::ordered_json j = toJson(*file, *info, ctx, kvType, mem);
        if (projector)
            j["projector"] = {{"file", projectorPath},
                              {"family", projector->family},
                              {"tokens_per_image", projector->tokensPerImage},
                              {"bytes", mem.projectorBytes}};
        if (placed) j["placement"] = placementJson(placement, place(*file, *info, ctx, kvType, placement));
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        printText(path, *file, *info, ctx, kvType, mem);
        if (projector)
            std::printf("vision projector\n  file              %s\n  encoder           %s, %lld embeddings per image\n",
                        projectorPath.c_str(), projector->family.c_str(), (long long)projector->tokensPerImage);
        if (placed) printPlacement(*info, placement, place(*file, *info, ctx, kvType, placement));
    }
    return 0;
}

namespace {

int inspectProjector(const std::string& path, bool json) {
    Result<ProjectorInfo> p = readProjector(path);
    if (!p) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", path.c_str(), p.status().toString().c_str());
        return 2;
    }
    if (json) {
        nlohmann::ordered_json j;
        j["file"] = path;
        j["kind"] = "projector";
        j["projector_type"] = p->type;
        j["family"] = p->family;
        j["image_size"] = p->imageSize;
        j["patch_size"] = p->patchSize;
        j["embedding_length"] = p->nEmbd;
        j["feed_forward_length"] = p->nFf;
        j["block_count"] = p->nLayer;
        j["head_count"] = p->nHead;
        j["projection_dim"] = p->projectionDim;
        j["merge"] = p->merge;
        j["tokens_per_image"] = p->tokensPerImage;
        j["image_mean"] = p->mean;
        j["image_std"] = p->std;
        j["tensor_bytes"] = p->tensorBytes;
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("file:           %s\n", path.c_str());
    std::printf("projector:      %s (%s)\n", p->family.c_str(), p->type.c_str());
    if (p->maxTokens > 0) { // sized per image within a token budget (Gemma 4, Qwen3-VL)
        std::printf("vision encoder: %d layers, %d wide (ffn %d), %d heads, %d-pixel patches merged %d x %d\n",
                    p->nLayer, p->nEmbd, p->nFf, p->nHead, p->patchSize, p->merge, p->merge);
        std::printf("output:         %d to %d embeddings per image by its size, %d wide\n", p->minTokens, p->maxTokens,
                    p->projectionDim);
    } else {
        std::printf("vision encoder: %d layers, %d wide (ffn %d), %d heads, %d x %d pixels in %d-pixel patches\n",
                    p->nLayer, p->nEmbd, p->nFf, p->nHead, p->imageSize, p->imageSize, p->patchSize);
        std::printf("output:         %lld embeddings per image at that size, %d wide\n", (long long)p->tokensPerImage,
                    p->projectionDim);
    }
    std::printf("normalisation:  mean %.4g %.4g %.4g, std %.4g %.4g %.4g\n", p->mean[0], p->mean[1], p->mean[2],
                p->std[0], p->std[1], p->std[2]);
    std::printf("weights:        %s\n", humanBytes(p->tensorBytes).c_str());
    return 0;
}

} // namespace

} // namespace hearth::cli
