// libFuzzer target for the GGUF reader and the model binding: any byte string must parse or be
// refused cleanly; a file that parses must survive every accessor, re-serialise to bytes that
// parse the same way (also when written as split parts), and either bind as an architecture whose
// step graphs build, or be refused with a message.
#include "hearth/gguf.h"
#include "hearth/quant.h"
#include "model/arch.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace hearth::gguf;

namespace {
void check(bool ok) {
    if (!ok) __builtin_trap(); // a violated invariant is a finding
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto f = File::fromMemory(data, size);
    if (!f.isOk()) {
        check(!f.status().message().empty());
        return 0;
    }
    Writer w(f->version());
    for (const KeyValue& kv : f->metadata()) {
        (void)kv.value.toDisplayString();
        (void)kv.value.asUInt();
        (void)kv.value.asI32Array();
        (void)f->getU32(kv.key);
        (void)f->getString(kv.key);
        (void)f->getF32Array(kv.key);
        w.set(kv.key, kv.value);
    }
    for (const TensorInfo& t : f->tensors()) {
        const uint8_t* p = f->tensorData(t);
        check(p != nullptr);
        check(p + t.bytes <= data + size);
        volatile uint8_t sink = t.bytes ? p[t.bytes - 1] : 0;
        (void)sink;
        // The first row of a quantized tensor dequantizes (any bytes: every grid index, sign and
        // scale field of every type decodes without reading outside its block).
        const hearth::quant::TypeInfo* info = hearth::quant::typeInfo(t.type);
        if (info && info->canDequantize && t.ne[0] <= 4096) {
            std::vector<float> row(size_t(t.ne[0]));
            auto rb = hearth::quant::rowBytes(t.type, uint64_t(t.ne[0]));
            check(rb.isOk() && *rb <= t.bytes);
            check(hearth::quant::dequantizeRow(t.type, p, row.data(), int64_t(t.ne[0])).isOk());
        }
        check(w.addTensor(t.name, t.type, {t.ne.begin(), t.ne.begin() + t.nDims},
                          std::vector<uint8_t>(p, p + t.bytes))
                  .isOk());
    }
    auto bytes = w.writeToMemory();
    check(bytes.isOk());
    auto again = File::fromMemory(bytes->data(), bytes->size());
    check(again.isOk());
    check(again->metadata().size() == f->metadata().size());
    check(again->tensors().size() == f->tensors().size());

    // The same model written as split parts of 1 to 3 tensors: each part parses with its split
    // keys, and the parts together hold every tensor once, byte for byte.
    Writer::SplitOptions splitOptions;
    splitOptions.maxTensors = 1 + size % 3;
    auto parts = w.writeSplitToMemory(splitOptions);
    check(parts.isOk() || f->tensors().size() / splitOptions.maxTensors > 65535);
    if (parts.isOk()) {
        size_t seen = 0;
        for (size_t i = 0; i < parts->size(); ++i) {
            auto part = File::fromMemory((*parts)[i].data(), (*parts)[i].size());
            check(part.isOk());
            check(part->getU32(kSplitNoKey).isOk() && *part->getU32(kSplitNoKey) == i);
            check(part->getU32(kSplitCountKey).isOk() && *part->getU32(kSplitCountKey) == parts->size());
            for (const TensorInfo& t : part->tensors()) {
                const TensorInfo* o = f->findTensor(t.name);
                check(o && o->bytes == t.bytes && std::memcmp(part->tensorData(t), f->tensorData(*o), t.bytes) == 0);
                ++seen;
            }
        }
        check(seen == f->tensors().size());
    }

    auto arch = hearth::model::loadArchitecture(*f);
    if (!arch.isOk()) {
        check(!arch.status().message().empty());
        return 0;
    }
    hearth::model::KvSetup kv;
    kv.numBlocks = 4;
    for (const hearth::graph::StepShape shape : {hearth::graph::StepShape{1, 1, 64}, hearth::graph::StepShape{5, 0, 64}}) {
        const hearth::graph::Graph g = (*arch)->buildGraph(shape, kv);
        check(g.status().isOk() || !g.status().message().empty());
    }
    return 0;
}
