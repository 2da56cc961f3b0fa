// GGUF format constants and overflow-checked size arithmetic shared by the reader and writer.
#pragma once

#include "hearth/gguf.h"

#include <cstdint>
#include <optional>

namespace hearth::gguf::detail {

inline constexpr uint32_t kMagic = 0x46554747u; // "GGUF" read as a little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr size_t kMaxTensorName = 64;    // ggml's GGML_MAX_NAME, terminator included

inline std::optional<uint64_t> checkedAdd(uint64_t a, uint64_t b) {
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<uint64_t> checkedMul(uint64_t a, uint64_t b) {
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// Rounds x up to a multiple of `align` (a power of two).
inline std::optional<uint64_t> checkedPad(uint64_t x, uint64_t align) {
    auto s = checkedAdd(x, align - 1);
    if (!s) return std::nullopt;
    return *s & ~(align - 1);
}

// Bytes of one scalar of a metadata value type; 0 for string/array/unknown.
inline size_t scalarBytes(ValueType t) {
    switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::Bool: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64: return 8;
    default: return 0;
    }
}

inline bool isKnownValueType(uint32_t t) { return t <= uint32_t(ValueType::F64); }

} // namespace hearth::gguf::detail
