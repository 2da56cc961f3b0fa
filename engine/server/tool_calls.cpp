// Finds tool calls in model output (Llama 3.x JSON, Hermes/Qwen <tool_call>, Mistral
// [TOOL_CALLS]) and turns them into OpenAI tool_calls.
#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
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

// The end of the JSON value starting at s[0] (just past it), or npos when the text ends inside it.
size_t valueEnd(std::string_view s) {
    if (s.empty()) return std::string_view::npos;
    if (s[0] == '{' || s[0] == '[') {
        const size_t n = jsonValueLength(s);
        return n ? n : std::string_view::npos;
    }
    if (s[0] == '"') {
        for (size_t i = 1; i < s.size(); ++i) {
            if (s[i] == '\\') ++i;
            else if (s[i] == '"') return i + 1;
        }
        return std::string_view::npos;
    }
    const size_t end = s.find_first_of(",}] \t\r\n");
    return end; // a number or literal: npos when nothing follows it yet
}

// A call the text ends inside (output cut by max_tokens, or stopped): `body` starts at its '{'.
// Its name (complete) and its arguments as far as written, as OpenAI returns a call cut short.
// False when the name is not complete. One {"function": {...}} wrapper is looked into.
bool partialCallFromObject(std::string_view body, ToolCall& out, bool wrapped = false) {
    const char* ws = " \t\r\n";
    std::string name, arguments;
    size_t i = 1;
    while (i < body.size()) {
        i = body.find_first_not_of(ws, i);
        if (i == std::string_view::npos) break;
        if (body[i] == ',') {
            ++i;
            continue;
        }
        if (body[i] != '"') break;
        const size_t keyLen = valueEnd(body.substr(i));
        if (keyLen == std::string_view::npos) break;
        Json key;
        if (!parseJson(body.substr(i, keyLen), key) || !key.is_string()) break;
        i = body.find_first_not_of(ws, i + keyLen);
        if (i == std::string_view::npos || body[i] != ':') break;
        i = body.find_first_not_of(ws, i + 1);
        if (i == std::string_view::npos) break;
        const std::string k = key.get<std::string>();
        const size_t len = valueEnd(body.substr(i));
        const std::string_view value = body.substr(i, len);
        if (k == "function" && body[i] == '{' && len == std::string_view::npos && !wrapped)
            return partialCallFromObject(value, out, true);
        if (k == "name" && len != std::string_view::npos) {
            Json n;
            if (parseJson(value, n) && n.is_string()) name = n.get<std::string>();
        } else if (k == "arguments" || k == "parameters") {
            Json a;
            if (len != std::string_view::npos && parseJson(value, a)) arguments = argumentsText(a);
            else arguments = std::string(value.substr(0, value.find_last_not_of(ws) + 1));
        }
        if (len == std::string_view::npos) break;
        i += len;
    }
    if (name.empty()) return false;
    out.name = std::move(name);
    out.arguments = std::move(arguments);
    out.id = newToolCallId();
    return true;
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
        if (!parseJson(body, j) || !callFromObject(j, call)) {
            // The output ends inside this call: as far as it was written (a call whose name is
            // not complete yet is left out), never as markup.
            if (end != std::string_view::npos || body.empty() || body[0] != '{' || jsonValueLength(body)) return false;
            if (partialCallFromObject(body, call)) calls.push_back(std::move(call));
            break;
        }
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

// [TOOL_CALLS] followed by a list (or one object) the output ends inside: its complete calls,
// then the one cut short as far as written. False when it holds nothing that reads as a call.
bool partialMistralList(std::string_view rest, std::vector<ToolCall>& calls) {
    size_t i = rest[0] == '[' ? 1 : 0;
    const size_t before = calls.size();
    while (i < rest.size()) {
        i = rest.find_first_not_of(" \t\r\n,", i);
        if (i == std::string_view::npos || rest[i] != '{') break;
        const size_t len = jsonValueLength(rest.substr(i));
        ToolCall call;
        if (!len) {
            if (partialCallFromObject(rest.substr(i), call)) calls.push_back(std::move(call));
            break;
        }
        Json j;
        if (!parseJson(rest.substr(i, len), j) || !callFromObject(j, call)) break;
        calls.push_back(std::move(call));
        i += len;
    }
    return calls.size() > before;
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
            if (!used && partialMistralList(rest, calls)) break;
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
            if (call.name.empty()) return false;
            if (!parseJson(argText.substr(0, jsonLen ? jsonLen : argText.size()), j)) {
                if (jsonLen || argText.empty() || argText[0] != '{') return false;
                call.arguments = std::string(argText); // cut inside the arguments: as far as written
                call.id = newToolCallId();
                calls.push_back(std::move(call));
                break;
            }
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
        Json j;
        ToolCall call;
        if (len == 0) {
            // Cut inside a call to a known tool: as far as written.
            if (knownNames.empty() || !partialCallFromObject(t, call) ||
                std::find(knownNames.begin(), knownNames.end(), call.name) == knownNames.end())
                return false;
            calls.push_back(std::move(call));
            break;
        }
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

std::string closedJsonObject(std::string_view text) {
    // Forward scan: where a prefix ends a value (or opens a container), and what closes it there.
    struct Cut {
        size_t length;
        std::string closers;
    };
    std::vector<Cut> cuts;
    std::string stack;
    bool inString = false, escaped = false;
    auto closers = [&] { return std::string(stack.rbegin(), stack.rend()); };
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') {
                inString = false;
                cuts.push_back({i + 1, closers()});
            }
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '{' || c == '[') {
            stack.push_back(c == '{' ? '}' : ']');
            cuts.push_back({i + 1, closers()});
        } else if (c == '}' || c == ']') {
            if (stack.empty()) break;
            stack.pop_back();
            cuts.push_back({i + 1, closers()});
        } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.') {
            cuts.push_back({i + 1, closers()});
        }
    }
    auto objectOf = [](const std::string& candidate, std::string& out) {
        Json j;
        if (!parseJson(candidate, j) || !j.is_object()) return false;
        out = j.dump(-1, ' ', false, Json::error_handler_t::replace);
        return true;
    };
    std::string out;
    if (inString && objectOf(std::string(text) + "\"" + closers(), out)) return out;
    int tries = 0;
    for (auto it = cuts.rbegin(); it != cuts.rend() && tries < 64; ++it, ++tries)
        if (objectOf(std::string(text.substr(0, it->length)) + it->closers, out)) return out;
    return "{}";
}

namespace {

ToolCallParse parseWhole(std::string_view text, const std::vector<std::string>& knownNames) {
    ToolCallParse out;
    if (parseHermes(text, out) || parseMistral(text, out) || parseLlama(text, knownNames, out))
        return out;
    out = ToolCallParse{};
    out.content = std::string(text);
    return out;
}

} // namespace

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

namespace hearth {

ToolCallParse parseToolCalls(std::string_view text, const std::vector<std::string>& knownNames) {
    ToolCallParse p = server::parseWhole(text, knownNames);
    if (p.calls.empty()) {
        // A last Hermes call that does not read (bad JSON after good calls): the calls before it.
        const size_t last = text.rfind(server::kHermesOpen);
        if (last != std::string_view::npos && last > 0) {
            ToolCallParse q = server::parseWhole(text.substr(0, last), knownNames);
            if (!q.calls.empty()) p = std::move(q);
        }
    }
    // Text cut short inside the next call's opening tag is not content.
    std::string& c = p.content;
    for (size_t n = std::min(c.size(), server::kHermesOpen.size() - 1); n > 0; --n)
        if (c.compare(c.size() - n, n, server::kHermesOpen.substr(0, n)) == 0) {
            c.erase(c.size() - n);
            while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.pop_back();
            break;
        }
    return p;
}

} // namespace hearth
