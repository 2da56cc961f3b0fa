// Helpers for server tests over real HTTP: a client for the started server, JSON posting, and
// splitting a server-sent-event body into its data payloads or an NDJSON body into its objects.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hearth::test {

using OJson = nlohmann::ordered_json;

inline httplib::Client client(int port) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    c.set_write_timeout(60, 0);
    c.set_connection_timeout(10, 0);
    return c;
}

inline httplib::Result postJson(int port, const std::string& path, const std::string& body,
                                httplib::Headers headers = {}) {
    auto c = client(port);
    return c.Post(path.c_str(), headers, body, "application/json");
}

inline OJson parse(const std::string& text) { return OJson::parse(text, nullptr, false); }

// The objects of an NDJSON body (Ollama's streams), one per line; a line that is not JSON
// becomes a discarded value.
inline std::vector<OJson> ndjson(const std::string& body) {
    std::vector<OJson> out;
    size_t pos = 0;
    while (pos < body.size()) {
        size_t end = body.find('\n', pos);
        if (end == std::string::npos) end = body.size();
        if (end > pos) out.push_back(parse(body.substr(pos, end - pos)));
        pos = end + 1;
    }
    return out;
}

// The payloads of "data: ..." events, in order ("[DONE]" included).
inline std::vector<std::string> sseData(const std::string& body) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < body.size()) {
        size_t end = body.find("\n\n", pos);
        if (end == std::string::npos) end = body.size();
        const std::string event = body.substr(pos, end - pos);
        if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
        pos = end + 2;
    }
    return out;
}

// Concatenated chat delta content (or completion text) of choice `index` in an SSE body.
inline std::string streamedText(const std::string& body, int index = 0) {
    std::string text;
    for (const std::string& d : sseData(body)) {
        if (d == "[DONE]") continue;
        OJson j = parse(d);
        if (!j.is_object() || !j.contains("choices")) continue;
        for (const OJson& c : j["choices"]) {
            if (c["index"].get<int>() != index) continue;
            if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string())
                text += c["delta"]["content"].get<std::string>();
            if (c.contains("text") && c["text"].is_string()) text += c["text"].get<std::string>();
        }
    }
    return text;
}

// The OpenAI error shape.
inline bool isErrorShape(const OJson& j) {
    if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return false;
    const OJson& e = j["error"];
    return e.contains("message") && e["message"].is_string() && e.contains("type") &&
           e["type"].is_string() && e.contains("param") && e.contains("code");
}

} // namespace hearth::test
