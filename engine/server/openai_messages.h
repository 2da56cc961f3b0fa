// Validation and normalisation of chat messages and tool definitions for chat templates.
#pragma once

#include "server/json_fields.h"
#include "server/openai_request.h"

#include <optional>
#include <string>
#include <vector>

namespace hearth::server {

// Reads body["messages"] into `out` (roles checked, text parts joined, tool-call arguments
// parsed into objects for templates). With `images`, users' image_url parts (data URIs) become
// image markers in the text and their bytes go to `images`, in order; without, they are refused.
std::optional<ApiError> readMessages(const OJson& body, const ParseLimits& limits, OJson& out,
                                     std::vector<std::string>* images = nullptr);

// Reads body["tools"] and body["tool_choice"] into the request.
std::optional<ApiError> readTools(const OJson& body, const ParseLimits& limits,
                                  ChatCompletionRequest& request);

} // namespace hearth::server
