// The incremental tool-call reader: finds each call object, reads its keys as they complete, and
// forwards the arguments' text as it grows until the value closes.
#include "server/tool_call_stream.h"

#include "server/tool_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace hearth::server {

namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skipSpace(std::string_view s, size_t p) {
    while (p < s.size() && isSpace(s[p])) ++p;
    return p;
}

} // namespace

size_t completeJsonValueLength(std::string_view s) {
    if (s.empty()) return 0;
    const char first = s[0];
    if (first == '"') {
        for (size_t i = 1; i < s.size(); ++i) {
            if (s[i] == '\\') ++i;
            else if (s[i] == '"') return i + 1;
        }
        return 0;
    }
    if (first == '{' || first == '[') {
        int depth = 0;
        bool inString = false;
        for (size_t i = 0; i < s.size(); ++i) {
            const char c = s[i];
            if (inString) {
                if (c == '\\') ++i;
                else if (c == '"') inString = false;
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
        }
        return 0;
    }
    // A number or literal ends at the first delimiter.
    for (size_t i = 0; i < s.size(); ++i)
        if (isSpace(s[i]) || s[i] == ',' || s[i] == '}' || s[i] == ']') return i;
    return 0;
}

std::vector<ToolCallDelta> ToolCallStreamer::push(std::string_view text) {
    m_buf.append(text);
    std::vector<ToolCallDelta> out;
    scan(out);
    return out;
}

void ToolCallStreamer::scan(std::vector<ToolCallDelta>& out) {
    const std::string_view buf = m_buf;
    for (;;) {
        if (m_objStart == std::string::npos) {
            const size_t brace = buf.find('{', m_pos);
            if (brace == std::string_view::npos) return;
            m_objStart = brace;
            m_name.clear();
            m_argsStart = std::string::npos;
            m_announced = false;
        }
        if (!m_announced) {
            // Read the object's keys as far as they are complete.
            size_t p = m_objStart + 1;
            bool restart = false;
            for (;;) {
                p = skipSpace(buf, p);
                if (p >= buf.size()) return;
                if (buf[p] == ',') {
                    ++p;
                    continue;
                }
                if (buf[p] == '}') { // closed without arguments
                    if (m_name.empty()) {
                        m_pos = p + 1;
                        m_objStart = std::string::npos;
                        restart = true;
                        break;
                    }
                    out.push_back({m_calls, newToolCallId(), m_name, "{}"});
                    ++m_calls;
                    m_pos = p + 1;
                    m_objStart = std::string::npos;
                    restart = true;
                    break;
                }
                if (buf[p] != '"') { // not a call object: look further on
                    m_pos = m_objStart + 1;
                    m_objStart = std::string::npos;
                    restart = true;
                    break;
                }
                const size_t keyLen = completeJsonValueLength(buf.substr(p));
                if (keyLen == 0) return;
                const nlohmann::json key = nlohmann::json::parse(buf.substr(p, keyLen), nullptr, false);
                p = skipSpace(buf, p + keyLen);
                if (p >= buf.size()) return;
                if (buf[p] != ':' || !key.is_string()) {
                    m_pos = m_objStart + 1;
                    m_objStart = std::string::npos;
                    restart = true;
                    break;
                }
                p = skipSpace(buf, p + 1);
                if (p >= buf.size()) return;
                const std::string k = key.get<std::string>();
                if (k == "arguments" || k == "parameters") {
                    m_argsStart = p;
                    if (!m_name.empty()) break;
                }
                if (k == "function" && buf[p] == '{') { // {"type": "function", "function": {...}}
                    m_objStart = p;
                    p = p + 1;
                    continue;
                }
                const size_t valueLen = completeJsonValueLength(buf.substr(p));
                if (valueLen == 0) return;
                if (k == "name") {
                    const nlohmann::json v = nlohmann::json::parse(buf.substr(p, valueLen), nullptr, false);
                    if (v.is_string()) m_name = v.get<std::string>();
                    if (!m_name.empty() && m_argsStart != std::string::npos) break;
                }
                p += valueLen;
            }
            if (restart) continue;
            if (!m_known.empty() && std::find(m_known.begin(), m_known.end(), m_name) == m_known.end()) {
                m_pos = m_objStart + 1; // not one of the request's functions
                m_objStart = std::string::npos;
                continue;
            }
            out.push_back({m_calls, newToolCallId(), m_name, ""});
            m_announced = true;
            m_argsSent = 0;
        }
        const std::string_view args = buf.substr(m_argsStart);
        const size_t len = completeJsonValueLength(args);
        const size_t end = len ? len : args.size();
        if (end > m_argsSent) {
            out.push_back({m_calls, "", "", std::string(args.substr(m_argsSent, end - m_argsSent))});
            m_argsSent = end;
        }
        if (len == 0) return;
        ++m_calls;
        m_pos = m_argsStart + len;
        m_objStart = std::string::npos;
        m_announced = false;
    }
}

} // namespace hearth::server
