// Finding a text model's vision projector in the model's own folder, where llama.cpp's
// converters and the model hubs put the "mmproj-*.gguf" file beside the weights.
#include "hearth/projector.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>
#include <vector>

namespace hearth {

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// 0 for F16 files, 1 BF16, 2 F32, 3 any other (quantized projectors lose detail).
int precisionRank(const std::string& lowerName) {
    if (lowerName.find("bf16") != std::string::npos) return 1;
    if (lowerName.find("f16") != std::string::npos) return 0;
    if (lowerName.find("f32") != std::string::npos) return 2;
    return 3;
}

} // namespace

bool isProjectorFileName(const std::string& fileName) {
    return lower(fileName).find("mmproj") != std::string::npos;
}

Result<std::string> findProjectorFor(const std::string& modelPath) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path model = fs::absolute(fs::path(modelPath), ec);
    if (ec) return invalidArgument("model path " + modelPath + ": " + ec.message());
    const fs::path folder = model.parent_path();
    fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
    if (ec) return ioError("cannot list " + folder.string() + ": " + ec.message());

    constexpr int kMaxEntries = 4096; // a folder of models, not a whole disk
    std::vector<std::pair<int, std::string>> candidates;
    int seen = 0;
    for (; it != fs::directory_iterator() && seen < kMaxEntries; it.increment(ec), ++seen) {
        if (ec) break;
        const fs::path p = it->path();
        const std::string name = lower(p.filename().string());
        if (!endsWith(name, ".gguf") || !isProjectorFileName(name)) continue;
        if (p == model) continue;
        std::error_code fileEc;
        if (!it->is_regular_file(fileEc) || fileEc) continue;
        candidates.emplace_back(precisionRank(name), p.string());
    }
    std::sort(candidates.begin(), candidates.end());
    for (const auto& [rank, path] : candidates) {
        Result<ProjectorInfo> info = readProjector(path);
        if (!info || !info->vision) continue;
        if (!checkProjectorFor(*info, modelPath).isOk()) continue;
        return path;
    }
    return std::string();
}

} // namespace hearth
