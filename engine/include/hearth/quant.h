// Tensor element types as GGUF stores them (ggml type ids), their block layouts, scalar reference
// quantize/dequantize, and the named quantization mixes users pick (Q4_K_M, Q8_0, ...).
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hearth::quant {

// On-disk ids (the ggml_type numbering). Ids not listed here are rejected by the GGUF reader.
enum class Type : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

struct TypeInfo {
    Type type;
    std::string_view name;  // "Q4_K", as llama.cpp prints it
    uint32_t blockElems;    // elements per block (1 for plain floats/ints)
    uint32_t blockBytes;    // bytes per block
    bool canDequantize;     // we have a reference dequantizer for it
    bool canQuantize;       // we have a reference quantizer for it
};

// Known type by id, or nullptr for an id that is not a known ggml type.
const TypeInfo* typeInfo(uint32_t rawId);
inline const TypeInfo* typeInfo(Type t) { return typeInfo(static_cast<uint32_t>(t)); }
std::string_view typeName(Type t); // "?" for unknown
// Case-insensitive lookup by name ("q4_k", "F16", "bf16").
std::optional<Type> typeFromName(std::string_view name);
std::span<const TypeInfo> allTypes();

// Bytes used by n elements of type t. Errors: unknown type, n not a multiple of the block size,
// or a size that overflows 64 bits.
Result<uint64_t> rowBytes(Type t, uint64_t n);

// Scalar reference conversions of one row of n elements (n a multiple of the block size).
// These are the oracle every optimized kernel is tested against.
Status dequantizeRow(Type t, const void* src, float* dst, int64_t n);
Status quantizeRow(Type t, const float* src, void* dst, int64_t n);

// Quantize nRows rows of rowLen elements each (src is row-major float), splitting rows over
// `threads` threads. dst must hold nRows * rowBytes(t, rowLen) bytes.
Status quantizeRows(Type t, const float* src, void* dst, int64_t nRows, int64_t rowLen,
                    int threads = 1);

// Importance-weighted quantization (llama.cpp's imatrix): `importance` holds one non-negative
// weight per column of the row (n values; the mean squared activation of that input channel).
// Types whose ggml quantizer takes one: Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K..Q6_K,
// IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M (the
// bytes are ggml_quantize_chunk's with that imatrix); others ignore it (takesImportance() says).
// importance == nullptr is quantizeRow.
bool takesImportance(Type t);
// Types llama.cpp refuses to produce without an importance matrix (IQ1_*, IQ2_*, IQ3_XXS).
bool requiresImportance(Type t);
Status quantizeRowWeighted(Type t, const float* src, void* dst, int64_t n, const float* importance);

// Half-precision conversions (IEEE binary16 and bfloat16), round to nearest even.
float f16ToF32(uint16_t h);
uint16_t f32ToF16(float f);
float bf16ToF32(uint16_t h);
uint16_t f32ToBf16(float f);

// ---- Quantization mixes ----------------------------------------------------------------------

// What the mix needs to know about a tensor to pick its type.
struct TensorRole {
    std::string_view name; // GGUF tensor name, e.g. "blk.3.ffn_down.weight"
    uint64_t ne0 = 0;      // row length (innermost dimension)
    uint32_t nDims = 0;    // 1 for norms and biases
    uint32_t nLayers = 0;  // block_count of the model
    uint32_t gqa = 1;      // attention heads per KV head
    uint32_t nExpert = 0;  // experts per MoE layer (<arch>.expert_count); 0 for dense models
    bool hasOutput = true; // false when the output projection is tied to token_embd
    bool hasImatrix = false; // quantizing with an importance matrix (llama.cpp's rules change)
};

// A named recipe: a default type plus rules for tensors that deserve more (or fewer) bits.
struct Mix {
    std::string_view name; // "Q4_K_M"
    Type baseType;         // type of most 2-D weights
    uint32_t fileType;     // value for general.file_type (llama_ftype numbering)
};

// Mix by name ("Q4_K_M", "q8_0", "F16", ...). A plain type name is a mix of that type alone.
std::optional<Mix> mixFromName(std::string_view name);
std::span<const Mix> allMixes();

// The type the mix gives this tensor. 1-D tensors stay F32; rows whose length is not a multiple
// of the chosen type's block fall back to a type whose block divides them.
Type chooseType(const Mix& mix, const TensorRole& role);

} // namespace hearth::quant
