// Metadata that gives n values once for all or one by one (per-layer counts and flags), read in
// every type llama.cpp's loader takes for it: integer scalars and arrays of any width and
// signedness, booleans where a flag is meant.
#include "gguf/format.h"
#include "hearth/gguf.h"

#include <cstring>

namespace hearth::gguf {

namespace {

bool isInteger(ValueType t) {
    switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
    case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64: return true;
    default: return false;
    }
}

// An integer of any GGUF type without loss: its sign and magnitude.
struct Integer {
    bool negative = false;
    uint64_t magnitude = 0;
    std::string text() const { return (negative ? "-" : "") + std::to_string(magnitude); }
};

Integer fromSigned(int64_t v) {
    return v < 0 ? Integer{true, uint64_t(-(v + 1)) + 1} : Integer{false, uint64_t(v)};
}

template <typename T> T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

Integer elementAt(ValueType t, const uint8_t* p) {
    switch (t) {
    case ValueType::U8: return {false, load<uint8_t>(p)};
    case ValueType::U16: return {false, load<uint16_t>(p)};
    case ValueType::U32: return {false, load<uint32_t>(p)};
    case ValueType::U64: return {false, load<uint64_t>(p)};
    case ValueType::I8: return fromSigned(load<int8_t>(p));
    case ValueType::I16: return fromSigned(load<int16_t>(p));
    case ValueType::I32: return fromSigned(load<int32_t>(p));
    case ValueType::I64: return fromSigned(load<int64_t>(p));
    case ValueType::Bool: return {false, p[0] != 0 ? 1u : 0u};
    default: return {};
    }
}

// v's n values (a scalar repeated, or an array of exactly n) when its type is an integer, or a
// bool where allowed; nullopt otherwise.
std::optional<std::vector<Integer>> expand(const Value& v, size_t n, bool allowBool) {
    auto accepted = [&](ValueType t) { return isInteger(t) || (allowBool && t == ValueType::Bool); };
    if (!v.isArray()) {
        if (!accepted(v.type())) return std::nullopt;
        Integer x;
        if (const auto b = v.asBool()) x = {false, *b ? 1u : 0u};
        else if (const auto u = v.asUInt()) x = {false, *u};
        else x = fromSigned(*v.asInt());
        return std::vector<Integer>(n, x);
    }
    const std::vector<uint8_t>* bytes = v.rawArrayBytes();
    if (!bytes || !accepted(v.elementType()) || v.arraySize() != n) return std::nullopt;
    const size_t es = detail::scalarBytes(v.elementType());
    std::vector<Integer> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = elementAt(v.elementType(), bytes->data() + i * es);
    return out;
}

// "key" for a scalar, "key[i]" for an element of an array.
std::string where(std::string_view key, const Value& v, size_t i) {
    return std::string(key) + (v.isArray() ? "[" + std::to_string(i) + "]" : "");
}

} // namespace

std::string Value::typeDescription() const {
    if (!isArray()) return std::string(valueTypeName(m_type));
    return std::string(valueTypeName(m_elementType)) + "[" + std::to_string(arraySize()) + "]";
}

Result<std::vector<uint64_t>> File::getCounts(std::string_view key, size_t n, uint64_t maxValue) const {
    const Value* v = find(key);
    if (!v) return notFound("missing key '" + std::string(key) + "'");
    const auto values = expand(*v, n, false);
    if (!values)
        return invalidFormat(std::string(key) + " is " + v->typeDescription() + ", expected one integer or an integer array of " +
                             std::to_string(n));
    std::vector<uint64_t> out(n);
    for (size_t i = 0; i < n; ++i) {
        const Integer& x = (*values)[i];
        if (x.negative)
            return invalidFormat(where(key, *v, i) + " is " + x.text() + ", expected a count of 0.." + std::to_string(maxValue));
        if (x.magnitude > maxValue)
            return outOfRange(where(key, *v, i) + " is " + x.text() + ", over the largest count allowed (" +
                              std::to_string(maxValue) + ")");
        out[i] = x.magnitude;
    }
    return out;
}

Result<std::vector<bool>> File::getFlags(std::string_view key, size_t n) const {
    const Value* v = find(key);
    if (!v) return notFound("missing key '" + std::string(key) + "'");
    const auto values = expand(*v, n, true);
    if (!values)
        return invalidFormat(std::string(key) + " is " + v->typeDescription() +
                             ", expected one bool or integer, or a bool or integer array of " + std::to_string(n));
    std::vector<bool> out(n);
    for (size_t i = 0; i < n; ++i) {
        const Integer& x = (*values)[i];
        if (x.negative)
            return invalidFormat(where(key, *v, i) + " is " + x.text() + ", expected a flag (a bool, 0 or 1)");
        out[i] = x.magnitude != 0;
    }
    return out;
}

} // namespace hearth::gguf
