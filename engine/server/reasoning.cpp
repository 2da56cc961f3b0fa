// The reasoning splitter: a small state machine over streamed text (before the answer, inside
// <think>, after it), holding back only what might still become a tag.
#include "server/reasoning.h"

#include <algorithm>

namespace hearth::server {

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

} // namespace hearth::server
