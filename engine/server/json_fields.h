// Typed reads of optional request fields with OpenAI-style error messages naming the parameter.
#pragma once

#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

using OJson = nlohmann::ordered_json;

// Each reader leaves `out` alone when the field is absent or null, and returns an error naming
// `param` when the value has the wrong type or lies outside [lo, hi].
std::optional<ApiError> readBool(const OJson& obj, const char* key, bool& out,
                                 std::string_view param = {});
std::optional<ApiError> readInt(const OJson& obj, const char* key, int64_t lo, int64_t hi,
                                int64_t& out, std::string_view param = {});
std::optional<ApiError> readFloat(const OJson& obj, const char* key, double lo, double hi,
                                  float& out, std::string_view param = {});
std::optional<ApiError> readString(const OJson& obj, const char* key, std::string& out,
                                   std::string_view param = {});

// A list of stop strings at obj[key] (absent or null: left alone): an array of at most maxCount
// non-empty strings of at most maxBytes each, or with allowSingle one such string. Errors name
// `param`, and an element as param[i] (dotIndex: param.i, Anthropic's style).
std::optional<ApiError> readStopStrings(const OJson& obj, const char* key, const std::string& param,
                                        bool allowSingle, bool dotIndex, size_t maxCount, size_t maxBytes,
                                        std::vector<std::string>& out);

// The field's value when present and not null.
const OJson* field(const OJson& obj, const char* key);

// "integer", "string", ... as JSON Schema names a value's type, for messages.
const char* jsonTypeName(const OJson& value);

// An integral number as int64 (integers, or floats with no fractional part); false otherwise.
bool asInteger(const OJson& value, int64_t& out);

} // namespace hearth::server
