// The embedding endpoints' requests and responses: OpenAI's /v1/embeddings (input as a string,
// strings, token ids or lists of ids; float or base64 encoding; dimensions) and Ollama's
// /api/embed and legacy /api/embeddings, parsed into one form, tokenized and checked against the
// model, and the JSON each answers with.
#pragma once

#include "hearth/engine.h"
#include "server/api_error.h"
#include "server/openai_request.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

// One input: a text (tokenized with the model's BOS/EOS, as llama.cpp does) or token ids as given.
struct EmbeddingInput {
    bool isText = true;
    std::string text;
    std::vector<int32_t> ids;
};

struct EmbeddingsBody {
    std::string model;
    std::vector<EmbeddingInput> inputs;
    bool base64 = false;     // encoding_format "base64": little-endian float32 bytes
    int32_t dimensions = 0;  // 0: the model's width
    bool truncate = false;   // Ollama: cut inputs longer than the context (default there: true)
};

// Inputs per request (OpenAI's limit) and tokens over all inputs.
inline constexpr size_t kMaxEmbeddingInputs = 2048;
inline constexpr int64_t kMaxEmbeddingTokens = 300000;

ApiResult<EmbeddingsBody> parseOpenAIEmbeddings(std::string_view body, const ParseLimits& limits);
// /api/embed (`input`: a string or strings; none gives no vectors), or with `legacy` the old
// /api/embeddings (`prompt`: one string).
ApiResult<EmbeddingsBody> parseOllamaEmbed(std::string_view body, const ParseLimits& limits, bool legacy);

// The token ids of every input: ids within the vocabulary, none empty, each at most the context
// (longer ones cut there when body.truncate), all together at most kMaxEmbeddingTokens;
// dimensions at most the model's width. Errors are the client's (400) and name the parameter.
ApiResult<std::vector<std::vector<int32_t>>> embeddingTokens(const EmbeddingsBody& body, const Engine& engine);

// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}
nlohmann::ordered_json openAIEmbeddingsJson(const EmbeddingResult& result, const std::string& model, bool base64);
// The vector's float32 values, little-endian, in base64 (what encoding_format "base64" sends).
std::string base64Floats(const std::vector<float>& v);

} // namespace hearth::server
