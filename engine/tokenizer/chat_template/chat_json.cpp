// Our chat types (hearth/chat_message.h, ChatRequest) to and from the JSON values templates see:
// messages in transformers' form, tool-call arguments parsed, and the request's variables.
#include "tokenizer/chat_template/chat_json.h"

#include <exception>
#include <new>

namespace hearth::tmpl {

using nlohmann::ordered_json;

namespace {

// Runs f, turning any exception (allocation failure, library error) into a Status.
template <typename F> auto jsonGuarded(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::bad_alloc&) {
        return outOfMemory("out of memory while reading a chat request");
    } catch (const std::exception& e) {
        return internalError(std::string("chat request: ") + e.what());
    }
}

// The value templates see for a tool call's arguments: the parsed JSON, the text as a string when
// it is not JSON, an empty mapping when there is none.
ordered_json argumentsValue(const std::string& text) {
    if (text.empty()) return ordered_json::object();
    ordered_json parsed = ordered_json::parse(text, nullptr, false);
    return parsed.is_discarded() ? ordered_json(text) : parsed;
}

bool nonEmptyString(const ordered_json& v) { return v.is_string() && !v.get_ref<const std::string&>().empty(); }

// {"id"?, "type": "function", "function": {"name", "arguments"}} exactly, into `out`.
bool readToolCall(const ordered_json& c, ChatToolCall& out) {
    if (!c.is_object()) return false;
    auto it = c.begin();
    if (it != c.end() && it.key() == "id") {
        if (!nonEmptyString(*it)) return false;
        out.id = it->get<std::string>();
        ++it;
    }
    if (it == c.end() || it.key() != "type" || *it != "function") return false;
    ++it;
    if (it == c.end() || it.key() != "function" || !it->is_object()) return false;
    const ordered_json& fn = *it;
    if (++it != c.end() || fn.size() != 2) return false;
    auto f = fn.begin();
    if (f.key() != "name" || !f->is_string()) return false;
    out.name = f->get<std::string>();
    ++f;
    if (f.key() != "arguments") return false;
    out.arguments = f->dump(); // parses back to the same value
    return true;
}

// The typed form of `m`, when it has exactly that form (keys in the documented order, each of its
// type, the optional ones non-empty).
bool readTypedMessage(const ordered_json& m, ChatMessage& out) {
    static constexpr const char* kKeys[] = {"role", "content", "reasoning_content", "tool_calls", "name", "tool_call_id"};
    constexpr size_t kCount = sizeof kKeys / sizeof kKeys[0];
    if (!m.is_object()) return false;
    size_t next = 0;
    bool haveContent = false;
    for (auto it = m.begin(); it != m.end(); ++it) {
        size_t k = next;
        while (k < kCount && it.key() != kKeys[k]) ++k;
        if (k == kCount || (it == m.begin()) != (k == 0)) return false;
        next = k + 1;
        const ordered_json& v = *it;
        switch (k) {
        case 0:
            if (!v.is_string()) return false;
            out.role = v.get<std::string>();
            break;
        case 1:
            if (v.is_string()) out.content = v.get<std::string>();
            else if (v.is_null()) out.content = std::nullopt;
            else return false;
            haveContent = true;
            break;
        case 2:
            if (!nonEmptyString(v)) return false;
            out.reasoning = v.get<std::string>();
            break;
        case 3:
            if (!v.is_array() || v.empty()) return false;
            for (const ordered_json& c : v) {
                ChatToolCall call;
                if (!readToolCall(c, call)) return false;
                out.toolCalls.push_back(std::move(call));
            }
            break;
        case 4:
            if (!nonEmptyString(v)) return false;
            out.name = v.get<std::string>();
            break;
        default:
            if (!nonEmptyString(v)) return false;
            out.toolCallId = v.get<std::string>();
            break;
        }
    }
    return haveContent;
}

// Parses JSON text that the request carries; `what` names it in the error.
Result<ordered_json> parseText(const std::string& text, const char* what) {
    ordered_json v = ordered_json::parse(text, nullptr, false);
    if (v.is_discarded()) return invalidArgument(std::string("chat request: ") + what + " is not valid JSON");
    return v;
}

} // namespace

ordered_json chatMessageJson(const ChatMessage& message) {
    if (!message.rawJson.empty()) return ordered_json::parse(message.rawJson, nullptr, false);
    ordered_json m = ordered_json::object();
    m["role"] = message.role;
    m["content"] = message.content ? ordered_json(*message.content) : ordered_json(nullptr);
    if (!message.reasoning.empty()) m["reasoning_content"] = message.reasoning;
    if (!message.toolCalls.empty()) {
        ordered_json calls = ordered_json::array();
        for (const ChatToolCall& c : message.toolCalls) {
            ordered_json call = ordered_json::object();
            if (!c.id.empty()) call["id"] = c.id;
            call["type"] = "function";
            call["function"] = {{"name", c.name}, {"arguments", argumentsValue(c.arguments)}};
            calls.push_back(std::move(call));
        }
        m["tool_calls"] = std::move(calls);
    }
    if (!message.name.empty()) m["name"] = message.name;
    if (!message.toolCallId.empty()) m["tool_call_id"] = message.toolCallId;
    return m;
}

ChatMessage chatMessageFromValue(const ordered_json& message) {
    ChatMessage typed;
    if (readTypedMessage(message, typed)) return typed;
    ChatMessage raw;
    raw.rawJson = message.dump();
    return raw;
}

Result<ChatMessage> chatMessageFromJson(std::string_view json) {
    return jsonGuarded([&]() -> Result<ChatMessage> {
        const ordered_json m = ordered_json::parse(json, nullptr, false);
        if (m.is_discarded() || !m.is_object()) return invalidArgument("a chat message must be a JSON object");
        return chatMessageFromValue(m);
    });
}

Result<ordered_json> chatRequestVariables(const ChatRequest& request) {
    return jsonGuarded([&]() -> Result<ordered_json> {
        ordered_json vars = ordered_json::object();
        ordered_json messages = ordered_json::array();
        for (size_t i = 0; i < request.messages.size(); ++i) {
            ordered_json m = chatMessageJson(request.messages[i]);
            if (m.is_discarded())
                return invalidArgument("chat request: message " + std::to_string(i) + " is not valid JSON");
            messages.push_back(std::move(m));
        }
        vars["messages"] = std::move(messages);
        vars["tools"] = nullptr;
        if (!request.toolsJson.empty()) {
            HEARTH_ASSIGN_OR_RETURN(vars["tools"], parseText(request.toolsJson, "tools"));
        }
        vars["documents"] = nullptr;
        if (!request.documentsJson.empty()) {
            HEARTH_ASSIGN_OR_RETURN(vars["documents"], parseText(request.documentsJson, "documents"));
        }
        vars["add_generation_prompt"] = request.addGenerationPrompt;
        for (const auto& [name, text] : request.specialTokens) vars[name] = text;
        if (!request.templateKwargsJson.empty()) {
            HEARTH_ASSIGN_OR_RETURN(ordered_json kwargs, parseText(request.templateKwargsJson, "template kwargs"));
            if (kwargs.is_object())
                for (auto it = kwargs.begin(); it != kwargs.end(); ++it) vars[it.key()] = std::move(it.value());
        }
        return vars;
    });
}

Result<ChatRequest> chatRequestFromJson(std::string_view text) {
    return jsonGuarded([&]() -> Result<ChatRequest> {
        const ordered_json json = ordered_json::parse(text, nullptr, false);
        if (json.is_discarded()) return invalidArgument("chat request is not valid JSON");
        if (!json.is_object()) return invalidArgument("chat request must be a JSON object");
        ChatRequest req;
        auto it = json.find("messages");
        if (it == json.end() || !it->is_array()) return invalidArgument("chat request needs a \"messages\" array");
        for (const ordered_json& m : *it) req.messages.push_back(chatMessageFromValue(m));
        if (auto t = json.find("tools"); t != json.end()) {
            if (!t->is_null() && !t->is_array()) return invalidArgument("\"tools\" must be an array or null");
            if (t->is_array()) req.toolsJson = t->dump();
        }
        if (auto d = json.find("documents"); d != json.end() && !d->is_null()) req.documentsJson = d->dump();
        auto readBool = [&](const char* key, bool& out) -> Status {
            auto b = json.find(key);
            if (b == json.end() || b->is_null()) return Status::ok();
            if (!b->is_boolean()) return invalidArgument(std::string("\"") + key + "\" must be true or false");
            out = b->get<bool>();
            return Status::ok();
        };
        HEARTH_RETURN_IF_ERROR(readBool("add_generation_prompt", req.addGenerationPrompt));
        HEARTH_RETURN_IF_ERROR(readBool("continue_final_message", req.continueFinalMessage));
        if (auto k = json.find("template_kwargs"); k != json.end() && !k->is_null()) {
            if (!k->is_object()) return invalidArgument("\"template_kwargs\" must be an object");
            req.templateKwargsJson = k->dump();
        }
        for (auto e = json.begin(); e != json.end(); ++e) {
            const std::string& key = e.key();
            if (key.size() > 6 && key.compare(key.size() - 6, 6, "_token") == 0 && e->is_string())
                req.specialTokens.emplace_back(key, e->get<std::string>());
        }
        return req;
    });
}

} // namespace hearth::tmpl
