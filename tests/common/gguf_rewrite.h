// Writing a changed copy of a GGUF file for the tests: metadata set or left out, tensors
// reshaped, rewritten or dropped (malformed-file checks and negative controls), or split in parts.
#pragma once

#include "hearth/gguf.h"
#include "hearth/status.h"

#include <functional>
#include <string>
#include <vector>

namespace hearth::test {

// Called for each tensor of the copy; may change its shape and bytes, or return false to drop it.
using TensorEdit = std::function<bool(const std::string& name, std::vector<uint64_t>& shape, std::vector<uint8_t>& bytes)>;

// A copy of `from` at `to` with its metadata changed by `meta` (set keys; `dropKey` left out) and
// its tensors by `tensor`.
inline Status rewriteGguf(const std::string& from, const std::string& to, const std::function<void(gguf::Writer&)>& meta,
                          const TensorEdit& tensor = {}, const std::string& dropKey = {}) {
    HEARTH_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(from));
    gguf::Writer w;
    for (const gguf::KeyValue& kv : f.metadata())
        if (kv.key != dropKey) w.set(kv.key, kv.value);
    if (meta) meta(w);
    for (const gguf::TensorInfo& t : f.tensors()) {
        const uint8_t* p = f.tensorData(t);
        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.nDims);
        std::vector<uint8_t> bytes(p, p + t.bytes);
        if (tensor && !tensor(t.name, shape, bytes)) continue;
        HEARTH_RETURN_IF_ERROR(w.addTensor(t.name, t.type, shape, std::move(bytes)));
    }
    return w.writeFile(to);
}

// `from` written again as a split model, parts of at most `maxTensors` tensors, at
// prefix-0000N-of-0000M.gguf.
inline Status writeSplitCopy(const std::string& from, const std::string& prefix, uint32_t maxTensors) {
    HEARTH_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(from));
    gguf::Writer w(f.version());
    for (const gguf::KeyValue& kv : f.metadata()) w.set(kv.key, kv.value);
    for (const gguf::TensorInfo& t : f.tensors()) {
        const uint8_t* p = f.tensorData(t);
        HEARTH_RETURN_IF_ERROR(w.addTensor(t.name, t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.nDims),
                                           std::vector<uint8_t>(p, p + t.bytes)));
    }
    gguf::Writer::SplitOptions o;
    o.maxTensors = maxTensors;
    return w.writeSplit(prefix, o).status();
}

} // namespace hearth::test
