// Streaming detokenization with stop strings held back until they can no longer match.
#include "runtime/text_stream.h"

#include "tokenizer/unicode.h"

#include <algorithm>

namespace hearth::runtime {

namespace {

tokenizer::DecodeOptions continuation() {
    tokenizer::DecodeOptions o;
    o.stripLeadingSpace = false; // generated text continues the prompt: keep its first space
    return o;
}

} // namespace

Status validateStopStrings(const std::vector<std::string>& stops) {
    if (stops.size() > 16) return invalidArgument("at most 16 stop strings are allowed");
    for (const std::string& s : stops) {
        if (s.empty()) return invalidArgument("a stop string is empty");
        if (s.size() > 1000) return invalidArgument("a stop string is longer than 1000 bytes");
        if (!tokenizer::isValidUtf8(s)) return invalidArgument("a stop string is not valid UTF-8");
    }
    return Status::ok();
}

TextStream::TextStream(tokenizer::Tokenizer tokenizer, std::vector<std::string> stopStrings)
    : m_decoder(std::move(tokenizer), continuation()), m_stops(std::move(stopStrings)) {}

TextStream::Piece TextStream::push(int32_t token) {
    if (m_stopped) return {};
    Result<std::string> text = m_decoder.push(token);
    if (text.isOk()) m_pending += *text;
    return release(false);
}

std::string TextStream::finish() {
    if (m_stopped) return {};
    m_pending += m_decoder.finish();
    Piece p = release(true);
    return std::move(p.text);
}

TextStream::Piece TextStream::release(bool final) {
    Piece out;
    // The earliest complete match ends the stream.
    size_t first = std::string::npos;
    for (const std::string& s : m_stops)
        if (const size_t at = m_pending.find(s); at < first) {
            first = at;
            m_matched = s;
        }
    if (first != std::string::npos) {
        out.text = m_pending.substr(0, first);
        out.stopped = true;
        m_stopped = true;
        m_pending.clear();
        return out;
    }
    // Hold back the longest tail that is the start of some stop string.
    size_t hold = 0;
    if (!final) {
        for (const std::string& s : m_stops) {
            const size_t maxLen = std::min(s.size() - 1, m_pending.size());
            for (size_t len = maxLen; len > hold; --len)
                if (m_pending.compare(m_pending.size() - len, len, s, 0, len) == 0) {
                    hold = len;
                    break;
                }
        }
    }
    out.text = m_pending.substr(0, m_pending.size() - hold);
    m_pending.erase(0, m_pending.size() - hold);
    return out;
}

} // namespace hearth::runtime
