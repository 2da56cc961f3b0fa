// Reasoning kept apart from the answer: text between <think> and </think> (Qwen3, DeepSeek-R1 and
// their kind) goes to reasoning_content, the rest to content, while streaming (a tag split across
// tokens is held back until it is whole or cannot be one).
#pragma once

#include <string>
#include <string_view>

namespace hearth::server {

struct ReasoningPiece {
    std::string reasoning;
    std::string content;
};

class ReasoningSplitter {
public:
    // startsInside: the prompt already opened the reasoning (its generation prompt ends with
    // <think>, as DeepSeek-R1's and some Qwen3 templates do).
    explicit ReasoningSplitter(bool startsInside = false);

    ReasoningPiece push(std::string_view text);
    // The end of the output: what was held back.
    ReasoningPiece finish();

private:
    enum class Mode { Start, Reasoning, Content };
    ReasoningPiece drain(bool final);

    Mode m_mode;
    std::string m_pending;
    bool m_trimContentStart = false; // drop whitespace right after </think>
};

// Whether rendered prompt text leaves the model inside a reasoning block.
bool promptOpensReasoning(std::string_view prompt);

} // namespace hearth::server
