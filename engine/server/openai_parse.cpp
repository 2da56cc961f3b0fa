// Parsing and validation of the OpenAI request bodies (sampling settings, stop strings, logit
// bias, prompts) into typed structs; messages and tools are in openai_messages.cpp.
#include "server/json_fields.h"
#include "server/openai_messages.h"
#include "server/openai_request.h"

#include <cmath>
#include <limits>

namespace hearth::server {

namespace {

// Deepest nesting of arrays/objects in JSON text, without parsing it (strings are skipped).
int nestingDepth(std::string_view text, int stopAt) {
    int depth = 0, deepest = 0;
    bool inString = false, escaped = false;
    for (char c : text) {
        if (inString) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') inString = false;
            continue;
        }
        if (c == '"') inString = true;
        else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
            if (deepest > stopAt) return deepest;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

#define HEARTH_TRY_READ(expr)                                                                      \
    do {                                                                                           \
        if (auto hearth_err_ = (expr)) return *hearth_err_;                                         \
    } while (0)

std::optional<ApiError> readLogitBias(const OJson& body, const ParseLimits& limits,
                                      std::vector<std::pair<int32_t, float>>& out) {
    const OJson* v = field(body, "logit_bias");
    if (!v) return std::nullopt;
    if (!v->is_object())
        return invalidRequest(std::string("'logit_bias' must be an object, got ") +
                                  jsonTypeName(*v),
                              "logit_bias", "invalid_type");
    if (v->size() > limits.maxLogitBias)
        return invalidRequest("'logit_bias' has more than " + std::to_string(limits.maxLogitBias) +
                                  " entries",
                              "logit_bias");
    for (auto it = v->begin(); it != v->end(); ++it) {
        const std::string& key = it.key();
        int64_t id = -1;
        bool digits = !key.empty() && key.size() <= 10;
        for (char c : key) digits = digits && c >= '0' && c <= '9';
        if (digits) id = std::stoll(key);
        if (!digits || id > std::numeric_limits<int32_t>::max())
            return invalidRequest("'logit_bias' keys must be token ids, got '" +
                                      key.substr(0, 64) + "'",
                                  "logit_bias");
        if (!it->is_number())
            return invalidRequest("'logit_bias' values must be numbers", "logit_bias",
                                  "invalid_type");
        const double b = it->get<double>();
        if (!std::isfinite(b) || b < -100.0 || b > 100.0)
            return invalidRequest("'logit_bias' values must be between -100 and 100",
                                  "logit_bias");
        // -100 bans the token, as OpenAI documents.
        const float bias = b <= -100.0 ? -std::numeric_limits<float>::infinity() : float(b);
        out.emplace_back(int32_t(id), bias);
    }
    return std::nullopt;
}

// Fields both endpoints share. `chat` selects the chat meaning of logprobs (a boolean plus
// top_logprobs) over the legacy one (an integer count).
// response_format {"type": "text" | "json_object" | "json_schema", "json_schema": {"name",
// "schema", "strict", "description"}}; llama.cpp's top-level "json_schema" too.
std::optional<ApiError> readResponseFormat(const OJson& body, ResponseFormat& out) {
    if (const OJson* rf = field(body, "response_format")) {
        const OJson* t = rf->is_object() ? field(*rf, "type") : nullptr;
        if (!t || !t->is_string())
            return invalidRequest("'response_format' must be an object with a string 'type'",
                                  "response_format", "invalid_type");
        const std::string type = t->get<std::string>();
        if (type == "json_object") {
            out.kind = ResponseFormat::Kind::JsonObject;
            // llama.cpp accepts a schema here too.
            if (const OJson* s = field(*rf, "schema")) {
                if (!s->is_object() && !s->is_boolean())
                    return invalidRequest("'response_format.schema' must be an object",
                                          "response_format.schema", "invalid_type");
                out.kind = ResponseFormat::Kind::JsonSchema;
                out.schema = *s;
            }
        } else if (type == "json_schema") {
            const OJson* js = field(*rf, "json_schema");
            if (!js || !js->is_object())
                return invalidRequest("'response_format.json_schema' must be an object",
                                      "response_format.json_schema", "invalid_type");
            const OJson* schema = field(*js, "schema");
            if (!schema)
                return invalidRequest("'response_format.json_schema.schema' is required",
                                      "response_format.json_schema.schema", "missing_required_parameter");
            if (!schema->is_object() && !schema->is_boolean())
                return invalidRequest("'response_format.json_schema.schema' must be an object",
                                      "response_format.json_schema.schema", "invalid_type");
            HEARTH_TRY_READ(readString(*js, "name", out.name, "response_format.json_schema.name"));
            HEARTH_TRY_READ(readBool(*js, "strict", out.strict, "response_format.json_schema.strict"));
            out.kind = ResponseFormat::Kind::JsonSchema;
            out.schema = *schema;
        } else if (type != "text") {
            return invalidRequest("response_format '" + type.substr(0, 64) +
                                      "' is not supported (use text, json_object or json_schema)",
                                  "response_format", "unsupported_value");
        }
    }
    if (const OJson* js = field(body, "json_schema")) {
        if (!js->is_object() && !js->is_boolean())
            return invalidRequest("'json_schema' must be an object", "json_schema", "invalid_type");
        if (out.kind != ResponseFormat::Kind::Text)
            return invalidRequest("'json_schema' and 'response_format' cannot be used together",
                                  "json_schema");
        out.kind = ResponseFormat::Kind::JsonSchema;
        out.schema = *js;
    }
    return std::nullopt;
}

// prediction: {"type": "content", "content": "..." or [{"type": "text", "text": "..."}, ...]}.
std::optional<ApiError> readPrediction(const OJson& body, const ParseLimits& limits, std::optional<std::string>& out) {
    const OJson* pr = field(body, "prediction");
    if (!pr || pr->is_null()) return std::nullopt;
    if (!pr->is_object())
        return invalidRequest(std::string("'prediction' must be an object, got ") + jsonTypeName(*pr), "prediction",
                              "invalid_type");
    const OJson* type = field(*pr, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "content")
        return invalidRequest("'prediction.type' must be \"content\"", "prediction.type");
    const OJson* content = field(*pr, "content");
    if (!content) return invalidRequest("'prediction.content' is missing", "prediction.content");
    std::string text;
    if (content->is_string()) {
        text = content->get<std::string>();
    } else if (content->is_array()) {
        for (const OJson& part : *content) {
            const OJson* t = part.is_object() ? field(part, "text") : nullptr;
            const OJson* pt = part.is_object() ? field(part, "type") : nullptr;
            if (!t || !t->is_string() || (pt && (!pt->is_string() || pt->get<std::string>() != "text")))
                return invalidRequest("each part of 'prediction.content' must be {\"type\": \"text\", \"text\": ...}",
                                      "prediction.content");
            text += t->get<std::string>();
            if (text.size() > limits.maxPredictionBytes) break;
        }
    } else {
        return invalidRequest(std::string("'prediction.content' must be a string or an array of text parts, got ") +
                                  jsonTypeName(*content),
                              "prediction.content", "invalid_type");
    }
    if (text.size() > limits.maxPredictionBytes)
        return invalidRequest("'prediction.content' is longer than " + std::to_string(limits.maxPredictionBytes) +
                                  " bytes",
                              "prediction.content");
    out = std::move(text);
    return std::nullopt;
}

// "speculative": {"n_max": N, "n_min": M, "p_min": P}, or llama.cpp's flat "speculative.n_max",
// "speculative.n_min", "speculative.p_min".
std::optional<ApiError> readSpeculative(const OJson& body, CommonParams& p) {
    int64_t i = 0;
    auto read = [&](const OJson& obj, const char* key, const char* name, std::optional<int32_t>& out)
        -> std::optional<ApiError> {
        if (!field(obj, key)) return std::nullopt;
        HEARTH_TRY_READ(readInt(obj, key, 0, 64, i, name));
        out = int32_t(i);
        return std::nullopt;
    };
    auto readP = [&](const OJson& obj, const char* key) -> std::optional<ApiError> {
        if (!field(obj, key)) return std::nullopt;
        float v = 0.0f;
        HEARTH_TRY_READ(readFloat(obj, key, 0.0, 1.0, v, "speculative.p_min"));
        p.specPMin = v;
        return std::nullopt;
    };
    if (const OJson* sp = field(body, "speculative")) {
        if (!sp->is_object())
            return invalidRequest(std::string("'speculative' must be an object, got ") + jsonTypeName(*sp),
                                  "speculative", "invalid_type");
        HEARTH_TRY_READ(read(*sp, "n_max", "speculative.n_max", p.specMaxDraft));
        HEARTH_TRY_READ(read(*sp, "n_min", "speculative.n_min", p.specMinDraft));
        HEARTH_TRY_READ(readP(*sp, "p_min"));
    }
    HEARTH_TRY_READ(readP(body, "speculative.p_min"));
    HEARTH_TRY_READ(read(body, "speculative.n_max", "speculative.n_max", p.specMaxDraft));
    HEARTH_TRY_READ(read(body, "speculative.n_min", "speculative.n_min", p.specMinDraft));
    if (p.specMaxDraft && p.specMinDraft && *p.specMinDraft > *p.specMaxDraft)
        return invalidRequest("'speculative.n_min' must not exceed 'speculative.n_max'", "speculative.n_min");
    return std::nullopt;
}

std::optional<ApiError> readCommon(const OJson& body, const ParseLimits& limits, bool chat,
                                   CommonParams& p) {
    if (const OJson* m = field(body, "model"); m && !m->is_string())
        return invalidRequest(std::string("'model' must be a string, got ") + jsonTypeName(*m),
                              "model", "invalid_type");
    HEARTH_TRY_READ(readString(body, "model", p.model));
    int64_t i = 0;
    const char* maxKey = nullptr;
    if (chat && field(body, "max_completion_tokens")) maxKey = "max_completion_tokens";
    else if (field(body, "max_tokens")) maxKey = "max_tokens";
    if (maxKey) {
        const OJson& v = *field(body, maxKey);
        if (!v.is_number())
            return invalidRequest(std::string("'") + maxKey + "' must be an integer, got " +
                                      jsonTypeName(v),
                                  maxKey, "invalid_type");
        HEARTH_TRY_READ(readInt(body, maxKey, 1, limits.maxTokensCap, i));
        p.maxTokens = int32_t(i);
    }
    HEARTH_TRY_READ(readFloat(body, "temperature", 0.0, 2.0, p.temperature));
    HEARTH_TRY_READ(readFloat(body, "top_p", 0.0, 1.0, p.topP));
    if (p.topP <= 0.0f) p.topP = 1e-6f; // top_p 0 keeps only the most likely token
    if (field(body, "top_k")) {
        HEARTH_TRY_READ(readInt(body, "top_k", -1, 1 << 24, i));
        p.topK = i < 0 ? 0 : int32_t(i);
    }
    HEARTH_TRY_READ(readFloat(body, "min_p", 0.0, 1.0, p.minP));
    HEARTH_TRY_READ(readFloat(body, "typical_p", 0.0, 1.0, p.typicalP));
    if (p.typicalP <= 0.0f) p.typicalP = 1.0f;
    HEARTH_TRY_READ(readFloat(body, "repeat_penalty", 0.0, 10.0, p.repeatPenalty));
    if (field(body, "repetition_penalty"))
        HEARTH_TRY_READ(readFloat(body, "repetition_penalty", 0.0, 10.0, p.repeatPenalty));
    if (p.repeatPenalty <= 0.0f)
        return invalidRequest("'repeat_penalty' must be greater than 0", "repeat_penalty");
    HEARTH_TRY_READ(readFloat(body, "presence_penalty", -2.0, 2.0, p.presencePenalty));
    HEARTH_TRY_READ(readFloat(body, "frequency_penalty", -2.0, 2.0, p.frequencyPenalty));
    if (field(body, "n")) {
        HEARTH_TRY_READ(readInt(body, "n", 1, limits.maxN, i));
        p.n = int32_t(i);
    }
    HEARTH_TRY_READ(readStopStrings(body, "stop", "stop", true, false, limits.maxStopStrings,
                                    limits.maxStopBytes, p.stop));
    if (const OJson* s = field(body, "seed")) {
        int64_t seed = 0;
        if (!s->is_number())
            return invalidRequest(std::string("'seed' must be an integer, got ") +
                                      jsonTypeName(*s),
                                  "seed", "invalid_type");
        if (s->is_number_unsigned()) p.seed = s->get<uint64_t>();
        else if (asInteger(*s, seed)) p.seed = uint64_t(seed);
        else return invalidRequest("'seed' must be an integer", "seed", "invalid_type");
    }
    HEARTH_TRY_READ(readLogitBias(body, limits, p.logitBias));
    if (chat) {
        HEARTH_TRY_READ(readBool(body, "logprobs", p.logprobs));
        if (field(body, "top_logprobs")) {
            HEARTH_TRY_READ(readInt(body, "top_logprobs", 0, 20, i));
            if (!p.logprobs)
                return invalidRequest("'top_logprobs' needs 'logprobs' set to true",
                                      "top_logprobs");
            p.topLogprobs = int32_t(i);
        }
    } else if (field(body, "logprobs")) {
        const OJson& v = *field(body, "logprobs");
        if (v.is_boolean()) { // accepted for convenience: true = the chosen token only
            p.logprobs = v.get<bool>();
        } else {
            HEARTH_TRY_READ(readInt(body, "logprobs", 0, 20, i));
            p.logprobs = true;
            p.topLogprobs = int32_t(i);
        }
    }
    HEARTH_TRY_READ(readString(body, "user", p.user));
    HEARTH_TRY_READ(readBool(body, "stream", p.stream));
    if (const OJson* so = field(body, "stream_options")) {
        if (!so->is_object())
            return invalidRequest(std::string("'stream_options' must be an object, got ") +
                                      jsonTypeName(*so),
                                  "stream_options", "invalid_type");
        HEARTH_TRY_READ(readBool(*so, "include_usage", p.includeUsage,
                                 "stream_options.include_usage"));
    }
    HEARTH_TRY_READ(readBool(body, "ignore_eos", p.ignoreEos));
    HEARTH_TRY_READ(readResponseFormat(body, p.responseFormat));
    HEARTH_TRY_READ(readString(body, "grammar", p.grammar));
    if (!p.grammar.empty() && p.responseFormat.kind != ResponseFormat::Kind::Text)
        return invalidRequest("'grammar' and 'response_format' cannot be used together", "grammar");
    if (chat) HEARTH_TRY_READ(readPrediction(body, limits, p.prediction));
    HEARTH_TRY_READ(readSpeculative(body, p));
    return std::nullopt;
}

} // namespace

ApiResult<OJson> parseJsonObject(std::string_view body, const ParseLimits& limits) {
    if (body.size() > limits.maxBodyBytes) {
        ApiError e = invalidRequest("request body is larger than " +
                                        std::to_string(limits.maxBodyBytes) + " bytes",
                                    {}, "request_too_large");
        e.status = 413;
        return e;
    }
    if (nestingDepth(body, limits.maxNestingDepth) > limits.maxNestingDepth)
        return invalidRequest("request body nests deeper than " +
                                  std::to_string(limits.maxNestingDepth) + " levels",
                              {}, "invalid_json");
    OJson json = OJson::parse(body.begin(), body.end(), nullptr, false);
    if (json.is_discarded())
        return invalidRequest("request body is not valid JSON", {}, "invalid_json");
    if (!json.is_object())
        return invalidRequest(std::string("request body must be a JSON object, got ") +
                                  jsonTypeName(json),
                              {}, "invalid_json");
    return json;
}

ApiResult<ChatCompletionRequest> parseChatCompletionRequest(std::string_view body,
                                                            const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    ChatCompletionRequest r;
    if (auto e = readCommon(*json, limits, true, r.common)) return *e;
    if (auto e = readMessages(*json, limits, r.messages, &r.images)) return *e;
    if (auto e = readTools(*json, limits, r)) return *e;
    if (const OJson* k = field(*json, "chat_template_kwargs")) {
        if (!k->is_object())
            return invalidRequest("'chat_template_kwargs' must be an object",
                                  "chat_template_kwargs", "invalid_type");
        r.templateKwargs = *k;
    }
    std::string reasoningFormat;
    if (auto e = readString(*json, "reasoning_format", reasoningFormat)) return *e;
    if (reasoningFormat == "none") r.splitReasoning = false;
    else if (!reasoningFormat.empty() && reasoningFormat != "auto" && reasoningFormat != "deepseek" &&
             reasoningFormat != "deepseek-legacy")
        return invalidRequest("'reasoning_format' must be \"auto\", \"deepseek\" or \"none\"", "reasoning_format");
    // reasoning_effort reaches the template (gpt-oss reads it), unless the kwargs set it.
    std::string effort;
    if (auto e = readString(*json, "reasoning_effort", effort)) return *e;
    if (!effort.empty()) {
        if (effort != "minimal" && effort != "low" && effort != "medium" && effort != "high")
            return invalidRequest("'reasoning_effort' must be \"minimal\", \"low\", \"medium\" or \"high\"",
                                  "reasoning_effort");
        if (!r.templateKwargs.contains("reasoning_effort")) r.templateKwargs["reasoning_effort"] = effort;
    }
    return r;
}

ApiResult<CompletionRequest> parseCompletionRequest(std::string_view body,
                                                    const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    CompletionRequest r;
    if (auto e = readCommon(*json, limits, false, r.common)) return *e;
    if (auto e = readBool(*json, "echo", r.echo)) return *e;
    if (const OJson* s = field(*json, "suffix"); s && !(s->is_string() && s->get<std::string>().empty()))
        return invalidRequest("'suffix' is not supported by this server", "suffix",
                              "unsupported_value");
    if (const OJson* b = field(*json, "best_of")) {
        int64_t best = 0;
        if (!asInteger(*b, best) || best != r.common.n)
            return invalidRequest("'best_of' other than n is not supported", "best_of",
                                  "unsupported_value");
    }
    const OJson* prompt = field(*json, "prompt");
    if (!prompt) return invalidRequest("'prompt' is required", "prompt", "missing_required_parameter");
    const OJson* p = prompt;
    // A batch of one ([...] around the prompt) is the same as the prompt.
    if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array()))
        p = &(*p)[0];
    if (p->is_string()) {
        r.promptText = p->get<std::string>();
        return r;
    }
    if (!p->is_array())
        return invalidRequest(std::string("'prompt' must be a string or an array of token ids, got ") +
                                  jsonTypeName(*p),
                              "prompt", "invalid_type");
    if (p->empty()) return invalidRequest("'prompt' must not be empty", "prompt");
    if (p->size() > limits.maxPromptTokens)
        return invalidRequest("'prompt' has too many tokens", "prompt");
    if ((*p)[0].is_string() || (*p)[0].is_array())
        return invalidRequest("batched prompts (more than one) are not supported; send one "
                              "request per prompt",
                              "prompt", "unsupported_value");
    r.promptIsTokens = true;
    for (const OJson& t : *p) {
        int64_t id = 0;
        if (!asInteger(t, id) || id < 0 || id > std::numeric_limits<int32_t>::max())
            return invalidRequest("'prompt' token ids must be non-negative integers", "prompt",
                                  "invalid_type");
        r.promptTokens.push_back(int32_t(id));
    }
    return r;
}

ApiResult<TokenizeRequest> parseTokenizeRequest(std::string_view body, const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    TokenizeRequest r;
    const OJson* c = field(*json, "content");
    if (!c) return invalidRequest("'content' is required", "content", "missing_required_parameter");
    if (auto e = readString(*json, "content", r.content)) return *e;
    if (auto e = readBool(*json, "add_special", r.addSpecial)) return *e;
    if (auto e = readBool(*json, "parse_special", r.parseSpecial)) return *e;
    if (auto e = readBool(*json, "with_pieces", r.withPieces)) return *e;
    return r;
}

ApiResult<std::vector<int32_t>> parseDetokenizeRequest(std::string_view body,
                                                      const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    const OJson* t = field(*json, "tokens");
    if (!t) return invalidRequest("'tokens' is required", "tokens", "missing_required_parameter");
    if (!t->is_array())
        return invalidRequest("'tokens' must be an array of token ids", "tokens", "invalid_type");
    if (t->size() > limits.maxPromptTokens)
        return invalidRequest("'tokens' has too many entries", "tokens");
    std::vector<int32_t> ids;
    ids.reserve(t->size());
    for (const OJson& v : *t) {
        int64_t id = 0;
        if (!asInteger(v, id) || id < 0 || id > std::numeric_limits<int32_t>::max())
            return invalidRequest("'tokens' must hold non-negative integer ids", "tokens",
                                  "invalid_type");
        ids.push_back(int32_t(id));
    }
    return ids;
}

} // namespace hearth::server
