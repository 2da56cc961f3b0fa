// A whole graph bound to one device for the op tests: a buffer per root tensor (weights and K/V
// pools excepted), every node in one compiled program, and writing and reading tensors (with its
// K/V pool, DeviceSide); plus uniform random values for their inputs.
#pragma once

#include "backend/device.h"
#include "graph/graph.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

namespace hearth::test {

struct GraphProgram {
    std::vector<std::unique_ptr<backend::Buffer>> buffers;
    backend::ProgramSpec spec;
    std::unique_ptr<backend::Program> program;

    // Allocates and binds the buffers of g (which must outlive this) on dev and compiles all its
    // nodes; poison fills the buffers with 0xFF bytes (NaN) first, so that a value never written
    // cannot pass a comparison.
    Status init(backend::Device& dev, const graph::Graph& g, bool poison = false) {
        spec.graph = &g;
        spec.bindings.assign(g.tensors().size(), {});
        for (size_t id = 0; id < g.tensors().size(); ++id) {
            const graph::Tensor& t = g.tensor(graph::TensorId(id));
            if (t.viewOf != graph::kNone || t.kind == graph::TensorKind::Weight || t.kind == graph::TensorKind::KvCache)
                continue;
            HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> buf, dev.allocate((t.bytes() + 255) / 256 * 256));
            if (poison) {
                const std::vector<uint8_t> bytes(size_t(t.bytes()), 0xFF);
                HEARTH_RETURN_IF_ERROR(buf->write(0, bytes.data(), bytes.size()));
            }
            spec.bindings[id] = {buf.get(), 0};
            buffers.push_back(std::move(buf));
        }
        for (size_t i = 0; i < g.nodes().size(); ++i) spec.nodes.push_back(int(i));
        HEARTH_ASSIGN_OR_RETURN(program, dev.compile(spec));
        return Status::ok();
    }

    Status run() { return program->run(); }

    // Writes v at the start of tensor id's buffer.
    template <typename T> Status set(graph::TensorId id, const std::vector<T>& v) const {
        return spec.bindings[size_t(id)].buffer->write(0, v.data(), v.size() * sizeof(T));
    }
    // Tensor id's F32 values (empty if the read fails).
    std::vector<float> get(graph::TensorId id) const {
        std::vector<float> v(size_t(spec.graph->tensor(id).elements()));
        if (!spec.bindings[size_t(id)].buffer->read(0, v.data(), v.size() * 4).isOk()) v.clear();
        return v;
    }
};

// n values drawn uniformly from [lo, hi).
// One graph on one device with its K/V pool when it has one, every buffer poisoned (NaN) first;
// unsupported (naming the op) when the device refuses a node. Members in this order: the program
// goes before the pool.
struct DeviceSide {
    std::unique_ptr<backend::KvPool> pool;
    GraphProgram program;

    Status init(backend::Device& dev, const graph::Graph& g, const backend::KvPoolSpec* kv) {
        for (const graph::Node& n : g.nodes())
            if (!dev.supportsOp(g, n)) return unsupported(dev.info().id + " refuses " + graph::opName(n.op));
        if (kv) {
            HEARTH_ASSIGN_OR_RETURN(pool, dev.createKvPool(*kv));
            program.spec.kv = pool.get();
        }
        return program.init(dev, g, true);
    }
};

inline std::vector<float> uniformValues(size_t n, std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// max |ours - ref| / max(1, max |ref|); infinite for a size mismatch, no values or a value not finite.
inline double relativeError(const std::vector<float>& ours, const std::vector<float>& ref) {
    if (ours.size() != ref.size() || ref.empty()) return INFINITY;
    double maxRef = 0.0, maxDiff = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        maxRef = std::max(maxRef, double(std::fabs(ref[i])));
        const double d = std::fabs(double(ours[i]) - double(ref[i]));
        maxDiff = std::isfinite(d) ? std::max(maxDiff, d) : INFINITY;
    }
    return maxDiff / std::max(1.0, maxRef);
}

} // namespace hearth::test
