// Tool calls read while they stream: as the model writes a call ({"name": ..., "arguments": ...}
// inside Hermes tags, a Mistral list or bare Llama JSON), the call's id and name come out as soon as
// the name is complete, then its arguments in fragments as they are written (OpenAI's delta format).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

struct ToolCallDelta {
    int index = 0;         // which call of the turn
    std::string id;        // set on a call's first delta
    std::string name;      // set on a call's first delta
    std::string arguments; // the next fragment of the arguments' JSON text
};

class ToolCallStreamer {
public:
    // knownNames: when not empty, objects naming other functions are not calls.
    explicit ToolCallStreamer(std::vector<std::string> knownNames = {}) : m_known(std::move(knownNames)) {}

    // Appends generated text; returns what can be told about the calls so far.
    std::vector<ToolCallDelta> push(std::string_view text);
    // Calls announced so far.
    int numCalls() const { return m_calls; }
    const std::string& text() const { return m_buf; }

private:
    // Scans m_buf from m_pos; appends deltas.
    void scan(std::vector<ToolCallDelta>& out);

    std::vector<std::string> m_known;
    std::string m_buf;
    size_t m_pos = 0;          // where the current (or next) call object is looked for
    size_t m_objStart = std::string::npos;
    std::string m_name;
    size_t m_argsStart = std::string::npos; // where the arguments' value starts in m_buf
    size_t m_argsSent = 0;                  // bytes of the arguments already sent
    bool m_announced = false;
    int m_calls = 0;
};

// The length of the JSON value at the start of `s` (any type) when it is complete; 0 while it
// is still open.
size_t completeJsonValueLength(std::string_view s);

} // namespace hearth::server
