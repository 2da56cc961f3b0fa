// Model facts from GGUF metadata and the tensor table, and the memory estimate built on them.
#include "hearth/model_info.h"

#include <algorithm>
#include <utility>

namespace hearth {

namespace {

Result<uint32_t> optionalU32(const gguf::File& f, const std::string& key, uint32_t fallback) {
    if (!f.has(key)) return fallback;
    return f.getU32(key);
}

// A key given once for all n layers or per layer (head counts, feed-forward lengths): the largest
// of its values, what the estimates size for.
Result<uint32_t> largestPerLayer(const gguf::File& f, const std::string& key, uint32_t n, uint32_t fallback) {
    if (!f.has(key)) return fallback;
    HEARTH_ASSIGN_OR_RETURN(const std::vector<uint64_t> values, f.getCounts(key, n, UINT32_MAX));
    return uint32_t(*std::max_element(values.begin(), values.end()));
}

std::optional<uint32_t> tokenId(const gguf::File& f, const std::string& key, uint32_t nTokens) {
    auto v = f.getU32(key);
    if (!v.isOk() || *v >= nTokens) return std::nullopt; // absent, or a placeholder like 0xFFFFFFFF
    return *v;
}

// lfm2's layout (model/lfm2.cpp): layers with attention.head_count_kv 0 are short convolutions
// whose state is the last shortconv.l_cache - 1 inputs of embedding_length values.
Status readShortConvLayout(const gguf::File& f, ModelInfo& info) {
    const std::string a = info.architecture + ".";
    HEARTH_ASSIGN_OR_RETURN(const std::vector<uint64_t> kv, f.getCounts(a + "attention.head_count_kv", info.blockCount, 65536));
    if (!f.has(a + "shortconv.l_cache")) return invalidFormat(a + "shortconv.l_cache is missing (the convolution's taps)");
    HEARTH_ASSIGN_OR_RETURN(info.ssmConvKernel, optionalU32(f, a + "shortconv.l_cache", 0));
    if (info.ssmConvKernel < 2 || info.ssmConvKernel > 16)
        return invalidFormat(a + "shortconv.l_cache " + std::to_string(info.ssmConvKernel) + " must be 2..16");
    info.recurrentLayer.assign(info.blockCount, false);
    for (uint32_t l = 0; l < info.blockCount; ++l) info.recurrentLayer[l] = kv[l] == 0;
    info.recurrentLayers = uint32_t(std::count(info.recurrentLayer.begin(), info.recurrentLayer.end(), true));
    info.ssmConvValues = uint64_t(info.ssmConvKernel - 1) * info.embeddingLength;
    info.ssmMatrixValues = 0;
    return Status::ok();
}

// The hybrid layout of qwen35 / qwen35moe files, read as the loader reads it (model/qwen35.cpp):
// the delta net's sizes, which layers are recurrent, and the multi-token-prediction layers. The
// sizes' consistency with each other and with the tensors is the loader's to check; here only
// what the estimate needs, within bounds that keep its products exact.
Status readHybridLayout(const gguf::File& f, ModelInfo& info) {
    const std::string a = info.architecture + ".";
    if (info.architecture == "lfm2") return readShortConvLayout(f, info);
    if (info.architecture != "qwen35" && info.architecture != "qwen35moe") return Status::ok();
    HEARTH_ASSIGN_OR_RETURN(info.nextnLayers, optionalU32(f, a + "nextn_predict_layers", 0));
    if (info.nextnLayers >= info.blockCount)
        return invalidFormat(a + "nextn_predict_layers " + std::to_string(info.nextnLayers) + " leaves no layer of " +
                             std::to_string(info.blockCount));
    struct Key {
        const char* name;
        uint32_t* value;
        uint32_t most;
    };
    const Key keys[] = {{"ssm.conv_kernel", &info.ssmConvKernel, 1024},
                        {"ssm.state_size", &info.ssmStateSize, 65536},
                        {"ssm.time_step_rank", &info.ssmTimeStepRank, 65536},
                        {"ssm.group_count", &info.ssmGroupCount, 65536}};
    for (const Key& k : keys) {
        if (!f.has(a + k.name)) return invalidFormat(a + k.name + " is missing (the delta net's size)");
        HEARTH_ASSIGN_OR_RETURN(*k.value, f.getU32(a + k.name));
        if (*k.value < 1 || *k.value > k.most)
            return invalidFormat(a + k.name + " " + std::to_string(*k.value) + " is outside 1.." +
                                 std::to_string(k.most));
    }
    const uint64_t S = info.ssmStateSize, Hv = info.ssmTimeStepRank, Hk = info.ssmGroupCount;
    HEARTH_ASSIGN_OR_RETURN(info.ssmInnerSize,
                            optionalU32(f, a + "ssm.inner_size", Hv * S > UINT32_MAX ? 0 : uint32_t(Hv * S)));
    info.ssmConvValues = uint64_t(info.ssmConvKernel - 1) * (2 * Hk + Hv) * S;
    info.ssmMatrixValues = Hv * S * S;

    const uint32_t run = info.blockCount - info.nextnLayers; // layers plain decoding runs
    info.recurrentLayer.assign(info.blockCount, false);
    const std::string key = a + "attention.recurrent_layers";
    if (f.has(key)) {
        HEARTH_ASSIGN_OR_RETURN(const std::vector<bool> flags, f.getFlags(key, info.blockCount));
        std::copy(flags.begin(), flags.begin() + run, info.recurrentLayer.begin());
    } else {
        HEARTH_ASSIGN_OR_RETURN(const uint32_t every, optionalU32(f, a + "full_attention_interval", 4));
        if (every < 1) return invalidFormat(a + "full_attention_interval must be positive");
        for (uint32_t l = 0; l < run; ++l) info.recurrentLayer[l] = (l + 1) % every != 0;
    }
    info.recurrentLayers = uint32_t(std::count(info.recurrentLayer.begin(), info.recurrentLayer.end(), true));
    return Status::ok();
}

} // namespace

std::string fileTypeName(uint32_t fileType) {
    for (const quant::Mix& m : quant::allMixes())
        if (m.fileType == fileType) return std::string(m.name);
    // llama.cpp's file types that we read but do not make (general.file_type ids).
    static constexpr std::pair<uint32_t, const char*> kReadOnly[] = {
        {19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"}, {22, "IQ3_XS"}, {23, "IQ3_XXS"},
        {24, "IQ1_S"},   {26, "IQ3_S"},  {27, "IQ3_M"},  {28, "IQ2_S"},  {29, "IQ2_M"},
        {31, "IQ1_M"},   {36, "TQ1_0"},  {37, "TQ2_0"}};
    for (const auto& [id, name] : kReadOnly)
        if (id == fileType) return name;
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
    if (info.blockCount == 0 || info.blockCount > 4096)
        return invalidFormat("block_count " + std::to_string(info.blockCount) +
                             " is outside 1..4096");
    const uint32_t L = info.blockCount;
    HEARTH_ASSIGN_OR_RETURN(info.embeddingLength, optionalU32(f, a + "embedding_length", 0));
    HEARTH_ASSIGN_OR_RETURN(info.contextLength, optionalU32(f, a + "context_length", 0));
    HEARTH_ASSIGN_OR_RETURN(info.feedForwardLength, largestPerLayer(f, a + "feed_forward_length", L, 0));
    HEARTH_ASSIGN_OR_RETURN(info.expertCount, optionalU32(f, a + "expert_count", 0));
    HEARTH_ASSIGN_OR_RETURN(info.expertUsedCount, largestPerLayer(f, a + "expert_used_count", L, 0));
    HEARTH_ASSIGN_OR_RETURN(info.headCount, largestPerLayer(f, a + "attention.head_count", L, 0));
    HEARTH_ASSIGN_OR_RETURN(info.headCountKv,
                            largestPerLayer(f, a + "attention.head_count_kv", L, info.headCount));
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
    HEARTH_RETURN_IF_ERROR(readHybridLayout(f, info));

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

MemoryEstimate estimateMemory(const ModelInfo& info, uint32_t contextLength, quant::Type kvType) {
    MemoryEstimate m;
    m.weightBytes = info.weightBytes;
    // Elements of K and V for one token in one layer: kv_heads x head_dim each.
    const uint64_t perTokenLayer = uint64_t(info.headCountKv) * (info.keyLength + info.valueLength);
    const uint64_t elements = perTokenLayer * info.attentionLayers() * contextLength;
    const quant::TypeInfo* t = quant::typeInfo(kvType);
    const uint64_t blockElems = t ? t->blockElems : 1, blockBytes = t ? t->blockBytes : 2;
    m.kvBytes = (elements + blockElems - 1) / blockElems * blockBytes;
    m.stateBytes = info.stateBytesPerSequence();
    return m;
}

} // namespace hearth
