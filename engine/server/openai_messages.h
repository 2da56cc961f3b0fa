// Validation and normalisation of chat messages and tool definitions for chat templates.
#pragma once

#include "server/json_fields.h"
#include "server/openai_request.h"

#include <optional>

namespace hearth::server {

// Reads body["messages"] into `out` (roles checked, text parts joined, tool-call arguments
// parsed into objects for templates).
std::optional<ApiError> readMessages(const OJson& body, const ParseLimits& limits, OJson& out);

// Reads body["tools"] and body["tool_choice"] into the request.
std::optional<ApiError> readTools(const OJson& body, const ParseLimits& limits,
                                  ChatCompletionRequest& request);

} // namespace hearth::server
