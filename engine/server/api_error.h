// OpenAI-style API errors: the HTTP status plus the {"error": {...}} body clients parse, and a
// small value-or-error type for the parsing layer.
#pragma once

#include "hearth/status.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <variant>

namespace hearth::server {

struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param; // empty: null
    std::string code;  // empty: null
};

// {"error": {"message", "type", "param", "code"}}
nlohmann::ordered_json errorJson(const ApiError& error);

// A 400 invalid_request_error naming the offending parameter.
ApiError invalidRequest(std::string message, std::string param = {},
                        std::string code = "invalid_value");

// Maps an engine Status onto the HTTP status a client should see: InvalidArgument and
// OutOfRange are the client's (400), Busy is 429, NotFound 404, everything else is ours (500).
ApiError apiErrorFromStatus(const Status& status, std::string param = {});

// Compact JSON text that never throws (invalid UTF-8 becomes U+FFFD).
std::string dumpJson(const nlohmann::ordered_json& json);

// A value, or the ApiError explaining why there is none.
template <typename T> class ApiResult {
public:
    ApiResult(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
    ApiResult(ApiError error) : m_v(std::in_place_index<1>, std::move(error)) {}
    bool isOk() const { return m_v.index() == 0; }
    explicit operator bool() const { return isOk(); }
    T& value() { return std::get<0>(m_v); }
    const T& value() const { return std::get<0>(m_v); }
    T* operator->() { return &std::get<0>(m_v); }
    const T* operator->() const { return &std::get<0>(m_v); }
    T& operator*() { return std::get<0>(m_v); }
    const T& operator*() const { return std::get<0>(m_v); }
    const ApiError& error() const { return std::get<1>(m_v); }

private:
    std::variant<T, ApiError> m_v;
};

} // namespace hearth::server
