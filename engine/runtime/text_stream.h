// The text of one generated stream: token ids become whole UTF-8 characters (via the streaming
// detokenizer), and text that could still turn into a stop string is held back until it cannot.
#pragma once

#include "hearth/status.h"
#include "hearth/tokenizer.h"

#include <optional>
#include <string>
#include <vector>

namespace hearth::runtime {

class TextStream {
public:
    TextStream(tokenizer::Tokenizer tokenizer, std::vector<std::string> stopStrings);

    struct Piece {
        std::string text;     // safe to show now
        bool stopped = false; // a stop string matched; `text` ends right before it
    };

    // Adds a generated token. After a stop, further tokens give nothing.
    Piece push(int32_t token);
    // The end of the stream (length, end-of-generation, cancel): everything held back, with an
    // unfinished UTF-8 character as U+FFFD. Empty after a stop.
    std::string finish();

    bool stopped() const { return m_stopped; }
    // The stop string that matched (the earliest in the text; of those starting there, the first
    // listed), else empty.
    const std::string& matchedStop() const { return m_matched; }

private:
    Piece release(bool final);

    tokenizer::StreamDecoder m_decoder;
    std::vector<std::string> m_stops;
    std::string m_pending; // decoded text not yet handed out
    bool m_stopped = false;
    std::string m_matched;
};

// Checks stop strings from a request: non-empty, valid UTF-8, at most 16 of at most 1000 bytes.
Status validateStopStrings(const std::vector<std::string>& stops);

} // namespace hearth::runtime
