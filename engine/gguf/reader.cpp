// The GGUF reader: parses a mapped file as hostile input, checking every count, length, offset
// and size product against the bytes actually present before trusting or allocating for it.
#include "gguf/file_impl.h"
#include "gguf/format.h"
#include "hearth/gguf.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace hearth::gguf {

using namespace detail;

detail::PartBytes::~PartBytes() {
    if (mapping) munmap(mapping, mappingSize);
    std::free(owned);
    if (fd >= 0) ::close(fd);
}

namespace {

// Sequential reads that fail, with a message naming what was being read, past the end.
class Cursor {
public:
    Cursor(const uint8_t* data, uint64_t size) : m_data(data), m_size(size) {}

    uint64_t pos() const { return m_pos; }
    uint64_t remaining() const { return m_size - m_pos; }

    Status read(void* dst, uint64_t n, const std::string& what) {
        if (n > remaining())
            return invalidFormat("file ends inside " + what + " (offset " +
                                 std::to_string(m_pos) + ", needs " + std::to_string(n) +
                                 " bytes, " + std::to_string(remaining()) + " left)");
        if (n) std::memcpy(dst, m_data + m_pos, size_t(n));
        m_pos += n;
        return Status::ok();
    }

    template <typename T> Status readLe(T& v, const std::string& what) {
        return read(&v, sizeof v, what);
    }

    Status readString(std::string& out, uint64_t maxBytes, const std::string& what) {
        uint64_t len = 0;
        HEARTH_RETURN_IF_ERROR(readLe(len, what + " length"));
        if (len > maxBytes)
            return invalidFormat(what + " is " + std::to_string(len) + " bytes, over the limit of " +
                                 std::to_string(maxBytes));
        if (len > remaining())
            return invalidFormat(what + " length " + std::to_string(len) +
                                 " runs past the end of the file");
        out.assign(reinterpret_cast<const char*>(m_data + m_pos), size_t(len));
        m_pos += len;
        return Status::ok();
    }

private:
    const uint8_t* m_data;
    uint64_t m_size;
    uint64_t m_pos = 0;
};

Status readValue(Cursor& c, ValueType type, const std::string& key, const ReadOptions& opt,
                 Value& out) {
    const std::string what = "value of '" + key + "'";
    switch (type) {
    case ValueType::U8: { uint8_t v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::u8(v); break; }
    case ValueType::I8: { int8_t v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::i8(v); break; }
    case ValueType::U16: { uint16_t v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::u16(v); break; }
    case ValueType::I16: { int16_t v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::i16(v); break; }
    case ValueType::U32: { uint32_t v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::u32(v); break; }
    case ValueType::I32: { int32_t v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::i32(v); break; }
    case ValueType::U64: { uint64_t v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::u64(v); break; }
    case ValueType::I64: { int64_t v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::i64(v); break; }
    case ValueType::F32: { float v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::f32(v); break; }
    case ValueType::F64: { double v; HEARTH_RETURN_IF_ERROR(c.readLe(v, what)); out = Value::f64(v); break; }
    case ValueType::Bool: {
        uint8_t v;
        HEARTH_RETURN_IF_ERROR(c.readLe(v, what));
        if (v > 1) return invalidFormat(what + ": bool must be 0 or 1, got " + std::to_string(v));
        out = Value::boolean(v != 0);
        break;
    }
    case ValueType::String: {
        std::string s;
        HEARTH_RETURN_IF_ERROR(c.readString(s, opt.maxStringBytes, what));
        out = Value::string(std::move(s));
        break;
    }
    case ValueType::Array: {
        uint32_t rawElem = 0;
        uint64_t count = 0;
        HEARTH_RETURN_IF_ERROR(c.readLe(rawElem, what + " element type"));
        if (!isKnownValueType(rawElem))
            return invalidFormat(what + ": unknown array element type " + std::to_string(rawElem));
        const ValueType elem = ValueType(rawElem);
        if (elem == ValueType::Array)
            return invalidFormat(what + ": nested arrays are not supported");
        HEARTH_RETURN_IF_ERROR(c.readLe(count, what + " element count"));
        if (count > opt.maxArrayElements)
            return invalidFormat(what + ": array of " + std::to_string(count) +
                                 " elements is over the limit of " +
                                 std::to_string(opt.maxArrayElements));
        if (elem == ValueType::String) {
            // Each string needs at least its 8-byte length.
            if (count > c.remaining() / 8)
                return invalidFormat(what + ": " + std::to_string(count) +
                                     " strings cannot fit in the rest of the file");
            std::vector<std::string> items(static_cast<size_t>(count));
            for (uint64_t i = 0; i < count; ++i)
                HEARTH_RETURN_IF_ERROR(c.readString(items[size_t(i)], opt.maxStringBytes,
                                                    what + " item " + std::to_string(i)));
            out = Value::stringArray(std::move(items));
        } else {
            const size_t es = scalarBytes(elem);
            auto bytes = checkedMul(count, es);
            if (!bytes || *bytes > c.remaining())
                return invalidFormat(what + ": array of " + std::to_string(count) + " " +
                                     std::string(valueTypeName(elem)) +
                                     " runs past the end of the file");
            std::vector<uint8_t> raw(static_cast<size_t>(*bytes));
            HEARTH_RETURN_IF_ERROR(c.read(raw.data(), *bytes, what));
            if (elem == ValueType::Bool)
                for (uint8_t b : raw)
                    if (b > 1) return invalidFormat(what + ": bool array item is not 0 or 1");
            out = Value::numericArray(elem, std::move(raw));
        }
        break;
    }
    }
    return Status::ok();
}

std::string typeMismatch(std::string_view key, const Value& v, std::string_view expected) {
    return "key '" + std::string(key) + "' is " + std::string(valueTypeName(v.type())) +
           (v.isArray() ? " of " + std::string(valueTypeName(v.elementType())) : "") +
           ", expected " + std::string(expected);
}

} // namespace

static Status parse(File::Impl& f, PartBytes& part, const ReadOptions& opt);

File::File(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

Result<File> File::fromMemory(const uint8_t* data, size_t size, const ReadOptions& options) {
    auto impl = std::make_unique<Impl>();
    auto part = std::make_unique<PartBytes>();
    part->data = data;
    part->size = size;
    HEARTH_RETURN_IF_ERROR(parse(*impl, *part, options));
    impl->parts.push_back(std::move(part));
    finishParts(*impl);
    return File(std::move(impl));
}

Result<File> File::open(const std::string& path, const ReadOptions& options) {
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<Impl> impl, openOnePart(path, options));
    if (options.openSplitParts) HEARTH_RETURN_IF_ERROR(openOtherParts(*impl, options));
    finishParts(*impl);
    return File(std::move(impl));
}

Result<std::unique_ptr<File::Impl>> detail::openOnePart(const std::string& path, const ReadOptions& options) {
    auto part = std::make_unique<PartBytes>();
    part->path = path;
    part->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (part->fd < 0) return ioError("cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (fstat(part->fd, &st) != 0 || !S_ISREG(st.st_mode)) return ioError(path + " is not a regular file");
    part->size = uint64_t(st.st_size);
    if (st.st_size > 0 && !options.useMmap) {
        // Read it whole, 64-byte aligned like a mapping's tensor data would be.
        const size_t bytes = (size_t(st.st_size) + 63) / 64 * 64;
        part->owned = std::aligned_alloc(64, bytes);
        if (!part->owned)
            return ioError("not enough memory to read " + path + " (" + std::to_string(st.st_size) + " bytes)");
        auto* out = static_cast<uint8_t*>(part->owned);
        size_t done = 0;
        while (done < size_t(st.st_size)) {
            const ssize_t n = ::pread(part->fd, out + done,
                                      std::min<size_t>(size_t(st.st_size) - done, size_t(1) << 26), off_t(done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                const int err = n < 0 ? errno : 0;
                return ioError("cannot read " + path + ": " +
                               (err ? std::string(std::strerror(err)) : std::string("the file got shorter")));
            }
            done += size_t(n);
        }
        part->data = out;
        ::close(part->fd); // the reader copies from memory
        part->fd = -1;
    } else if (st.st_size > 0) {
        void* m = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, part->fd, 0);
        if (m == MAP_FAILED) {
            const int err = errno;
            return ioError("cannot map " + path + ": " + std::strerror(err));
        }
        part->mapping = m;
        part->mappingSize = size_t(st.st_size);
        part->data = static_cast<const uint8_t*>(m);
        // The descriptor stays open for the reader (and closes with it).
    } else {
        ::close(part->fd);
        part->fd = -1;
    }
    auto impl = std::make_unique<File::Impl>();
    HEARTH_RETURN_IF_ERROR(parse(*impl, *part, options));
    impl->parts.push_back(std::move(part));
    return impl;
}

void detail::finishParts(File::Impl& f) {
    std::vector<DataReader::Segment> segments;
    f.partInfo.clear();
    for (auto& p : f.parts) {
        segments.push_back({p->fd, p->data, p->size});
        p->fd = -1; // the reader owns it now
        f.partInfo.push_back({p->path, p->size, p->dataOffset, p->tensorCount});
    }
    f.reader = std::make_shared<DataReader>(std::move(segments));
}

DataReader::~DataReader() {
    for (const Segment& s : m_segments)
        if (s.fd >= 0) ::close(s.fd);
}

Status DataReader::read(const uint8_t* p, size_t n, void* dst) const {
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    const Segment* seg = nullptr;
    for (const Segment& s : m_segments) {
        const uintptr_t base = reinterpret_cast<uintptr_t>(s.base);
        if (p && s.base && at >= base && at - base <= s.size && n <= s.size - (at - base)) {
            seg = &s;
            break;
        }
    }
    if (!seg) return outOfRange("read outside the file's data");
    if (n == 0) return Status::ok();
    if (seg->fd < 0) {
        std::memcpy(dst, p, n);
        return Status::ok();
    }
    const uint64_t offset = at - reinterpret_cast<uintptr_t>(seg->base);
    auto* out = static_cast<uint8_t*>(dst);
    size_t done = 0;
    while (done < n) {
        const ssize_t got = ::pread(seg->fd, out + done, n - done, off_t(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            return ioError(got < 0 ? std::string("read: ") + std::strerror(errno) : "read: the file got shorter");
        done += size_t(got);
    }
    return Status::ok();
}

std::shared_ptr<const DataReader> File::dataReader() const { return m_impl->reader; }

static Status parse(File::Impl& f, PartBytes& part, const ReadOptions& opt) {
    Cursor c(part.data, part.size);
    if (part.size < 8)
        return invalidFormat("file is too small to be GGUF (" + std::to_string(part.size) + " bytes)");
    uint32_t magic = 0, version = 0;
    HEARTH_RETURN_IF_ERROR(c.readLe(magic, "magic"));
    if (magic != kMagic) return invalidFormat("not a GGUF file (bad magic)");
    HEARTH_RETURN_IF_ERROR(c.readLe(version, "version"));
    if (version == 0x02000000u || version == 0x03000000u)
        return unsupported("big-endian GGUF files are not supported");
    if (version == 1) return unsupported("GGUF version 1 is not supported (only 2 and 3)");
    if (version != 2 && version != 3)
        return unsupported("unsupported GGUF version " + std::to_string(version));
    f.version = version;

    uint64_t nTensors = 0, nKv = 0;
    HEARTH_RETURN_IF_ERROR(c.readLe(nTensors, "tensor count"));
    HEARTH_RETURN_IF_ERROR(c.readLe(nKv, "metadata count"));
    // Smallest possible entries: kv = 8 (key length) + 1 + 4 (type) + 1; tensor = 8 + 1 + 4 + 8
    // + 4 + 8. A count that cannot fit in the remaining bytes is rejected before allocating.
    if (nKv > opt.maxMetadataCount || nKv > c.remaining() / 14)
        return invalidFormat("metadata count " + std::to_string(nKv) + " is impossible for a " +
                             std::to_string(part.size) + "-byte file");
    if (nTensors > opt.maxTensorCount || nTensors > c.remaining() / 33)
        return invalidFormat("tensor count " + std::to_string(nTensors) +
                             " is impossible for a " + std::to_string(part.size) + "-byte file");

    f.metadata.reserve(size_t(nKv));
    for (uint64_t i = 0; i < nKv; ++i) {
        KeyValue kv;
        HEARTH_RETURN_IF_ERROR(
            c.readString(kv.key, opt.maxStringBytes, "metadata key " + std::to_string(i)));
        if (kv.key.empty()) return invalidFormat("metadata key " + std::to_string(i) + " is empty");
        if (f.keyIndex.count(kv.key)) return invalidFormat("duplicate metadata key '" + kv.key + "'");
        uint32_t rawType = 0;
        HEARTH_RETURN_IF_ERROR(c.readLe(rawType, "type of '" + kv.key + "'"));
        if (!isKnownValueType(rawType))
            return invalidFormat("key '" + kv.key + "' has unknown value type " +
                                 std::to_string(rawType));
        HEARTH_RETURN_IF_ERROR(readValue(c, ValueType(rawType), kv.key, opt, kv.value));
        f.keyIndex.emplace(kv.key, f.metadata.size());
        f.metadata.push_back(std::move(kv));
    }

    if (auto it = f.keyIndex.find("general.alignment"); it != f.keyIndex.end()) {
        const Value& v = f.metadata[it->second].value;
        if (v.type() != ValueType::U32)
            return invalidFormat("general.alignment must be a u32, not " +
                                 std::string(valueTypeName(v.type())));
        const uint64_t a = *v.asUInt();
        if (a == 0 || (a & (a - 1)) != 0 || a > opt.maxAlignment)
            return invalidFormat("general.alignment " + std::to_string(a) +
                                 " is not a power of two up to " +
                                 std::to_string(opt.maxAlignment));
        f.alignment = uint32_t(a);
    }

    f.tensors.reserve(size_t(nTensors));
    for (uint64_t i = 0; i < nTensors; ++i) {
        TensorInfo t;
        HEARTH_RETURN_IF_ERROR(
            c.readString(t.name, opt.maxStringBytes, "tensor " + std::to_string(i) + " name"));
        const std::string where = "tensor '" + t.name + "'";
        if (t.name.empty()) return invalidFormat("tensor " + std::to_string(i) + " has an empty name");
        if (t.name.size() >= kMaxTensorName)
            return invalidFormat(where + ": name is " + std::to_string(t.name.size()) +
                                 " bytes, the limit is " + std::to_string(kMaxTensorName - 1));
        if (f.tensorIndex.count(t.name)) return invalidFormat("duplicate " + where);
        HEARTH_RETURN_IF_ERROR(c.readLe(t.nDims, where + " dimension count"));
        if (t.nDims < 1 || t.nDims > 4)
            return invalidFormat(where + " has " + std::to_string(t.nDims) +
                                 " dimensions (1 to 4 allowed)");
        uint64_t elements = 1;
        for (uint32_t d = 0; d < t.nDims; ++d) {
            HEARTH_RETURN_IF_ERROR(c.readLe(t.ne[d], where + " shape"));
            if (t.ne[d] == 0 || t.ne[d] > uint64_t(std::numeric_limits<int64_t>::max()))
                return invalidFormat(where + " has an invalid dimension " + std::to_string(t.ne[d]));
            auto e = checkedMul(elements, t.ne[d]);
            if (!e || *e > uint64_t(std::numeric_limits<int64_t>::max()))
                return invalidFormat(where + ": element count overflows");
            elements = *e;
        }
        uint32_t rawType = 0;
        HEARTH_RETURN_IF_ERROR(c.readLe(rawType, where + " type"));
        const quant::TypeInfo* info = quant::typeInfo(rawType);
        if (!info) return invalidFormat(where + " has unknown type id " + std::to_string(rawType));
        t.type = info->type;
        if (t.ne[0] % info->blockElems != 0)
            return invalidFormat(where + ": row length " + std::to_string(t.ne[0]) +
                                 " is not a multiple of " + std::string(info->name) +
                                 "'s block size " + std::to_string(info->blockElems));
        auto rb = quant::rowBytes(t.type, t.ne[0]);
        if (!rb) return invalidFormat(where + ": " + rb.status().message());
        auto bytes = checkedMul(*rb, elements / t.ne[0]);
        if (!bytes) return invalidFormat(where + ": byte size overflows");
        t.bytes = *bytes;
        HEARTH_RETURN_IF_ERROR(c.readLe(t.offset, where + " offset"));
        if (t.offset % f.alignment != 0)
            return invalidFormat(where + ": offset " + std::to_string(t.offset) +
                                 " is not aligned to " + std::to_string(f.alignment));
        f.tensorIndex.emplace(t.name, f.tensors.size());
        f.tensors.push_back(std::move(t));
    }

    part.tensorCount = f.tensors.size();
    auto dataOffset = checkedPad(c.pos(), f.alignment);
    if (!dataOffset) return invalidFormat("data section offset overflows");
    part.dataOffset = *dataOffset;
    if (f.tensors.empty()) return Status::ok();

    if (part.dataOffset > part.size)
        return invalidFormat("the data section starts past the end of the file");
    const uint64_t dataBytes = part.size - part.dataOffset;
    std::vector<size_t> order(f.tensors.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return f.tensors[a].offset < f.tensors[b].offset; });
    uint64_t prevEnd = 0;
    std::string prevName;
    for (size_t idx : order) {
        const TensorInfo& t = f.tensors[idx];
        auto end = checkedAdd(t.offset, t.bytes);
        if (!end) return invalidFormat("tensor '" + t.name + "': offset + size overflows");
        if (opt.requireTensorData && *end > dataBytes)
            return invalidFormat("tensor '" + t.name + "' data (" + std::to_string(t.bytes) +
                                 " bytes at " + std::to_string(t.offset) +
                                 ") runs past the end of the file");
        if (t.offset < prevEnd)
            return invalidFormat("tensor '" + t.name + "' overlaps tensor '" + prevName + "'");
        prevEnd = *end;
        prevName = t.name;
    }
    return Status::ok();
}

uint32_t File::version() const { return m_impl->version; }
uint32_t File::alignment() const { return m_impl->alignment; }
uint64_t File::fileSize() const {
    uint64_t total = 0;
    for (const auto& p : m_impl->parts) total += p->size;
    return total;
}
uint64_t File::dataOffset() const { return m_impl->parts.front()->dataOffset; }
const std::vector<PartInfo>& File::parts() const { return m_impl->partInfo; }
const std::vector<KeyValue>& File::metadata() const { return m_impl->metadata; }
const std::vector<TensorInfo>& File::tensors() const { return m_impl->tensors; }

const Value* File::find(std::string_view key) const {
    auto it = m_impl->keyIndex.find(std::string(key));
    return it == m_impl->keyIndex.end() ? nullptr : &m_impl->metadata[it->second].value;
}

const TensorInfo* File::findTensor(std::string_view name) const {
    auto it = m_impl->tensorIndex.find(std::string(name));
    return it == m_impl->tensorIndex.end() ? nullptr : &m_impl->tensors[it->second];
}

const uint8_t* File::tensorData(const TensorInfo& t) const {
    if (t.part >= m_impl->parts.size()) return nullptr;
    const detail::PartBytes& p = *m_impl->parts[t.part];
    auto start = checkedAdd(p.dataOffset, t.offset);
    if (!start || *start > p.size || t.bytes > p.size - *start || !p.data) return nullptr;
    return p.data + *start;
}

#define HEARTH_GGUF_FIND_OR_RETURN(v, key)                                                         \
    const Value* v = find(key);                                                                    \
    if (!v) return notFound("missing key '" + std::string(key) + "'")

Result<uint32_t> File::getU32(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    auto u = v->asUInt();
    if (!u || *u > std::numeric_limits<uint32_t>::max())
        return v->asInt() ? outOfRange("key '" + std::string(key) + "' value " +
                                       v->toDisplayString() + " does not fit a u32")
                          : invalidFormat(typeMismatch(key, *v, "an integer"));
    return uint32_t(*u);
}

Result<uint64_t> File::getU64(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    auto u = v->asUInt();
    if (!u)
        return v->asInt() ? outOfRange("key '" + std::string(key) + "' is negative")
                          : invalidFormat(typeMismatch(key, *v, "an integer"));
    return *u;
}

Result<int64_t> File::getI64(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    auto i = v->asInt();
    if (!i)
        return v->asUInt() ? outOfRange("key '" + std::string(key) + "' does not fit an i64")
                           : invalidFormat(typeMismatch(key, *v, "an integer"));
    return *i;
}

Result<float> File::getF32(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    auto d = v->asFloat();
    if (!d) return invalidFormat(typeMismatch(key, *v, "f32"));
    return float(*d);
}

Result<bool> File::getBool(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    auto b = v->asBool();
    if (!b) return invalidFormat(typeMismatch(key, *v, "bool"));
    return *b;
}

Result<std::string> File::getString(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    const std::string* s = v->asString();
    if (!s) return invalidFormat(typeMismatch(key, *v, "string"));
    return *s;
}

Result<std::vector<std::string>> File::getStringArray(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    const auto* a = v->asStringArray();
    if (!a) return invalidFormat(typeMismatch(key, *v, "array of string"));
    return *a;
}

Result<std::vector<float>> File::getF32Array(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    auto a = v->asF32Array();
    if (!a) return invalidFormat(typeMismatch(key, *v, "array of f32"));
    return std::move(*a);
}

Result<std::vector<int32_t>> File::getI32Array(std::string_view key) const {
    HEARTH_GGUF_FIND_OR_RETURN(v, key);
    auto a = v->asI32Array();
    if (!a) return invalidFormat(typeMismatch(key, *v, "array of i32"));
    return std::move(*a);
}

std::string TensorInfo::shapeString() const {
    std::string s = "[";
    for (uint32_t d = 0; d < nDims; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
    return s + "]";
}

} // namespace hearth::gguf
