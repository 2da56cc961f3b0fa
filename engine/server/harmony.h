// gpt-oss's harmony output read while it streams: messages of channels (analysis: reasoning;
// final and plain commentary: the answer; commentary addressed to functions.NAME: a tool call
// whose arguments are the message body), separated by <|end|> and <|start|>assistant headers.
#pragma once

#include "server/tool_call_stream.h"

#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

struct HarmonyPiece {
    std::string reasoning;
    std::string content;
    std::vector<ToolCallDelta> calls; // a call's first delta names it; later ones extend its arguments
};

class HarmonyParser {
public:
    HarmonyPiece push(std::string_view text);
    HarmonyPiece finish();
    int numCalls() const { return m_calls; }

private:
    enum class Mode { Start, Header, Body, Plain };
    enum class Route { Reasoning, Content, Call };
    HarmonyPiece drain(bool final);
    void startBody(const std::string& header, HarmonyPiece& out);
    void emit(std::string_view text, HarmonyPiece& out);

    Mode m_mode = Mode::Start;
    Route m_route = Route::Content;
    std::string m_pending;
    int m_calls = 0;
};

// Whether a rendered prompt leaves the model to write a harmony message (gpt-oss templates end
// with "<|start|>assistant").
bool promptIsHarmony(std::string_view prompt);

} // namespace hearth::server
