// The architecture registry: general.architecture names to the files that bind them.
#include "model/arch.h"

#include "hearth/model_info.h"
#include "model/architectures.h"

namespace hearth::model {

namespace {

struct Entry {
    const char* name;
    Result<std::unique_ptr<Architecture>> (*load)(const gguf::File&);
    // Instead of load, for the architectures that read the load's options.
    Result<std::unique_ptr<Architecture>> (*loadWith)(const gguf::File&, const ArchitectureOptions&) = nullptr;
};

constexpr Entry kArchitectures[] = {
    {"llama", nullptr, loadLlama},
    {"qwen2", loadQwen2},
    {"qwen3", loadQwen3},
    {"qwen3moe", loadQwen3Moe},
    {"qwen35", loadQwen35},
    {"qwen35moe", loadQwen35Moe},
    {"gemma3", loadGemma3},
    {"gemma4", loadGemma4},
    {"gpt-oss", loadGptOss},
    {"phi3", loadPhi3},
    {"mistral3", loadMistral3},
    {"smollm3", loadSmolLm3},
    {"lfm2", loadLfm2},
    {"bert", loadBert},
    {"nomic-bert", loadNomicBert},
};

} // namespace

graph::Graph Architecture::buildGraph(const graph::StepShape& shape, const KvSetup& kv) const {
    graph::Graph g(&m_weights);
    build(g, shape, kv);
    return g;
}

Result<std::unique_ptr<Architecture>> loadArchitecture(const gguf::File& file, const ArchitectureOptions& options) {
    HEARTH_ASSIGN_OR_RETURN(std::string name, file.getString("general.architecture"));
    for (const Entry& e : kArchitectures)
        if (name == e.name) {
            auto arch = e.loadWith ? e.loadWith(file, options) : e.load(file);
            if (!arch) return arch.status().withContext("architecture '" + name + "'");
            (*arch)->m_reader = file.dataReader();
            return arch;
        }
    std::string known;
    for (const Entry& e : kArchitectures) known += std::string(known.empty() ? "" : ", ") + e.name;
    return unsupported("architecture '" + name + "' is not supported (supported: " + known + ")");
}

Result<std::unique_ptr<Architecture>> loadMtpHead(const gguf::File& file, int shortlist) {
    HEARTH_ASSIGN_OR_RETURN(std::string name, file.getString("general.architecture"));
    if (name != "qwen35" && name != "qwen35moe")
        return unsupported("architecture '" + name + "' has no multi-token-prediction head Hearth runs (qwen35 and qwen35moe do)");
    auto arch = loadQwen35Mtp(file, name == "qwen35moe", shortlist);
    if (!arch) return arch.status().withContext("multi-token-prediction head of '" + name + "'");
    (*arch)->m_reader = file.dataReader();
    return arch;
}

Result<std::unique_ptr<Architecture>> loadVisionTower(const gguf::File& file) {
    HEARTH_ASSIGN_OR_RETURN(std::string name, file.getString("general.architecture"));
    if (name != "clip") return invalidArgument("not a projector file (general.architecture is '" + name + "', not 'clip')");
    std::string type;
    for (const char* key : {"clip.projector_type", "clip.vision.projector_type"})
        if (type.empty() && file.has(key)) {
            HEARTH_ASSIGN_OR_RETURN(type, file.getString(key));
        }
    auto arch = type == "gemma4v"          ? loadGemma4Vision(file)
                : type == "qwen3vl_merger" ? loadQwen3VlVision(file)
                : type == "pixtral"        ? loadPixtral(file)
                : type == "mlp"            ? loadClipMlp(file)
                                           : loadSiglip(file);
    if (!arch) return arch.status().withContext("vision encoder");
    (*arch)->m_reader = file.dataReader();
    return arch;
}

std::vector<std::string> supportedArchitectures() {
    std::vector<std::string> out;
    for (const Entry& e : kArchitectures) out.emplace_back(e.name);
    return out;
}

} // namespace hearth::model

namespace hearth {

std::vector<std::string> supportedArchitectures() { return model::supportedArchitectures(); }

} // namespace hearth
