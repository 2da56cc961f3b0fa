// Finds tool calls in model output (Llama 3.x JSON, Hermes/Qwen <tool_call>, Mistral
// [TOOL_CALLS]) and turns them into OpenAI tool_calls.
#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>

namespace hearth::server {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistral = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

std::string_view trim(std::string_view s) {
    const char* ws = " \t\r\n";
    const size_t a = s.find_first_not_of(ws);
    if (a == std::string_view::npos) return {};
    const size_t b = s.find_last_not_of(ws);
    return s.substr(a, b - a + 1);
}

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

// The length of the first complete JSON value at the start of `s` (objects and arrays only),
// found by bracket matching outside strings; 0 when it does not close.
size_t jsonValueLength(std::string_view s) {
    int depth = 0;
    bool inString = false, escaped = false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (inString) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') inString = false;
            continue;
        }
        if (c == '"') inString = true;
        else if (c == '{' || c == '[') ++depth;
        else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
            if (depth < 0) return 0;
        }
    }
    return 0;
}

std::string argumentsText(const Json& args) {
    if (args.is_string()) return args.get<std::string>();
    if (args.is_null()) return "{}";
    return args.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// {"name": ..., "arguments"|"parameters": ...} (optionally wrapped as {"function": {...}}).
bool callFromObject(const Json& obj, ToolCall& out) {
    if (!obj.is_object()) return false;
    const Json* o = &obj;
    if (auto f = obj.find("function"); f != obj.end() && f->is_object()) o = &*f;
    auto name = o->find("name");
    if (name == o->end() || !name->is_string() || name->get<std::string>().empty()) return false;
    out.name = name->get<std::string>();
    Json args = Json::object();
    if (auto a = o->find("arguments"); a != o->end()) args = *a;
    else if (auto p = o->find("parameters"); p != o->end()) args = *p;
    out.arguments = argumentsText(args);
    out.id = newToolCallId();
    return true;
}

bool parseJson(std::string_view text, Json& out) {
    out = Json::parse(text.begin(), text.end(), nullptr, false);
    return !out.is_discarded();
}

bool parseHermes(std::string_view text, ToolCallParse& out) {
    size_t pos = text.find(kHermesOpen);
    if (pos == std::string_view::npos) return false;
    std::string content(trim(text.substr(0, pos)));
    std::vector<ToolCall> calls;
    while (pos != std::string_view::npos) {
        const size_t start = pos + kHermesOpen.size();
        size_t end = text.find(kHermesClose, start);
        std::string_view body = trim(text.substr(start, end == std::string_view::npos
                                                            ? std::string_view::npos
                                                            : end - start));
        Json j;
        ToolCall call;
        if (!parseJson(body, j) || !callFromObject(j, call)) return false;
        calls.push_back(std::move(call));
        if (end == std::string_view::npos) break;
        const size_t after = end + kHermesClose.size();
        pos = text.find(kHermesOpen, after);
        std::string_view between = trim(text.substr(after, pos == std::string_view::npos
                                                                ? std::string_view::npos
                                                                : pos - after));
        if (!between.empty()) {
            if (!content.empty()) content += "\n";
            content += between;
        }
    }
    out.content = std::move(content);
    out.calls = std::move(calls);
    return true;
}

bool parseMistral(std::string_view text, ToolCallParse& out) {
    size_t pos = text.find(kMistral);
    if (pos == std::string_view::npos) return false;
    std::string content(trim(text.substr(0, pos)));
    std::vector<ToolCall> calls;
    while (pos != std::string_view::npos) {
        std::string_view rest = trim(text.substr(pos + kMistral.size()));
        size_t used = 0;
        if (!rest.empty() && (rest[0] == '[' || rest[0] == '{')) {
            used = jsonValueLength(rest);
            Json j;
            if (!parseJson(rest.substr(0, used ? used : rest.size()), j)) return false;
            if (j.is_object()) j = Json::array({j});
            for (const Json& item : j) {
                ToolCall call;
                if (!callFromObject(item, call)) return false;
                calls.push_back(std::move(call));
            }
        } else {
            // Newer templates: [TOOL_CALLS]name[ARGS]{...}
            const size_t args = rest.find(kMistralArgs);
            if (args == std::string_view::npos) return false;
            ToolCall call;
            call.name = std::string(trim(rest.substr(0, args)));
            std::string_view argText = trim(rest.substr(args + kMistralArgs.size()));
            const size_t jsonLen = jsonValueLength(argText);
            Json j;
            if (call.name.empty() ||
                !parseJson(argText.substr(0, jsonLen ? jsonLen : argText.size()), j))
                return false;
            call.arguments = argumentsText(j);
            call.id = newToolCallId();
            calls.push_back(std::move(call));
            used = jsonLen ? size_t(argText.data() - rest.data()) + jsonLen : 0;
        }
        if (used == 0) break;
        const size_t after = size_t(rest.data() - text.data()) + used;
        pos = text.find(kMistral, after);
    }
    out.content = std::move(content);
    out.calls = std::move(calls);
    return !out.calls.empty();
}

bool parseLlama(std::string_view text, const std::vector<std::string>& knownNames,
                ToolCallParse& out) {
    std::string_view t = trim(text);
    if (startsWith(t, kPythonTag)) t = trim(t.substr(kPythonTag.size()));
    if (t.empty() || t[0] != '{') return false;
    // One call, or several separated by ';' (Llama 3.1 with parallel calls).
    std::vector<ToolCall> calls;
    while (!t.empty()) {
        const size_t len = jsonValueLength(t);
        if (len == 0) return false;
        Json j;
        ToolCall call;
        if (!parseJson(t.substr(0, len), j) || !callFromObject(j, call)) return false;
        if (!j.contains("parameters") && !j.contains("arguments")) return false;
        if (!knownNames.empty() &&
            std::find(knownNames.begin(), knownNames.end(), call.name) == knownNames.end())
            return false;
        calls.push_back(std::move(call));
        t = trim(t.substr(len));
        if (!t.empty() && t[0] == ';') t = trim(t.substr(1));
        else if (!t.empty()) return false;
    }
    out.content.clear();
    out.calls = std::move(calls);
    return true;
}

} // namespace

std::string newToolCallId() {
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}() ^
                               uint64_t(std::chrono::steady_clock::now().time_since_epoch().count())};
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string id = "call_";
    std::lock_guard<std::mutex> lock(mu);
    for (int i = 0; i < 24; ++i) id += alphabet[rng() % (sizeof alphabet - 1)];
    return id;
}

ToolCallParse parseToolCalls(std::string_view text, const std::vector<std::string>& knownNames) {
    ToolCallParse out;
    if (parseHermes(text, out) || parseMistral(text, out) || parseLlama(text, knownNames, out))
        return out;
    out = ToolCallParse{};
    out.content = std::string(text);
    return out;
}

bool mightBeToolCall(std::string_view text) {
    std::string_view t = trim(text);
    if (t.empty()) return true;
    for (std::string_view tag : {kHermesOpen, kMistral, kPythonTag}) {
        const size_t n = std::min(tag.size(), t.size());
        if (t.substr(0, n) == tag.substr(0, n)) return true;
    }
    return t[0] == '{';
}

} // namespace hearth::server
