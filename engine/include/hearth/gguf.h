// GGUF files: a validating reader (memory-mapped, every size checked, hostile input safe) and a
// writer whose output the reader round-trips byte for byte.
//
// Layout (little-endian): "GGUF" u32 version (2 or 3) | u64 tensor_count | u64 kv_count |
// kv_count x (string key, u32 type, value) | tensor_count x (string name, u32 n_dims,
// u64 ne[n_dims], u32 type, u64 offset) | zero padding to `general.alignment` (default 32) |
// tensor data, each tensor at its offset from the data start, aligned.
// A string is u64 byte length + bytes (no NUL). An array is u32 element type + u64 count + elements.
//
// Split models (llama.cpp's gguf-split): NAME-00001-of-00003.gguf, NAME-00002-of-00003.gguf, ...
// Each part is a complete GGUF file with split.no (u16, 0-based), split.count (u16) and
// split.tensors.count (i32, the tensors of all parts together); the first part holds the model's
// metadata, every part holds its share of the tensors. File::open of the first part opens them all
// as one model; opening a later part is an error that names the first (as in llama.cpp).
#pragma once

#include "hearth/quant.h"
#include "hearth/status.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
    // The type as errors name it: "u32", "string", "bool[4]", "i32[3]".
    std::string typeDescription() const;

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

// The metadata keys of a split model's parts.
inline constexpr std::string_view kSplitNoKey = "split.no";                    // u16, 0-based
inline constexpr std::string_view kSplitCountKey = "split.count";              // u16
inline constexpr std::string_view kSplitTensorsCountKey = "split.tensors.count"; // i32, all parts
// One of the three keys above: a copy of a split model's metadata into another file leaves them out.
bool isSplitKey(std::string_view key);

// A part's file name, as llama.cpp spells it (llama_split_path / llama_split_prefix).
struct SplitName {
    std::string prefix; // "dir/name"
    uint32_t index = 0; // 0-based: "-00002-of-" is index 1
    uint32_t count = 0;
};
// "dir/name-00002-of-00003.gguf" -> {"dir/name", 1, 3}; nullopt when the path is not so named
// (no "-NNNNN-of-NNNNN.gguf" ending, an index of 0 or above the count).
std::optional<SplitName> parseSplitName(std::string_view path);
// (prefix, 1, 3) -> "prefix-00002-of-00003.gguf".
std::string splitPartPath(std::string_view prefix, uint32_t index, uint32_t count);

struct TensorInfo {
    std::string name;
    quant::Type type = quant::Type::F32;
    uint32_t nDims = 0;
    std::array<uint64_t, 4> ne{1, 1, 1, 1}; // ne[0] is the contiguous (row) dimension
    uint64_t offset = 0;                    // from the start of its part's data section
    uint64_t bytes = 0;                     // size of the tensor's data
    uint32_t part = 0;                      // the part of a split model holding it (0: the first)
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
    // true: opening a split model's first part opens all its parts (each validated like a file of
    // its own, then checked against each other); false: only the file named, split keys or not.
    bool openSplitParts = true;
};

// Copies of a File's bytes that leave its mapping alone: pread from the file (its own descriptor)
// when the File maps it, a plain copy when the data is in memory. For data read a little at a
// time, such as one embedding row per token, that would otherwise keep the mapped pages around
// each read resident (a whole 2 MiB when the page cache holds the file in huge pages).
// A split model has one descriptor per part; a read goes to the part whose bytes hold p.
class DataReader {
public:
    // One file's bytes at base; fd (owned, closed with the reader) or -1 to copy from memory.
    struct Segment {
        int fd = -1;
        const uint8_t* base = nullptr;
        uint64_t size = 0;
    };
    DataReader(int fd, const uint8_t* base, uint64_t size) : m_segments{Segment{fd, base, size}} {}
    explicit DataReader(std::vector<Segment> segments) : m_segments(std::move(segments)) {}
    DataReader(const DataReader&) = delete;
    DataReader& operator=(const DataReader&) = delete;
    ~DataReader();
    // dst[0, n) = the n bytes at p, which must lie in one of the File's parts (a tensorData pointer).
    Status read(const uint8_t* p, size_t n, void* dst) const;

private:
    std::vector<Segment> m_segments;
};

// One file of an opened model: the file itself, or a part of a split model.
struct PartInfo {
    std::string path;        // empty for File::fromMemory
    uint64_t fileSize = 0;
    uint64_t dataOffset = 0; // absolute offset of its data section
    uint64_t tensorCount = 0;
};

// A GGUF file opened for reading. The tensor data stays memory-mapped (or read into memory with
// useMmap = false, or borrowed, for fromMemory) and is valid while the File lives.
// A split model opened through its first part is one File: the first part's metadata (split keys
// included), the tensors of all parts in part order, each tensor's data in its own part.
class File {
public:
    // Errors about one part of a split model name that part's file.
    static Result<File> open(const std::string& path, const ReadOptions& options = {});
    // Parses a buffer the caller keeps alive (used by tests and the fuzzer). Always one part: split
    // keys are kept as metadata and nothing else is opened.
    static Result<File> fromMemory(const uint8_t* data, size_t size,
                                   const ReadOptions& options = {});

    File(File&&) noexcept;
    File& operator=(File&&) noexcept;
    ~File();

    uint32_t version() const;
    uint32_t alignment() const;  // the first part's
    uint64_t fileSize() const;   // bytes of all parts together
    uint64_t dataOffset() const; // absolute offset of the first part's data section
    const std::vector<PartInfo>& parts() const; // one entry, or a split model's parts in order

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

    // Keys that give n values either once for all of them or one by one, as llama.cpp's loader
    // reads them (get_key_or_arr: per-layer head counts, feed-forward lengths, expert counts,
    // recurrent-layer maps, RoPE sections): a scalar stands for n equal values; an array must
    // hold exactly n. Errors name the key, what it holds ("bool[4]") and what was expected.
    // Counts: integers of any width and signedness, each 0..maxValue; a bool is not a count.
    Result<std::vector<uint64_t>> getCounts(std::string_view key, size_t n, uint64_t maxValue) const;
    // Flags: booleans, or non-negative integers (non-zero is true).
    Result<std::vector<bool>> getFlags(std::string_view key, size_t n) const;

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

    // How writeSplit divides the tensors, in the order added, into parts (at least one limit).
    struct SplitOptions {
        uint64_t maxTensors = 0; // tensors per part; 0: no limit
        // Tensor data per part, each tensor padded to 32 bytes (as gguf-split counts it); 0: no
        // limit. A tensor larger than this gets a part of its own.
        uint64_t maxBytes = 0;
    };
    // Writes the model as llama.cpp's gguf-split does (the same bytes for the same limits):
    // PREFIX-00001-of-0000N.gguf, ... The first part gets all metadata, every part split.no,
    // split.tensors.count and split.count (existing split keys are replaced; the later parts have
    // the default alignment). Returns the paths. On a failure, parts already written are removed.
    Result<std::vector<std::string>> writeSplit(const std::string& prefix,
                                                const SplitOptions& options) const;
    Result<std::vector<std::vector<uint8_t>>> writeSplitToMemory(const SplitOptions& options) const;

    struct PendingTensor; // opaque: a tensor waiting to be written

private:
    uint32_t m_version;
    std::vector<KeyValue> m_metadata;
    std::vector<std::shared_ptr<PendingTensor>> m_tensors;
};

} // namespace hearth::gguf
