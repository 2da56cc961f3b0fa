// Model facts from GGUF metadata and the tensor table, and the memory estimate built on them.
#include "hearth/model_info.h"

#include <algorithm>

namespace hearth {

namespace {

Result<uint32_t> optionalU32(const gguf::File& f, const std::string& key, uint32_t fallback) {
    const gguf::Value* v = f.find(key);
    if (!v) return fallback;
    if (v->isArray()) { // per-layer values (e.g. OpenELM head counts): take the largest
        auto values = v->asUIntArray();
        if (!values || values->empty()) return invalidFormat("key '" + key + "' is not a list of counts");
        const uint64_t m = *std::max_element(values->begin(), values->end());
        if (m > UINT32_MAX) return outOfRange("key '" + key + "' is too large");
        return uint32_t(m);
    }
    return f.getU32(key);
}

std::optional<uint32_t> tokenId(const gguf::File& f, const std::string& key, uint32_t nTokens) {
    auto v = f.getU32(key);
    if (!v.isOk() || *v >= nTokens) return std::nullopt; // absent, or a placeholder like 0xFFFFFFFF
    return *v;
}

} // namespace

std::string fileTypeName(uint32_t fileType) {
    for (const quant::Mix& m : quant::allMixes())
        if (m.fileType == fileType) return std::string(m.name);
    return "unknown";
}

Result<ModelInfo> readModelInfo(const gguf::File& f) {
    ModelInfo info;
    HEARTH_ASSIGN_OR_RETURN(info.architecture, f.getString("general.architecture"));
    if (info.architecture.empty() || info.architecture.size() > 64)
        return invalidFormat("general.architecture is empty or too long");
    if (f.has("general.name")) {
        HEARTH_ASSIGN_OR_RETURN(info.name, f.getString("general.name"));
    }
    if (f.has("general.file_type")) {
        HEARTH_ASSIGN_OR_RETURN(uint32_t ft, f.getU32("general.file_type"));
        info.fileType = ft;
    }
    const std::string a = info.architecture + ".";
    HEARTH_ASSIGN_OR_RETURN(info.blockCount, optionalU32(f, a + "block_count", 0));
    HEARTH_ASSIGN_OR_RETURN(info.embeddingLength, optionalU32(f, a + "embedding_length", 0));
    HEARTH_ASSIGN_OR_RETURN(info.contextLength, optionalU32(f, a + "context_length", 0));
    HEARTH_ASSIGN_OR_RETURN(info.feedForwardLength, optionalU32(f, a + "feed_forward_length", 0));
    HEARTH_ASSIGN_OR_RETURN(info.headCount, optionalU32(f, a + "attention.head_count", 0));
    HEARTH_ASSIGN_OR_RETURN(info.headCountKv,
                            optionalU32(f, a + "attention.head_count_kv", info.headCount));
    if (info.blockCount == 0 || info.blockCount > 4096)
        return invalidFormat("block_count " + std::to_string(info.blockCount) +
                             " is outside 1..4096");
    if (info.embeddingLength == 0) return invalidFormat("embedding_length is missing or zero");
    if (info.headCount == 0 || info.headCountKv == 0 || info.headCount % info.headCountKv != 0)
        return invalidFormat("head_count " + std::to_string(info.headCount) +
                             " is not a positive multiple of head_count_kv " +
                             std::to_string(info.headCountKv));
    const uint32_t defaultHead = info.embeddingLength / info.headCount;
    HEARTH_ASSIGN_OR_RETURN(info.keyLength, optionalU32(f, a + "attention.key_length", defaultHead));
    HEARTH_ASSIGN_OR_RETURN(info.valueLength,
                            optionalU32(f, a + "attention.value_length", info.keyLength));
    HEARTH_ASSIGN_OR_RETURN(info.ropeDimensions,
                            optionalU32(f, a + "rope.dimension_count", info.keyLength));
    if (f.has(a + "rope.freq_base")) {
        HEARTH_ASSIGN_OR_RETURN(info.ropeFreqBase, f.getF32(a + "rope.freq_base"));
    }
    if (f.has(a + "attention.layer_norm_rms_epsilon")) {
        HEARTH_ASSIGN_OR_RETURN(info.rmsEpsilon, f.getF32(a + "attention.layer_norm_rms_epsilon"));
    }

    TokenizerSummary& t = info.tokenizer;
    if (f.has("tokenizer.ggml.model")) {
        HEARTH_ASSIGN_OR_RETURN(t.model, f.getString("tokenizer.ggml.model"));
    }
    if (f.has("tokenizer.ggml.pre")) {
        HEARTH_ASSIGN_OR_RETURN(t.pre, f.getString("tokenizer.ggml.pre"));
    }
    if (const gguf::Value* tokens = f.find("tokenizer.ggml.tokens")) {
        if (!tokens->asStringArray()) return invalidFormat("tokenizer.ggml.tokens is not a string list");
        t.tokens = uint32_t(tokens->arraySize());
    }
    t.bos = tokenId(f, "tokenizer.ggml.bos_token_id", t.tokens);
    t.eos = tokenId(f, "tokenizer.ggml.eos_token_id", t.tokens);
    t.eot = tokenId(f, "tokenizer.ggml.eot_token_id", t.tokens);
    t.unk = tokenId(f, "tokenizer.ggml.unknown_token_id", t.tokens);
    if (auto b = f.getBool("tokenizer.ggml.add_bos_token"); b.isOk()) t.addBos = *b;
    if (auto b = f.getBool("tokenizer.ggml.add_eos_token"); b.isOk()) t.addEos = *b;
    t.hasChatTemplate = f.has("tokenizer.chat_template");

    for (const gguf::TensorInfo& ti : f.tensors()) {
        info.parameterCount += ti.elements();
        info.weightBytes += ti.bytes;
        ++info.tensorsByType[std::string(quant::typeName(ti.type))];
    }
    const gguf::TensorInfo* emb = f.findTensor("token_embd.weight");
    info.vocabSize = emb && emb->nDims == 2 ? uint32_t(emb->ne[1]) : t.tokens;
    if (f.has(a + "vocab_size")) {
        HEARTH_ASSIGN_OR_RETURN(info.vocabSize, f.getU32(a + "vocab_size"));
    }
    info.tiedEmbeddings = emb && !f.findTensor("output.weight");
    return info;
}

namespace {

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

} // namespace

SplitEstimate estimateSplit(const gguf::File& file, const ModelInfo& info, int gpuLayers,
                            uint32_t contextLength, quant::Type kvType, int sequences,
                            int batchTokens) {
    SplitEstimate e;
    const int layers = int(info.blockCount);
    e.gpuLayers = std::clamp(gpuLayers, 0, layers);
    const bool all = layers > 0 && e.gpuLayers == layers;
    for (const gguf::TensorInfo& t : file.tensors()) {
        const int layer = layerOf(t.name);
        bool gpu = false;
        if (layer >= 0) gpu = layer < e.gpuLayers;
        else if (t.name.rfind("output", 0) == 0) gpu = all; // output.weight, output_norm.weight
        (gpu ? e.weightsGpu : e.weightsCpu) += t.bytes;
    }
    const uint64_t seqs = uint64_t(std::max(1, sequences));
    const uint64_t kvAll = estimateMemory(info, contextLength, kvType).kvBytes * seqs;
    if (layers > 0) {
        e.kvGpu = kvAll / uint64_t(layers) * uint64_t(e.gpuLayers);
        e.kvCpu = kvAll - e.kvGpu;
    } else {
        e.kvCpu = kvAll;
    }
    // Activations of one step, per token as the device forwards allocate them: x, norm, residual
    // [E]; q, attention out [heads x key]; k [kv heads x key], v [kv heads x value]; gate, up [F];
    // six words of ids, positions, slots and table offsets; and the int8 copy of the widest input
    // that the CUDA prefill multiplies (44 bytes per 32 values). Then the logits of every sequence.
    const uint64_t E = info.embeddingLength, F = info.feedForwardLength;
    const uint64_t key = info.keyLength ? info.keyLength : E / std::max(1u, info.headCount);
    const uint64_t value = info.valueLength ? info.valueLength : key;
    const uint64_t qDim = uint64_t(info.headCount) * key;
    const uint64_t kvDims = uint64_t(info.headCountKv) * (key + value);
    const uint64_t widest = std::max({E, qDim, F});
    const uint64_t perToken = (3 * E + 2 * qDim + kvDims + 2 * F + 6) * 4 + (widest + 31) / 32 * 44;
    const uint64_t activations = uint64_t(std::max(1, batchTokens)) * perToken;
    const uint64_t logits = seqs * uint64_t(info.vocabSize) * 4;
    if (e.gpuLayers > 0) e.computeGpu = activations + (all ? logits : 0);
    if (!all) e.computeCpu = activations + logits;
    else e.computeCpu = uint64_t(std::max(1, batchTokens)) * uint64_t(info.embeddingLength) * 4; // embeddings
    return e;
}

int maxGpuLayersThatFit(const gguf::File& file, const ModelInfo& info, uint64_t gpuBytes,
                        uint32_t contextLength, quant::Type kvType, int sequences, int batchTokens) {
    int best = 0;
    for (int n = 1; n <= int(info.blockCount); ++n)
        if (estimateSplit(file, info, n, contextLength, kvType, sequences, batchTokens).gpuTotal() <= gpuBytes)
            best = n;
    return best;
}

MemoryEstimate estimateMemory(const ModelInfo& info, uint32_t contextLength, quant::Type kvType) {
    MemoryEstimate m;
    m.weightBytes = info.weightBytes;
    // Elements of K and V for one token in one layer: kv_heads x head_dim each.
    const uint64_t perTokenLayer = uint64_t(info.headCountKv) * (info.keyLength + info.valueLength);
    const uint64_t elements = perTokenLayer * info.blockCount * contextLength;
    const quant::TypeInfo* t = quant::typeInfo(kvType);
    const uint64_t blockElems = t ? t->blockElems : 1, blockBytes = t ? t->blockBytes : 2;
    m.kvBytes = (elements + blockElems - 1) / blockElems * blockBytes;
    return m;
}

} // namespace hearth
