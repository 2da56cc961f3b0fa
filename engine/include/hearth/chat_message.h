// The messages of a chat as chat templates see them, in our own types (no JSON library in the API).
// A message becomes the mapping transformers' templates expect, keys in this order:
//   {"role", "content", "reasoning_content", "tool_calls", "name", "tool_call_id"}
// where content is a string or null, and the keys after content appear only when set. A tool
// call is {"id", "type": "function", "function": {"name", "arguments"}} ("id" only when set).
// Messages that these fields cannot express (content parts, other keys, another key order) are
// carried whole as JSON text.
#pragma once

#include "hearth/status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::tmpl {

struct ChatToolCall {
    std::string id; // empty: the call has no "id"
    std::string name;
    // The arguments as JSON text (as the model or the client wrote them). Templates see the parsed
    // value ({"city": "Paris"} is a mapping), the text itself as a string when it is not JSON, and
    // an empty mapping when it is empty.
    std::string arguments;
};

struct ChatMessage {
    std::string role;
    std::optional<std::string> content = std::string(); // nullopt: null (a turn of tool calls only)
    std::string reasoning;                // "reasoning_content"; empty: none
    std::vector<ChatToolCall> toolCalls;  // empty: no "tool_calls"
    std::string name;                     // empty: none
    std::string toolCallId;               // "tool_call_id"; empty: none
    // Non-empty: the whole message as this JSON object text, given to the template as it is; the
    // fields above are then not used.
    std::string rawJson;
};

// A message from a JSON object's text: the fields above when the object has exactly their form
// (the keys, their order and their types as described at the top), otherwise the text as rawJson,
// so that the template sees the object unchanged. Text that is not a JSON object is an error.
Result<ChatMessage> chatMessageFromJson(std::string_view json);

} // namespace hearth::tmpl
