// What a GGUF model is, read from its metadata and tensor table without loading weights, and the
// memory it needs: the facts `hearth-cli inspect` prints and the app's memory estimate uses.
#pragma once

#include "hearth/gguf.h"
#include "hearth/quant.h"
#include "hearth/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hearth {

struct TokenizerSummary {
    std::string model; // tokenizer.ggml.model: "llama" (SPM), "gpt2" (BPE), ...
    std::string pre;   // tokenizer.ggml.pre
    uint32_t tokens = 0;
    std::optional<uint32_t> bos, eos, eot, unk;
    std::optional<bool> addBos, addEos;
    bool hasChatTemplate = false;
};

struct ModelInfo {
    std::string architecture;
    std::string name;
    std::optional<uint32_t> fileType; // general.file_type (llama_ftype numbering)
    uint32_t contextLength = 0;
    uint32_t embeddingLength = 0;
    uint32_t blockCount = 0;
    uint32_t feedForwardLength = 0;
    uint32_t expertCount = 0;     // mixture of experts: experts per layer (0: dense)
    uint32_t expertUsedCount = 0; // experts each token runs through
    uint32_t headCount = 0;
    uint32_t headCountKv = 0;
    uint32_t keyLength = 0;   // per-head K dimension
    uint32_t valueLength = 0; // per-head V dimension
    uint32_t ropeDimensions = 0;
    float ropeFreqBase = 10000.0f;
    float rmsEpsilon = 0.0f;
    uint32_t vocabSize = 0;
    bool tiedEmbeddings = false; // no output.weight: the output reuses token_embd
    // Hybrid models (qwen35, qwen35moe; lfm2): delta-net (short convolution) layers keep a per-sequence recurrent
    // state instead of K/V; multi-token-prediction layers at the end of block_count are not run
    // in plain decoding. Zero / empty for other models.
    uint32_t recurrentLayers = 0;
    uint32_t nextnLayers = 0;
    std::vector<bool> recurrentLayer; // per block (MTP layers false); empty when not hybrid
    uint32_t ssmConvKernel = 0;   // K: the convolution's window
    uint32_t ssmStateSize = 0;    // S: q/k/v head size of the delta net
    uint32_t ssmInnerSize = 0;    // value width: time_step_rank x state_size
    uint32_t ssmTimeStepRank = 0; // value heads
    uint32_t ssmGroupCount = 0;   // q/k heads
    // F32 values of one recurrent layer's state per sequence: the convolution window
    // (K-1) x (2 x group_count + time_step_rank) x state_size and the delta-net matrices
    // time_step_rank x state_size^2.
    uint64_t ssmConvValues = 0, ssmMatrixValues = 0;
    // Layers with K/V of their own (every layer of a plain decoder).
    uint32_t attentionLayers() const {
        const uint64_t other = uint64_t(recurrentLayers) + nextnLayers;
        return other >= blockCount ? 0 : uint32_t(blockCount - other);
    }
    // Bytes of one sequence's recurrent state over every recurrent layer.
    uint64_t stateBytesPerSequence() const {
        return uint64_t(recurrentLayers) * (ssmConvValues + ssmMatrixValues) * 4;
    }
    TokenizerSummary tokenizer;
    uint64_t parameterCount = 0;
    uint64_t weightBytes = 0;
    std::map<std::string, uint32_t> tensorsByType; // "Q4_K" -> count
};

// Reads the model facts; errors name a missing or absurd key (block_count 0, heads that do not
// divide, ...).
Result<ModelInfo> readModelInfo(const gguf::File& file);

struct MemoryEstimate {
    uint64_t weightBytes = 0;
    uint64_t kvBytes = 0;    // 2 x attention layers x kv_heads x head_dim x ctx x bytes per element
    uint64_t stateBytes = 0; // recurrent layers' state of the one sequence (F32, size fixed)
    uint64_t projectorBytes = 0; // a vision projector loaded beside it (projectorMemoryBytes)
    uint64_t totalBytes() const { return weightBytes + kvBytes + stateBytes + projectorBytes; }
};

// One sequence of `contextLength` tokens. K/V only for attention layers (not the recurrent or
// multi-token-prediction ones); bytes per K/V element: F16 2, F32 4, Q8_0 34/32.
MemoryEstimate estimateMemory(const ModelInfo& info, uint32_t contextLength, quant::Type kvType);

// Where a model's memory goes when its first `gpuLayers` layers run on a GPU and the rest on the
// CPU, computed from the same step description and placement the engine loads with (its
// architecture's graph for a step of `batchTokens` tokens, `sequences` of them wanting logits):
// each device's weights are those its nodes read (the token embedding goes with the first
// layer, the output head with the last), its K/V the pools of its layers (blocks of 16 positions,
// `contextLength` per sequence), its recurrent state that of its recurrent layers (one slot per
// sequence, on the device that would hold the layer's K/V), its compute memory the step buffers
// the runner would allocate.
// The GPU is assumed to run every op (a node it lacks would run on the CPU instead). A file whose
// architecture the engine cannot bind is estimated from its tensor names (blk.N.* with layer N).
// With cpuMoeLayers N, the first N of the GPU's layers keep their mixture-of-experts weights
// (and expert products) on the CPU, as EngineConfig::cpuMoeLayers does.
struct SplitEstimate {
    int gpuLayers = 0;           // clamped to [0, blockCount]
    int cpuMoeLayers = 0;        // clamped to [0, gpuLayers]; 0 for a model without experts
    uint64_t weightsGpu = 0;
    uint64_t weightsCpu = 0;
    uint64_t expertsCpu = 0;     // of weightsCpu, the experts of GPU layers kept in RAM
    uint64_t kvGpu = 0;
    uint64_t kvCpu = 0;
    uint64_t stateGpu = 0; // recurrent layers' state, every sequence's
    uint64_t stateCpu = 0;
    uint64_t computeGpu = 0;
    uint64_t computeCpu = 0;
    uint64_t gpuTotal() const { return weightsGpu + kvGpu + stateGpu + computeGpu; }
    uint64_t cpuTotal() const { return weightsCpu + kvCpu + stateCpu + computeCpu; }
};
SplitEstimate estimateSplit(const gguf::File& file, const ModelInfo& info, int gpuLayers,
                            uint32_t contextLength, quant::Type kvType, int sequences,
                            int batchTokens = 512, int cpuMoeLayers = 0);

// What "as many as fit" loads: every layer on the GPU when the whole model fits in `gpuBytes`;
// else, for a model with experts, every layer on the GPU with the experts of the fewest first
// layers in RAM that makes it fit (what llama.cpp's --n-cpu-moe does by hand); else as many
// layers as fit with all of their experts in RAM; {0, 0} when not one layer fits.
// With cpuMoeLayers >= 0 (or -1: every layer's) the experts in RAM are given and only the layer
// count is fitted.
inline constexpr int kFitExperts = -2;
struct GpuFit {
    int gpuLayers = 0;
    int cpuMoeLayers = 0;
    bool operator==(const GpuFit&) const = default;
};
GpuFit fitOnGpu(const gguf::File& file, const ModelInfo& info, uint64_t gpuBytes, uint32_t contextLength,
                quant::Type kvType, int sequences, int batchTokens = 512, int cpuMoeLayers = kFitExperts);

// The most layers whose share (SplitEstimate::gpuTotal) fits in `gpuBytes`; 0 when none does.
int maxGpuLayersThatFit(const gguf::File& file, const ModelInfo& info, uint64_t gpuBytes,
                        uint32_t contextLength, quant::Type kvType, int sequences,
                        int batchTokens = 512);

// llama_ftype names: 15 -> "Q4_K_M", 1 -> "F16"; "unknown" otherwise.
std::string fileTypeName(uint32_t fileType);

// The general.architecture values this build binds ("llama", "qwen2", ...): what the app checks
// a hub file's architecture against before downloading it. Weight types follow
// quant::typeInfo(t)->canDequantize, the rule the binder applies to every matrix.
std::vector<std::string> supportedArchitectures();

} // namespace hearth
