// Typed reads of optional request fields with OpenAI-style error messages naming the parameter.
#include "server/json_fields.h"

#include <cmath>

namespace hearth::server {

namespace {

std::string paramName(const char* key, std::string_view param) {
    return param.empty() ? std::string(key) : std::string(param);
}

ApiError wrongType(const char* key, std::string_view param, const char* want, const OJson& got) {
    const std::string p = paramName(key, param);
    return invalidRequest("'" + p + "' must be " + want + ", got " + jsonTypeName(got), p,
                          "invalid_type");
}

} // namespace

const OJson* field(const OJson& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

const char* jsonTypeName(const OJson& value) {
    switch (value.type()) {
    case OJson::value_t::null: return "null";
    case OJson::value_t::boolean: return "boolean";
    case OJson::value_t::number_integer:
    case OJson::value_t::number_unsigned: return "integer";
    case OJson::value_t::number_float: return "number";
    case OJson::value_t::string: return "string";
    case OJson::value_t::array: return "array";
    case OJson::value_t::object: return "object";
    default: return "unknown";
    }
}

bool asInteger(const OJson& value, int64_t& out) {
    if (value.is_number_integer() && !value.is_number_unsigned()) {
        out = value.get<int64_t>();
        return true;
    }
    if (value.is_number_unsigned()) {
        const uint64_t u = value.get<uint64_t>();
        if (u > uint64_t(INT64_MAX)) return false;
        out = int64_t(u);
        return true;
    }
    if (value.is_number_float()) {
        const double d = value.get<double>();
        if (!std::isfinite(d) || std::floor(d) != d || d < -9.2e18 || d > 9.2e18) return false;
        out = int64_t(d);
        return true;
    }
    return false;
}

std::optional<ApiError> readBool(const OJson& obj, const char* key, bool& out,
                                 std::string_view param) {
    const OJson* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) return wrongType(key, param, "a boolean", *v);
    out = v->get<bool>();
    return std::nullopt;
}

std::optional<ApiError> readInt(const OJson& obj, const char* key, int64_t lo, int64_t hi,
                                int64_t& out, std::string_view param) {
    const OJson* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) return wrongType(key, param, "an integer", *v);
    int64_t x = 0;
    const std::string p = paramName(key, param);
    if (!asInteger(*v, x)) {
        if (v->is_number_float() && std::isfinite(v->get<double>()) &&
            std::floor(v->get<double>()) != v->get<double>())
            return invalidRequest("'" + p + "' must be an integer", p, "invalid_type");
        return invalidRequest("'" + p + "' is out of range [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "]",
                              p);
    }
    if (x < lo || x > hi)
        return invalidRequest("'" + p + "' must be between " + std::to_string(lo) + " and " +
                                  std::to_string(hi) + ", got " + std::to_string(x),
                              p);
    out = x;
    return std::nullopt;
}

std::optional<ApiError> readFloat(const OJson& obj, const char* key, double lo, double hi,
                                  float& out, std::string_view param) {
    const OJson* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) return wrongType(key, param, "a number", *v);
    const double d = v->get<double>();
    const std::string p = paramName(key, param);
    if (!std::isfinite(d) || d < lo || d > hi) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "' must be between %g and %g", lo, hi);
        return invalidRequest("'" + p + buf, p);
    }
    out = float(d);
    return std::nullopt;
}

std::optional<ApiError> readString(const OJson& obj, const char* key, std::string& out,
                                   std::string_view param) {
    const OJson* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) return wrongType(key, param, "a string", *v);
    out = v->get<std::string>();
    return std::nullopt;
}

std::optional<ApiError> readStopStrings(const OJson& obj, const char* key, const std::string& param,
                                        bool allowSingle, bool dotIndex, size_t maxCount, size_t maxBytes,
                                        std::vector<std::string>& out) {
    const OJson* v = field(obj, key);
    if (!v) return std::nullopt;
    auto one = [&](const OJson& s, const std::string& name) -> std::optional<ApiError> {
        if (!s.is_string())
            return invalidRequest("'" + name + "' must be a string, got " + jsonTypeName(s), name, "invalid_type");
        const std::string& str = s.get_ref<const std::string&>();
        if (str.empty()) return invalidRequest("'" + name + "' must not be empty", name);
        if (str.size() > maxBytes)
            return invalidRequest("'" + name + "' is longer than " + std::to_string(maxBytes) + " bytes", name);
        out.push_back(str);
        return std::nullopt;
    };
    if (allowSingle && v->is_string()) return one(*v, param);
    if (!v->is_array())
        return invalidRequest("'" + param + "' must be " +
                                  (allowSingle ? "a string or an array of strings" : "an array of strings") +
                                  ", got " + jsonTypeName(*v),
                              param, "invalid_type");
    if (v->size() > maxCount)
        return invalidRequest("'" + param + "' has more than " + std::to_string(maxCount) + " entries", param);
    for (size_t i = 0; i < v->size(); ++i) {
        const std::string name = dotIndex ? param + "." + std::to_string(i) : param + "[" + std::to_string(i) + "]";
        if (auto e = one((*v)[i], name)) return e;
    }
    return std::nullopt;
}

} // namespace hearth::server
