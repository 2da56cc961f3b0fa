// OpenAI-style error bodies and the mapping from engine statuses to HTTP statuses.
#include "server/api_error.h"

namespace hearth::server {

nlohmann::ordered_json errorJson(const ApiError& error) {
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["message"] = error.message;
    e["type"] = error.type;
    e["param"] = error.param.empty() ? nlohmann::ordered_json(nullptr)
                                     : nlohmann::ordered_json(error.param);
    e["code"] = error.code.empty() ? nlohmann::ordered_json(nullptr)
                                   : nlohmann::ordered_json(error.code);
    nlohmann::ordered_json body = nlohmann::ordered_json::object();
    body["error"] = std::move(e);
    return body;
}

ApiError invalidRequest(std::string message, std::string param, std::string code) {
    ApiError e;
    e.status = 400;
    e.message = std::move(message);
    e.param = std::move(param);
    e.code = std::move(code);
    return e;
}

ApiError apiErrorFromStatus(const Status& status, std::string param) {
    ApiError e;
    e.message = status.message().empty() ? std::string(errorCodeName(status.code()))
                                         : status.message();
    e.param = std::move(param);
    switch (status.code()) {
    case ErrorCode::InvalidArgument:
    case ErrorCode::InvalidFormat:
    case ErrorCode::Unsupported:
        e.status = 400;
        e.code = "invalid_value";
        break;
    case ErrorCode::OutOfRange:
        e.status = 400;
        e.code = "context_length_exceeded";
        break;
    case ErrorCode::NotFound:
        e.status = 404;
        e.code = "not_found";
        break;
    case ErrorCode::Busy:
        e.status = 429;
        e.type = "rate_limit_error";
        e.code = "server_busy";
        break;
    case ErrorCode::Cancelled:
        e.status = 499;
        e.code = "cancelled";
        break;
    default:
        e.status = 500;
        e.type = "server_error";
        e.code = "internal_error";
        break;
    }
    return e;
}

std::string dumpJson(const nlohmann::ordered_json& json) {
    return json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace hearth::server
