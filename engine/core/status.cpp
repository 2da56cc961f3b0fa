// Names and formatting for hearth::Status.
#include "hearth/status.h"

namespace hearth {

std::string_view errorCodeName(ErrorCode code) {
    switch (code) {
    case ErrorCode::Ok: return "ok";
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::InvalidFormat: return "invalid format";
    case ErrorCode::NotFound: return "not found";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::OutOfRange: return "out of range";
    case ErrorCode::IoError: return "i/o error";
    case ErrorCode::OutOfMemory: return "out of memory";
    case ErrorCode::Cancelled: return "cancelled";
    case ErrorCode::Busy: return "busy";
    case ErrorCode::Internal: return "internal error";
    }
    return "unknown error";
}

std::string Status::toString() const {
    if (isOk()) return "ok";
    std::string s(errorCodeName(m_code));
    s += ": ";
    s += m_message;
    return s;
}

Status Status::withContext(std::string_view context) const {
    if (isOk()) return *this;
    std::string m(context);
    m += ": ";
    m += m_message;
    return {m_code, std::move(m)};
}

} // namespace hearth
