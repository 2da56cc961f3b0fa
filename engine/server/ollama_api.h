// The Ollama API beside the OpenAI one: typed forms of the /api/chat, /api/generate and /api/show
// bodies and their parsers (ollama_parse.cpp), the response builders (ollama_response.cpp), and
// the route helpers the HTTP layer uses (ollama_handlers.cpp).
#pragma once

#include "hearth/engine.h"
#include "hearth/server.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

using OJson = nlohmann::ordered_json;

// The Ollama API level these endpoints follow (what /api/version reports, for clients that gate
// features on it); hearth is not Ollama.
inline constexpr const char* kOllamaApiVersion = "0.12.0";

enum class OllamaFormat { None, Json, Schema };

// Settings shared by /api/chat and /api/generate. Sampling defaults are Ollama's (temperature 0.8,
// top_k 40, top_p 0.9, repeat_penalty 1.1 over the last 64 tokens), not the OpenAI side's.
struct OllamaParams {
    CommonParams common;                // model, sampling, stop, seed (unset: random), stream
    std::optional<int32_t> numPredict;  // > 0: a cap (clamped to the context); unset: default
    int32_t repeatLastN = 64;           // -1: the whole context
    OllamaFormat format = OllamaFormat::None;
    OJson schema;                       // format is a JSON schema object
    std::optional<bool> think;          // think: true/false (true: reasoning split into "thinking")
    std::string thinkLevel;             // think: "low" | "medium" | "high"
    std::optional<double> keepAliveSeconds; // parsed and accepted; negative: forever
};

struct OllamaChatRequest {
    OllamaParams params;
    OJson messages = OJson::array(); // normalised for chat templates (may be empty: a load)
    std::vector<std::string> images; // users' images (base64-decoded), each a marker in its message
    std::vector<ToolFunction> tools;
    OJson toolsJson;                 // for templates; null when none
};

struct OllamaGenerateRequest {
    OllamaParams params;
    std::string prompt; // empty: a load request
    std::string system;
    bool raw = false;   // the prompt goes to the model as is, without the chat template
    std::vector<int32_t> context; // tokens of an earlier exchange (ids checked later)
    std::vector<std::string> images; // base64-decoded; they go before the prompt's text
};

struct OllamaShowRequest {
    std::string model;
    bool verbose = false;
};

// Parse and validate a body. Every failure is a 4xx ApiError (its message is what the client
// sees as {"error": ...}), never an exception.
ApiResult<OllamaChatRequest> parseOllamaChatRequest(std::string_view body, const ParseLimits& limits);
ApiResult<OllamaGenerateRequest> parseOllamaGenerateRequest(std::string_view body,
                                                            const ParseLimits& limits);
ApiResult<OllamaShowRequest> parseOllamaShowRequest(std::string_view body, const ParseLimits& limits);

// Seconds of a Go-style duration ("5m", "1h30m", "-1", "300ms") or a number of seconds; nullopt
// when the text is neither.
std::optional<double> parseKeepAlive(std::string_view text);

// ---- responses (ollama_response.cpp) ----

// {"error": "message"}
OJson ollamaErrorJson(const std::string& message);
// RFC 3339 with nanoseconds in UTC: "2026-11-26T08:06:39.123456789Z".
std::string rfc3339(std::chrono::system_clock::time_point t);

// The timing and counting fields of a final response, in nanoseconds.
struct OllamaTimings {
    int64_t totalNs = 0;
    int64_t loadNs = 0;
    int32_t promptEvalCount = 0;
    int64_t promptEvalNs = 0;
    int32_t evalCount = 0;
    int64_t evalNs = 0;
};
OllamaTimings ollamaTimings(const Usage& usage, std::chrono::steady_clock::duration total,
                            std::chrono::steady_clock::duration load);
// Adds total_duration, load_duration, prompt_eval_count, ... to `out`.
void addTimings(OJson& out, const OllamaTimings& t);

// "stop" or "length".
const char* ollamaDoneReason(FinishReason reason);

// Ollama's message.tool_calls: [{"id", "function": {"index", "name", "arguments": {...}}}]
// (arguments an object, not JSON text as OpenAI sends them).
OJson ollamaToolCalls(const std::vector<ToolCall>& calls);

// One streamed line (the JSON text plus "\n").
std::string ndjsonLine(const OJson& json);

// A /api/generate chunk or whole response (done: false while streaming); `thinking` (the
// model's reasoning, with think set) is added when not empty.
OJson generateChunk(const std::string& model, const std::string& text, bool done,
                    const std::string& thinking = {});
// A /api/chat chunk or whole response; toolCalls null: none.
OJson chatChunk(const std::string& model, const std::string& content, const OJson& toolCalls,
                bool done, const std::string& thinking = {});

// What /api/tags, /api/show and /api/ps say about a model; `summary` null when it is not loaded.
struct OllamaModelInfo {
    std::string id;
    const ModelSummary* summary = nullptr;
    uint64_t fileBytes = 0; // the model's files (/api/tags' size)
};
OJson ollamaDetails(const OllamaModelInfo& m);
OJson ollamaTagEntry(const OllamaModelInfo& m);
OJson ollamaShowJson(const OllamaModelInfo& m, bool verbose);
// Ollama names carry a tag: "name:latest" is the model "name" here (other tags are kept).
std::string untaggedModel(const std::string& model);

// A loaded model in /api/ps: its size and expiry as the provider reports them.
OJson ollamaPsEntry(const OllamaModelInfo& m, const ModelEntry& loaded);

// ---- routes (ollama_handlers.cpp) ----

// The metrics label of an Ollama path ("/api/chat", "/"), or nullptr when it is not one.
const char* ollamaRouteLabel(const std::string& path);
// Paths whose errors take Ollama's {"error": "..."} shape ("/" and /api/...).
bool isOllamaPath(const std::string& path);
// Rewrites an OpenAI-shaped error body in `body` to Ollama's shape (unchanged when it is not one).
std::string toOllamaErrorBody(const std::string& body);

} // namespace hearth::server
