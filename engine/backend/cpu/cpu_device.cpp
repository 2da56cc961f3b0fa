// The CPU devices ("cpu" and "ref"): host buffers, K/V pools over PagedKvStore, the weights
// (repacked for the kernels of this CPU), and where each tensor of a program lives.
#include "backend/cpu/cpu_device.h"

#include "backend/cpu/matmul.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/zeroed_memory.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace hearth::cpu {

Result<std::unique_ptr<HostBuffer>> HostBuffer::create(uint64_t bytes) {
    auto b = std::unique_ptr<HostBuffer>(new HostBuffer());
    if (bytes > 0) {
        b->m_memory = ZeroedMemory(size_t(bytes));
        if (!b->m_memory.ok())
            return outOfMemory("cannot allocate " + std::to_string(bytes >> 20) + " MiB of host memory");
        b->m_data = b->m_memory.data();
    }
    b->m_size = bytes;
    return b;
}

Status HostBuffer::write(uint64_t offset, const void* src, uint64_t bytes) {
    if (offset > m_size || bytes > m_size - offset) return outOfRange("host buffer write past its end");
    if (bytes) std::memcpy(m_data + offset, src, size_t(bytes));
    return Status::ok();
}

Status HostBuffer::read(uint64_t offset, void* dst, uint64_t bytes) const {
    if (offset > m_size || bytes > m_size - offset) return outOfRange("host buffer read past its end");
    if (bytes) std::memcpy(dst, m_data + offset, size_t(bytes));
    return Status::ok();
}

Status CpuKvPool::copyBlock(int32_t src, int32_t dst) {
    if (src < 0 || dst < 0 || src >= m_spec.numBlocks || dst >= m_spec.numBlocks)
        return outOfRange("block id outside the CPU K/V pool");
    for (PagedKvStore& store : m_stores) store.copyBlock(src, dst);
    return Status::ok();
}

uint64_t CpuKvPool::bytes() const {
    uint64_t total = 0;
    for (const PagedKvStore& store : m_stores) total += store.bytes();
    return total;
}

CpuDevice::CpuDevice(bool reference, ThreadPool* pool)
    : m_reference(reference), m_pool(reference ? nullptr : pool), m_weights(std::make_shared<CpuWeights>()) {
    m_info.id = reference ? "ref" : "cpu";
    m_info.api = "cpu";
    m_info.name = reference ? "scalar reference" : std::string("CPU (") + activeIsa() + ")";
    m_info.type = "cpu";
    m_info.sharesHostMemory = true;
    m_info.host = true;
}

CpuDevice::~CpuDevice() = default;

bool CpuDevice::supportsOp(const graph::Graph& g, const graph::Node& node) const {
    // Every op runs here (the reference implementation where no kernel covers a case); what a
    // K/V pool cannot hold was refused when it was made.
    (void)g;
    (void)node;
    return true;
}

Result<std::unique_ptr<backend::Buffer>> CpuDevice::allocate(uint64_t bytes) {
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<HostBuffer> b, HostBuffer::create(bytes));
    return std::unique_ptr<backend::Buffer>(std::move(b));
}

Result<uint64_t> CpuDevice::loadWeights(const std::vector<graph::Weight>& all, std::span<const backend::WeightUse> used) {
    CpuWeights& W = *m_weights;
    W.all = &all;
    W.readRows.assign(all.size(), false);
    if (!m_reference) {
        // HEARTH_CPU_REPACK=0 keeps the plain kernels on the mapped weights (A/B measurements).
        const char* env = std::getenv("HEARTH_CPU_REPACK");
        if (!(env && std::string(env) == "0")) {
            std::vector<ref::Matrix> matrices;
            for (const backend::WeightUse& u : used) {
                const graph::Weight& w = all[size_t(u.index)];
                if (!u.matMul || w.nDims < 2 || w.ne[3] != 1) continue;
                // A 3-D weight holds one matrix per expert: each gets its own copy.
                for (int64_t e = 0; e < w.ne[2]; ++e)
                    matrices.push_back({w.data + uint64_t(e) * w.rowBytes * uint64_t(w.ne[1]), w.type, w.ne[0], w.ne[1], w.rowBytes});
            }
            auto packed = std::make_shared<RepackedWeights>();
            packed->setBase(m_sharedPacked);
            HEARTH_RETURN_IF_ERROR(packed->addAll(matrices, /*releaseSource=*/true, m_pool));
            if (!packed->empty()) W.packed = std::move(packed);
        }
    }
    // A table looked up a few rows per step is read from the file rather than the mapping (random
    // rows would otherwise map the pages around each, 2 MiB with a huge-page page cache, until
    // the whole table is resident), unless a matMul also reads it in place.
    for (const backend::WeightUse& u : used) {
        if (!u.rows || !W.reader) continue;
        const graph::Weight& w = all[size_t(u.index)];
        const bool inPlace = u.matMul && !(W.packed && W.packed->find({w.data, w.type, w.ne[0], w.ne[1], w.rowBytes}));
        W.readRows[size_t(u.index)] = !inPlace;
    }
    return uint64_t(W.packed ? W.packed->bytes() : 0);
}

void CpuDevice::shareWeightsWith(const backend::Device& other) {
    const auto* cpu = dynamic_cast<const CpuDevice*>(&other);
    if (cpu && cpu->m_reference == m_reference) m_sharedPacked = cpu->m_weights->packed;
}

uint64_t CpuDevice::repackedBytes() const { return m_weights->packed ? m_weights->packed->bytes() : 0; }

Result<std::unique_ptr<backend::KvPool>> CpuDevice::createKvPool(const backend::KvPoolSpec& spec) {
    std::vector<backend::KvLayerShape> kinds;
    std::vector<int> layersOf;
    std::vector<CpuKvPool::Place> places;
    for (size_t i = 0; i < spec.layers.size(); ++i) {
        const backend::KvLayerShape s = spec.shapeAt(i);
        if (s.headDim < 1 || s.kRow % s.headDim != 0 || s.kRow != s.vRow)
            return unsupported("the CPU K/V cache needs K and V rows of the same whole number of heads (K " +
                               std::to_string(s.kRow) + ", V " + std::to_string(s.vRow) + " values)");
        size_t k = 0;
        while (k < kinds.size() && !(kinds[k] == s)) ++k;
        if (k == kinds.size()) {
            kinds.push_back(s);
            layersOf.push_back(0);
        }
        places.push_back({int(k), layersOf[k]++});
    }
    std::vector<PagedKvStore> stores;
    for (size_t k = 0; k < kinds.size(); ++k) {
        HEARTH_ASSIGN_OR_RETURN(PagedKvStore store,
                                PagedKvStore::create(layersOf[k], spec.numBlocks, spec.blockSize,
                                                     int(kinds[k].kRow / kinds[k].headDim), kinds[k].headDim, spec.type));
        stores.push_back(std::move(store));
    }
    return std::unique_ptr<backend::KvPool>(new CpuKvPool(spec, std::move(stores), std::move(places)));
}

Result<std::unique_ptr<backend::Program>> CpuDevice::compile(const backend::ProgramSpec& spec) {
    if (m_reference) return compileReference(spec, m_weights);
    return compileCpu(spec, m_weights, m_pool);
}

Status HostTensors::resolve(const backend::ProgramSpec& spec, const CpuWeights& w) {
    graph = spec.graph;
    weights = &w;
    kv = static_cast<CpuKvPool*>(spec.kv);
    const auto& tensors = graph->tensors();
    ptr.assign(tensors.size(), nullptr);
    for (size_t id = 0; id < tensors.size(); ++id) {
        // Walk to the root, summing view offsets.
        graph::TensorId r = graph::TensorId(id);
        uint64_t offset = 0;
        while (tensors[size_t(r)].viewOf != graph::kNone) {
            offset += tensors[size_t(r)].offset;
            r = tensors[size_t(r)].viewOf;
        }
        const graph::Tensor& root = tensors[size_t(r)];
        switch (root.kind) {
        case graph::TensorKind::Weight:
            if (!w.all || size_t(root.weight) >= w.all->size()) return internalError("weight not loaded on the CPU");
            ptr[id] = const_cast<uint8_t*>((*w.all)[size_t(root.weight)].data) + offset;
            break;
        case graph::TensorKind::KvCache: break;
        case graph::TensorKind::Input:
        case graph::TensorKind::State:
        case graph::TensorKind::Activation: {
            if (size_t(r) >= spec.bindings.size()) break;
            const backend::Binding& b = spec.bindings[size_t(r)];
            if (b.buffer) ptr[id] = b.buffer->host() + b.offset + offset;
            break;
        }
        }
    }
    // Every tensor a node touches must have storage.
    for (int index : spec.nodes) {
        const graph::Node& n = graph->nodes()[size_t(index)];
        auto check = [&](graph::TensorId id) -> Status {
            if (id == graph::kNone) return Status::ok();
            const graph::Tensor& t = tensors[size_t(id)];
            if (t.kind == graph::TensorKind::KvCache) {
                if (!kv || kv->spec().indexOf(t.layer) < 0)
                    return internalError("the CPU holds no K/V pool for layer " + std::to_string(t.layer));
                return Status::ok();
            }
            if (!ptr[size_t(id)]) return internalError("tensor '" + t.name + "' has no storage on the CPU");
            return Status::ok();
        };
        HEARTH_RETURN_IF_ERROR(check(n.out));
        for (graph::TensorId s : n.src) HEARTH_RETURN_IF_ERROR(check(s));
    }
    return Status::ok();
}

} // namespace hearth::cpu
