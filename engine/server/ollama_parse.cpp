// Parsing and validation of the Ollama /api/chat, /api/generate and /api/show bodies: options,
// format, think, keep_alive, messages (user messages and generate prompts may carry base64 images) and tools.
#include "server/json_fields.h"
#include "server/ollama_api.h"

#include "hearth/engine.h"
#include "server/image_parts.h"
#include "server/openai_messages.h"

#include <cmath>
#include <limits>

namespace hearth::server {

namespace {

#define HEARTH_OLLAMA_TRY(expr)                                                                    \
    do {                                                                                           \
        if (auto hearth_err_ = (expr)) return *hearth_err_;                                         \
    } while (0)

using MaybeError = std::optional<ApiError>;

MaybeError ollamaWrongType(const std::string& param, const char* want, const OJson& got) {
    return invalidRequest("'" + param + "' must be " + want + ", got " + jsonTypeName(got), param,
                          "invalid_type");
}

// Options Ollama knows that only matter to its own runner (context size, threads, GPU
// placement, ...): accepted and ignored, as long as they have the right type.
const char* const kIgnoredNumberOptions[] = {
    "num_ctx",     "num_keep",     "num_batch", "num_gpu",      "main_gpu",   "num_thread",
    "tfs_z",       "mirostat",     "mirostat_tau", "mirostat_eta", "num_gqa", "rope_frequency_base",
    "rope_frequency_scale",
};
const char* const kIgnoredBoolOptions[] = {
    "penalize_newline", "numa", "low_vram", "f16_kv", "logits_all", "vocab_only", "use_mmap",
    "use_mlock", "embedding_only",
};

MaybeError readOptions(const OJson& body, const ParseLimits& limits, OllamaParams& p) {
    const OJson* o = field(body, "options");
    if (!o) return std::nullopt;
    if (!o->is_object()) return ollamaWrongType("options", "an object", *o);
    CommonParams& c = p.common;
    HEARTH_OLLAMA_TRY(readFloat(*o, "temperature", 0.0, 100.0, c.temperature, "options.temperature"));
    int64_t i = 0;
    if (field(*o, "top_k")) {
        HEARTH_OLLAMA_TRY(readInt(*o, "top_k", INT32_MIN, 1 << 24, i, "options.top_k"));
        c.topK = i <= 0 ? 0 : int32_t(i); // <= 0: off
    }
    HEARTH_OLLAMA_TRY(readFloat(*o, "top_p", 0.0, 1.0, c.topP, "options.top_p"));
    if (c.topP <= 0.0f) c.topP = 1e-6f; // keeps only the most likely token
    HEARTH_OLLAMA_TRY(readFloat(*o, "min_p", 0.0, 1.0, c.minP, "options.min_p"));
    HEARTH_OLLAMA_TRY(readFloat(*o, "typical_p", 0.0, 1.0, c.typicalP, "options.typical_p"));
    if (c.typicalP <= 0.0f) c.typicalP = 1.0f;
    HEARTH_OLLAMA_TRY(readFloat(*o, "repeat_penalty", 0.0, 10.0, c.repeatPenalty,
                                "options.repeat_penalty"));
    if (c.repeatPenalty <= 0.0f) c.repeatPenalty = 1.0f; // 0: off
    HEARTH_OLLAMA_TRY(readFloat(*o, "presence_penalty", -2.0, 2.0, c.presencePenalty,
                                "options.presence_penalty"));
    HEARTH_OLLAMA_TRY(readFloat(*o, "frequency_penalty", -2.0, 2.0, c.frequencyPenalty,
                                "options.frequency_penalty"));
    if (field(*o, "repeat_last_n")) {
        HEARTH_OLLAMA_TRY(readInt(*o, "repeat_last_n", -1, 1 << 24, i, "options.repeat_last_n"));
        p.repeatLastN = int32_t(i);
    }
    if (const OJson* s = field(*o, "seed")) {
        if (!s->is_number()) return ollamaWrongType("options.seed", "an integer", *s);
        int64_t seed = 0;
        if (s->is_number_unsigned()) c.seed = s->get<uint64_t>();
        else if (!asInteger(*s, seed))
            return invalidRequest("'options.seed' must be an integer", "options.seed",
                                  "invalid_type");
        else if (seed >= 0) c.seed = uint64_t(seed); // negative: a random seed, as Ollama's -1
    }
    if (field(*o, "num_predict")) {
        HEARTH_OLLAMA_TRY(readInt(*o, "num_predict", -2, limits.maxTokensCap, i,
                                  "options.num_predict"));
        if (i > 0) p.numPredict = int32_t(i); // -1, -2 and 0: until the end or the default cap
    }
    HEARTH_OLLAMA_TRY(readStopStrings(*o, "stop", "options.stop", true, false, limits.maxStopStrings,
                                      limits.maxStopBytes, c.stop));
    for (const char* key : kIgnoredNumberOptions)
        if (const OJson* v = field(*o, key); v && !v->is_number())
            return ollamaWrongType(std::string("options.") + key, "a number", *v);
    for (const char* key : kIgnoredBoolOptions) {
        bool ignored = false;
        HEARTH_OLLAMA_TRY(readBool(*o, key, ignored, std::string("options.") + key));
    }
    // Other keys are ignored, as Ollama ignores options it does not know.
    return std::nullopt;
}

MaybeError readFormat(const OJson& body, OllamaParams& p) {
    const OJson* f = field(body, "format");
    if (!f) return std::nullopt;
    if (f->is_string()) {
        const std::string& s = f->get_ref<const std::string&>();
        if (s.empty()) return std::nullopt;
        if (s == "json") {
            p.format = OllamaFormat::Json;
            return std::nullopt;
        }
        return invalidRequest("'format' must be \"json\" or a JSON schema object, got \"" +
                                  s.substr(0, 64) + "\"",
                              "format");
    }
    if (!f->is_object()) return ollamaWrongType("format", "\"json\" or a JSON schema object", *f);
    p.format = OllamaFormat::Schema;
    p.schema = *f;
    return std::nullopt;
}

MaybeError readThink(const OJson& body, OllamaParams& p) {
    const OJson* t = field(body, "think");
    if (!t) return std::nullopt;
    if (t->is_boolean()) {
        p.think = t->get<bool>();
        return std::nullopt;
    }
    if (t->is_string()) {
        const std::string& s = t->get_ref<const std::string&>();
        if (s == "low" || s == "medium" || s == "high") {
            p.think = true;
            p.thinkLevel = s;
            return std::nullopt;
        }
        return invalidRequest("'think' must be true, false, \"low\", \"medium\" or \"high\"",
                              "think");
    }
    return ollamaWrongType("think", "a boolean or \"low\", \"medium\", \"high\"", *t);
}

MaybeError readKeepAlive(const OJson& body, OllamaParams& p) {
    const OJson* k = field(body, "keep_alive");
    if (!k) return std::nullopt;
    if (k->is_number()) {
        const double d = k->get<double>();
        if (!std::isfinite(d)) return invalidRequest("'keep_alive' must be finite", "keep_alive");
        p.keepAliveSeconds = d;
        return std::nullopt;
    }
    if (!k->is_string()) return ollamaWrongType("keep_alive", "a duration string or a number", *k);
    const std::string& s = k->get_ref<const std::string&>();
    auto secs = parseKeepAlive(s);
    if (!secs)
        return invalidRequest("'keep_alive' is not a duration (like \"5m\", \"1h\" or \"-1\"): \"" +
                                  s.substr(0, 64) + "\"",
                              "keep_alive");
    p.keepAliveSeconds = *secs;
    return std::nullopt;
}

// Fields both generation endpoints share.
MaybeError readParams(const OJson& body, const ParseLimits& limits, OllamaParams& p) {
    CommonParams& c = p.common;
    c.temperature = 0.8f;
    c.topK = 40;
    c.topP = 0.9f;
    c.repeatPenalty = 1.1f;
    c.stream = true; // Ollama streams unless told not to
    if (const OJson* m = field(body, "model"); m && !m->is_string())
        return ollamaWrongType("model", "a string", *m);
    HEARTH_OLLAMA_TRY(readString(body, "model", c.model));
    HEARTH_OLLAMA_TRY(readBool(body, "stream", c.stream));
    HEARTH_OLLAMA_TRY(readOptions(body, limits, p));
    HEARTH_OLLAMA_TRY(readFormat(body, p));
    HEARTH_OLLAMA_TRY(readThink(body, p));
    HEARTH_OLLAMA_TRY(readKeepAlive(body, p));
    return std::nullopt;
}

MaybeError refuseImages(const OJson& obj, const std::string& param) {
    const OJson* images = field(obj, "images");
    if (!images) return std::nullopt;
    if (!images->is_array()) return ollamaWrongType(param, "an array of base64 images", *images);
    if (!images->empty())
        return invalidRequest("'" + param + "': images are taken in user messages only",
                              param, "unsupported_value");
    return std::nullopt;
}

// A user message's images: base64 strings whose bytes go to `images`, each an image marker
// (followed by a newline) before the message's text, as many clients attach them.
MaybeError readImages(const OJson& obj, const std::string& param, std::vector<std::string>& images,
                      std::string& markers) {
    const OJson* list = field(obj, "images");
    if (!list) return std::nullopt;
    if (!list->is_array()) return ollamaWrongType(param, "an array of base64 images", *list);
    for (size_t i = 0; i < list->size(); ++i) {
        const std::string p = param + "[" + std::to_string(i) + "]";
        if (!(*list)[i].is_string()) return ollamaWrongType(p, "a base64 string", (*list)[i]);
        if (images.size() >= kMaxImagesPerRequest)
            return invalidRequest("a request may hold at most " + std::to_string(kMaxImagesPerRequest) + " images", p,
                                  "too_many_images");
        std::optional<std::string> bytes = decodeBase64((*list)[i].get_ref<const std::string&>());
        if (!bytes || bytes->empty()) return invalidRequest("'" + p + "' is not a base64 image", p);
        images.push_back(std::move(*bytes));
        markers += std::string(kImageMarker) + "\n";
    }
    return std::nullopt;
}

// message.tool_calls: [{"function": {"name", "arguments": {...}}}] into the templates' form.
MaybeError readMessageToolCalls(const OJson& calls, const std::string& param, OJson& out) {
    if (!calls.is_array()) return ollamaWrongType(param, "an array", calls);
    out = OJson::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const OJson& c = calls[i];
        const std::string p = param + "[" + std::to_string(i) + "]";
        if (!c.is_object()) return ollamaWrongType(p, "an object", c);
        const OJson* fn = field(c, "function");
        if (!fn || !fn->is_object())
            return invalidRequest("'" + p + ".function' must be an object", p + ".function",
                                  "invalid_type");
        const OJson* name = field(*fn, "name");
        if (!name || !name->is_string())
            return invalidRequest("'" + p + ".function.name' must be a string",
                                  p + ".function.name", "invalid_type");
        OJson args = OJson::object();
        if (const OJson* a = field(*fn, "arguments")) {
            if (a->is_object()) {
                args = *a;
            } else if (a->is_string()) { // lenient: JSON text as OpenAI sends it
                OJson parsed = OJson::parse(a->get<std::string>(), nullptr, false);
                args = parsed.is_discarded() ? *a : parsed;
            } else {
                return ollamaWrongType(p + ".function.arguments", "an object", *a);
            }
        }
        OJson call = OJson::object();
        std::string id;
        HEARTH_OLLAMA_TRY(readString(c, "id", id, p + ".id"));
        if (!id.empty()) call["id"] = id;
        call["type"] = "function";
        call["function"] = {{"name", *name}, {"arguments", std::move(args)}};
        out.push_back(std::move(call));
    }
    return std::nullopt;
}

MaybeError readOllamaMessages(const OJson& body, const ParseLimits& limits, OJson& out,
                              std::vector<std::string>& images) {
    out = OJson::array();
    const OJson* messages = field(body, "messages");
    if (!messages) return std::nullopt; // none: a request that only loads the model
    if (!messages->is_array()) return ollamaWrongType("messages", "an array", *messages);
    if (messages->size() > limits.maxMessages)
        return invalidRequest("'messages' has more than " + std::to_string(limits.maxMessages) +
                                  " entries",
                              "messages");
    for (size_t i = 0; i < messages->size(); ++i) {
        const OJson& m = (*messages)[i];
        const std::string p = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) return ollamaWrongType(p, "an object", m);
        const OJson* role = field(m, "role");
        if (!role || !role->is_string())
            return invalidRequest("'" + p + ".role' must be a string", p + ".role",
                                  role ? "invalid_type" : "missing_required_parameter");
        const std::string& r = role->get_ref<const std::string&>();
        if (r != "system" && r != "user" && r != "assistant" && r != "tool")
            return invalidRequest("'" + p + ".role' must be one of system, user, assistant, tool",
                                  p + ".role");
        OJson msg = OJson::object();
        msg["role"] = r;
        std::string content;
        HEARTH_OLLAMA_TRY(readString(m, "content", content, p + ".content"));
        if (r == "user") {
            std::string markers;
            HEARTH_OLLAMA_TRY(readImages(m, p + ".images", images, markers));
            content = markers + content;
        } else {
            HEARTH_OLLAMA_TRY(refuseImages(m, p + ".images"));
        }
        OJson toolCalls;
        if (const OJson* tc = field(m, "tool_calls")) {
            if (r != "assistant")
                return invalidRequest("'" + p + ".tool_calls' is only allowed on assistant messages",
                                      p + ".tool_calls");
            HEARTH_OLLAMA_TRY(readMessageToolCalls(*tc, p + ".tool_calls", toolCalls));
        }
        msg["content"] = std::move(content);
        if (!toolCalls.is_null() && !toolCalls.empty()) msg["tool_calls"] = std::move(toolCalls);
        std::string s;
        HEARTH_OLLAMA_TRY(readString(m, "thinking", s, p + ".thinking"));
        if (!s.empty()) msg["reasoning_content"] = s;
        s.clear();
        HEARTH_OLLAMA_TRY(readString(m, "tool_name", s, p + ".tool_name"));
        if (s.empty()) HEARTH_OLLAMA_TRY(readString(m, "name", s, p + ".name"));
        if (!s.empty()) msg["name"] = s;
        s.clear();
        HEARTH_OLLAMA_TRY(readString(m, "tool_call_id", s, p + ".tool_call_id"));
        if (!s.empty()) msg["tool_call_id"] = s;
        out.push_back(std::move(msg));
    }
    return std::nullopt;
}

} // namespace

std::optional<double> parseKeepAlive(std::string_view text) {
    if (text.empty() || text.size() > 64) return std::nullopt;
    size_t pos = 0;
    bool negative = false;
    if (text[0] == '-' || text[0] == '+') {
        negative = text[0] == '-';
        pos = 1;
    }
    auto number = [&](double& out) {
        const size_t start = pos;
        double v = 0.0, scale = 0.0;
        bool digits = false;
        while (pos < text.size() && ((text[pos] >= '0' && text[pos] <= '9') || text[pos] == '.')) {
            if (text[pos] == '.') {
                if (scale != 0.0) return false;
                scale = 1.0;
            } else {
                digits = true;
                if (scale != 0.0) {
                    scale /= 10.0;
                    v += (text[pos] - '0') * scale;
                } else {
                    v = v * 10.0 + (text[pos] - '0');
                }
            }
            ++pos;
        }
        out = v;
        return digits && pos > start;
    };
    // A bare number: seconds (Ollama reads "300" and "-1" that way).
    {
        const size_t save = pos;
        double v = 0.0;
        if (number(v) && pos == text.size()) return negative ? -v : v;
        pos = save;
    }
    double total = 0.0;
    bool any = false;
    while (pos < text.size()) {
        double v = 0.0;
        if (!number(v)) return std::nullopt;
        struct Unit {
            std::string_view name;
            double seconds;
        };
        static const Unit units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6},
                                     {"\xce\xbcs", 1e-6}, {"ms", 1e-3}, {"s", 1.0},
                                     {"m", 60.0},  {"h", 3600.0}};
        bool matched = false;
        for (const Unit& u : units) {
            if (text.substr(pos, u.name.size()) != u.name) continue;
            // "m" must not be the start of "ms".
            if (u.name == "m" && text.substr(pos, 2) == "ms") continue;
            total += v * u.seconds;
            pos += u.name.size();
            matched = true;
            break;
        }
        if (!matched) return std::nullopt;
        any = true;
    }
    if (!any) return std::nullopt;
    return negative ? -total : total;
}

ApiResult<OllamaChatRequest> parseOllamaChatRequest(std::string_view body, const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    OllamaChatRequest r;
    if (auto e = readParams(*json, limits, r.params)) return *e;
    if (auto e = readOllamaMessages(*json, limits, r.messages, r.images)) return *e;
    // Ollama's tools are OpenAI's function tools; the OpenAI reader checks them.
    ChatCompletionRequest tools;
    OJson onlyTools = OJson::object();
    if (const OJson* t = field(*json, "tools")) onlyTools["tools"] = *t;
    if (auto e = readTools(onlyTools, limits, tools)) return *e;
    r.tools = std::move(tools.tools);
    r.toolsJson = std::move(tools.toolsJson);
    return r;
}

ApiResult<OllamaGenerateRequest> parseOllamaGenerateRequest(std::string_view body,
                                                            const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    OllamaGenerateRequest r;
    if (auto e = readParams(*json, limits, r.params)) return *e;
    if (auto e = readString(*json, "prompt", r.prompt)) return *e;
    if (auto e = readString(*json, "system", r.system)) return *e;
    if (auto e = readBool(*json, "raw", r.raw)) return *e;
    std::string markers; // placed by the handler, before the prompt's text
    if (auto e = readImages(*json, "images", r.images, markers)) return *e;
    std::string s;
    if (auto e = readString(*json, "template", s)) return *e;
    if (!s.empty())
        return invalidRequest("'template' is not supported: the model's own chat template is used "
                              "(or send raw: true with a prompt you formatted)",
                              "template", "unsupported_value");
    s.clear();
    if (auto e = readString(*json, "suffix", s)) return *e;
    if (!s.empty())
        return invalidRequest("'suffix' (fill in the middle) is not supported by this server",
                              "suffix", "unsupported_value");
    if (r.raw && !r.system.empty())
        return invalidRequest("'system' cannot be used with raw: true (no template applies it)",
                              "system");
    if (const OJson* c = field(*json, "context")) {
        if (!c->is_array()) return *ollamaWrongType("context", "an array of token ids", *c);
        if (c->size() > limits.maxPromptTokens)
            return invalidRequest("'context' has too many tokens", "context");
        for (const OJson& t : *c) {
            int64_t id = 0;
            if (!asInteger(t, id) || id < 0 || id > std::numeric_limits<int32_t>::max())
                return invalidRequest("'context' must hold non-negative integer token ids",
                                      "context", "invalid_type");
            r.context.push_back(int32_t(id));
        }
    }
    return r;
}

ApiResult<OllamaShowRequest> parseOllamaShowRequest(std::string_view body, const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    OllamaShowRequest r;
    // Older clients send "name".
    const char* key = field(*json, "model") ? "model" : "name";
    if (auto e = readString(*json, key, r.model)) return *e;
    if (r.model.empty()) return invalidRequest("model is required", "model", "missing_required_parameter");
    if (auto e = readBool(*json, "verbose", r.verbose)) return *e;
    return r;
}

std::string untaggedModel(const std::string& model) {
    static const std::string latest = ":latest";
    if (model.size() > latest.size() && model.compare(model.size() - latest.size(), latest.size(), latest) == 0)
        return model.substr(0, model.size() - latest.size());
    return model;
}

} // namespace hearth::server
