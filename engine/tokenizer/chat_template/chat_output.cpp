// The chat output readers: <think> splitting and harmony messages, each a small state machine
// over streamed text.
#include "hearth/chat_output.h"

#include <algorithm>

namespace hearth::tmpl {


namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The longest tail of `s` that is a proper prefix of `tag`.
size_t partialTagTail(std::string_view s, std::string_view tag) {
    for (size_t len = std::min(tag.size() - 1, s.size()); len > 0; --len)
        if (s.substr(s.size() - len) == tag.substr(0, len)) return len;
    return 0;
}

} // namespace

ReasoningSplitter::ReasoningSplitter(bool startsInside)
    : m_mode(startsInside ? Mode::Reasoning : Mode::Start) {}

ReasoningPiece ReasoningSplitter::push(std::string_view text) {
    m_pending.append(text);
    return drain(false);
}

ReasoningPiece ReasoningSplitter::finish() { return drain(true); }

ReasoningPiece ReasoningSplitter::drain(bool final) {
    ReasoningPiece out;
    for (;;) {
        if (m_mode == Mode::Start) {
            // Before anything but whitespace: an opening tag starts the reasoning.
            const size_t first = std::find_if_not(m_pending.begin(), m_pending.end(), isSpace) - m_pending.begin();
            const std::string_view rest = std::string_view(m_pending).substr(first);
            if (rest.size() >= kOpen.size() && rest.substr(0, kOpen.size()) == kOpen) {
                m_pending.erase(0, first + kOpen.size());
                m_mode = Mode::Reasoning;
                continue;
            }
            if (!final && kOpen.substr(0, std::min(rest.size(), kOpen.size())) == rest) return out; // maybe
            m_mode = Mode::Content;
            continue;
        }
        if (m_mode == Mode::Reasoning) {
            const size_t close = m_pending.find(kClose);
            if (close != std::string::npos) {
                out.reasoning += m_pending.substr(0, close);
                m_pending.erase(0, close + kClose.size());
                m_mode = Mode::Content;
                m_trimContentStart = true;
                continue;
            }
            const size_t hold = final ? 0 : partialTagTail(m_pending, kClose);
            out.reasoning += m_pending.substr(0, m_pending.size() - hold);
            m_pending.erase(0, m_pending.size() - hold);
            return out;
        }
        if (m_trimContentStart) {
            const size_t first = std::find_if_not(m_pending.begin(), m_pending.end(), isSpace) - m_pending.begin();
            m_pending.erase(0, first);
            if (m_pending.empty() && !final) return out;
            m_trimContentStart = false;
        }
        out.content += m_pending;
        m_pending.clear();
        return out;
    }
}

bool promptOpensReasoning(std::string_view prompt) {
    while (!prompt.empty() && isSpace(prompt.back())) prompt.remove_suffix(1);
    const size_t open = prompt.rfind(kOpen);
    if (open == std::string_view::npos) return false;
    return prompt.substr(open + kOpen.size()).find_first_not_of(" \t\r\n") == std::string_view::npos;
}



namespace {

constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kBodyEnds[] = {"<|end|>", "<|start|>", "<|return|>", "<|call|>"};

// The longest tail of `s` that is a proper prefix of one of `markers`.
template <size_t N> size_t partialTail(std::string_view s, const std::string_view (&markers)[N]) {
    size_t hold = 0;
    for (std::string_view m : markers)
        for (size_t len = std::min(m.size() - 1, s.size()); len > hold; --len)
            if (s.substr(s.size() - len) == m.substr(0, len)) {
                hold = len;
                break;
            }
    return hold;
}

// The value after `key` in a header ("analysis", "functions.get_weather"), up to a space or marker.
std::string headerValue(std::string_view header, std::string_view key) {
    const size_t at = header.find(key);
    if (at == std::string_view::npos) return {};
    std::string_view rest = header.substr(at + key.size());
    size_t end = 0;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != '<' && rest[end] != '\n') ++end;
    return std::string(rest.substr(0, end));
}

} // namespace

OutputPiece HarmonyParser::push(std::string_view text) {
    m_pending.append(text);
    return drain(false);
}

OutputPiece HarmonyParser::finish() { return drain(true); }

void HarmonyParser::send(std::string_view text, OutputPiece& out) {
    if (text.empty()) return;
    switch (m_route) {
    case Route::Reasoning: out.reasoning.append(text); break;
    case Route::Content: out.content.append(text); break;
    case Route::Call: out.calls.push_back({m_calls - 1, "", std::string(text)}); break;
    }
}

void HarmonyParser::startBody(const std::string& header, OutputPiece& out) {
    const std::string channel = headerValue(header, kChannel);
    const std::string recipient = headerValue(header, "to=");
    if (recipient.rfind("functions.", 0) == 0 && recipient.size() > 10) {
        m_route = Route::Call;
        out.calls.push_back({m_calls, recipient.substr(10), ""});
        ++m_calls;
    } else if (channel == "analysis") {
        m_route = Route::Reasoning;
    } else {
        m_route = Route::Content; // final, or commentary for the user
    }
}

OutputPiece HarmonyParser::drain(bool final) {
    OutputPiece out;
    for (;;) {
        switch (m_mode) {
        case Mode::Start: {
            // Harmony output opens with a header; anything else is plain text.
            const std::string_view p = m_pending;
            const bool header = p.rfind(kChannel, 0) == 0 || p.rfind(kStart, 0) == 0 || p.rfind(" to=", 0) == 0;
            if (header) {
                m_mode = Mode::Header;
                continue;
            }
            const bool maybe = !final && (kChannel.substr(0, std::min(p.size(), kChannel.size())) == p ||
                                          kStart.substr(0, std::min(p.size(), kStart.size())) == p ||
                                          std::string_view(" to=").substr(0, std::min<size_t>(p.size(), 4)) == p);
            if (maybe) return out;
            m_mode = Mode::Plain;
            continue;
        }
        case Mode::Plain:
            out.content += m_pending;
            m_pending.clear();
            return out;
        case Mode::Header: {
            const size_t msg = m_pending.find(kMessage);
            if (msg == std::string::npos) {
                if (final) m_pending.clear(); // a header cut off: nothing to say
                return out;
            }
            startBody(m_pending.substr(0, msg), out);
            m_pending.erase(0, msg + kMessage.size());
            m_mode = Mode::Body;
            continue;
        }
        case Mode::Body: {
            size_t end = std::string::npos, len = 0;
            for (std::string_view m : kBodyEnds) {
                const size_t at = m_pending.find(m);
                if (at < end) {
                    end = at;
                    len = m == kStart ? 0 : m.size(); // a header starts at <|start|>: keep it
                }
            }
            if (end != std::string::npos) {
                send(std::string_view(m_pending).substr(0, end), out);
                m_pending.erase(0, end + len);
                m_mode = Mode::Header;
                continue;
            }
            const size_t hold = final ? 0 : partialTail(m_pending, kBodyEnds);
            send(std::string_view(m_pending).substr(0, m_pending.size() - hold), out);
            m_pending.erase(0, m_pending.size() - hold);
            return out;
        }
        }
    }
}

bool promptIsHarmony(std::string_view prompt) {
    while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == ' ')) prompt.remove_suffix(1);
    constexpr std::string_view tail = "<|start|>assistant";
    return prompt.size() >= tail.size() && prompt.substr(prompt.size() - tail.size()) == tail;
}

ChatOutputReader::ChatOutputReader(std::string_view renderedPrompt, bool split) : m_split(split) {
    if (!split) return;
    if (promptIsHarmony(renderedPrompt)) m_harmony.emplace();
    else m_think.emplace(promptOpensReasoning(renderedPrompt));
}

OutputPiece ChatOutputReader::push(std::string_view text) {
    if (m_harmony) return m_harmony->push(text);
    OutputPiece out;
    if (!m_think) {
        out.content.assign(text);
        return out;
    }
    ReasoningPiece p = m_think->push(text);
    out.reasoning = std::move(p.reasoning);
    out.content = std::move(p.content);
    return out;
}

OutputPiece ChatOutputReader::finish() {
    if (m_harmony) return m_harmony->finish();
    OutputPiece out;
    if (!m_think) return out;
    ReasoningPiece p = m_think->finish();
    out.reasoning = std::move(p.reasoning);
    out.content = std::move(p.content);
    return out;
}

} // namespace hearth::tmpl
