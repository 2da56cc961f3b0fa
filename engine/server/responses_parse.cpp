// Parsing of OpenAI Responses bodies (input items, instructions, function tools, text.format)
// into the chat-completion form, refusals of what needs server state, and the builders of
// response objects and output items.
#include "server/responses_request.h"

#include "hearth/engine.h"
#include "server/image_parts.h"
#include "server/json_fields.h"

namespace hearth::server {

namespace {

using Err = std::optional<ApiError>;

#define HEARTH_RESPONSES_TRY(expr)                                                                 \
    do {                                                                                           \
        if (auto hearth_err_ = (expr)) return *hearth_err_;                                         \
    } while (0)

ApiError responsesWrongType(const std::string& param, const char* want, const OJson& got) {
    return invalidRequest("'" + param + "' must be " + want + ", got " + jsonTypeName(got), param,
                          "invalid_type");
}

ApiError missing(const std::string& param) {
    return invalidRequest("'" + param + "' is required", param, "missing_required_parameter");
}

ApiError stateless(const std::string& param, const std::string& what) {
    return invalidRequest("'" + param + "' is not supported: this server keeps no state between "
                              "requests (" + what + ")",
                          param, "unsupported_parameter");
}

// A required string field.
Err needString(const OJson& obj, const char* key, const std::string& param, std::string& out) {
    const OJson* v = field(obj, key);
    if (!v) return missing(param);
    if (!v->is_string()) return responsesWrongType(param, "a string", *v);
    out = v->get<std::string>();
    return std::nullopt;
}

// An input_image part's image_url (a data URI) to its bytes at the end of `images`; file ids
// (which name files uploaded to OpenAI) are refused.
Err readInputImage(const OJson& part, const std::string& param, std::vector<std::string>& images) {
    if (field(part, "file_id"))
        return invalidRequest("'" + param + ".file_id' is not supported: this server keeps no files; send the image "
                                  "as a data URI in image_url",
                              param + ".file_id", "unsupported_parameter");
    std::string url;
    HEARTH_RESPONSES_TRY(needString(part, "image_url", param + ".image_url", url));
    if (images.size() >= kMaxImagesPerRequest)
        return invalidRequest("a request may hold at most " + std::to_string(kMaxImagesPerRequest) + " images",
                              param, "too_many_images");
    std::string bytes;
    HEARTH_RESPONSES_TRY(readImageUrl(url, param + ".image_url", bytes));
    images.push_back(std::move(bytes));
    return std::nullopt;
}

// Message content: a string, or parts of type input_text / output_text / refusal joined; with
// `images` (user messages), input_image parts become image markers and their bytes go there.
Err readContent(const OJson& content, const std::string& param, std::string& out,
                std::vector<std::string>* images = nullptr) {
    if (content.is_string()) {
        out = content.get<std::string>();
        return std::nullopt;
    }
    if (!content.is_array()) return responsesWrongType(param, "a string or an array of content parts", content);
    out.clear();
    for (size_t i = 0; i < content.size(); ++i) {
        const OJson& part = content[i];
        const std::string p = param + "[" + std::to_string(i) + "]";
        if (!part.is_object()) return responsesWrongType(p, "an object", part);
        std::string type;
        HEARTH_RESPONSES_TRY(needString(part, "type", p + ".type", type));
        std::string text;
        if (type == "input_text" || type == "output_text") {
            HEARTH_RESPONSES_TRY(needString(part, "text", p + ".text", text));
        } else if (type == "refusal") {
            HEARTH_RESPONSES_TRY(needString(part, "refusal", p + ".refusal", text));
        } else if (type == "input_image" && images) {
            HEARTH_RESPONSES_TRY(readInputImage(part, p, *images));
            text = kImageMarker;
        } else if (type == "input_image") {
            return invalidRequest("input_image parts are taken in user messages only", p + ".type",
                                  "unsupported_value");
        } else if (type == "input_file" || type == "input_audio") {
            return invalidRequest("content parts of type '" + type + "' are not supported (text and images only)",
                                  p + ".type", "unsupported_value");
        } else {
            return invalidRequest("unknown content part type '" + type.substr(0, 64) + "'",
                                  p + ".type", "invalid_value");
        }
        if (!out.empty()) out += "\n";
        out += text;
    }
    return std::nullopt;
}

Err readInputItems(const OJson& input, const ParseLimits& limits, OJson& out, std::vector<std::string>& images) {
    if (input.is_string()) {
        out.push_back({{"role", "user"}, {"content", input.get<std::string>()}});
        return std::nullopt;
    }
    if (!input.is_array()) return responsesWrongType("input", "a string or an array of input items", input);
    if (input.empty()) return invalidRequest("'input' must hold at least one item", "input");
    if (input.size() > limits.maxMessages)
        return invalidRequest("'input' has more than " + std::to_string(limits.maxMessages) +
                                  " items",
                              "input");
    for (size_t i = 0; i < input.size(); ++i) {
        const OJson& item = input[i];
        const std::string p = "input[" + std::to_string(i) + "]";
        if (!item.is_object()) return responsesWrongType(p, "an object", item);
        std::string type = "message";
        HEARTH_RESPONSES_TRY(readString(item, "type", type, p + ".type"));
        if (type == "message") {
            std::string role;
            HEARTH_RESPONSES_TRY(needString(item, "role", p + ".role", role));
            if (role != "user" && role != "assistant" && role != "system" && role != "developer")
                return invalidRequest("'" + p + ".role' must be one of user, assistant, system, "
                                      "developer",
                                      p + ".role");
            const OJson* content = field(item, "content");
            if (!content) return missing(p + ".content");
            std::string text;
            HEARTH_RESPONSES_TRY(readContent(*content, p + ".content", text, role == "user" ? &images : nullptr));
            out.push_back({{"role", role}, {"content", std::move(text)}});
        } else if (type == "function_call") {
            std::string callId, name, args;
            HEARTH_RESPONSES_TRY(needString(item, "call_id", p + ".call_id", callId));
            HEARTH_RESPONSES_TRY(needString(item, "name", p + ".name", name));
            HEARTH_RESPONSES_TRY(needString(item, "arguments", p + ".arguments", args));
            if (name.empty()) return invalidRequest("'" + p + ".name' must not be empty", p + ".name");
            // Templates expect a mapping; keep the text when it is not JSON.
            OJson parsed = OJson::parse(args, nullptr, false);
            OJson call = OJson::object();
            call["id"] = callId;
            call["type"] = "function";
            call["function"] = {{"name", name}, {"arguments", parsed.is_discarded() ? OJson(args) : parsed}};
            // Calls join the assistant turn they follow (its text, or earlier calls).
            if (!out.empty() && out.back()["role"] == "assistant") {
                OJson& last = out.back();
                if (!last.contains("tool_calls")) {
                    last["tool_calls"] = OJson::array();
                    if (last["content"].is_string() && last["content"].get<std::string>().empty())
                        last["content"] = nullptr;
                }
                last["tool_calls"].push_back(std::move(call));
            } else {
                out.push_back({{"role", "assistant"}, {"content", nullptr},
                               {"tool_calls", OJson::array({std::move(call)})}});
            }
        } else if (type == "function_call_output") {
            std::string callId, text;
            HEARTH_RESPONSES_TRY(needString(item, "call_id", p + ".call_id", callId));
            const OJson* output = field(item, "output");
            if (!output) return missing(p + ".output");
            HEARTH_RESPONSES_TRY(readContent(*output, p + ".output", text));
            out.push_back({{"role", "tool"}, {"tool_call_id", callId}, {"content", std::move(text)}});
        } else if (type == "reasoning") {
            continue; // earlier reasoning is not shown to the model again
        } else if (type == "item_reference") {
            return stateless(p + ".type", "item references need stored items; send the items "
                                          "themselves");
        } else {
            return invalidRequest("input items of type '" + type.substr(0, 64) +
                                      "' are not supported (message, function_call and "
                                      "function_call_output are)",
                                  p + ".type", "unsupported_value");
        }
    }
    return std::nullopt;
}

Err readTools(const OJson& body, const ParseLimits& limits, ResponsesRequest& r) {
    ChatCompletionRequest& chat = r.chat;
    OJson echoTools = OJson::array();
    if (const OJson* tools = field(body, "tools")) {
        if (!tools->is_array()) return responsesWrongType("tools", "an array", *tools);
        if (tools->size() > limits.maxTools)
            return invalidRequest("'tools' has more than " + std::to_string(limits.maxTools) +
                                      " entries",
                                  "tools");
        OJson normalised = OJson::array();
        for (size_t i = 0; i < tools->size(); ++i) {
            const OJson& t = (*tools)[i];
            const std::string p = "tools[" + std::to_string(i) + "]";
            if (!t.is_object()) return responsesWrongType(p, "an object", t);
            std::string type;
            HEARTH_RESPONSES_TRY(needString(t, "type", p + ".type", type));
            if (type != "function")
                return invalidRequest("built-in tool '" + type.substr(0, 64) +
                                          "' is not supported by this server (only function "
                                          "tools are)",
                                      p + ".type", "unsupported_value");
            ToolFunction f;
            HEARTH_RESPONSES_TRY(needString(t, "name", p + ".name", f.name));
            if (f.name.empty()) return invalidRequest("'" + p + ".name' must not be empty", p + ".name");
            HEARTH_RESPONSES_TRY(readString(t, "description", f.description, p + ".description"));
            bool strict = false;
            HEARTH_RESPONSES_TRY(readBool(t, "strict", strict, p + ".strict"));
            f.strict = strict;
            OJson params = OJson::object();
            if (const OJson* ps = field(t, "parameters")) {
                if (!ps->is_object()) return responsesWrongType(p + ".parameters", "an object", *ps);
                params = *ps;
            }
            f.parameters = params;
            OJson fn = OJson::object();
            fn["name"] = f.name;
            if (!f.description.empty()) fn["description"] = f.description;
            fn["parameters"] = params;
            normalised.push_back({{"type", "function"}, {"function", fn}});
            echoTools.push_back({{"type", "function"},
                                 {"name", f.name},
                                 {"description", f.description.empty() ? OJson(nullptr) : OJson(f.description)},
                                 {"parameters", params},
                                 {"strict", strict}});
            chat.tools.push_back(std::move(f));
        }
        if (!normalised.empty()) chat.toolsJson = std::move(normalised);
    }
    r.echo["tools"] = std::move(echoTools);
    r.echo["tool_choice"] = "auto";
    if (const OJson* tc = field(body, "tool_choice")) {
        ToolChoice& choice = chat.toolChoice;
        if (tc->is_string()) {
            const std::string& s = tc->get_ref<const std::string&>();
            if (s == "auto") choice.mode = ToolChoiceMode::Auto;
            else if (s == "none") choice.mode = ToolChoiceMode::None;
            else if (s == "required") choice.mode = ToolChoiceMode::Required;
            else
                return invalidRequest("'tool_choice' must be \"none\", \"auto\", \"required\" or "
                                      "{\"type\": \"function\", \"name\": ...}",
                                      "tool_choice");
        } else if (tc->is_object()) {
            std::string type;
            HEARTH_RESPONSES_TRY(needString(*tc, "type", "tool_choice.type", type));
            if (type != "function")
                return invalidRequest("tool_choice of type '" + type.substr(0, 64) +
                                          "' is not supported (only function tools are)",
                                      "tool_choice.type", "unsupported_value");
            HEARTH_RESPONSES_TRY(needString(*tc, "name", "tool_choice.name", choice.name));
            choice.mode = ToolChoiceMode::Named;
            bool known = false;
            for (const ToolFunction& f : chat.tools) known = known || f.name == choice.name;
            if (!known)
                return invalidRequest("'tool_choice' names a function that is not in 'tools'",
                                      "tool_choice.name");
        } else {
            return responsesWrongType("tool_choice", "a string or an object", *tc);
        }
        if (choice.mode != ToolChoiceMode::None && choice.mode != ToolChoiceMode::Auto &&
            chat.tools.empty())
            return invalidRequest("'tool_choice' needs 'tools'", "tool_choice");
        r.echo["tool_choice"] = *tc;
    }
    return std::nullopt;
}

Err readTextFormat(const OJson& body, ResponsesRequest& r) {
    r.echo["text"] = {{"format", {{"type", "text"}}}};
    const OJson* text = field(body, "text");
    if (!text) return std::nullopt;
    if (!text->is_object()) return responsesWrongType("text", "an object", *text);
    const OJson* format = field(*text, "format");
    if (!format) return std::nullopt;
    if (!format->is_object()) return responsesWrongType("text.format", "an object", *format);
    std::string type;
    HEARTH_RESPONSES_TRY(needString(*format, "type", "text.format.type", type));
    ResponseFormat& f = r.chat.common.responseFormat;
    if (type == "text") {
        f.kind = ResponseFormat::Kind::Text;
    } else if (type == "json_object") {
        f.kind = ResponseFormat::Kind::JsonObject;
    } else if (type == "json_schema") {
        f.kind = ResponseFormat::Kind::JsonSchema;
        HEARTH_RESPONSES_TRY(needString(*format, "name", "text.format.name", f.name));
        const OJson* schema = field(*format, "schema");
        if (!schema) return missing("text.format.schema");
        if (!schema->is_object()) return responsesWrongType("text.format.schema", "an object", *schema);
        f.schema = *schema;
        HEARTH_RESPONSES_TRY(readBool(*format, "strict", f.strict, "text.format.strict"));
    } else {
        return invalidRequest("'text.format.type' must be text, json_object or json_schema",
                              "text.format.type");
    }
    r.echo["text"] = {{"format", *format}};
    return std::nullopt;
}

} // namespace

ApiResult<ResponsesRequest> parseResponsesRequest(std::string_view body, const ParseLimits& limits) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    const OJson& b = *json;
    ResponsesRequest r;
    CommonParams& p = r.chat.common;

    // What needs state is refused first, so the reason is clear.
    if (field(b, "previous_response_id"))
        return stateless("previous_response_id", "send the whole conversation in 'input'");
    if (field(b, "conversation"))
        return stateless("conversation", "send the whole conversation in 'input'");
    bool flag = false;
    HEARTH_RESPONSES_TRY(readBool(b, "store", flag));
    if (flag) return stateless("store", "leave 'store' out or set it to false");
    flag = false;
    HEARTH_RESPONSES_TRY(readBool(b, "background", flag));
    if (flag) return stateless("background", "background responses are stored to be polled");
    if (field(b, "prompt"))
        return invalidRequest("'prompt' (stored prompt templates) is not supported by this server",
                              "prompt", "unsupported_parameter");

    if (const OJson* m = field(b, "model"); m && !m->is_string())
        return responsesWrongType("model", "a string", *m);
    HEARTH_RESPONSES_TRY(readString(b, "model", p.model));
    if (field(b, "max_output_tokens")) {
        const OJson& v = *field(b, "max_output_tokens");
        if (!v.is_number()) return responsesWrongType("max_output_tokens", "an integer", v);
        int64_t n = 0;
        HEARTH_RESPONSES_TRY(readInt(b, "max_output_tokens", 1, limits.maxTokensCap, n));
        p.maxTokens = int32_t(n);
        r.echo["max_output_tokens"] = n;
    } else {
        r.echo["max_output_tokens"] = nullptr;
    }
    HEARTH_RESPONSES_TRY(readFloat(b, "temperature", 0.0, 2.0, p.temperature));
    HEARTH_RESPONSES_TRY(readFloat(b, "top_p", 0.0, 1.0, p.topP));
    r.echo["temperature"] = p.temperature;
    r.echo["top_p"] = p.topP;
    if (p.topP <= 0.0f) p.topP = 1e-6f; // keeps only the most likely token
    HEARTH_RESPONSES_TRY(readBool(b, "stream", p.stream));
    HEARTH_RESPONSES_TRY(readString(b, "user", p.user));
    r.echo["user"] = p.user.empty() ? OJson(nullptr) : OJson(p.user);
    bool parallel = true;
    HEARTH_RESPONSES_TRY(readBool(b, "parallel_tool_calls", parallel));
    r.echo["parallel_tool_calls"] = parallel;
    r.chat.toolChoice.parallel = parallel; // forced calls: several (up to a bound) unless false
    r.echo["metadata"] = OJson::object();
    if (const OJson* md = field(b, "metadata")) {
        if (!md->is_object()) return responsesWrongType("metadata", "an object", *md);
        r.echo["metadata"] = *md;
    }

    // reasoning.effort reaches the template (gpt-oss reads reasoning_effort).
    if (const OJson* reasoning = field(b, "reasoning")) {
        if (!reasoning->is_object()) return responsesWrongType("reasoning", "an object", *reasoning);
        std::string effort;
        HEARTH_RESPONSES_TRY(readString(*reasoning, "effort", effort, "reasoning.effort"));
        if (!effort.empty()) {
            if (effort != "none" && effort != "minimal" && effort != "low" && effort != "medium" &&
                effort != "high")
                return invalidRequest("'reasoning.effort' must be none, minimal, low, medium or high",
                                      "reasoning.effort");
            r.chat.templateKwargs["reasoning_effort"] = effort;
        }
        r.echo["reasoning"] = *reasoning;
    }

    OJson& messages = r.chat.messages;
    messages = OJson::array();
    std::string instructions;
    HEARTH_RESPONSES_TRY(readString(b, "instructions", instructions));
    r.echo["instructions"] = field(b, "instructions") ? OJson(instructions) : OJson(nullptr);
    if (!instructions.empty()) messages.push_back({{"role", "system"}, {"content", instructions}});
    const OJson* input = field(b, "input");
    if (!input) return missing("input");
    HEARTH_RESPONSES_TRY(readInputItems(*input, limits, messages, r.chat.images));
    HEARTH_RESPONSES_TRY(readTools(b, limits, r));
    HEARTH_RESPONSES_TRY(readTextFormat(b, r));
    return r;
}

nlohmann::ordered_json responsesUsageJson(int32_t promptTokens, int32_t cachedTokens,
                                          int32_t outputTokens) {
    OJson u = OJson::object();
    u["input_tokens"] = promptTokens;
    u["input_tokens_details"] = {{"cached_tokens", cachedTokens}};
    u["output_tokens"] = outputTokens;
    u["output_tokens_details"] = {{"reasoning_tokens", 0}};
    u["total_tokens"] = promptTokens + outputTokens;
    return u;
}

nlohmann::ordered_json responseObjectJson(const ResponseHead& head, const ResponsesRequest& request,
                                          const char* status, bool lengthCut, OJson output,
                                          const OJson& usage) {
    const OJson& e = request.echo;
    OJson r = OJson::object();
    r["id"] = head.id;
    r["object"] = "response";
    r["created_at"] = head.createdAt;
    r["status"] = status;
    r["background"] = false;
    r["error"] = std::string(status) == "failed"
                     ? OJson({{"code", "server_error"},
                              {"message", "the model could not continue the output in the "
                                          "required format"}})
                     : OJson(nullptr);
    r["incomplete_details"] =
        lengthCut ? OJson({{"reason", "max_output_tokens"}}) : OJson(nullptr);
    r["instructions"] = e.value("instructions", OJson(nullptr));
    r["max_output_tokens"] = e.value("max_output_tokens", OJson(nullptr));
    r["model"] = head.model;
    r["output"] = std::move(output);
    r["parallel_tool_calls"] = e.value("parallel_tool_calls", OJson(true));
    r["previous_response_id"] = nullptr;
    r["reasoning"] = e.value("reasoning", OJson({{"effort", nullptr}, {"summary", nullptr}}));
    r["store"] = false;
    r["temperature"] = e.value("temperature", OJson(1.0));
    r["text"] = e.value("text", OJson({{"format", {{"type", "text"}}}}));
    r["tool_choice"] = e.value("tool_choice", OJson("auto"));
    r["tools"] = e.value("tools", OJson::array());
    r["top_p"] = e.value("top_p", OJson(1.0));
    r["truncation"] = "disabled";
    r["usage"] = usage;
    r["user"] = e.value("user", OJson(nullptr));
    r["metadata"] = e.value("metadata", OJson::object());
    return r;
}

nlohmann::ordered_json outputTextPartJson(const std::string& text) {
    return {{"type", "output_text"}, {"text", text}, {"annotations", OJson::array()}};
}

nlohmann::ordered_json messageItemJson(const std::string& id, const std::string& text,
                                       const char* status) {
    OJson m = OJson::object();
    m["type"] = "message";
    m["id"] = id;
    m["status"] = status;
    m["role"] = "assistant";
    m["content"] = OJson::array({outputTextPartJson(text)});
    return m;
}

nlohmann::ordered_json reasoningItemJson(const std::string& id, const std::string& text) {
    OJson r = OJson::object();
    r["type"] = "reasoning";
    r["id"] = id;
    r["summary"] = OJson::array();
    r["content"] = OJson::array({{{"type", "reasoning_text"}, {"text", text}}});
    return r;
}

nlohmann::ordered_json functionCallItemJson(const std::string& id, const ToolCall& call,
                                            const std::string& arguments, const char* status) {
    OJson f = OJson::object();
    f["type"] = "function_call";
    f["id"] = id;
    f["call_id"] = call.id;
    f["name"] = call.name;
    f["arguments"] = arguments;
    f["status"] = status;
    return f;
}

} // namespace hearth::server
