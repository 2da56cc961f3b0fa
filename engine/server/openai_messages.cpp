// Validation and normalisation of chat messages and tool definitions for chat templates.
#include "server/openai_messages.h"

#include "hearth/engine.h"
#include "server/image_parts.h"

namespace hearth::server {

namespace {

bool knownRole(const std::string& role) {
    return role == "system" || role == "developer" || role == "user" || role == "assistant" ||
           role == "tool" || role == "function";
}

// String content, or the text of an array of parts joined with newlines; an image part (given
// `images`) becomes the image marker there and its bytes the next of `images`.
std::optional<ApiError> readContent(const OJson& content, const std::string& param, std::string& out,
                                    std::vector<std::string>* images) {
    if (content.is_string()) {
        out = content.get<std::string>();
        return std::nullopt;
    }
    if (!content.is_array())
        return invalidRequest("'" + param + "' must be a string or an array of content parts, got " +
                                  jsonTypeName(content),
                              param, "invalid_type");
    out.clear();
    for (size_t i = 0; i < content.size(); ++i) {
        const OJson& part = content[i];
        const std::string pp = param + "[" + std::to_string(i) + "]";
        if (!part.is_object())
            return invalidRequest("'" + pp + "' must be an object", pp, "invalid_type");
        const OJson* type = field(part, "type");
        if (!type || !type->is_string())
            return invalidRequest("'" + pp + ".type' must be a string", pp + ".type",
                                  "invalid_type");
        const std::string& t = type->get_ref<const std::string&>();
        if (t == "image_url" && images) {
            const OJson* image = field(part, "image_url");
            const OJson* url = image && image->is_object() ? field(*image, "url") : image;
            if (!url || !url->is_string())
                return invalidRequest("'" + pp + ".image_url.url' must be a string", pp + ".image_url.url",
                                      "invalid_type");
            if (images->size() >= kMaxImagesPerRequest)
                return invalidRequest("a request may hold at most " + std::to_string(kMaxImagesPerRequest) + " images",
                                      pp, "too_many_images");
            std::string bytes;
            if (auto e = readImageUrl(url->get_ref<const std::string&>(), pp + ".image_url.url", bytes)) return e;
            images->push_back(std::move(bytes));
            if (!out.empty()) out += "\n";
            out += kImageMarker;
            continue;
        }
        if (t != "text" && t != "refusal")
            return invalidRequest("content parts of type '" + t.substr(0, 64) + "' are not supported" +
                                      (t == "image_url" ? " in this message" : " (text and image_url only)"),
                                  pp + ".type", "unsupported_value");
        const OJson* text = field(part, t.c_str());
        if (!text || !text->is_string())
            return invalidRequest("'" + pp + "." + t + "' must be a string", pp + "." + t,
                                  "invalid_type");
        if (!out.empty()) out += "\n";
        out += text->get_ref<const std::string&>();
    }
    return std::nullopt;
}

std::optional<ApiError> readToolCalls(const OJson& calls, const std::string& param, OJson& out) {
    if (!calls.is_array())
        return invalidRequest("'" + param + "' must be an array", param, "invalid_type");
    out = OJson::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const OJson& c = calls[i];
        const std::string p = param + "[" + std::to_string(i) + "]";
        if (!c.is_object()) return invalidRequest("'" + p + "' must be an object", p, "invalid_type");
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
            if (a->is_string()) {
                // Templates expect a mapping; keep the text when it is not JSON.
                OJson parsed = OJson::parse(a->get<std::string>(), nullptr, false);
                args = parsed.is_discarded() ? *a : parsed;
            } else if (a->is_object()) {
                args = *a;
            } else {
                return invalidRequest("'" + p + ".function.arguments' must be a string",
                                      p + ".function.arguments", "invalid_type");
            }
        }
        OJson call = OJson::object();
        std::string id;
        if (auto e = readString(c, "id", id, p + ".id")) return e;
        if (!id.empty()) call["id"] = id;
        call["type"] = "function";
        call["function"] = {{"name", *name}, {"arguments", std::move(args)}};
        out.push_back(std::move(call));
    }
    return std::nullopt;
}

} // namespace

std::optional<ApiError> readMessages(const OJson& body, const ParseLimits& limits, OJson& out,
                                     std::vector<std::string>* images) {
    const OJson* messages = field(body, "messages");
    if (!messages)
        return invalidRequest("'messages' is required", "messages", "missing_required_parameter");
    if (!messages->is_array())
        return invalidRequest(std::string("'messages' must be an array, got ") +
                                  jsonTypeName(*messages),
                              "messages", "invalid_type");
    if (messages->empty())
        return invalidRequest("'messages' must hold at least one message", "messages");
    if (messages->size() > limits.maxMessages)
        return invalidRequest("'messages' has more than " + std::to_string(limits.maxMessages) +
                                  " entries",
                              "messages");
    out = OJson::array();
    for (size_t i = 0; i < messages->size(); ++i) {
        const OJson& m = (*messages)[i];
        const std::string p = "messages[" + std::to_string(i) + "]";
        if (!m.is_object())
            return invalidRequest("'" + p + "' must be an object", p, "invalid_type");
        const OJson* role = field(m, "role");
        if (!role || !role->is_string())
            return invalidRequest("'" + p + ".role' must be a string", p + ".role",
                                  role ? "invalid_type" : "missing_required_parameter");
        const std::string& r = role->get_ref<const std::string&>();
        if (!knownRole(r))
            return invalidRequest("'" + p + ".role' must be one of system, developer, user, "
                                  "assistant, tool",
                                  p + ".role");
        OJson msg = OJson::object();
        msg["role"] = r;
        OJson toolCalls;
        if (const OJson* tc = field(m, "tool_calls")) {
            if (r != "assistant")
                return invalidRequest("'" + p + ".tool_calls' is only allowed on assistant messages",
                                      p + ".tool_calls");
            if (auto e = readToolCalls(*tc, p + ".tool_calls", toolCalls)) return e;
        }
        const OJson* content = field(m, "content");
        if (content) {
            std::string text;
            if (auto e = readContent(*content, p + ".content", text, r == "user" ? images : nullptr)) return e;
            msg["content"] = std::move(text);
        } else if (r == "assistant" && !toolCalls.is_null()) {
            msg["content"] = nullptr;
        } else if (r == "assistant") {
            msg["content"] = "";
        } else {
            return invalidRequest("'" + p + ".content' is required", p + ".content",
                                  "missing_required_parameter");
        }
        if (!toolCalls.is_null() && !toolCalls.empty()) msg["tool_calls"] = std::move(toolCalls);
        std::string s;
        if (auto e = readString(m, "name", s, p + ".name")) return e;
        if (!s.empty()) msg["name"] = s;
        s.clear();
        if (auto e = readString(m, "tool_call_id", s, p + ".tool_call_id")) return e;
        if (!s.empty()) msg["tool_call_id"] = s;
        out.push_back(std::move(msg));
    }
    return std::nullopt;
}

std::optional<ApiError> readTools(const OJson& body, const ParseLimits& limits,
                                  ChatCompletionRequest& request) {
    if (const OJson* tools = field(body, "tools")) {
        if (!tools->is_array())
            return invalidRequest(std::string("'tools' must be an array, got ") +
                                      jsonTypeName(*tools),
                                  "tools", "invalid_type");
        if (tools->size() > limits.maxTools)
            return invalidRequest("'tools' has more than " + std::to_string(limits.maxTools) +
                                      " entries",
                                  "tools");
        OJson normalised = OJson::array();
        for (size_t i = 0; i < tools->size(); ++i) {
            const OJson& t = (*tools)[i];
            const std::string p = "tools[" + std::to_string(i) + "]";
            if (!t.is_object()) return invalidRequest("'" + p + "' must be an object", p, "invalid_type");
            const OJson* type = field(t, "type");
            if (type && (!type->is_string() || type->get<std::string>() != "function"))
                return invalidRequest("'" + p + ".type' must be \"function\"", p + ".type");
            const OJson* fn = field(t, "function");
            if (!fn || !fn->is_object())
                return invalidRequest("'" + p + ".function' must be an object", p + ".function",
                                      "invalid_type");
            ToolFunction f;
            const OJson* name = field(*fn, "name");
            if (!name || !name->is_string() || name->get<std::string>().empty())
                return invalidRequest("'" + p + ".function.name' must be a non-empty string",
                                      p + ".function.name", "invalid_type");
            f.name = name->get<std::string>();
            if (auto e = readString(*fn, "description", f.description, p + ".function.description"))
                return e;
            if (const OJson* params = field(*fn, "parameters")) {
                if (!params->is_object())
                    return invalidRequest("'" + p + ".function.parameters' must be an object",
                                          p + ".function.parameters", "invalid_type");
                f.parameters = *params;
            }
            if (auto e = readBool(*fn, "strict", f.strict, p + ".function.strict")) return e;
            request.tools.push_back(std::move(f));
            OJson tool = OJson::object();
            tool["type"] = "function";
            tool["function"] = *fn;
            normalised.push_back(std::move(tool));
        }
        if (!normalised.empty()) request.toolsJson = std::move(normalised);
    }
    if (const OJson* tc = field(body, "tool_choice")) {
        ToolChoice& choice = request.toolChoice;
        if (tc->is_string()) {
            const std::string& s = tc->get_ref<const std::string&>();
            if (s == "auto") choice.mode = ToolChoiceMode::Auto;
            else if (s == "none") choice.mode = ToolChoiceMode::None;
            else if (s == "required") choice.mode = ToolChoiceMode::Required;
            else
                return invalidRequest("'tool_choice' must be \"none\", \"auto\", \"required\" or "
                                      "a function",
                                      "tool_choice");
        } else if (tc->is_object()) {
            const OJson* fn = field(*tc, "function");
            const OJson* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
            if (!name || !name->is_string())
                return invalidRequest("'tool_choice.function.name' must be a string",
                                      "tool_choice.function.name", "invalid_type");
            choice.mode = ToolChoiceMode::Named;
            choice.name = name->get<std::string>();
            bool known = false;
            for (const ToolFunction& f : request.tools) known = known || f.name == choice.name;
            if (!known)
                return invalidRequest("'tool_choice' names a function that is not in 'tools'",
                                      "tool_choice");
        } else {
            return invalidRequest(std::string("'tool_choice' must be a string or an object, got ") +
                                      jsonTypeName(*tc),
                                  "tool_choice", "invalid_type");
        }
        if (choice.mode != ToolChoiceMode::None && choice.mode != ToolChoiceMode::Auto &&
            request.tools.empty())
            return invalidRequest("'tool_choice' needs 'tools'", "tool_choice");
    }
    if (auto e = readBool(body, "parallel_tool_calls", request.toolChoice.parallel)) return e;
    return std::nullopt;
}

} // namespace hearth::server
