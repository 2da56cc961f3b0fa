// How a request may name a model of a library folder: its id (the file name without .gguf), or
// the way `hearth-cli pull` and Ollama name a hub model, "owner/repo:QUANT" (also with an
// "hf.co/" or "huggingface.co/" prefix), found through the origins the app records for the
// folder's files in <folder>/.hearth-origins.json.
#pragma once

#include <string>
#include <vector>

namespace hearth::server {

// The id `name` refers to among `ids` (the folder's models), or "" when none. A repository
// without a quantization picks its Q4_K_M file when it has one (pull's default), else the first
// by id. Case does not matter in the repository or the quantization.
std::string resolveLibraryName(const std::string& folder, const std::string& name, const std::vector<std::string>& ids);

} // namespace hearth::server
