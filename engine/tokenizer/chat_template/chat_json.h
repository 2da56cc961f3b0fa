// The engine's JSON side of chat requests: rendering from nlohmann values (engine code and tests),
// and the conversions between our chat types (hearth/chat_message.h) and template variables.
#pragma once

#include "hearth/chat_template.h"

#include <nlohmann/json.hpp>

#include <string>

namespace hearth::tmpl {

// ChatTemplate::render with the variables as a JSON value (an object, or null for none).
Result<std::string> renderJson(const ChatTemplate& chatTemplate, const nlohmann::ordered_json& variables,
                               const RenderOptions& options = {});

// The mapping a template sees for a message (rawJson parsed as it is). Throws nlohmann's
// exceptions for rawJson that is not JSON; callers guard.
nlohmann::ordered_json chatMessageJson(const ChatMessage& message);

// A message from a JSON object: the typed fields when the object has exactly their form,
// otherwise the object as rawJson.
ChatMessage chatMessageFromValue(const nlohmann::ordered_json& message);

// The variables a request renders with, in transformers' order: messages, tools, documents,
// add_generation_prompt, the special tokens, then the template kwargs (later keys override).
// JSON text in the request that does not parse is InvalidArgument.
Result<nlohmann::ordered_json> chatRequestVariables(const ChatRequest& request);

} // namespace hearth::tmpl
