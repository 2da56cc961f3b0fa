// Error values for the engine: Status for "did it work, and if not why", Result<T> for a value
// or the Status that explains its absence. The engine never aborts on bad input; it returns these.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace hearth {

enum class ErrorCode {
    Ok = 0,
    InvalidArgument, // a caller passed something that cannot be right (bad option, bad shape)
    InvalidFormat,   // a file or message does not follow its format (malformed GGUF, bad JSON)
    NotFound,        // a key, tensor, file or model that does not exist
    Unsupported,     // valid input that this build does not handle (unknown quant type, arch)
    OutOfRange,      // a number too large or small for where it is used
    IoError,         // the operating system refused (open, read, write, mmap)
    OutOfMemory,     // an allocation failed or would exceed a budget
    Cancelled,       // the work was stopped on request
    Busy,            // a queue or pool is full right now; trying again later may work
    Internal,        // a broken invariant inside the engine (a bug, reported not crashed)
};

// A short lower-case name for a code, e.g. "invalid format".
std::string_view errorCodeName(ErrorCode code);

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(ErrorCode code, std::string message) : m_code(code), m_message(std::move(message)) {}

    static Status ok() { return {}; }

    bool isOk() const { return m_code == ErrorCode::Ok; }
    explicit operator bool() const { return isOk(); }
    ErrorCode code() const { return m_code; }
    const std::string& message() const { return m_message; }

    // "invalid format: tensor 'x' data runs past the end of the file"
    std::string toString() const;

    // Returns a copy whose message is "<context>: <message>"; useful when passing errors upward.
    Status withContext(std::string_view context) const;

private:
    ErrorCode m_code = ErrorCode::Ok;
    std::string m_message;
};

inline Status invalidArgument(std::string m) { return {ErrorCode::InvalidArgument, std::move(m)}; }
inline Status invalidFormat(std::string m) { return {ErrorCode::InvalidFormat, std::move(m)}; }
inline Status notFound(std::string m) { return {ErrorCode::NotFound, std::move(m)}; }
inline Status unsupported(std::string m) { return {ErrorCode::Unsupported, std::move(m)}; }
inline Status outOfRange(std::string m) { return {ErrorCode::OutOfRange, std::move(m)}; }
inline Status ioError(std::string m) { return {ErrorCode::IoError, std::move(m)}; }
inline Status outOfMemory(std::string m) { return {ErrorCode::OutOfMemory, std::move(m)}; }
inline Status busy(std::string m) { return {ErrorCode::Busy, std::move(m)}; }
inline Status internalError(std::string m) { return {ErrorCode::Internal, std::move(m)}; }

// A value of type T, or the Status saying why there is none. Construct from either.
template <typename T> class [[nodiscard]] Result {
public:
    Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}
    Result(Status status) : m_v(std::in_place_index<1>, std::move(status)) {
        assert(!std::get<1>(m_v).isOk() && "Result built from an ok Status has no value");
        if (std::get<1>(m_v).isOk())
            std::get<1>(m_v) = internalError("Result constructed from an ok Status");
    }

    bool isOk() const { return m_v.index() == 0; }
    explicit operator bool() const { return isOk(); }

    // The status: ok when a value is held.
    Status status() const { return isOk() ? Status::ok() : std::get<1>(m_v); }

    T& value() & { return std::get<0>(m_v); }
    const T& value() const& { return std::get<0>(m_v); }
    T&& value() && { return std::get<0>(std::move(m_v)); }
    T* operator->() { return &std::get<0>(m_v); }
    const T* operator->() const { return &std::get<0>(m_v); }
    T& operator*() & { return std::get<0>(m_v); }
    const T& operator*() const& { return std::get<0>(m_v); }

private:
    std::variant<T, Status> m_v;
};

} // namespace hearth

// Return early from a function returning Status or Result<T> when a Status is not ok.
#define HEARTH_RETURN_IF_ERROR(expr)                                                               \
    do {                                                                                           \
        ::hearth::Status hearth_status_ = (expr);                                                  \
        if (!hearth_status_.isOk()) return hearth_status_;                                         \
    } while (0)

#define HEARTH_CONCAT_INNER_(a, b) a##b
#define HEARTH_CONCAT_(a, b) HEARTH_CONCAT_INNER_(a, b)

// HEARTH_ASSIGN_OR_RETURN(auto x, makeX()); declares x from a Result or returns its Status.
#define HEARTH_ASSIGN_OR_RETURN(decl, expr)                                                        \
    HEARTH_ASSIGN_OR_RETURN_IMPL_(HEARTH_CONCAT_(hearth_result_, __LINE__), decl, expr)
#define HEARTH_ASSIGN_OR_RETURN_IMPL_(tmp, decl, expr)                                             \
    auto tmp = (expr);                                                                             \
    if (!tmp.isOk()) return tmp.status();                                                          \
    decl = std::move(tmp).value()
