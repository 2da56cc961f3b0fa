// Importance matrices (hearth/imatrix.h): the collector, the GGUF and legacy file formats, and
// the per-column importance the quantizers take.
#include "hearth/imatrix.h"

#include "hearth/gguf.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace hearth::imatrix {

namespace {

constexpr const char* kSums = ".in_sum2";
constexpr const char* kCounts = ".counts";

bool endsWith(std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// A little-endian reader over the legacy file's bytes that fails instead of reading past the end.
struct Bytes {
    const std::vector<uint8_t>& b;
    size_t at = 0;
    bool i32(int32_t& v) {
        if (b.size() - at < 4) return false;
        std::memcpy(&v, b.data() + at, 4);
        at += 4;
        return true;
    }
    bool raw(void* dst, size_t n) {
        if (b.size() - at < n) return false;
        std::memcpy(dst, b.data() + at, n);
        at += n;
        return true;
    }
};

// The old format: int32 entries; per entry int32 name length, name, int32 ncall, int32 nval,
// nval floats (means × ncall); then optionally int32 chunk count, int32 length, dataset name.
Result<Data> readLegacy(const std::string& path, const std::vector<uint8_t>& bytes) {
    auto bad = [&](const std::string& why) { return invalidFormat(path + ": not an imatrix file (" + why + ")"); };
    Bytes in{bytes};
    int32_t n = 0;
    if (!in.i32(n) || n < 1) return bad("no entries");
    Data d;
    d.legacy = true;
    for (int32_t e = 0; e < n; ++e) {
        int32_t len = 0, ncall = 0, nval = 0;
        if (!in.i32(len) || len < 1 || len > 4096) return bad("entry " + std::to_string(e + 1) + ": bad name length");
        std::string name(size_t(len), '\0');
        if (!in.raw(name.data(), size_t(len))) return bad("entry " + std::to_string(e + 1) + ": truncated name");
        if (!in.i32(ncall) || !in.i32(nval) || nval < 1 || ncall < 0)
            return bad("entry '" + name + "': bad value count");
        Entry& x = d.entries[name];
        x.sums.resize(size_t(nval));
        if (!in.raw(x.sums.data(), size_t(nval) * 4)) return bad("entry '" + name + "': truncated values");
        x.counts = {int64_t(ncall)};
    }
    int32_t chunks = 0, len = 0;
    if (in.i32(chunks)) {
        d.chunkCount = uint32_t(std::max(chunks, 0));
        if (in.i32(len) && len > 0 && len <= 1 << 20) {
            std::string name(size_t(len), '\0');
            if (in.raw(name.data(), size_t(len))) d.datasets.push_back(name);
        }
    }
    return d;
}

Result<Data> readGguf(const std::string& path) {
    auto file = gguf::File::open(path);
    if (!file) return file.status().withContext(path);
    auto bad = [&](const std::string& why) { return invalidFormat(path + ": bad imatrix file: " + why); };
    Data d;
    if (!file->has("imatrix.datasets") || !file->has("imatrix.chunk_count") || !file->has("imatrix.chunk_size"))
        return bad("the imatrix.datasets / chunk_count / chunk_size metadata is missing (is it a model file?)");
    if (auto ds = file->getStringArray("imatrix.datasets")) d.datasets = *ds;
    HEARTH_ASSIGN_OR_RETURN(d.chunkCount, file->getU32("imatrix.chunk_count"));
    HEARTH_ASSIGN_OR_RETURN(d.chunkSize, file->getU32("imatrix.chunk_size"));
    std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> parts;
    for (const gguf::TensorInfo& t : file->tensors()) {
        if (endsWith(t.name, kSums)) parts[t.name.substr(0, t.name.size() - std::strlen(kSums))].first = &t;
        else if (endsWith(t.name, kCounts)) parts[t.name.substr(0, t.name.size() - std::strlen(kCounts))].second = &t;
    }
    if (parts.empty()) return bad("no " + std::string(kSums) + " tensors");
    for (const auto& [name, p] : parts) {
        const auto [sums, counts] = p;
        if (!sums || !counts) return bad("'" + name + "' lacks its " + (sums ? "counts" : "sums"));
        if (sums->type != quant::Type::F32 || counts->type != quant::Type::F32)
            return bad("'" + name + "': sums and counts must be F32");
        const uint64_t matrices = counts->elements();
        if (matrices == 0 || sums->elements() % matrices != 0 || sums->ne[1] != matrices)
            return bad("'" + name + "': " + std::to_string(sums->elements()) + " sums do not split into " +
                       std::to_string(matrices) + " matrices");
        Entry& e = d.entries[name];
        e.sums.resize(sums->elements());
        std::vector<float> c(matrices);
        std::memcpy(e.sums.data(), file->tensorData(*sums), e.sums.size() * 4);
        std::memcpy(c.data(), file->tensorData(*counts), c.size() * 4);
        for (float v : c) {
            if (!std::isfinite(v) || v < 0.0f) return bad("'" + name + "': a count is negative or not finite");
            e.counts.push_back(std::lround(v)); // as llama.cpp reads them
        }
    }
    return d;
}

} // namespace

Result<Data> read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return notFound(path + ": cannot open the imatrix file");
    std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) return readGguf(path);
    return readLegacy(path, bytes);
}

Status write(const Data& data, const std::string& path) {
    gguf::Writer w;
    w.set("general.type", gguf::Value::string("imatrix"));
    w.set("imatrix.datasets", gguf::Value::stringArray(data.datasets));
    w.set("imatrix.chunk_count", gguf::Value::u32(data.chunkCount));
    w.set("imatrix.chunk_size", gguf::Value::u32(data.chunkSize));
    for (const auto& [name, e] : data.entries) {
        if (e.counts.empty() || e.sums.size() % e.counts.size() != 0)
            return invalidArgument("imatrix entry '" + name + "' has inconsistent sums and counts");
        const uint64_t matrices = e.counts.size(), cols = e.sums.size() / matrices;
        std::vector<uint8_t> sums(e.sums.size() * 4), counts(e.counts.size() * 4);
        std::memcpy(sums.data(), e.sums.data(), sums.size());
        for (size_t j = 0; j < e.counts.size(); ++j) {
            const float c = float(e.counts[j]);
            std::memcpy(counts.data() + 4 * j, &c, 4);
        }
        HEARTH_RETURN_IF_ERROR(w.addTensor(name + kSums, quant::Type::F32, {cols, matrices}, std::move(sums)));
        HEARTH_RETURN_IF_ERROR(w.addTensor(name + kCounts, quant::Type::F32, {1, matrices}, std::move(counts)));
    }
    return w.writeFile(path);
}

Result<std::optional<std::vector<float>>> importanceFor(const Data& data, const std::string& name, int64_t cols,
                                                        int64_t matrices) {
    const auto it = data.entries.find(name);
    if (it == data.entries.end()) return std::optional<std::vector<float>>();
    const Entry& e = it->second;
    if (int64_t(e.sums.size()) != cols * matrices)
        return invalidArgument("imatrix entry '" + name + "' has " + std::to_string(e.sums.size()) +
                               " values, but the tensor has " + std::to_string(cols) + " columns × " +
                               std::to_string(matrices) + " matrices: the imatrix is for another model");
    std::vector<float> out(e.sums.size());
    if (data.legacy) {
        const int64_t ncall = e.counts.empty() ? 0 : e.counts[0];
        for (size_t i = 0; i < out.size(); ++i) out[i] = ncall > 0 ? e.sums[i] / float(ncall) : e.sums[i];
    } else {
        const int64_t n = int64_t(e.counts.size()), width = int64_t(e.sums.size()) / n;
        for (int64_t j = 0; j < n; ++j) {
            const float count = float(e.counts[size_t(j)]);
            for (int64_t i = 0; i < width; ++i)
                out[size_t(j * width + i)] = count > 0.0f ? e.sums[size_t(j * width + i)] / count : 1.0f;
        }
    }
    for (float v : out)
        if (!std::isfinite(v) || v < 0.0f)
            return invalidArgument("imatrix entry '" + name + "' has a negative or non-finite value");
    return std::optional<std::vector<float>>(std::move(out));
}

Entry* Collector::entryFor(std::string_view weight, int64_t cols, int64_t matrices) {
    Entry& e = m_entries[std::string(weight)];
    if (e.sums.empty()) {
        e.sums.assign(size_t(cols * matrices), 0.0f);
        e.counts.assign(size_t(matrices), 0);
    } else if (int64_t(e.sums.size()) != cols * matrices || int64_t(e.counts.size()) != matrices) {
        if (m_status.isOk())
            m_status = internalError("imatrix: inconsistent size for " + std::string(weight));
        return nullptr;
    }
    return &e;
}

void Collector::onMatMul(std::string_view weight, const float* x, int64_t rows, int64_t cols) {
    if (rows < 16) return; // llama.cpp leaves out small batches
    if (!(weight.substr(0, 4) == "blk." || (m_processOutput && weight == "output.weight"))) return;
    Entry* e = entryFor(weight, cols, 1);
    if (!e) return;
    float* acc = e->sums.data();
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        for (int64_t j = 0; j < cols; ++j) acc[j] += xr[j] * xr[j];
    }
    e->counts[0] += rows;
    for (int64_t j = 0; j < cols; ++j)
        if (!std::isfinite(acc[j]) && m_status.isOk())
            m_status = invalidArgument("imatrix: non-finite activations into " + std::string(weight));
}

void Collector::onMatMulId(std::string_view weight, const float* x, bool shared, const int32_t* ids, int64_t tokens,
                           int64_t used, int64_t cols, int64_t nExperts) {
    Entry* e = entryFor(weight, cols, nExperts);
    if (!e) return;
    for (int64_t slot = 0; slot < used; ++slot)
        for (int64_t t = 0; t < tokens; ++t) {
            const int32_t ex = ids[t * used + slot];
            if (ex < 0 || ex >= nExperts) continue; // the program rejects these before running
            const float* xr = x + (shared ? t : t * used + slot) * cols;
            float* acc = e->sums.data() + int64_t(ex) * cols;
            e->counts[size_t(ex)] += 1;
            for (int64_t j = 0; j < cols; ++j) acc[j] += xr[j] * xr[j];
        }
    for (float v : e->sums)
        if (!std::isfinite(v) && m_status.isOk())
            m_status = invalidArgument("imatrix: non-finite activations into " + std::string(weight));
}

} // namespace hearth::imatrix
