// gguf::Value: construction, lossless conversions and display of metadata values.
#include "gguf/format.h"
#include "hearth/gguf.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace hearth::gguf {

namespace {

bool isUnsigned(ValueType t) {
    return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}
bool isSigned(ValueType t) {
    return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}

template <typename T> T loadLe(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Reads element i of a raw numeric array as a signed 128-bit-safe pair (negative flag, magnitude).
bool elementAsInt(ValueType t, const uint8_t* p, int64_t& out, bool& fitsInt64, uint64_t& uout) {
    // Every output is set on every path (GCC 12 -O3 otherwise warns at the callers).
    out = 0;
    uout = 0;
    fitsInt64 = true;
    switch (t) {
    case ValueType::U8: out = loadLe<uint8_t>(p); break;
    case ValueType::I8: out = loadLe<int8_t>(p); break;
    case ValueType::U16: out = loadLe<uint16_t>(p); break;
    case ValueType::I16: out = loadLe<int16_t>(p); break;
    case ValueType::U32: out = loadLe<uint32_t>(p); break;
    case ValueType::I32: out = loadLe<int32_t>(p); break;
    case ValueType::I64: out = loadLe<int64_t>(p); break;
    case ValueType::U64:
        uout = loadLe<uint64_t>(p);
        fitsInt64 = uout <= uint64_t(std::numeric_limits<int64_t>::max());
        out = int64_t(uout);
        return true;
    default: return false;
    }
    uout = uint64_t(out);
    return true;
}

} // namespace

std::string_view valueTypeName(ValueType t) {
    switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::Bool: return "bool";
    case ValueType::String: return "string";
    case ValueType::Array: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
    }
    return "unknown";
}

Value Value::u8(uint8_t v) { Value x; x.m_type = ValueType::U8; x.m_data = uint64_t(v); return x; }
Value Value::u16(uint16_t v) { Value x; x.m_type = ValueType::U16; x.m_data = uint64_t(v); return x; }
Value Value::u32(uint32_t v) { Value x; x.m_type = ValueType::U32; x.m_data = uint64_t(v); return x; }
Value Value::u64(uint64_t v) { Value x; x.m_type = ValueType::U64; x.m_data = v; return x; }
Value Value::i8(int8_t v) { Value x; x.m_type = ValueType::I8; x.m_data = int64_t(v); return x; }
Value Value::i16(int16_t v) { Value x; x.m_type = ValueType::I16; x.m_data = int64_t(v); return x; }
Value Value::i32(int32_t v) { Value x; x.m_type = ValueType::I32; x.m_data = int64_t(v); return x; }
Value Value::i64(int64_t v) { Value x; x.m_type = ValueType::I64; x.m_data = v; return x; }
Value Value::f32(float v) { Value x; x.m_type = ValueType::F32; x.m_data = double(v); return x; }
Value Value::f64(double v) { Value x; x.m_type = ValueType::F64; x.m_data = v; return x; }
Value Value::boolean(bool v) { Value x; x.m_type = ValueType::Bool; x.m_data = v; return x; }

Value Value::string(std::string v) {
    Value x;
    x.m_type = ValueType::String;
    x.m_data = std::move(v);
    return x;
}

Value Value::stringArray(std::vector<std::string> v) {
    Value x;
    x.m_type = ValueType::Array;
    x.m_elementType = ValueType::String;
    x.m_data = std::move(v);
    return x;
}

Value Value::numericArray(ValueType elementType, std::vector<uint8_t> bytes) {
    Value x;
    x.m_type = ValueType::Array;
    x.m_elementType = elementType;
    x.m_data = std::move(bytes);
    return x;
}

template <typename T> static std::vector<uint8_t> toBytes(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

Value Value::f32Array(std::vector<float> v) { return numericArray(ValueType::F32, toBytes(v)); }
Value Value::i32Array(std::vector<int32_t> v) { return numericArray(ValueType::I32, toBytes(v)); }
Value Value::u32Array(std::vector<uint32_t> v) { return numericArray(ValueType::U32, toBytes(v)); }

uint64_t Value::arraySize() const {
    if (m_type != ValueType::Array) return 0;
    if (m_elementType == ValueType::String)
        return std::get<std::vector<std::string>>(m_data).size();
    const size_t es = detail::scalarBytes(m_elementType);
    return es ? std::get<std::vector<uint8_t>>(m_data).size() / es : 0;
}

std::optional<uint64_t> Value::asUInt() const {
    if (isUnsigned(m_type)) return std::get<uint64_t>(m_data);
    if (isSigned(m_type)) {
        const int64_t v = std::get<int64_t>(m_data);
        if (v >= 0) return uint64_t(v);
    }
    return std::nullopt;
}

std::optional<int64_t> Value::asInt() const {
    if (isSigned(m_type)) return std::get<int64_t>(m_data);
    if (isUnsigned(m_type)) {
        const uint64_t v = std::get<uint64_t>(m_data);
        if (v <= uint64_t(std::numeric_limits<int64_t>::max())) return int64_t(v);
    }
    return std::nullopt;
}

std::optional<double> Value::asFloat() const {
    if (m_type == ValueType::F32 || m_type == ValueType::F64) return std::get<double>(m_data);
    return std::nullopt;
}

std::optional<bool> Value::asBool() const {
    if (m_type == ValueType::Bool) return std::get<bool>(m_data);
    return std::nullopt;
}

const std::string* Value::asString() const {
    return m_type == ValueType::String ? &std::get<std::string>(m_data) : nullptr;
}

const std::vector<std::string>* Value::asStringArray() const {
    if (m_type != ValueType::Array || m_elementType != ValueType::String) return nullptr;
    return &std::get<std::vector<std::string>>(m_data);
}

const std::vector<uint8_t>* Value::rawArrayBytes() const {
    if (m_type != ValueType::Array || m_elementType == ValueType::String) return nullptr;
    return &std::get<std::vector<uint8_t>>(m_data);
}

std::optional<std::vector<float>> Value::asF32Array() const {
    const std::vector<uint8_t>* b = rawArrayBytes();
    if (!b || m_elementType != ValueType::F32) return std::nullopt;
    std::vector<float> out(b->size() / 4);
    if (!out.empty()) std::memcpy(out.data(), b->data(), out.size() * 4);
    return out;
}

std::optional<std::vector<int32_t>> Value::asI32Array() const {
    const std::vector<uint8_t>* b = rawArrayBytes();
    if (!b) return std::nullopt;
    const size_t es = detail::scalarBytes(m_elementType);
    if (m_elementType == ValueType::F32 || m_elementType == ValueType::F64 ||
        m_elementType == ValueType::Bool)
        return std::nullopt;
    std::vector<int32_t> out(b->size() / es);
    for (size_t i = 0; i < out.size(); ++i) {
        int64_t v;
        uint64_t u;
        bool fits;
        elementAsInt(m_elementType, b->data() + i * es, v, fits, u);
        if (!fits || v < std::numeric_limits<int32_t>::min() ||
            v > std::numeric_limits<int32_t>::max())
            return std::nullopt;
        out[i] = int32_t(v);
    }
    return out;
}

std::optional<std::vector<uint64_t>> Value::asUIntArray() const {
    const std::vector<uint8_t>* b = rawArrayBytes();
    if (!b) return std::nullopt;
    if (m_elementType == ValueType::F32 || m_elementType == ValueType::F64 ||
        m_elementType == ValueType::Bool)
        return std::nullopt;
    const size_t es = detail::scalarBytes(m_elementType);
    std::vector<uint64_t> out(b->size() / es);
    for (size_t i = 0; i < out.size(); ++i) {
        int64_t v;
        uint64_t u;
        bool fits;
        elementAsInt(m_elementType, b->data() + i * es, v, fits, u);
        if (isSigned(m_elementType) && v < 0) return std::nullopt;
        out[i] = u;
    }
    return out;
}

std::string Value::toDisplayString(size_t maxItems) const {
    std::ostringstream os;
    switch (m_type) {
    case ValueType::String: {
        const std::string& s = std::get<std::string>(m_data);
        if (s.size() > 120)
            os << '"' << s.substr(0, 117) << "...\" (" << s.size() << " bytes)";
        else
            os << '"' << s << '"';
        break;
    }
    case ValueType::Bool: os << (std::get<bool>(m_data) ? "true" : "false"); break;
    case ValueType::F32:
    case ValueType::F64: os << std::get<double>(m_data); break;
    case ValueType::Array: {
        const uint64_t n = arraySize();
        if (n > maxItems) {
            os << "[" << n << " " << valueTypeName(m_elementType)
               << (m_elementType == ValueType::String ? "s]" : " values]");
            break;
        }
        os << "[";
        if (const auto* strings = asStringArray()) {
            for (size_t i = 0; i < strings->size(); ++i)
                os << (i ? ", " : "") << '"' << (*strings)[i] << '"';
        } else {
            const auto& b = std::get<std::vector<uint8_t>>(m_data);
            const size_t es = detail::scalarBytes(m_elementType);
            for (size_t i = 0; i < n; ++i) {
                os << (i ? ", " : "");
                const uint8_t* p = b.data() + i * es;
                if (m_elementType == ValueType::F32)
                    os << loadLe<float>(p);
                else if (m_elementType == ValueType::F64)
                    os << loadLe<double>(p);
                else if (m_elementType == ValueType::Bool)
                    os << (p[0] ? "true" : "false");
                else {
                    int64_t v;
                    uint64_t u;
                    bool fits;
                    elementAsInt(m_elementType, p, v, fits, u);
                    if (fits) os << v; else os << u;
                }
            }
        }
        os << "]";
        break;
    }
    default:
        if (isUnsigned(m_type)) os << std::get<uint64_t>(m_data);
        else os << std::get<int64_t>(m_data);
    }
    return os.str();
}

} // namespace hearth::gguf
