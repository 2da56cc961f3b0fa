// Runs the self-test's cases (selftest_cases.cpp) on a device and on the scalar reference: each
// case's graph gets its own buffers, weights, K/V pool and State pools on both, its leaf tensors
// and State pools the same values, and its output (and the State pools after the run) is compared
// (floats relative to the reference's largest magnitude, indices exactly).
#include "backend/selftest.h"

#include "backend/cpu/cpu_device.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/thread_pool.h"
#include "backend/selftest_cases.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hearth {

int SelftestReport::failures() const {
    int n = 0;
    for (const SelftestCase& c : cases) n += c.supported && !c.ok;
    return n;
}

int SelftestReport::unsupportedCount() const {
    int n = 0;
    for (const SelftestCase& c : cases) n += !c.supported;
    return n;
}

std::vector<std::string> SelftestReport::failing() const {
    std::vector<std::string> out;
    for (const SelftestCase& c : cases) {
        if (!c.supported || c.ok) continue;
        const std::string name = c.op + " " + c.type;
        bool seen = false;
        for (const std::string& s : out) seen = seen || s == name;
        if (!seen) out.push_back(name);
    }
    return out;
}


namespace backend {

namespace {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;
using graph::TensorKind;
using selftest::Case;

// One case on one device: the bytes of its output and then of each compared State pool, or why
// there are none.
struct Outcome {
    bool supported = true;
    Status status;
    std::vector<std::vector<uint8_t>> bytes;
};

// A step the device declines (an Unsupported status) makes the case unsupported; any other error
// is the case's failure.
Outcome declined(const Status& s, const std::string& where) {
    Outcome o;
    o.supported = s.code() != ErrorCode::Unsupported;
    o.status = where.empty() ? s : s.withContext(where);
    return o;
}

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

Outcome runOn(Device& dev, const Case& c, const std::vector<graph::Weight>& weights) {
    const graph::Graph& g = c.graph;
    for (const Node& n : g.nodes())
        if (!dev.supportsOp(g, n)) {
            Outcome o;
            o.supported = false;
            o.status = unsupported(std::string(graph::opName(n.op)) + ": not supported for these operands");
            return o;
        }

    // The weights its nodes read, marked as ModelRunner marks them.
    std::map<int32_t, WeightUse> uses;
    for (const Node& n : g.nodes())
        for (size_t s = 0; s < n.src.size(); ++s) {
            if (n.src[s] == graph::kNone) continue;
            const Tensor& t = g.tensor(g.root(n.src[s]));
            if (t.kind != TensorKind::Weight) continue;
            WeightUse& u = uses[t.weight];
            u.index = t.weight;
            if (s == 0 && (n.op == Op::MatMul || n.op == Op::MatMulId)) u.matMul = true;
            else if (s == 0 && n.op == Op::GetRows) u.rows = true;
            else u.other = true;
        }
    if (!uses.empty()) {
        std::vector<WeightUse> list;
        for (const auto& [index, use] : uses) list.push_back(use);
        auto loaded = dev.loadWeights(weights, list);
        if (!loaded) return declined(loaded.status(), "loading weights");
    }

    std::unique_ptr<KvPool> pool;
    if (c.kv) {
        if (dev.maxKvBlocks(c.kvSpec) < c.kvSpec.numBlocks)
            return declined(unsupported(std::string("no K/V pool of ") + kvTypeName(c.kvSpec.type) + " rows here"), "");
        auto made = dev.createKvPool(c.kvSpec);
        if (!made) return declined(made.status(), "K/V pool");
        pool = std::move(made).value();
    }

    // A buffer per root activation and input; what nodes make starts as NaN (0xFF bytes; -1 for
    // indices), so that an output never written cannot pass.
    std::vector<bool> made(g.tensors().size(), false);
    for (const Node& n : g.nodes()) made[size_t(g.root(n.out))] = true;
    std::vector<std::unique_ptr<Buffer>> buffers;
    ProgramSpec spec;
    spec.graph = &g;
    spec.kv = pool.get();
    spec.bindings.assign(g.tensors().size(), {});
    for (size_t id = 0; id < g.tensors().size(); ++id) {
        const Tensor& t = g.tensor(TensorId(id));
        if (t.viewOf != graph::kNone ||
            (t.kind != TensorKind::Activation && t.kind != TensorKind::Input && t.kind != TensorKind::State))
            continue;
        auto buffer = dev.allocate(roundUp(std::max<uint64_t>(t.bytes(), 4), 256));
        if (!buffer) return declined(buffer.status(), "allocating '" + t.name + "'");
        if (made[id]) {
            const std::vector<uint8_t> poison(size_t(t.bytes()), 0xFF);
            const Status s = (*buffer)->write(0, poison.data(), poison.size());
            if (!s.isOk()) return declined(s, "writing '" + t.name + "'");
        }
        spec.bindings[id] = {buffer->get(), 0};
        buffers.push_back(std::move(buffer).value());
    }
    for (const selftest::Fill& f : c.fills) {
        const Tensor& t = g.tensor(f.tensor);
        const void* src = f.f.empty() ? static_cast<const void*>(f.i.data()) : static_cast<const void*>(f.f.data());
        const uint64_t bytes = (f.f.empty() ? f.i.size() : f.f.size()) * 4;
        if (bytes != t.bytes()) return declined(internalError("selftest: '" + t.name + "' filled with the wrong size"), "");
        const Status s = spec.bindings[size_t(f.tensor)].buffer->write(0, src, bytes);
        if (!s.isOk()) return declined(s, "writing '" + t.name + "'");
    }
    for (size_t i = 0; i < g.nodes().size(); ++i) spec.nodes.push_back(int(i));

    auto program = dev.compile(spec);
    if (!program) return declined(program.status(), "compiling");
    const Status ran = (*program)->run();
    if (!ran.isOk()) {
        Outcome o;
        o.status = ran.withContext("running");
        return o;
    }
    Outcome o;
    std::vector<TensorId> compared{g.root(c.output)};
    for (TensorId s : c.states) compared.push_back(g.root(s));
    for (TensorId id : compared) {
        std::vector<uint8_t>& bytes = o.bytes.emplace_back(size_t(g.tensor(id).bytes()));
        const Status read = spec.bindings[size_t(id)].buffer->read(0, bytes.data(), bytes.size());
        if (!read.isOk()) return declined(read, "reading '" + g.tensor(id).name + "'");
    }
    return o;
}

// max |ours - ref| / max(1, max |ref|); infinite when ours is not finite where ref is.
double floatError(const std::vector<uint8_t>& oursBytes, const std::vector<uint8_t>& refBytes) {
    const size_t n = refBytes.size() / 4;
    std::vector<float> ours(n), ref(n);
    std::memcpy(ours.data(), oursBytes.data(), n * 4);
    std::memcpy(ref.data(), refBytes.data(), n * 4);
    double maxRef = 0.0, maxDiff = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(ref[i])) {
            const bool same = ours[i] == ref[i] || (std::isnan(ours[i]) && std::isnan(ref[i]));
            if (!same) return std::numeric_limits<double>::infinity();
            continue;
        }
        maxRef = std::max(maxRef, double(std::fabs(ref[i])));
        const double d = std::fabs(double(ours[i]) - double(ref[i]));
        if (!(d <= maxDiff)) maxDiff = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
    }
    return maxDiff / std::max(1.0, maxRef);
}

// The fraction of indices that differ.
double indexError(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& ref) {
    const size_t n = ref.size() / 4;
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += std::memcmp(&ours[i * 4], &ref[i * 4], 4) != 0;
    return n ? double(wrong) / double(n) : 0.0;
}

} // namespace

Result<SelftestReport> runSelftest(Device& device, const SelftestOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    SelftestReport report;
    report.device = device.info().id;
    report.deviceName = device.info().name;

    selftest::WeightTable weights;
    std::vector<Case> cases;
    HEARTH_RETURN_IF_ERROR(selftest::buildCases(options, weights, cases, report.notQuantizable));
    if (options.parts < 1 || options.part < 0 || options.part >= options.parts)
        return invalidArgument("self-test part " + std::to_string(options.part) + " of " + std::to_string(options.parts));
    if (options.parts > 1) {
        std::map<std::string, int> dealt; // type -> its part
        std::vector<Case> mine;
        for (Case& c : cases) {
            const auto [at, added] = dealt.try_emplace(c.type, int(dealt.size() % size_t(options.parts)));
            if (at->second == options.part) mine.push_back(std::move(c));
        }
        cases = std::move(mine);
    }

    cpu::CpuDevice reference(true, nullptr);
    for (const Case& c : cases) {
        SelftestCase r;
        r.op = c.op;
        r.type = c.type;
        r.shape = c.shape;
        r.tol = c.tol;
        const auto caseStart = std::chrono::steady_clock::now();
        const Outcome ours = runOn(device, c, weights.list());
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - caseStart).count();
        if (!ours.supported) {
            r.supported = false;
            r.error = ours.status.message();
        } else if (!ours.status.isOk()) {
            r.ok = false;
            r.error = ours.status.toString();
            r.maxErr = std::numeric_limits<double>::infinity();
        } else {
            const Outcome ref = runOn(reference, c, weights.list());
            bool sizes = ref.bytes.size() == ours.bytes.size();
            for (size_t i = 0; sizes && i < ref.bytes.size(); ++i) sizes = ref.bytes[i].size() == ours.bytes[i].size();
            if (!ref.supported || !ref.status.isOk() || !sizes) {
                r.ok = false;
                r.error = "reference: " + (ref.status.isOk() ? std::string("output size differs") : ref.status.toString());
                r.maxErr = std::numeric_limits<double>::infinity();
            } else {
                // The output, then each State pool (F32): the worst of them.
                const bool indices = c.graph.tensor(c.output).type == quant::Type::I32;
                r.maxErr = indices ? indexError(ours.bytes[0], ref.bytes[0]) : floatError(ours.bytes[0], ref.bytes[0]);
                for (size_t i = 1; i < ref.bytes.size(); ++i) {
                    const double e = floatError(ours.bytes[i], ref.bytes[i]);
                    if (!(e <= r.maxErr)) {
                        r.maxErr = e;
                        r.error = "state pool '" + c.graph.tensor(c.states[i - 1]).name + "' differs most";
                    }
                }
                r.ok = r.maxErr <= r.tol;
                if (r.ok) r.error.clear();
            }
        }
        report.cases.push_back(std::move(r));
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
}

} // namespace backend

std::vector<std::string> cpuIsaLevels() {
    std::vector<std::string> out;
    for (cpu::Isa isa : {cpu::Isa::Scalar, cpu::Isa::Avx2, cpu::Isa::AvxVnni, cpu::Isa::Avx512})
        if (cpu::isaSupported(isa)) out.emplace_back(cpu::isaName(isa));
    return out;
}

namespace {

// Puts the CPU kernels at a level for a scope (they repack the weights when the device loads
// them, so the level is set before the device opens), then back at the one before.
class IsaScope {
public:
    explicit IsaScope(cpu::Isa isa) : m_before(cpu::activeIsaLevel()) { cpu::forceIsa(isa); }
    ~IsaScope() { cpu::forceIsa(m_before); }
    IsaScope(const IsaScope&) = delete;
    IsaScope& operator=(const IsaScope&) = delete;

private:
    cpu::Isa m_before;
};

} // namespace

Result<SelftestReport> runDeviceSelftest(const std::string& deviceId, const SelftestOptions& options, int threads) {
    std::unique_ptr<IsaScope> scope;
    if (deviceId == "cpu" && !options.cpuIsa.empty()) {
        cpu::Isa isa = cpu::Isa::Scalar;
        if (!cpu::isaFromName(options.cpuIsa.c_str(), &isa) || !cpu::isaSupported(isa)) {
            std::string levels;
            for (const std::string& l : cpuIsaLevels()) levels += (levels.empty() ? "" : ", ") + l;
            return invalidArgument("CPU level '" + options.cpuIsa + "': this CPU runs " + levels);
        }
        scope = std::make_unique<IsaScope>(isa);
    }
    // The optimized CPU device runs on threads, as it does for a model.
    const int n = threads > 0 ? threads : int(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
    cpu::ThreadPool pool(deviceId == "cpu" ? n : 1);
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<backend::Device> device, backend::openDevice(deviceId, &pool));
    auto report = backend::runSelftest(*device, options);
    if (!report) return internalError(report.status().message());
    if (deviceId == "cpu") report->cpuIsa = cpu::activeIsa();
    return report;
}

} // namespace hearth
