// Resolves hub-style model names ("owner/repo:Q4_K_M") to the files of a library folder through
// the folder's recorded origins; see library_names.h.
#include "server/library_names.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace hearth::server {

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// Whether the file name (lower case) names the quantization `quant` (lower case) as a whole
// word: "model-q4_k_m.gguf" names q4_k_m, but not q4_k.
bool namesQuantization(const std::string& file, const std::string& quant) {
    for (size_t at = file.find(quant); at != std::string::npos; at = file.find(quant, at + 1)) {
        const bool before = at == 0 || std::string("-_. /").find(file[at - 1]) != std::string::npos;
        const size_t end = at + quant.size();
        const bool after = end == file.size() || std::string("-. ").find(file[end]) != std::string::npos;
        if (before && after) return true;
    }
    return false;
}

} // namespace

std::string resolveLibraryName(const std::string& folder, const std::string& name, const std::vector<std::string>& ids) {
    if (std::find(ids.begin(), ids.end(), name) != ids.end()) return name;
    std::string wanted = lower(name);
    for (const char* prefix : {"hf.co/", "huggingface.co/", "https://huggingface.co/"})
        if (startsWith(wanted, prefix)) wanted.erase(0, std::char_traits<char>::length(prefix));
    std::string quant;
    if (const size_t colon = wanted.rfind(':'); colon != std::string::npos) {
        quant = wanted.substr(colon + 1);
        wanted.resize(colon);
        if (quant == "latest") quant.clear();
    }
    if (wanted.find('/') == std::string::npos || quant.find('/') != std::string::npos) return {};

    std::ifstream in(std::filesystem::path(folder) / ".hearth-origins.json");
    if (!in) return {};
    const nlohmann::json root = nlohmann::json::parse(in, nullptr, false);
    if (!root.is_object() || !root.contains("files") || !root["files"].is_object()) return {};
    std::vector<std::string> matches;
    for (const auto& [file, origin] : root["files"].items()) {
        if (!origin.is_object() || !origin.contains("repo") || !origin["repo"].is_string()) continue;
        if (lower(origin["repo"].get<std::string>()) != wanted) continue;
        const std::string id = std::filesystem::path(file).stem().string();
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) continue; // gone, a later part, or a projector
        if (!quant.empty() && !namesQuantization(lower(file), quant)) continue;
        matches.push_back(id);
    }
    if (matches.empty()) return {};
    std::sort(matches.begin(), matches.end());
    for (const std::string& id : matches)
        if (namesQuantization(lower(id) + ".gguf", "q4_k_m")) return id;
    return matches.front();
}

} // namespace hearth::server
