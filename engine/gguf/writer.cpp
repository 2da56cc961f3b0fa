// The GGUF writer: metadata in insertion order, tensors at aligned offsets, data streamed from
// producers, files replaced atomically (temporary file, fsync, rename), and split models written
// as gguf-split's parts.
#include "gguf/format.h"
#include "hearth/gguf.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace hearth::gguf {

using namespace detail;

struct Writer::PendingTensor {
    std::string name;
    quant::Type type = quant::Type::F32;
    uint32_t nDims = 0;
    std::array<uint64_t, 4> ne{1, 1, 1, 1};
    uint64_t bytes = 0;
    std::vector<uint8_t> data;
    Producer producer;
};

namespace {

using Sink = std::function<Status(const uint8_t*, size_t)>;

class ByteBuffer {
public:
    template <typename T> void put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        m_bytes.insert(m_bytes.end(), p, p + sizeof v);
    }
    void putString(const std::string& s) {
        put<uint64_t>(s.size());
        m_bytes.insert(m_bytes.end(), s.begin(), s.end());
    }
    void putBytes(const std::vector<uint8_t>& b) { m_bytes.insert(m_bytes.end(), b.begin(), b.end()); }
    std::vector<uint8_t>& bytes() { return m_bytes; }

private:
    std::vector<uint8_t> m_bytes;
};

void putValue(ByteBuffer& b, const Value& v) {
    switch (v.type()) {
    case ValueType::U8: b.put<uint8_t>(uint8_t(*v.asUInt())); break;
    case ValueType::U16: b.put<uint16_t>(uint16_t(*v.asUInt())); break;
    case ValueType::U32: b.put<uint32_t>(uint32_t(*v.asUInt())); break;
    case ValueType::U64: b.put<uint64_t>(*v.asUInt()); break;
    case ValueType::I8: b.put<int8_t>(int8_t(*v.asInt())); break;
    case ValueType::I16: b.put<int16_t>(int16_t(*v.asInt())); break;
    case ValueType::I32: b.put<int32_t>(int32_t(*v.asInt())); break;
    case ValueType::I64: b.put<int64_t>(*v.asInt()); break;
    case ValueType::F32: b.put<float>(float(*v.asFloat())); break;
    case ValueType::F64: b.put<double>(*v.asFloat()); break;
    case ValueType::Bool: b.put<uint8_t>(*v.asBool() ? 1 : 0); break;
    case ValueType::String: b.putString(*v.asString()); break;
    case ValueType::Array:
        b.put<uint32_t>(uint32_t(v.elementType()));
        b.put<uint64_t>(v.arraySize());
        if (const auto* strings = v.asStringArray())
            for (const std::string& s : *strings) b.putString(s);
        else
            b.putBytes(*v.rawArrayBytes());
        break;
    }
}

Status writePadding(const Sink& sink, uint64_t n) {
    static const uint8_t zeros[256] = {};
    while (n > 0) {
        const size_t chunk = size_t(std::min<uint64_t>(n, sizeof zeros));
        HEARTH_RETURN_IF_ERROR(sink(zeros, chunk));
        n -= chunk;
    }
    return Status::ok();
}

} // namespace

Writer::Writer(uint32_t version) : m_version(version) {}

void Writer::set(std::string key, Value value) {
    for (KeyValue& kv : m_metadata) {
        if (kv.key == key) {
            kv.value = std::move(value);
            return;
        }
    }
    m_metadata.push_back({std::move(key), std::move(value)});
}

const Value* Writer::find(std::string_view key) const {
    for (const KeyValue& kv : m_metadata)
        if (kv.key == key) return &kv.value;
    return nullptr;
}

Status Writer::remove(std::string_view key) {
    for (auto it = m_metadata.begin(); it != m_metadata.end(); ++it) {
        if (it->key == key) {
            m_metadata.erase(it);
            return Status::ok();
        }
    }
    return notFound("missing key '" + std::string(key) + "'");
}

uint32_t Writer::alignment() const {
    if (const Value* v = find("general.alignment"); v && v->type() == ValueType::U32) {
        const uint64_t a = *v->asUInt();
        if (a != 0 && (a & (a - 1)) == 0) return uint32_t(a);
    }
    return kDefaultAlignment;
}

static Result<std::shared_ptr<Writer::PendingTensor>>
makeTensor(const std::vector<std::shared_ptr<Writer::PendingTensor>>& existing, std::string name,
           quant::Type type, const std::vector<uint64_t>& shape) {
    const std::string where = "tensor '" + name + "'";
    if (name.empty() || name.size() >= kMaxTensorName)
        return invalidArgument(where + ": name must be 1 to " +
                               std::to_string(kMaxTensorName - 1) + " bytes");
    for (const auto& t : existing)
        if (t->name == name) return invalidArgument("duplicate " + where);
    if (shape.empty() || shape.size() > 4)
        return invalidArgument(where + ": 1 to 4 dimensions required");
    uint64_t rows = 1;
    for (size_t d = 1; d < shape.size(); ++d) {
        if (shape[d] == 0) return invalidArgument(where + ": zero dimension");
        auto r = checkedMul(rows, shape[d]);
        if (!r) return invalidArgument(where + ": size overflows");
        rows = *r;
    }
    if (shape[0] == 0) return invalidArgument(where + ": zero dimension");
    auto rb = quant::rowBytes(type, shape[0]);
    if (!rb) return rb.status().withContext(where);
    auto bytes = checkedMul(*rb, rows);
    if (!bytes) return invalidArgument(where + ": size overflows");
    auto t = std::make_shared<Writer::PendingTensor>();
    t->name = std::move(name);
    t->type = type;
    t->nDims = uint32_t(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) t->ne[d] = shape[d];
    t->bytes = *bytes;
    return t;
}

Status Writer::addTensor(std::string name, quant::Type type, std::vector<uint64_t> shape,
                         std::vector<uint8_t> data) {
    HEARTH_ASSIGN_OR_RETURN(auto t, makeTensor(m_tensors, std::move(name), type, shape));
    if (data.size() != t->bytes)
        return invalidArgument("tensor '" + t->name + "': " + std::to_string(data.size()) +
                               " bytes given, " + std::to_string(t->bytes) + " expected");
    t->data = std::move(data);
    m_tensors.push_back(std::move(t));
    return Status::ok();
}

Status Writer::addTensor(std::string name, quant::Type type, std::vector<uint64_t> shape,
                         Producer producer) {
    HEARTH_ASSIGN_OR_RETURN(auto t, makeTensor(m_tensors, std::move(name), type, shape));
    if (!producer) return invalidArgument("tensor '" + t->name + "': no producer");
    t->producer = std::move(producer);
    m_tensors.push_back(std::move(t));
    return Status::ok();
}

// Serialises everything through `sink`: header, metadata, tensor infos, padding, tensor data.
static Status writeAll(uint32_t version, uint32_t alignment, const std::vector<KeyValue>& metadata,
                       const std::vector<std::shared_ptr<Writer::PendingTensor>>& tensors,
                       const Sink& sink) {
    ByteBuffer head;
    head.put<uint32_t>(kMagic);
    head.put<uint32_t>(version);
    head.put<uint64_t>(tensors.size());
    head.put<uint64_t>(metadata.size());
    for (const KeyValue& kv : metadata) {
        head.putString(kv.key);
        head.put<uint32_t>(uint32_t(kv.value.type()));
        putValue(head, kv.value);
    }
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        head.putString(t->name);
        head.put<uint32_t>(t->nDims);
        for (uint32_t d = 0; d < t->nDims; ++d) head.put<uint64_t>(t->ne[d]);
        head.put<uint32_t>(uint32_t(t->type));
        head.put<uint64_t>(offset);
        auto next = checkedAdd(offset, t->bytes);
        if (!next) return invalidArgument("total tensor data overflows");
        auto padded = checkedPad(*next, alignment);
        if (!padded) return invalidArgument("total tensor data overflows");
        offset = *padded;
    }
    const uint64_t headSize = head.bytes().size();
    HEARTH_RETURN_IF_ERROR(sink(head.bytes().data(), head.bytes().size()));
    if (tensors.empty()) return Status::ok();
    HEARTH_RETURN_IF_ERROR(writePadding(sink, *checkedPad(headSize, alignment) - headSize));

    std::vector<uint8_t> buffer;
    for (const auto& t : tensors) {
        if (t->producer) {
            buffer.assign(size_t(t->bytes), 0);
            HEARTH_RETURN_IF_ERROR(
                t->producer(buffer.data(), t->bytes).withContext("tensor '" + t->name + "'"));
            HEARTH_RETURN_IF_ERROR(sink(buffer.data(), buffer.size()));
        } else {
            HEARTH_RETURN_IF_ERROR(sink(t->data.data(), t->data.size()));
        }
        HEARTH_RETURN_IF_ERROR(writePadding(sink, *checkedPad(t->bytes, alignment) - t->bytes));
    }
    return Status::ok();
}

Result<std::vector<uint8_t>> Writer::writeToMemory() const {
    std::vector<uint8_t> out;
    HEARTH_RETURN_IF_ERROR(writeAll(m_version, alignment(), m_metadata, m_tensors,
                                    [&](const uint8_t* p, size_t n) {
                                        out.insert(out.end(), p, p + n);
                                        return Status::ok();
                                    }));
    return out;
}

// Writes `path` through a temporary file in the same directory, fsync and a rename.
static Status writeToPath(const std::string& path, const std::function<Status(const Sink&)>& body) {
    std::string tmpl = path + ".tmp-XXXXXX";
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) return ioError("cannot create a file next to " + path + ": " + std::strerror(errno));
    auto fail = [&](Status s) {
        ::close(fd);
        ::unlink(tmpl.c_str());
        return s;
    };
    Status s = body([&](const uint8_t* p, size_t n) -> Status {
        while (n > 0) {
            const ssize_t w = ::write(fd, p, n);
            if (w < 0) {
                if (errno == EINTR) continue;
                return ioError("cannot write " + path + ": " + std::strerror(errno));
            }
            p += w;
            n -= size_t(w);
        }
        return Status::ok();
    });
    if (!s.isOk()) return fail(s);
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0)
        return fail(ioError("cannot flush " + path + ": " + std::strerror(errno)));
    if (::close(fd) != 0) {
        ::unlink(tmpl.c_str());
        return ioError("cannot close " + path + ": " + std::strerror(errno));
    }
    if (::rename(tmpl.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmpl.c_str());
        return ioError("cannot rename to " + path + ": " + std::strerror(err));
    }
    return Status::ok();
}

Status Writer::writeFile(const std::string& path) const {
    return writeToPath(path, [&](const Sink& sink) {
        return writeAll(m_version, alignment(), m_metadata, m_tensors, sink);
    });
}

namespace {

using TensorList = std::vector<std::shared_ptr<Writer::PendingTensor>>;

// The tensors, in order, cut into parts at the options' limits (sizes padded to 32 bytes, as
// gguf-split counts them).
Result<std::vector<TensorList>> partition(const TensorList& tensors, const Writer::SplitOptions& options) {
    if (options.maxTensors == 0 && options.maxBytes == 0)
        return invalidArgument("split: give a maximum number of tensors or of bytes per part");
    std::vector<TensorList> parts(1);
    uint64_t bytes = 0;
    for (const auto& t : tensors) {
        auto padded = checkedPad(t->bytes, kDefaultAlignment);
        if (!padded) return invalidArgument("tensor '" + t->name + "': size overflows");
        TensorList& current = parts.back();
        const bool full = !current.empty() &&
                          ((options.maxTensors && current.size() >= options.maxTensors) ||
                           (options.maxBytes && (bytes + *padded < bytes || bytes + *padded > options.maxBytes)));
        if (full) {
            parts.emplace_back();
            bytes = 0;
        }
        parts.back().push_back(t);
        bytes += *padded;
    }
    if (parts.size() > 65535)
        return invalidArgument("split: " + std::to_string(parts.size()) + " parts, over the format's 65535");
    if (tensors.size() > uint64_t(std::numeric_limits<int32_t>::max()))
        return invalidArgument("split: too many tensors for split.tensors.count");
    return parts;
}

// A part's metadata: everything for the first, nothing for the others (which gguf-split writes
// with the default alignment); then the split keys.
std::vector<KeyValue> partMetadata(const std::vector<KeyValue>& all, uint32_t no, uint32_t count,
                                   uint64_t tensors) {
    std::vector<KeyValue> out;
    for (const KeyValue& kv : all)
        if (no == 0 && !isSplitKey(kv.key)) out.push_back(kv);
    // In gguf-split's order (it sets split.count last), so that its parts and ours are the same bytes.
    out.push_back({std::string(kSplitNoKey), Value::u16(uint16_t(no))});
    out.push_back({std::string(kSplitTensorsCountKey), Value::i32(int32_t(tensors))});
    out.push_back({std::string(kSplitCountKey), Value::u16(uint16_t(count))});
    return out;
}

} // namespace

Result<std::vector<std::string>> Writer::writeSplit(const std::string& prefix,
                                                    const SplitOptions& options) const {
    HEARTH_ASSIGN_OR_RETURN(std::vector<TensorList> parts, partition(m_tensors, options));
    const auto n = uint32_t(parts.size());
    std::vector<std::string> written;
    for (uint32_t i = 0; i < n; ++i) {
        const std::string path = splitPartPath(prefix, i, n);
        const std::vector<KeyValue> metadata = partMetadata(m_metadata, i, n, m_tensors.size());
        Status s = writeToPath(path, [&](const Sink& sink) {
            return writeAll(m_version, i == 0 ? alignment() : kDefaultAlignment, metadata, parts[i], sink);
        });
        if (!s.isOk()) {
            for (const std::string& done : written) ::unlink(done.c_str());
            return s;
        }
        written.push_back(path);
    }
    return written;
}

Result<std::vector<std::vector<uint8_t>>> Writer::writeSplitToMemory(const SplitOptions& options) const {
    HEARTH_ASSIGN_OR_RETURN(std::vector<TensorList> parts, partition(m_tensors, options));
    const auto n = uint32_t(parts.size());
    std::vector<std::vector<uint8_t>> out(n);
    for (uint32_t i = 0; i < n; ++i)
        HEARTH_RETURN_IF_ERROR(writeAll(m_version, i == 0 ? alignment() : kDefaultAlignment,
                                        partMetadata(m_metadata, i, n, m_tensors.size()),
                                        parts[i], [&](const uint8_t* p, size_t bytes) {
                                            out[i].insert(out[i].end(), p, p + bytes);
                                            return Status::ok();
                                        }));
    return out;
}

} // namespace hearth::gguf
