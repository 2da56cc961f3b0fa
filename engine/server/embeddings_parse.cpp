// Parsing the embedding endpoints' bodies, turning their inputs into checked token ids, and the
// OpenAI response (floats or base64).
#include "server/embeddings_api.h"

#include "server/json_fields.h"

#include <cstring>

namespace hearth::server {

namespace {

ApiError wrongInput(const std::string& what) {
    return invalidRequest("'input' " + what, "input");
}

// An array of token ids: integers in 0..2^31-1 (the vocabulary is checked later).
std::optional<ApiError> readIds(const OJson& array, std::vector<int32_t>& out, const std::string& where) {
    if (array.empty()) return wrongInput(where + " is an empty list of token ids");
    out.reserve(array.size());
    for (const OJson& v : array) {
        int64_t id = 0;
        if (!asInteger(v, id) || id < 0 || id > INT32_MAX)
            return wrongInput(where + " must hold token ids (non-negative integers), got " +
                              std::string(jsonTypeName(v)));
        out.push_back(int32_t(id));
    }
    return std::nullopt;
}

std::optional<ApiError> readOpenAIInput(const OJson& input, std::vector<EmbeddingInput>& out) {
    if (input.is_string()) {
        if (input.get_ref<const std::string&>().empty()) return wrongInput("must not be an empty string");
        out.push_back({true, input.get<std::string>(), {}});
        return std::nullopt;
    }
    if (!input.is_array())
        return wrongInput(std::string("must be a string, an array of strings, an array of token ids or an array "
                                      "of such arrays; got ") + jsonTypeName(input));
    if (input.empty()) return wrongInput("must not be an empty array");
    if (input.size() > kMaxEmbeddingInputs)
        return wrongInput("has " + std::to_string(input.size()) + " items; at most " +
                          std::to_string(kMaxEmbeddingInputs) + " are allowed");
    const OJson& first = input.front();
    if (first.is_number()) { // one input given as token ids
        EmbeddingInput in;
        in.isText = false;
        if (auto e = readIds(input, in.ids, "")) return e;
        out.push_back(std::move(in));
        return std::nullopt;
    }
    for (size_t i = 0; i < input.size(); ++i) {
        const OJson& item = input[i];
        const std::string where = "item " + std::to_string(i);
        if (item.is_string() && first.is_string()) {
            if (item.get_ref<const std::string&>().empty()) return wrongInput(where + " is an empty string");
            out.push_back({true, item.get<std::string>(), {}});
        } else if (item.is_array() && first.is_array()) {
            EmbeddingInput in;
            in.isText = false;
            if (auto e = readIds(item, in.ids, where)) return e;
            out.push_back(std::move(in));
        } else {
            return wrongInput("must be all strings or all arrays of token ids; " + where + " is " + jsonTypeName(item));
        }
    }
    return std::nullopt;
}

std::optional<ApiError> readDimensions(const OJson& json, int32_t& out) {
    int64_t d = 0;
    if (auto e = readInt(json, "dimensions", 1, INT32_MAX, d)) return e;
    out = int32_t(d);
    return std::nullopt;
}

} // namespace

ApiResult<EmbeddingsBody> parseOpenAIEmbeddings(std::string_view body, const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    EmbeddingsBody r;
    if (auto e = readString(*json, "model", r.model)) return *e;
    const OJson* input = field(*json, "input");
    if (!input) return invalidRequest("'input' is required", "input", "missing_required_parameter");
    if (auto e = readOpenAIInput(*input, r.inputs)) return *e;
    std::string format = "float";
    if (auto e = readString(*json, "encoding_format", format)) return *e;
    if (format != "float" && format != "base64")
        return invalidRequest("'encoding_format' must be \"float\" or \"base64\"", "encoding_format");
    r.base64 = format == "base64";
    if (auto e = readDimensions(*json, r.dimensions)) return *e;
    std::string user;
    if (auto e = readString(*json, "user", user)) return *e;
    return r;
}

ApiResult<EmbeddingsBody> parseOllamaEmbed(std::string_view body, const ParseLimits& limits, bool legacy) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    EmbeddingsBody r;
    r.truncate = true;
    if (auto e = readString(*json, "model", r.model)) return *e;
    if (r.model.empty()) return invalidRequest("model is required", "model", "missing_required_parameter");
    if (const OJson* o = field(*json, "options"); o && !o->is_object())
        return invalidRequest("'options' must be an object", "options");
    if (legacy) {
        std::string prompt;
        if (auto e = readString(*json, "prompt", prompt)) return *e;
        if (!prompt.empty()) r.inputs.push_back({true, std::move(prompt), {}});
        return r;
    }
    if (auto e = readBool(*json, "truncate", r.truncate)) return *e;
    if (auto e = readDimensions(*json, r.dimensions)) return *e;
    const OJson* input = field(*json, "input");
    if (!input) return r;
    if (input->is_string()) {
        if (input->get_ref<const std::string&>().empty()) return wrongInput("must not be an empty string");
        r.inputs.push_back({true, input->get<std::string>(), {}});
        return r;
    }
    if (!input->is_array())
        return wrongInput(std::string("must be a string or an array of strings, got ") + jsonTypeName(*input));
    if (input->size() > kMaxEmbeddingInputs)
        return wrongInput("has " + std::to_string(input->size()) + " items; at most " +
                          std::to_string(kMaxEmbeddingInputs) + " are allowed");
    for (size_t i = 0; i < input->size(); ++i) {
        const OJson& item = (*input)[i];
        if (!item.is_string() || item.get_ref<const std::string&>().empty())
            return wrongInput("item " + std::to_string(i) + " must be a non-empty string");
        r.inputs.push_back({true, item.get<std::string>(), {}});
    }
    return r;
}

ApiResult<std::vector<std::vector<int32_t>>> embeddingTokens(const EmbeddingsBody& body, const Engine& engine) {
    const ModelSummary& m = engine.model();
    if (body.dimensions > m.nEmbd)
        return invalidRequest("'dimensions' is " + std::to_string(body.dimensions) + " but the model's embeddings have " +
                                  std::to_string(m.nEmbd),
                              "dimensions");
    std::vector<std::vector<int32_t>> out;
    out.reserve(body.inputs.size());
    int64_t total = 0;
    for (size_t i = 0; i < body.inputs.size(); ++i) {
        const EmbeddingInput& in = body.inputs[i];
        const std::string where = body.inputs.size() > 1 ? "item " + std::to_string(i) + " of 'input'" : "'input'";
        std::vector<int32_t> ids;
        if (in.isText) {
            auto enc = engine.tokenizer().encode(in.text, true, false);
            if (!enc) return apiErrorFromStatus(enc.status(), "input");
            ids = std::move(*enc);
            if (ids.empty()) return invalidRequest(where + " gives no tokens", "input");
        } else {
            ids = in.ids;
            for (int32_t id : ids)
                if (id >= m.nVocab)
                    return invalidRequest(where + ": token " + std::to_string(id) + " is outside the vocabulary (size " +
                                              std::to_string(m.nVocab) + ")",
                                          "input");
        }
        if (int64_t(ids.size()) > m.contextLength) {
            if (!body.truncate)
                return invalidRequest(where + " has " + std::to_string(ids.size()) +
                                          " tokens, more than the model's context of " +
                                          std::to_string(m.contextLength),
                                      "input", "context_length_exceeded");
            ids.resize(size_t(m.contextLength));
        }
        total += int64_t(ids.size());
        if (total > kMaxEmbeddingTokens)
            return invalidRequest("the inputs hold more than " + std::to_string(kMaxEmbeddingTokens) +
                                      " tokens together",
                                  "input", "context_length_exceeded");
        out.push_back(std::move(ids));
    }
    return out;
}

std::string base64Floats(const std::vector<float>& v) {
    static const char* const kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<uint8_t> bytes(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        for (int b = 0; b < 4; ++b) bytes[i * 4 + size_t(b)] = uint8_t(u >> (8 * b));
    }
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const uint32_t n = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                           (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
        out += kAlphabet[(n >> 18) & 63];
        out += kAlphabet[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
        out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
    }
    return out;
}

nlohmann::ordered_json openAIEmbeddingsJson(const EmbeddingResult& result, const std::string& model, bool base64) {
    OJson data = OJson::array();
    for (size_t i = 0; i < result.vectors.size(); ++i) {
        OJson item = OJson::object();
        item["object"] = "embedding";
        item["index"] = i;
        if (base64) item["embedding"] = base64Floats(result.vectors[i]);
        else item["embedding"] = result.vectors[i];
        data.push_back(std::move(item));
    }
    OJson out = OJson::object();
    out["object"] = "list";
    out["data"] = std::move(data);
    out["model"] = model;
    out["usage"] = {{"prompt_tokens", result.promptTokens}, {"total_tokens", result.promptTokens}};
    return out;
}

} // namespace hearth::server
