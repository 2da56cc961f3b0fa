// Typed, validated forms of the OpenAI /v1/chat/completions and /v1/completions request bodies,
// the limits applied while parsing them, and the parsers (no HTTP here).
#pragma once

#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hearth::server {

struct ParseLimits {
    size_t maxBodyBytes = size_t(8) << 20;
    int maxNestingDepth = 64;       // JSON arrays/objects inside each other
    size_t maxMessages = 1024;
    size_t maxStopStrings = 16;      // OpenAI allows 4; we accept a few more
    size_t maxStopBytes = 1024;      // bytes per stop string
    size_t maxLogitBias = 4096;
    size_t maxTools = 256;
    size_t maxPromptTokens = 1 << 20; // token-array prompts
    int32_t maxTokensCap = 1 << 20;  // max_tokens above this is refused
    int32_t maxN = 128;
    size_t maxPredictionBytes = size_t(1) << 20; // a `prediction` longer than this is refused
};

// response_format: free text, any JSON object, or JSON that a schema accepts.
struct ResponseFormat {
    enum class Kind { Text, JsonObject, JsonSchema };
    Kind kind = Kind::Text;
    nlohmann::ordered_json schema; // JsonSchema
    std::string name;              // json_schema.name
    bool strict = false;           // json_schema.strict: keywords no grammar enforces are refused
};

// Settings shared by both endpoints.
struct CommonParams {
    std::string model;
    std::optional<int32_t> maxTokens;
    float temperature = 1.0f;
    float topP = 1.0f;
    int32_t topK = 0;
    float minP = 0.0f;
    float typicalP = 1.0f;
    float repeatPenalty = 1.0f;
    float presencePenalty = 0.0f;
    float frequencyPenalty = 0.0f;
    int32_t n = 1;
    std::vector<std::string> stop;
    std::optional<uint64_t> seed;
    std::vector<std::pair<int32_t, float>> logitBias; // ids checked against the vocabulary later
    bool logprobs = false;    // report logprobs of the chosen tokens
    int32_t topLogprobs = 0;  // alternatives per token (0..20)
    std::string user;
    bool stream = false;
    bool includeUsage = false; // stream_options.include_usage
    bool ignoreEos = false;    // llama.cpp extra
    ResponseFormat responseFormat;
    std::string grammar;       // llama.cpp extra: GBNF the output must match
    // Speculative decoding: OpenAI's predicted output (`prediction`, chat only), and the drafts per
    // step at most / fewest worth verifying ("speculative": {"n_max", "n_min"}, or llama.cpp's
    // "speculative.n_max" / "speculative.n_min"; n_max 0 turns speculation off).
    std::optional<std::string> prediction;
    std::optional<int32_t> specMaxDraft, specMinDraft;
    std::optional<float> specPMin;
};

struct ToolFunction {
    std::string name;
    std::string description;
    nlohmann::ordered_json parameters; // JSON schema object, or null
    bool strict = false;               // as ResponseFormat::strict, for the arguments
};

enum class ToolChoiceMode { Auto, None, Required, Named };

struct ToolChoice {
    ToolChoiceMode mode = ToolChoiceMode::Auto;
    std::string name; // for Named
    // parallel_tool_calls: several calls in one turn when a call is forced (llama.cpp's default,
    // off, so a small model cannot call forever; at most kMaxForcedCalls when on).
    bool parallel = false;
};
inline constexpr int kMaxForcedCalls = 8;

struct ChatCompletionRequest {
    CommonParams common;
    // Normalised for chat templates: text parts joined into one string, tool-call arguments
    // parsed into objects where they are JSON.
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    // The users' images (image_url data URIs) in order, encoded as sent; each is an image marker
    // (kImageMarker) in its message's text.
    std::vector<std::string> images;
    std::vector<ToolFunction> tools;
    nlohmann::ordered_json toolsJson; // as given (array), null when none
    ToolChoice toolChoice;
    nlohmann::ordered_json templateKwargs = nlohmann::ordered_json::object();
    // "auto" (also "deepseek"): <think> blocks go to reasoning_content; "none": left in content.
    bool splitReasoning = true;
};

struct CompletionRequest {
    CommonParams common;
    bool promptIsTokens = false;
    std::string promptText;
    std::vector<int32_t> promptTokens;
    bool echo = false;
};

// Parse and validate a body. Every failure is a 4xx ApiError, never an exception.
ApiResult<ChatCompletionRequest> parseChatCompletionRequest(std::string_view body,
                                                            const ParseLimits& limits = {});
ApiResult<CompletionRequest> parseCompletionRequest(std::string_view body,
                                                    const ParseLimits& limits = {});

// Parses JSON text into an object after checking its size and nesting depth.
ApiResult<nlohmann::ordered_json> parseJsonObject(std::string_view body, const ParseLimits& limits);

// {"content": "..."} (plus optional "add_special", "parse_special") for /tokenize.
struct TokenizeRequest {
    std::string content;
    bool addSpecial = false;
    bool parseSpecial = true;
    bool withPieces = false;
};
ApiResult<TokenizeRequest> parseTokenizeRequest(std::string_view body, const ParseLimits& limits);
// {"tokens": [...]} for /detokenize (ids checked against the vocabulary later).
ApiResult<std::vector<int32_t>> parseDetokenizeRequest(std::string_view body,
                                                      const ParseLimits& limits);

} // namespace hearth::server
