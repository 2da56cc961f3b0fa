// Reading a chat model's output while it streams: reasoning kept apart from the answer
// (<think>...</think> blocks as Qwen3 and DeepSeek-R1 write them, gpt-oss's harmony channels) and
// harmony's tool calls. Marker text split across tokens is held back until it is whole or cannot
// be a marker.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tmpl {

struct ReasoningPiece {
    std::string reasoning;
    std::string content;
};

// <think> ... </think>: the reasoning, then the answer.
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

// A piece of a tool call being written: `name` is set on the call's first piece; `arguments`
// continues its arguments' JSON text.
struct OutputCall {
    int index = 0;
    std::string name;
    std::string arguments;
};

struct OutputPiece {
    std::string reasoning;
    std::string content;
    std::vector<OutputCall> calls;
};

// gpt-oss's harmony messages: channels (analysis: reasoning; final and plain commentary: the
// answer; commentary addressed to functions.NAME: a tool call whose arguments are the body),
// separated by <|end|> and <|start|>assistant headers.
class HarmonyParser {
public:
    OutputPiece push(std::string_view text);
    OutputPiece finish();
    int numCalls() const { return m_calls; }

private:
    enum class Mode { Start, Header, Body, Plain };
    enum class Route { Reasoning, Content, Call };
    OutputPiece drain(bool final);
    void startBody(const std::string& header, OutputPiece& out);
    void send(std::string_view text, OutputPiece& out);

    Mode m_mode = Mode::Start;
    Route m_route = Route::Content;
    std::string m_pending;
    int m_calls = 0;
};

// Whether a rendered prompt leaves the model to write a harmony message (gpt-oss templates end
// with "<|start|>assistant").
bool promptIsHarmony(std::string_view prompt);

// A model's output read the way its rendered prompt calls for: harmony messages (gpt-oss), or
// <think> blocks (opened by the prompt or by the model); with `split` off, all text is content.
class ChatOutputReader {
public:
    explicit ChatOutputReader(std::string_view renderedPrompt, bool split = true);

    OutputPiece push(std::string_view text);
    OutputPiece finish();
    bool harmony() const { return m_harmony.has_value(); }

private:
    bool m_split;
    std::optional<HarmonyParser> m_harmony;
    std::optional<ReasoningSplitter> m_think;
};

} // namespace hearth::tmpl
