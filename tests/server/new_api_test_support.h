// Helpers shared by the Anthropic and Responses server tests: named server-sent events
// ("event: X" + "data: {...}") split into pairs, and error-shape checks.
#pragma once

#include "fake_server.h"
#include "http_test_support.h"
#include "test_support.h"

#include "hearth/server.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hearth::test {

struct NamedEvent {
    std::string name; // the "event:" line (empty when there is none)
    OJson data;       // the parsed "data:" line (discarded when it is not JSON)
};

// The events of an SSE body in order; comments (": keep-alive") are skipped.
inline std::vector<NamedEvent> namedEvents(const std::string& body) {
    std::vector<NamedEvent> out;
    size_t pos = 0;
    while (pos < body.size()) {
        size_t end = body.find("\n\n", pos);
        if (end == std::string::npos) end = body.size();
        const std::string block = body.substr(pos, end - pos);
        pos = end + 2;
        NamedEvent e;
        bool any = false;
        size_t lp = 0;
        while (lp < block.size()) {
            size_t le = block.find('\n', lp);
            if (le == std::string::npos) le = block.size();
            const std::string line = block.substr(lp, le - lp);
            lp = le + 1;
            if (line.rfind("event: ", 0) == 0) {
                e.name = line.substr(7);
                any = true;
            } else if (line.rfind("data: ", 0) == 0) {
                e.data = parse(line.substr(6));
                any = true;
            }
        }
        if (any) out.push_back(std::move(e));
    }
    return out;
}

inline std::vector<std::string> eventNames(const std::vector<NamedEvent>& events) {
    std::vector<std::string> names;
    for (const NamedEvent& e : events) names.push_back(e.name);
    return names;
}

// Anthropic's error shape: {"type": "error", "error": {"type": string, "message": non-empty}}.
inline bool isAnthropicError(const OJson& j) {
    return j.is_object() && j.value("type", "") == "error" && j.contains("error") &&
           j["error"].is_object() && j["error"].contains("type") && j["error"]["type"].is_string() &&
           j["error"].contains("message") && j["error"]["message"].is_string() &&
           !j["error"]["message"].get<std::string>().empty();
}

} // namespace hearth::test
