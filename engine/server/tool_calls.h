// The server's side of tool calls: the parser (hearth/tool_calls.h) under the server's names, and
// what streaming and the dialects need besides (holding back text that may become a call, call
// ids, cut arguments closed into objects).
#pragma once

#include "hearth/tool_calls.h"

#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

using hearth::ToolCall;
using hearth::ToolCallParse;
using hearth::parseToolCalls;

// While streaming: true when `text` (so far) might still turn into a tool call, so it should be
// held back rather than sent as content.
bool mightBeToolCall(std::string_view text);

std::string newToolCallId();

// Arguments as far as written (a call cut short) closed into a JSON object: the longest prefix
// that ends a value, its open strings and brackets closed, as compact JSON text; "{}" when
// nothing of it reads as an object. Complete arguments come back as they are (compacted). For
// dialects whose calls carry objects (Ollama's arguments, Anthropic's input).
std::string closedJsonObject(std::string_view text);

} // namespace hearth::server
