// GGUF files: a validating reader (memory-mapped, every size checked, hostile input safe) and a
// writer whose output the reader round-trips byte for byte.
//
// Layout (little-endian): "GGUF" u32 version (2 or 3) | u64 tensor_count | u64 kv_count |
// kv_count x (string key, u32 type, value) | tensor_count x (string name, u32 n_dims,
// u64 ne[n_dims], u32 type, u64 offset) | zero padding to `general.alignment` (default 32) |
// tensor data, each tensor at its offset from the data start, aligned.
// A string is u64 byte length + bytes (no NUL). An array is u32 element type + u64 count + elements.
#pragma once

#include "hearth/quant.h"
#include "hearth/status.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace hearth::gguf {

enum class ValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

std::string_view valueTypeName(ValueType t); // "u32", "string", "array", ...

// One metadata value: a scalar, a string, or an array of scalars or strings (one element type).
// It keeps its exact on-disk type so that files round-trip byte for byte.
class Value {
public:
    Value() = default;
    static Value u8(uint8_t v);
    static Value i8(int8_t v);
    static Value u16(uint16_t v);
    static Value i16(int16_t v);
    static Value u32(uint32_t v);
    static Value i32(int32_t v);
    static Value u64(uint64_t v);
    static Value i64(int64_t v);
    static Value f32(float v);
    static Value f64(double v);
    static Value boolean(bool v);
    static Value string(std::string v);
    static Value stringArray(std::vector<std::string> v);
    static Value f32Array(std::vector<float> v);
    static Value i32Array(std::vector<int32_t> v);
    static Value u32Array(std::vector<uint32_t> v);
    // Numeric array of any scalar element type from its little-endian bytes.
    static Value numericArray(ValueType elementType, std::vector<uint8_t> bytes);

    ValueType type() const { return m_type; }
    ValueType elementType() const { return m_elementType; } // for arrays
    bool isArray() const { return m_type == ValueType::Array; }
    uint64_t arraySize() const;

    // Scalar reads that convert only when no information is lost; nullopt otherwise.
    std::optional<uint64_t> asUInt() const; // any integer type, non-negative
    std::optional<int64_t> asInt() const;   // any integer type that fits
    std::optional<double> asFloat() const;  // f32 or f64
    std::optional<bool> asBool() const;
    const std::string* asString() const;

    // Array reads; nullptr / empty optional when the element type differs.
    const std::vector<std::string>* asStringArray() const;
    std::optional<std::vector<float>> asF32Array() const;   // f32 elements
    std::optional<std::vector<int32_t>> asI32Array() const; // i32 (or smaller int) elements
    std::optional<std::vector<uint64_t>> asUIntArray() const; // any non-negative integer elements
    const std::vector<uint8_t>* rawArrayBytes() const;       // numeric arrays: element bytes

    // Short human-readable rendering; long arrays are summarised ("[32000 strings]").
    std::string toDisplayString(size_t maxItems = 8) const;

private:
    ValueType m_type = ValueType::U8;
    ValueType m_elementType = ValueType::U8;
    // scalar ints as u64/i64 bit patterns, floats as double, strings, string arrays,
    // numeric arrays as raw little-endian element bytes.
    std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<std::string>,
                 std::vector<uint8_t>>
        m_data = uint64_t{0};
};

struct KeyValue {
    std::string key;
    Value value;
};

struct TensorInfo {
    std::string name;
    quant::Type type = quant::Type::F32;
    uint32_t nDims = 0;
    std::array<uint64_t, 4> ne{1, 1, 1, 1}; // ne[0] is the contiguous (row) dimension
    uint64_t offset = 0;                    // from the start of the data section
    uint64_t bytes = 0;                     // size of the tensor's data
    uint64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; } // validated not to overflow
    std::string shapeString() const;        // "[256, 512]"
};

struct ReadOptions {
    // Caps against hostile files; a file that needs more is rejected with a clear error.
    uint64_t maxStringBytes = 64ull << 20;      // one string
    uint64_t maxArrayElements = 64ull << 20;    // one array
    uint64_t maxMetadataCount = 1ull << 20;     // kv pairs
    uint64_t maxTensorCount = 1ull << 20;       // tensors
    uint32_t maxAlignment = 1u << 20;           // general.alignment
    bool requireTensorData = true;              // tensor data must lie inside the file
    // true: map the file (pages load on first use and can be dropped under memory pressure);
    // false: read it whole into memory now (slower to open, no page faults later).
    bool useMmap = true;
};

// Copies of a File's bytes that leave its mapping alone: pread from the file (its own descriptor)
// when the File maps it, a plain copy when the data is in memory. For data read a little at a
// time, such as one embedding row per token, that would otherwise keep the mapped pages around
// each read resident (a whole 2 MiB when the page cache holds the file in huge pages).
class DataReader {
public:
    DataReader(int fd, const uint8_t* base, uint64_t size) : m_fd(fd), m_base(base), m_size(size) {}
    DataReader(const DataReader&) = delete;
    DataReader& operator=(const DataReader&) = delete;
    ~DataReader();
    // dst[0, n) = the n bytes at p, which must lie in the File's data (a tensorData pointer).
    Status read(const uint8_t* p, size_t n, void* dst) const;

private:
    int m_fd = -1;
    const uint8_t* m_base = nullptr;
    uint64_t m_size = 0;
};

// A GGUF file opened for reading. The tensor data stays memory-mapped (or read into memory with
// useMmap = false, or borrowed, for fromMemory) and is valid while the File lives.
class File {
public:
    static Result<File> open(const std::string& path, const ReadOptions& options = {});
    // Parses a buffer the caller keeps alive (used by tests and the fuzzer).
    static Result<File> fromMemory(const uint8_t* data, size_t size,
                                   const ReadOptions& options = {});

    File(File&&) noexcept;
    File& operator=(File&&) noexcept;
    ~File();

    uint32_t version() const;
    uint32_t alignment() const;
    uint64_t fileSize() const;
    uint64_t dataOffset() const; // absolute offset of the data section

    const std::vector<KeyValue>& metadata() const;
    const Value* find(std::string_view key) const;
    bool has(std::string_view key) const { return find(key) != nullptr; }

    // Typed accessors. Errors name the key: missing ("not found") or mistyped ("invalid format").
    Result<uint32_t> getU32(std::string_view key) const; // any integer type that fits
    Result<uint64_t> getU64(std::string_view key) const;
    Result<int64_t> getI64(std::string_view key) const;
    Result<float> getF32(std::string_view key) const; // f32 or f64
    Result<bool> getBool(std::string_view key) const;
    Result<std::string> getString(std::string_view key) const;
    Result<std::vector<std::string>> getStringArray(std::string_view key) const;
    Result<std::vector<float>> getF32Array(std::string_view key) const;
    Result<std::vector<int32_t>> getI32Array(std::string_view key) const;

    const std::vector<TensorInfo>& tensors() const;
    const TensorInfo* findTensor(std::string_view name) const;
    // Pointer to a tensor's bytes (nullptr when the data is not in the file).
    const uint8_t* tensorData(const TensorInfo& t) const;
    // Reads the data's bytes without touching the mapping (valid while the File lives).
    std::shared_ptr<const DataReader> dataReader() const;

    struct Impl; // opaque: the parsed file and its mapping

private:
    explicit File(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// Builds a GGUF file. Metadata keeps insertion order; tensors are laid out in the order added,
// each at the next aligned offset.
class Writer {
public:
    // Called once at write time to fill exactly `bytes` bytes of a tensor's data.
    using Producer = std::function<Status(uint8_t* dst, uint64_t bytes)>;

    explicit Writer(uint32_t version = 3);

    // Sets (or replaces, keeping the original position) a metadata value.
    // Setting general.alignment to a u32 power of two changes the layout alignment.
    void set(std::string key, Value value);
    const Value* find(std::string_view key) const;
    Status remove(std::string_view key);

    // shape is ne order: shape[0] is the row length. Validates type, dims and size.
    Status addTensor(std::string name, quant::Type type, std::vector<uint64_t> shape,
                     std::vector<uint8_t> data);
    Status addTensor(std::string name, quant::Type type, std::vector<uint64_t> shape,
                     Producer producer);

    uint32_t alignment() const;

    // Writes to `path` via a temporary file in the same directory and a rename, so a failed
    // write never leaves a truncated file under the final name.
    Status writeFile(const std::string& path) const;
    Result<std::vector<uint8_t>> writeToMemory() const;

    struct PendingTensor; // opaque: a tensor waiting to be written

private:
    uint32_t m_version;
    std::vector<KeyValue> m_metadata;
    std::vector<std::shared_ptr<PendingTensor>> m_tensors;
};

} // namespace hearth::gguf
