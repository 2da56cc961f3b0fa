// Parsing of Anthropic Messages bodies into the chat-completion form (messages for chat
// templates, tools, sampling), and the small builders of its response pieces and errors.
#include "server/anthropic_request.h"

#include "hearth/engine.h"
#include "server/image_parts.h"
#include "server/json_fields.h"
#include "server/openai_response.h"

namespace hearth::server {

namespace {

using Err = std::optional<ApiError>;

#define HEARTH_ANTHROPIC_TRY(expr)                                                                 \
    do {                                                                                           \
        if (auto hearth_err_ = (expr)) return *hearth_err_;                                         \
    } while (0)

ApiError anthropicWrongType(const std::string& param, const char* want, const OJson& got) {
    return invalidRequest(param + ": must be " + want + ", got " + jsonTypeName(got), param,
                          "invalid_type");
}

ApiError unsupportedBlock(const std::string& param, const std::string& type) {
    if (type == "image")
        return invalidRequest(param + ": image blocks are taken in user messages' content only", param,
                              "unsupported_value");
    if (type == "document")
        return invalidRequest(param + ": content blocks of type 'document' are not supported (send the text)",
                              param, "unsupported_value");
    return invalidRequest(param + ": content blocks of type '" + type.substr(0, 64) +
                              "' are not supported here",
                          param, "unsupported_value");
}

// A block's "type" (must be a string).
ApiResult<std::string> blockType(const OJson& block, const std::string& param) {
    if (!block.is_object()) return anthropicWrongType(param, "an object", block);
    const OJson* t = field(block, "type");
    if (!t) return invalidRequest(param + ".type: field required", param + ".type",
                                  "missing_required_parameter");
    if (!t->is_string()) return anthropicWrongType(param + ".type", "a string", *t);
    return t->get<std::string>();
}

// {"type": "text", "text": "..."} -> the text.
Err textOf(const OJson& block, const std::string& param, std::string& out) {
    const OJson* text = field(block, "text");
    if (!text) return invalidRequest(param + ".text: field required", param + ".text",
                                     "missing_required_parameter");
    if (!text->is_string()) return anthropicWrongType(param + ".text", "a string", *text);
    out = text->get<std::string>();
    return std::nullopt;
}

// A string, or an array of text blocks joined with newlines (system prompts, tool results).
Err textContent(const OJson& v, const std::string& param, std::string& out) {
    if (v.is_string()) {
        out = v.get<std::string>();
        return std::nullopt;
    }
    if (!v.is_array()) return anthropicWrongType(param, "a string or an array of text blocks", v);
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string p = param + "[" + std::to_string(i) + "]";
        auto type = blockType(v[i], p);
        if (!type) return type.error();
        if (*type != "text") return unsupportedBlock(p + ".type", *type);
        std::string t;
        HEARTH_ANTHROPIC_TRY(textOf(v[i], p, t));
        if (!out.empty()) out += "\n";
        out += t;
    }
    return std::nullopt;
}

// {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "..."}} -> the
// image's bytes at the end of `images`. URL sources are refused: this server fetches nothing.
Err imageOf(const OJson& block, const std::string& param, std::vector<std::string>& images) {
    const OJson* source = field(block, "source");
    if (!source) return invalidRequest(param + ".source: field required", param + ".source", "missing_required_parameter");
    if (!source->is_object()) return anthropicWrongType(param + ".source", "an object", *source);
    std::string type, mediaType, data;
    HEARTH_ANTHROPIC_TRY(readString(*source, "type", type, param + ".source.type"));
    if (type == "url")
        return invalidRequest(param + ".source: this server does not fetch image URLs; send the image as base64",
                              param + ".source.type", "unsupported_value");
    if (type != "base64")
        return invalidRequest(param + ".source.type: must be \"base64\"", param + ".source.type", "unsupported_value");
    HEARTH_ANTHROPIC_TRY(readString(*source, "media_type", mediaType, param + ".source.media_type"));
    if (mediaType != "image/jpeg" && mediaType != "image/png" && mediaType != "image/gif" && mediaType != "image/webp")
        return invalidRequest(param + ".source.media_type: must be image/jpeg, image/png, image/gif or image/webp",
                              param + ".source.media_type", "unsupported_value");
    HEARTH_ANTHROPIC_TRY(readString(*source, "data", data, param + ".source.data"));
    if (images.size() >= kMaxImagesPerRequest)
        return invalidRequest("a request may hold at most " + std::to_string(kMaxImagesPerRequest) + " images", param,
                              "too_many_images");
    std::optional<std::string> bytes = decodeBase64(data);
    if (!bytes || bytes->empty()) return invalidRequest(param + ".source.data: not a base64 image", param + ".source.data");
    images.push_back(std::move(*bytes));
    return std::nullopt;
}

OJson textMessage(const char* role, std::string text) {
    OJson m = OJson::object();
    m["role"] = role;
    m["content"] = std::move(text);
    return m;
}

Err readUserBlocks(const OJson& blocks, const std::string& param, OJson& out, std::vector<std::string>& images) {
    std::string text;
    bool haveText = false;
    auto flush = [&] {
        if (haveText) out.push_back(textMessage("user", text));
        text.clear();
        haveText = false;
    };
    for (size_t i = 0; i < blocks.size(); ++i) {
        const std::string p = param + "[" + std::to_string(i) + "]";
        auto type = blockType(blocks[i], p);
        if (!type) return type.error();
        if (*type == "text") {
            std::string t;
            HEARTH_ANTHROPIC_TRY(textOf(blocks[i], p, t));
            if (haveText) text += "\n";
            text += t;
            haveText = true;
        } else if (*type == "image") {
            HEARTH_ANTHROPIC_TRY(imageOf(blocks[i], p, images));
            if (haveText) text += "\n";
            text += kImageMarker;
            haveText = true;
        } else if (*type == "tool_result") {
            flush();
            const OJson* id = field(blocks[i], "tool_use_id");
            if (!id) return invalidRequest(p + ".tool_use_id: field required", p + ".tool_use_id",
                                           "missing_required_parameter");
            if (!id->is_string()) return anthropicWrongType(p + ".tool_use_id", "a string", *id);
            bool isError = false;
            HEARTH_ANTHROPIC_TRY(readBool(blocks[i], "is_error", isError, p + ".is_error"));
            std::string result;
            if (const OJson* c = field(blocks[i], "content"))
                HEARTH_ANTHROPIC_TRY(textContent(*c, p + ".content", result));
            OJson m = textMessage("tool", isError ? "Error: " + result : result);
            m["tool_call_id"] = *id;
            out.push_back(std::move(m));
        } else if (*type == "tool_use") {
            return invalidRequest(p + ": tool_use blocks belong in assistant messages", p + ".type");
        } else {
            return unsupportedBlock(p + ".type", *type);
        }
    }
    flush();
    if (blocks.empty()) out.push_back(textMessage("user", ""));
    return std::nullopt;
}

Err readAssistantBlocks(const OJson& blocks, const std::string& param, OJson& out) {
    std::string text;
    OJson calls = OJson::array();
    for (size_t i = 0; i < blocks.size(); ++i) {
        const std::string p = param + "[" + std::to_string(i) + "]";
        auto type = blockType(blocks[i], p);
        if (!type) return type.error();
        if (*type == "text") {
            std::string t;
            HEARTH_ANTHROPIC_TRY(textOf(blocks[i], p, t));
            if (!text.empty() && !t.empty()) text += "\n";
            text += t;
        } else if (*type == "tool_use") {
            const OJson& b = blocks[i];
            const OJson* id = field(b, "id");
            const OJson* name = field(b, "name");
            const OJson* input = field(b, "input");
            if (!id || !id->is_string()) return id ? anthropicWrongType(p + ".id", "a string", *id)
                                                   : invalidRequest(p + ".id: field required", p + ".id",
                                                                    "missing_required_parameter");
            if (!name || !name->is_string() || name->get<std::string>().empty())
                return invalidRequest(p + ".name: must be a non-empty string", p + ".name",
                                      "invalid_type");
            if (!input || !input->is_object())
                return input ? anthropicWrongType(p + ".input", "an object", *input)
                             : invalidRequest(p + ".input: field required", p + ".input",
                                              "missing_required_parameter");
            OJson call = OJson::object();
            call["id"] = *id;
            call["type"] = "function";
            call["function"] = {{"name", *name}, {"arguments", *input}};
            calls.push_back(std::move(call));
        } else if (*type == "thinking" || *type == "redacted_thinking") {
            continue; // earlier turns' thinking is not shown to the model again
        } else if (*type == "tool_result") {
            return invalidRequest(p + ": tool_result blocks belong in user messages", p + ".type");
        } else {
            return unsupportedBlock(p + ".type", *type);
        }
    }
    OJson m = OJson::object();
    m["role"] = "assistant";
    if (calls.empty()) {
        m["content"] = std::move(text);
    } else {
        m["content"] = text.empty() ? OJson(nullptr) : OJson(text);
        m["tool_calls"] = std::move(calls);
    }
    out.push_back(std::move(m));
    return std::nullopt;
}

Err readMessagesField(const OJson& body, const ParseLimits& limits, OJson& out, std::vector<std::string>& images) {
    const OJson* messages = field(body, "messages");
    if (!messages)
        return invalidRequest("messages: field required", "messages", "missing_required_parameter");
    if (!messages->is_array()) return anthropicWrongType("messages", "an array", *messages);
    if (messages->empty())
        return invalidRequest("messages: at least one message is required", "messages");
    if (messages->size() > limits.maxMessages)
        return invalidRequest("messages: more than " + std::to_string(limits.maxMessages) +
                                  " messages",
                              "messages");
    for (size_t i = 0; i < messages->size(); ++i) {
        const OJson& m = (*messages)[i];
        const std::string p = "messages." + std::to_string(i);
        if (!m.is_object()) return anthropicWrongType(p, "an object", m);
        const OJson* role = field(m, "role");
        if (!role) return invalidRequest(p + ".role: field required", p + ".role",
                                         "missing_required_parameter");
        if (!role->is_string()) return anthropicWrongType(p + ".role", "a string", *role);
        const std::string& r = role->get_ref<const std::string&>();
        if (r != "user" && r != "assistant")
            return invalidRequest(p + ".role: must be \"user\" or \"assistant\"" +
                                      std::string(r == "system" ? " (use the top-level 'system' "
                                                                  "field for system prompts)"
                                                                : ""),
                                  p + ".role");
        const OJson* content = field(m, "content");
        if (!content) return invalidRequest(p + ".content: field required", p + ".content",
                                            "missing_required_parameter");
        if (content->is_string()) {
            out.push_back(textMessage(r == "user" ? "user" : "assistant", content->get<std::string>()));
            continue;
        }
        if (!content->is_array())
            return anthropicWrongType(p + ".content", "a string or an array of content blocks", *content);
        if (r == "user") HEARTH_ANTHROPIC_TRY(readUserBlocks(*content, p + ".content", out, images));
        else HEARTH_ANTHROPIC_TRY(readAssistantBlocks(*content, p + ".content", out));
    }
    return std::nullopt;
}

Err readToolsField(const OJson& body, const ParseLimits& limits, ChatCompletionRequest& chat) {
    if (const OJson* tools = field(body, "tools")) {
        if (!tools->is_array()) return anthropicWrongType("tools", "an array", *tools);
        if (tools->size() > limits.maxTools)
            return invalidRequest("tools: more than " + std::to_string(limits.maxTools) + " tools",
                                  "tools");
        OJson normalised = OJson::array();
        for (size_t i = 0; i < tools->size(); ++i) {
            const OJson& t = (*tools)[i];
            const std::string p = "tools." + std::to_string(i);
            if (!t.is_object()) return anthropicWrongType(p, "an object", t);
            if (const OJson* type = field(t, "type")) {
                if (!type->is_string()) return anthropicWrongType(p + ".type", "a string", *type);
                if (type->get<std::string>() != "custom")
                    return invalidRequest(p + ".type: server tools such as '" +
                                              type->get<std::string>().substr(0, 64) +
                                              "' are not supported by this server; define "
                                              "client tools (name, description, input_schema)",
                                          p + ".type", "unsupported_value");
            }
            ToolFunction f;
            const OJson* name = field(t, "name");
            if (!name || !name->is_string() || name->get<std::string>().empty())
                return invalidRequest(p + ".name: must be a non-empty string", p + ".name",
                                      name ? "invalid_type" : "missing_required_parameter");
            f.name = name->get<std::string>();
            HEARTH_ANTHROPIC_TRY(readString(t, "description", f.description, p + ".description"));
            const OJson* schema = field(t, "input_schema");
            if (!schema) return invalidRequest(p + ".input_schema: field required",
                                               p + ".input_schema", "missing_required_parameter");
            if (!schema->is_object()) return anthropicWrongType(p + ".input_schema", "an object", *schema);
            f.parameters = *schema;
            HEARTH_ANTHROPIC_TRY(readBool(t, "strict", f.strict, p + ".strict"));
            OJson fn = OJson::object();
            fn["name"] = f.name;
            if (!f.description.empty()) fn["description"] = f.description;
            fn["parameters"] = *schema;
            normalised.push_back({{"type", "function"}, {"function", std::move(fn)}});
            chat.tools.push_back(std::move(f));
        }
        if (!normalised.empty()) chat.toolsJson = std::move(normalised);
    }
    if (const OJson* tc = field(body, "tool_choice")) {
        if (!tc->is_object()) return anthropicWrongType("tool_choice", "an object", *tc);
        const OJson* type = field(*tc, "type");
        if (!type || !type->is_string())
            return invalidRequest("tool_choice.type: must be one of auto, any, tool, none",
                                  "tool_choice.type", "invalid_type");
        bool parallelOff = false;
        HEARTH_ANTHROPIC_TRY(readBool(*tc, "disable_parallel_tool_use", parallelOff,
                                      "tool_choice.disable_parallel_tool_use"));
        const std::string& t = type->get_ref<const std::string&>();
        ToolChoice& choice = chat.toolChoice;
        choice.parallel = !parallelOff; // Anthropic allows parallel calls unless told not to
        if (t == "auto") choice.mode = ToolChoiceMode::Auto;
        else if (t == "none") choice.mode = ToolChoiceMode::None;
        else if (t == "any") choice.mode = ToolChoiceMode::Required;
        else if (t == "tool") {
            const OJson* name = field(*tc, "name");
            if (!name || !name->is_string())
                return invalidRequest("tool_choice.name: must be a string naming a tool",
                                      "tool_choice.name", "invalid_type");
            choice.mode = ToolChoiceMode::Named;
            choice.name = name->get<std::string>();
            bool known = false;
            for (const ToolFunction& f : chat.tools) known = known || f.name == choice.name;
            if (!known)
                return invalidRequest("tool_choice.name: '" + choice.name.substr(0, 64) +
                                          "' is not one of the tools",
                                      "tool_choice.name");
        } else {
            return invalidRequest("tool_choice.type: must be one of auto, any, tool, none",
                                  "tool_choice.type");
        }
        if ((choice.mode == ToolChoiceMode::Required || choice.mode == ToolChoiceMode::Named) &&
            chat.tools.empty())
            return invalidRequest("tool_choice: needs 'tools'", "tool_choice");
    }
    return std::nullopt;
}

} // namespace

ApiResult<AnthropicRequest> parseAnthropicRequest(std::string_view body, const ParseLimits& limits,
                                                  bool countTokens) {
    auto json = parseJsonObject(body, limits);
    if (!json) return json.error();
    const OJson& b = *json;
    AnthropicRequest r;
    CommonParams& p = r.chat.common;
    if (const OJson* m = field(b, "model"); m && !m->is_string())
        return anthropicWrongType("model", "a string", *m);
    HEARTH_ANTHROPIC_TRY(readString(b, "model", p.model));
    if (!countTokens) {
        const OJson* mt = field(b, "max_tokens");
        if (!mt) return invalidRequest("max_tokens: field required", "max_tokens",
                                       "missing_required_parameter");
        if (!mt->is_number()) return anthropicWrongType("max_tokens", "an integer", *mt);
        int64_t n = 0;
        HEARTH_ANTHROPIC_TRY(readInt(b, "max_tokens", 1, limits.maxTokensCap, n));
        p.maxTokens = int32_t(n);
        HEARTH_ANTHROPIC_TRY(readBool(b, "stream", p.stream));
    }
    HEARTH_ANTHROPIC_TRY(readFloat(b, "temperature", 0.0, 1.0, p.temperature));
    HEARTH_ANTHROPIC_TRY(readFloat(b, "top_p", 0.0, 1.0, p.topP));
    if (p.topP <= 0.0f) p.topP = 1e-6f; // keeps only the most likely token
    if (field(b, "top_k")) {
        int64_t k = 0;
        HEARTH_ANTHROPIC_TRY(readInt(b, "top_k", 0, 1 << 24, k));
        p.topK = int32_t(k);
    }
    HEARTH_ANTHROPIC_TRY(readStopStrings(b, "stop_sequences", "stop_sequences", false, true,
                                         limits.maxStopStrings, limits.maxStopBytes, p.stop));
    if (const OJson* md = field(b, "metadata"); md && !md->is_object())
        return anthropicWrongType("metadata", "an object", *md);

    // Extended thinking: reasoning models whose template reads enable_thinking (Qwen3) think or
    // not as asked; their <think> text comes back as thinking blocks either way.
    if (const OJson* t = field(b, "thinking")) {
        if (!t->is_object()) return anthropicWrongType("thinking", "an object", *t);
        std::string type;
        HEARTH_ANTHROPIC_TRY(readString(*t, "type", type, "thinking.type"));
        if (type != "enabled" && type != "disabled" && type != "adaptive")
            return invalidRequest("thinking.type: must be \"enabled\", \"disabled\" or \"adaptive\"",
                                  "thinking.type");
        int64_t budget = 0;
        HEARTH_ANTHROPIC_TRY(readInt(*t, "budget_tokens", 1, limits.maxTokensCap, budget,
                                     "thinking.budget_tokens"));
        if (type != "adaptive") r.chat.templateKwargs["enable_thinking"] = type == "enabled";
    }

    OJson& messages = r.chat.messages;
    messages = OJson::array();
    if (const OJson* system = field(b, "system")) {
        std::string text;
        HEARTH_ANTHROPIC_TRY(textContent(*system, "system", text));
        messages.push_back(textMessage("system", std::move(text)));
    }
    HEARTH_ANTHROPIC_TRY(readMessagesField(b, limits, messages, r.chat.images));
    HEARTH_ANTHROPIC_TRY(readToolsField(b, limits, r.chat));
    return r;
}

nlohmann::ordered_json anthropicErrorJson(const ApiError& error) {
    const char* type = "invalid_request_error";
    switch (error.status) {
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 413: type = "request_too_large"; break;
    case 429: type = "rate_limit_error"; break;
    case 529: type = "overloaded_error"; break;
    default:
        if (error.status >= 500) type = "api_error";
        break;
    }
    OJson e = OJson::object();
    e["type"] = type;
    e["message"] = error.message;
    OJson body = OJson::object();
    body["type"] = "error";
    body["error"] = std::move(e);
    return body;
}

bool isAnthropicPath(std::string_view path) {
    return path == "/v1/messages" || path.rfind("/v1/messages/", 0) == 0;
}

nlohmann::ordered_json anthropicUsageJson(const AnthropicUsage& usage) {
    OJson u = OJson::object();
    u["input_tokens"] = usage.inputTokens;
    u["cache_creation_input_tokens"] = 0;
    u["cache_read_input_tokens"] = usage.cachedTokens;
    u["output_tokens"] = usage.outputTokens;
    return u;
}

// max_tokens first: a tool_use block cut short still ends the message that way, as Anthropic's.
const char* anthropicStopReason(bool lengthCut, bool toolUse, bool stopSequence) {
    if (lengthCut) return "max_tokens";
    if (toolUse) return "tool_use";
    if (stopSequence) return "stop_sequence";
    return "end_turn";
}

nlohmann::ordered_json toolUseBlock(const ToolCall& call) {
    OJson input = OJson::parse(call.arguments, nullptr, false);
    if (input.is_discarded()) input = OJson::parse(closedJsonObject(call.arguments), nullptr, false);
    if (input.is_discarded() || !input.is_object()) input = OJson::object();
    OJson b = OJson::object();
    b["type"] = "tool_use";
    b["id"] = newResponseId("toolu_");
    b["name"] = call.name;
    b["input"] = std::move(input);
    return b;
}

} // namespace hearth::server
