// The optimized CPU program of a step graph: every linear layer is one batched, multithreaded
// matMul over all the step's tokens (each weight row decoded once per step, which is where
// continuous batching pays); matMuls that read the same activations (q, k and v; gate and up) run
// as one job; attention runs in parallel over (sequence, KV head, run of tokens) straight from
// the paged cache; and at decode the threads prefetch the next job's weights while they would
// otherwise wait. The ops of hybrid models (the recurrent ones and their gates) run in
// recurrent_fast.cpp. Nodes no kernel here covers run the reference implementation
// (ref_program.cpp).
// Everything a run needs is allocated at compile: a warm step makes no heap allocations.
#include "backend/cpu/activations.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/cpu_device.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/recurrent_fast.h"
#include "backend/cpu/ref_ops.h"
#include "backend/cpu/repack.h"
#include "backend/cpu/rope_math.h"
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

namespace hearth::cpu {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;

namespace {

// One unit of the program: a job of one to three matMuls sharing their input, or one node.
struct Step {
    bool matMul = false;
    int node = -1;                      // the node (for matMul jobs: the first)
    std::vector<SharedMatMul> outs;     // matMul jobs
    std::vector<ref::Matrix> matrices;  // what outs point to
    std::vector<TensorId> outTensors;   // each matMul's output
    std::vector<int32_t> weights;       // each matMul's weight (for an activation observer)
    const float* x = nullptr;
    int64_t n = 0;
    int nextJob = -1;                   // the next matMul job (for prefetching), -1 at the end
    int rope = -1;                      // Rope: its angle table
    int experts = -1;                   // MatMulId (one, or gate and up on the same input): m_experts
    int nextExperts = -1;               // experts: the expert step right after (down after gate and up)
};

// The expert matrices of the MatMulId nodes of one step: per node, each expert's matrix and
// repacked copy.
struct ExpertStep {
    std::vector<int> nodes;
    std::vector<std::vector<ref::Matrix>> matrices;
    std::vector<std::vector<const PackedMatrix*>> packed;
};

// Angles of one RoPE configuration for every token of the step: [n][half][cos, sin].
struct RopeTable {
    graph::RopeParams params;
    const float* factors = nullptr;
    const int32_t* positions = nullptr;
    std::vector<double> cs;
    bool ready = false;
};

// One attention work item: a sequence's KV head over a run of its tokens.
struct AttentionItem {
    int seq = 0;
    int64_t kvHead = 0, first = 0, count = 0;
};

struct Sequence {
    int32_t tableOffset = 0;
    int32_t maxPos = 0;
    int64_t begin = 0, count = 0; // its tokens in rows/positions
};

class CpuProgram final : public backend::Program {
public:
    CpuProgram(std::shared_ptr<const CpuWeights> w, ThreadPool* pool) : m_weights(std::move(w)), m_pool(pool) {}

    Status compile(const backend::ProgramSpec& spec) {
        HEARTH_RETURN_IF_ERROR(m_h.resolve(spec, *m_weights));
        const auto& nodes = m_h.graph->nodes();
        const RepackedWeights* packed = m_weights->packed.get();
        int64_t maxTokens = 0;
        for (size_t k = 0; k < spec.nodes.size(); ++k) {
            const int index = spec.nodes[k];
            const Node& n = nodes[size_t(index)];
            Step step;
            step.node = index;
            const Tensor& w = n.op == Op::MatMul || n.op == Op::MatMulId ? m_h.t(n.src[0]) : m_h.t(n.out);
            if (n.op == Op::MatMul && w.kind == graph::TensorKind::Weight && w.viewOf == graph::kNone) {
                // Join the job before when it multiplies the same activations.
                if (!m_steps.empty() && m_steps.back().matMul && m_steps.back().outs.size() < 3 &&
                    nodes[size_t(m_steps.back().node)].src[1] == n.src[1]) {
                    appendMatMul(m_steps.back(), n, packed);
                    continue;
                }
                step.matMul = true;
                step.x = m_h.f(n.src[1]);
                step.n = m_h.t(n.src[1]).rows();
                appendMatMul(step, n, packed);
            } else if (n.op == Op::MatMulId && w.kind == graph::TensorKind::Weight && w.viewOf == graph::kNone) {
                // Gate and up read the same input with the same experts: one step.
                if (!m_steps.empty() && m_steps.back().experts >= 0) {
                    ExpertStep& prev = m_experts[size_t(m_steps.back().experts)];
                    const Node& first = nodes[size_t(prev.nodes[0])];
                    if (prev.nodes.size() < 2 && first.src[1] == n.src[1] && first.src[2] == n.src[2]) {
                        appendExperts(prev, index, packed);
                        continue;
                    }
                }
                step.experts = int(m_experts.size());
                m_experts.emplace_back();
                appendExperts(m_experts.back(), index, packed);
                const int64_t pairs = m_h.t(n.src[2]).elements();
                m_expertPairs = std::max(m_expertPairs, pairs);
                m_expertWidth = std::max({m_expertWidth, w.ne[0], w.ne[1]});
            } else if (n.op == Op::Rope) {
                step.rope = ropeTable(n);
            } else if (n.op == Op::Attention) {
                maxTokens = std::max(maxTokens, m_h.t(n.src[0]).ne[2]);
            } else if (n.op == Op::GetRows) {
                const Tensor& t = m_h.t(n.src[0]);
                m_raw.resize(std::max(m_raw.size(), size_t(t.nb[1])));
            } else if (RecurrentOps::covers(n.op)) {
                m_recurrent.plan(m_h, n);
            }
            m_steps.push_back(std::move(step));
        }
        // Each step's next matMul job, for the prefetch hints.
        int next = -1;
        int nextHeavy = -1; // the next matMul or expert step
        for (int i = int(m_steps.size()) - 1; i >= 0; --i) {
            Step& s = m_steps[size_t(i)];
            s.nextJob = next;
            if (s.experts >= 0 && nextHeavy >= 0 && m_steps[size_t(nextHeavy)].experts >= 0) s.nextExperts = nextHeavy;
            if (s.matMul) next = i;
            if (s.matMul || s.experts >= 0) nextHeavy = i;
        }
        // Expert scratch: each expert's rows gathered, and its outputs before they are scattered.
        m_expertX.resize(size_t(m_expertPairs * m_expertWidth));
        m_expertY.resize(size_t(2 * m_expertPairs * m_expertWidth)); // gate and up
        m_expertOrder.resize(size_t(m_expertPairs));
        m_expertJobs.reserve(size_t(m_expertPairs) * 2);
        m_nextExpertJobs.reserve(size_t(m_expertPairs) * 2);
        // Attention scratch for the step's token count.
        m_rows.resize(size_t(maxTokens));
        m_positions.resize(size_t(maxTokens));
        m_ownPositions.resize(size_t(maxTokens));
        m_seqOf.resize(size_t(maxTokens));
        m_sequences.reserve(size_t(maxTokens));
        m_items.reserve(size_t(maxTokens) * 64);
        for (RopeTable& t : m_ropes) t.cs.resize(size_t(m_ropeTokens) * size_t(t.params.nRot));
        return Status::ok();
    }

    Status run() override {
        for (RopeTable& t : m_ropes) t.ready = false;
        m_attentionReady = false;
        for (size_t i = 0; i < m_steps.size(); ++i) {
            const Step& step = m_steps[i];
            const Status s = runStep(step);
            if (!s.isOk()) {
                const Node& n = m_h.graph->nodes()[size_t(step.node)];
                return s.withContext(std::string("node ") + std::to_string(step.node) + " (" + graph::opName(n.op) + ")");
            }
        }
        return Status::ok();
    }

private:
    void appendMatMul(Step& step, const Node& n, const RepackedWeights* packed) {
        const Tensor& w = m_h.t(n.src[0]);
        step.matrices.reserve(3); // outs point into it
        step.matrices.push_back({m_h.ptr[size_t(n.src[0])], w.type, w.ne[0], w.ne[1], w.nb[1]});
        step.outTensors.push_back(n.out);
        step.weights.push_back(w.weight);
        step.outs.clear();
        for (size_t i = 0; i < step.matrices.size(); ++i) {
            const ref::Matrix& m = step.matrices[i];
            step.outs.push_back({&m, packed ? packed->find(m) : nullptr, m_h.f(step.outTensors[i])});
        }
    }

    void appendExperts(ExpertStep& e, int index, const RepackedWeights* packed) {
        const Node& n = m_h.graph->nodes()[size_t(index)];
        const Tensor& w = m_h.t(n.src[0]);
        e.nodes.push_back(index);
        auto& mats = e.matrices.emplace_back();
        auto& copies = e.packed.emplace_back();
        for (int64_t x = 0; x < w.ne[2]; ++x) {
            mats.push_back({m_h.ptr[size_t(n.src[0])] + uint64_t(x) * w.nb[2], w.type, w.ne[0], w.ne[1], w.nb[1]});
            copies.push_back(packed ? packed->find(mats.back()) : nullptr);
        }
    }

    // out[t][e] = x[t][e or 0] · W[ids[t][e]]ᵀ for the step's MatMulId nodes (same x and ids). A
    // few tokens: every (token, expert) product as one parallel job. More: each expert's tokens
    // gathered and multiplied as one batch, so that each chosen expert's weights are read once.
    Status expertMatMul(const Step& step, const ExpertStep& e) {
        const Node& n = m_h.graph->nodes()[size_t(e.nodes[0])];
        const Tensor &W = m_h.t(n.src[0]), &X = m_h.t(n.src[1]), &I = m_h.t(n.src[2]);
        const int64_t k = I.ne[0], tokens = I.ne[1], cols = W.ne[0], rows = W.ne[1], nExp = W.ne[2];
        const bool shared = X.ne[1] == 1;
        const int32_t* ids = m_h.i(n.src[2]);
        const float* x = m_h.f(n.src[1]);
        for (int64_t p = 0; p < k * tokens; ++p)
            if (ids[p] < 0 || ids[p] >= nExp)
                return outOfRange("mat_mul_id: expert " + std::to_string(ids[p]) + " outside [0, " + std::to_string(nExp) + ")");
        if (ActivationObserver* o = m_weights->observer)
            for (int node : e.nodes)
                o->onMatMulId(m_h.graph->weights()[size_t(m_h.t(m_h.graph->nodes()[size_t(node)].src[0]).weight)].name, x,
                              shared, ids, tokens, k, cols, nExp);
        auto xRow = [&](int64_t p) { return x + (shared ? p / k : p) * cols; };
        if (tokens <= 4) {
            decodeExpertJobs(e, m_expertJobs);
            // While this job's threads wait, they pull in their first chunks of the next: the
            // same tokens' chosen experts of the step after (down after gate and up), else the
            // next matMul.
            if (step.nextExperts >= 0) {
                decodeExpertJobs(m_experts[size_t(m_steps[size_t(step.nextExperts)].experts)], m_nextExpertJobs);
                prefetchCallerChunk(m_nextExpertJobs, m_pool);
                const Status s = matMulExperts(m_expertJobs, m_pool);
                prefetchWorkerChunk(m_nextExpertJobs, m_pool);
                return s;
            }
            const auto next = jobOf(step.nextJob);
            prefetchCallerChunk(next, tokens, m_pool);
            const Status s = matMulExperts(m_expertJobs, m_pool);
            prefetchWorkerChunk(next, tokens, m_pool);
            return s;
        }
        // The (token, slot) pairs by expert (a counting sort) and their inputs gathered in that
        // order; then every chosen expert's rows as one job over all the step's nodes.
        const int64_t pairs = k * tokens;
        m_expertStart.assign(size_t(nExp + 1), 0);
        for (int64_t p = 0; p < pairs; ++p) ++m_expertStart[size_t(ids[p]) + 1];
        for (int64_t x2 = 0; x2 < nExp; ++x2) m_expertStart[size_t(x2 + 1)] += m_expertStart[size_t(x2)];
        m_expertFill.assign(m_expertStart.begin(), m_expertStart.end() - 1);
        for (int64_t p = 0; p < pairs; ++p) m_expertOrder[size_t(m_expertFill[size_t(ids[p])]++)] = p;
        parallelRows(pairs, cols, [&](int64_t b, int64_t end) {
            for (int64_t r = b; r < end; ++r)
                std::memcpy(m_expertX.data() + r * cols, xRow(m_expertOrder[size_t(r)]), size_t(cols) * 4);
        });
        m_expertJobs.clear();
        for (size_t i = 0; i < e.nodes.size(); ++i) {
            float* y = m_expertY.data() + int64_t(i) * pairs * rows;
            for (int64_t x2 = 0; x2 < nExp; ++x2) {
                const int64_t b = m_expertStart[size_t(x2)], c = m_expertStart[size_t(x2 + 1)] - b;
                if (c > 0)
                    m_expertJobs.push_back({&e.matrices[i][size_t(x2)], e.packed[i][size_t(x2)], m_expertX.data() + b * cols, c,
                                            y + b * rows});
            }
        }
        HEARTH_RETURN_IF_ERROR(matMulExperts(m_expertJobs, m_pool));
        for (size_t i = 0; i < e.nodes.size(); ++i) {
            const float* y = m_expertY.data() + int64_t(i) * pairs * rows;
            float* out = m_h.f(m_h.graph->nodes()[size_t(e.nodes[i])].out);
            parallelRows(pairs, rows, [&](int64_t b, int64_t end) {
                for (int64_t r = b; r < end; ++r)
                    std::memcpy(out + m_expertOrder[size_t(r)] * rows, y + r * rows, size_t(rows) * 4);
            });
        }
        return Status::ok();
    }

    int ropeTable(const Node& n) {
        const float* factors = n.src[2] != graph::kNone ? m_h.f(n.src[2]) : nullptr;
        const int32_t* positions = m_h.i(n.src[1]);
        m_ropeTokens = std::max(m_ropeTokens, m_h.t(n.out).ne[2]);
        for (size_t i = 0; i < m_ropes.size(); ++i) {
            const RopeTable& t = m_ropes[i];
            const graph::RopeParams& a = t.params;
            const graph::RopeParams& b = n.rope;
            graph::RopeParams x = a, y = b;
            x.neox = y.neox = false; // the angle table does not depend on the pairing
            if (t.factors == factors && t.positions == positions && x == y) return int(i);
        }
        RopeTable t;
        t.params = n.rope;
        t.factors = factors;
        t.positions = positions;
        m_ropes.push_back(std::move(t));
        return int(m_ropes.size() - 1);
    }

    // The decode jobs of an expert step: every (token, chosen expert) product of each of its
    // nodes, y[p] = x[p or its token] · W[ids[p]]ᵀ. Also made for the step after, before its
    // inputs are computed (for the prefetch hints: the matrices are what matters). None when an
    // expert id is out of range (the step's own run reports it).
    void decodeExpertJobs(const ExpertStep& e, std::vector<ExpertMatMul>& jobs) const {
        jobs.clear();
        const Node& n = m_h.graph->nodes()[size_t(e.nodes[0])];
        const Tensor &W = m_h.t(n.src[0]), &X = m_h.t(n.src[1]), &I = m_h.t(n.src[2]);
        const int64_t k = I.ne[0], pairs = I.elements(), cols = W.ne[0], rows = W.ne[1], nExp = W.ne[2];
        const int32_t* ids = m_h.i(n.src[2]);
        const float* x = m_h.f(n.src[1]);
        for (int64_t p = 0; p < pairs; ++p)
            if (ids[p] < 0 || ids[p] >= nExp) return;
        for (size_t i = 0; i < e.nodes.size(); ++i) {
            float* y = m_h.f(m_h.graph->nodes()[size_t(e.nodes[i])].out);
            for (int64_t p = 0; p < pairs; ++p)
                jobs.push_back({&e.matrices[i][size_t(ids[p])], e.packed[i][size_t(ids[p])],
                                x + (X.ne[1] == 1 ? p / k : p) * cols, 1, y + p * rows});
        }
    }

    template <typename Fn> void parallelRows(int64_t rows, int64_t width, const Fn& fn) {
        if (!m_pool || rows * width < kParallelValues) fn(int64_t(0), rows);
        else m_pool->parallelFor(rows, fn);
    }

    std::span<const SharedMatMul> jobOf(int step) const {
        if (step < 0) return {};
        return m_steps[size_t(step)].outs;
    }

    Status runStep(const Step& step) {
        const Node& n = m_h.graph->nodes()[size_t(step.node)];
        if (step.matMul) {
            if (ActivationObserver* o = m_weights->observer)
                for (int32_t w : step.weights) o->onMatMul(m_h.graph->weights()[size_t(w)].name, step.x, step.n, step.matrices[0].cols);
            const auto next = jobOf(step.nextJob);
            prefetchCallerChunk(next, step.n, m_pool);
            Status s = step.outs.size() == 1
                           ? matMul(*step.outs[0].w, step.outs[0].packed, step.x, step.n, step.outs[0].y, m_pool)
                           : matMulShared(step.outs, step.x, step.n, m_pool);
            prefetchWorkerChunk(next, step.n, m_pool);
            return s;
        }
        if (step.experts >= 0) return expertMatMul(step, m_experts[size_t(step.experts)]);
        const Tensor& out = m_h.t(n.out);
        const int64_t width = out.ne[0], rows = out.rows();
        switch (n.op) {
        case Op::GetRows: return getRows(n);
        case Op::RmsNorm: {
            if (n.src[1] == graph::kNone) break;
            const float *x = m_h.f(n.src[0]), *w = m_h.f(n.src[1]);
            float* o = m_h.f(n.out);
            parallelRows(rows, width, [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) rmsNorm(x + r * width, w, o + r * width, width, n.eps);
            });
            return Status::ok();
        }
        case Op::Rope: return rope(step, n);
        case Op::KvWrite: return kvWrite(n);
        case Op::Attention:
            if (fastAttention(n)) return attention(step, n);
            break;
        case Op::Add:
        case Op::Mul: {
            const float *a = m_h.f(n.src[0]), *b = m_h.f(n.src[1]);
            const int64_t bn = m_h.t(n.src[1]).elements();
            float* o = m_h.f(n.out);
            const bool add = n.op == Op::Add;
            parallelRows(rows, width, [&](int64_t rb, int64_t re) {
                for (int64_t r = rb; r < re; ++r) {
                    const float* br = b + (bn == width * rows ? r * width : 0);
                    const float* ar = a + r * width;
                    float* orow = o + r * width;
                    if (add)
                        for (int64_t i = 0; i < width; ++i) orow[i] = ar[i] + br[i];
                    else
                        for (int64_t i = 0; i < width; ++i) orow[i] = ar[i] * br[i];
                }
            });
            if (bn != width && bn != width * rows) break; // another broadcast: the reference
            return Status::ok();
        }
        case Op::Scale: {
            const float* x = m_h.f(n.src[0]);
            float* o = m_h.f(n.out);
            for (int64_t i = 0; i < width * rows; ++i) o[i] = x[i] * n.scale;
            return Status::ok();
        }
        case Op::SwiGlu: {
            const float *g = m_h.f(n.src[0]), *u = m_h.f(n.src[1]);
            float* o = m_h.f(n.out);
            parallelRows(rows, width, [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) swiglu(g + r * width, u + r * width, o + r * width, width);
            });
            return Status::ok();
        }
        case Op::GeGlu: {
            const float *g = m_h.f(n.src[0]), *u = m_h.f(n.src[1]);
            float* o = m_h.f(n.out);
            parallelRows(rows, width, [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) geglu(g + r * width, u + r * width, o + r * width, width);
            });
            return Status::ok();
        }
        case Op::Silu: {
            const float* x = m_h.f(n.src[0]);
            float* o = m_h.f(n.out);
            parallelRows(rows, width, [&](int64_t b, int64_t e) { silu(x + b * width, o + b * width, (e - b) * width); });
            return Status::ok();
        }
        case Op::Gelu: {
            const float* x = m_h.f(n.src[0]);
            float* o = m_h.f(n.out);
            parallelRows(rows, width, [&](int64_t b, int64_t e) { gelu(x + b * width, o + b * width, (e - b) * width); });
            return Status::ok();
        }
        case Op::Copy: {
            // A view whose rows are contiguous (columns of a wider tensor): one copy per row.
            const Tensor& X = m_h.t(n.src[0]);
            if (X.nb[0] != 4 || X.ne != out.ne) break;
            const uint8_t* x = m_h.ptr[size_t(n.src[0])];
            float* o = m_h.f(n.out);
            parallelRows(rows, width, [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                    const int64_t i1 = r % X.ne[1], i2 = (r / X.ne[1]) % X.ne[2], i3 = r / (X.ne[1] * X.ne[2]);
                    std::memcpy(o + r * width, x + uint64_t(i1) * X.nb[1] + uint64_t(i2) * X.nb[2] + uint64_t(i3) * X.nb[3],
                                size_t(width) * 4);
                }
            });
            return Status::ok();
        }
        case Op::Sigmoid:
        case Op::Softplus:
        case Op::RmsNormGated:
        case Op::SsmConv:
        case Op::DeltaNet: return m_recurrent.run(m_h, n, m_pool);
        default: break;
        }
        return runReferenceNode(m_h, n);
    }

    Status getRows(const Node& n) {
        const Tensor& T = m_h.t(n.src[0]);
        const int32_t* ids = m_h.i(n.src[1]);
        const int64_t count = m_h.t(n.src[1]).elements(), cols = T.ne[0];
        float* out = m_h.f(n.out);
        const CpuWeights& W = *m_weights;
        const bool byRead = T.kind == graph::TensorKind::Weight && W.reader && T.weight >= 0 &&
                            size_t(T.weight) < W.readRows.size() && W.readRows[size_t(T.weight)];
        for (int64_t i = 0; i < count; ++i) {
            const int32_t id = ids[i];
            if (id < 0 || id >= T.ne[1])
                return outOfRange("get_rows: row " + std::to_string(id) + " outside [0, " + std::to_string(T.ne[1]) + ")");
            const uint8_t* row = m_h.ptr[size_t(n.src[0])] + uint64_t(id) * T.nb[1];
            if (T.type == quant::Type::F32 && !byRead) {
                std::memcpy(out + i * cols, row, size_t(cols) * 4);
                continue;
            }
            if (byRead) {
                HEARTH_RETURN_IF_ERROR(W.reader->read(row, size_t(T.nb[1]), m_raw.data()));
                row = m_raw.data();
            }
            HEARTH_RETURN_IF_ERROR(quant::dequantizeRow(T.type, row, out + i * cols, cols));
        }
        return Status::ok();
    }

    Status rope(const Step& step, const Node& n) {
        RopeTable& t = m_ropes[size_t(step.rope)];
        const Tensor& out = m_h.t(n.out);
        const int64_t D = out.ne[0], heads = out.ne[1], tokens = out.ne[2], half = t.params.nRot / 2;
        if (!t.ready) {
            parallelRows(tokens, half * 64, [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) ropeAngles(t.params, t.positions[i], t.factors, &t.cs[size_t(i * 2 * half)]);
            });
            t.ready = true;
        }
        const float* x = m_h.f(n.src[0]);
        float* o = m_h.f(n.out);
        parallelRows(tokens, heads * D, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                if (o != x) std::memcpy(o + i * heads * D, x + i * heads * D, size_t(heads * D) * 4);
                for (int64_t hd = 0; hd < heads; ++hd) ropeRotate(o + (i * heads + hd) * D, half, n.rope.neox, &t.cs[size_t(i * 2 * half)]);
            }
        });
        return Status::ok();
    }

    Status kvWrite(const Node& n) {
        const Tensor& C = m_h.t(n.src[0]);
        PagedKvStore& kv = m_h.kvStore(n.src[0]);
        const int layer = m_h.kvLayer(n.src[0]);
        const float* rowsIn = m_h.f(n.src[1]);
        const int32_t* slots = m_h.i(n.src[2]);
        const int64_t count = m_h.t(n.src[2]).elements(), row = C.ne[0];
        const int64_t maxSlot = int64_t(kv.numBlocks()) * kv.blockSize();
        for (int64_t i = 0; i < count; ++i)
            if (slots[i] < 0 || slots[i] >= maxSlot) return invalidArgument("kv_write: slot outside the pool");
        parallelRows(count, row, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                if (C.value) kv.writeValue(layer, slots[i], rowsIn + i * row);
                else kv.writeKey(layer, slots[i], rowsIn + i * row);
            }
        });
        return Status::ok();
    }

    bool fastAttention(const Node& n) const {
        const Tensor &q = m_h.t(n.src[0]), &out = m_h.t(n.out);
        return out.ne[0] == q.ne[0] &&
               m_h.t(n.src[1]).layer == m_h.t(n.src[2]).layer && n.attn.blockSize == m_h.kv->blockSize();
    }

    // Groups the step's tokens by sequence (their block table's offset) and splits the work into
    // items of up to kRun tokens per (sequence, KV head). Done once per run.
    Status planAttention(const Node& n) {
        const Tensor& q = m_h.t(n.src[0]);
        const int64_t tokens = q.ne[2], tableLen = m_h.t(n.src[4]).ne[0];
        const int32_t* info = m_h.i(n.src[3]);
        m_sequences.clear();
        for (int64_t t = 0; t < tokens; ++t) {
            const int32_t pos = info[2 * t], offset = info[2 * t + 1];
            size_t s = 0;
            while (s < m_sequences.size() && m_sequences[s].tableOffset != offset) ++s;
            if (s == m_sequences.size()) m_sequences.push_back({offset, pos, 0, 0});
            Sequence& seq = m_sequences[s];
            seq.maxPos = std::max(seq.maxPos, pos);
            ++seq.count;
            m_seqOf[size_t(t)] = int(s);
        }
        int64_t at = 0;
        for (Sequence& s : m_sequences) {
            if (s.tableOffset < 0 || s.tableOffset + s.maxPos / n.attn.blockSize >= tableLen)
                return invalidArgument("attention: a position outside its sequence's block table");
            s.begin = at;
            at += s.count;
            s.count = 0;
        }
        // Without the causal mask every token reaches as far as its sequence does in the step.
        for (int64_t t = 0; t < tokens; ++t) {
            Sequence& s = m_sequences[size_t(m_seqOf[size_t(t)])];
            m_rows[size_t(s.begin + s.count)] = t;
            m_positions[size_t(s.begin + s.count)] = n.attn.causal ? info[2 * t] : s.maxPos;
            m_ownPositions[size_t(s.begin + s.count)] = info[2 * t];
            ++s.count;
        }
        m_attentionReady = true;
        m_plannedCausal = n.attn.causal;
        planItems(n.attn.nHeadKv);
        return Status::ok();
    }

    // The work items for a layer of nHeadKv KV heads (layers may differ: gemma4).
    void planItems(int64_t nHeadKv) {
        constexpr int64_t kRun = 32;
        m_items.clear();
        for (size_t s = 0; s < m_sequences.size(); ++s)
            for (int64_t h = 0; h < nHeadKv; ++h)
                for (int64_t first = 0; first < m_sequences[s].count; first += kRun)
                    m_items.push_back({int(s), h, first, std::min(kRun, m_sequences[s].count - first)});
        m_itemHeads = nHeadKv;
    }

    Status attention(const Step& step, const Node& n) {
        if (!m_attentionReady || m_plannedCausal != n.attn.causal) HEARTH_RETURN_IF_ERROR(planAttention(n));
        if (m_itemHeads != n.attn.nHeadKv) planItems(n.attn.nHeadKv);
        const Tensor& q = m_h.t(n.src[0]);
        const int64_t D = q.ne[0], nHead = q.ne[1];
        const int32_t* tables = m_h.i(n.src[4]);
        const auto next = jobOf(step.nextJob);
        prefetchCallerChunk(next, q.ne[2], m_pool);
        prefetchWorkerChunk(next, q.ne[2], m_pool); // again: the worker's wait after its part
        std::atomic<bool> failed{false};
        const PagedKvStore& kv = m_h.kvStore(n.src[1]);
        const int layer = m_h.kvLayer(n.src[1]);
        const float* qp = m_h.f(n.src[0]);
        float* out = m_h.f(n.out);
        auto work = [&](int64_t b, int64_t e) {
            for (int64_t w = b; w < e; ++w) {
                const AttentionItem& it = m_items[size_t(w)];
                const Sequence& s = m_sequences[size_t(it.seq)];
                PagedAttentionCall call;
                call.kv = &kv;
                call.layer = layer;
                call.blockTable = std::span<const int32_t>(tables + s.tableOffset, size_t(s.maxPos / n.attn.blockSize + 1));
                call.kvHead = it.kvHead;
                call.group = nHead / n.attn.nHeadKv;
                call.headDim = D;
                call.scale = n.attn.scale;
                call.q = qp;
                call.out = out;
                call.rowStride = nHead * D;
                call.rows = m_rows.data() + s.begin + it.first;
                call.positions = m_positions.data() + s.begin + it.first;
                if (!n.attn.causal) call.windowEnds = m_ownPositions.data() + s.begin + it.first;
                call.nTokens = it.count;
                call.window = n.attn.window;
                call.softcap = n.attn.softcap;
                call.sinks = n.src[5] != graph::kNone ? m_h.f(n.src[5]) : nullptr;
                if (!pagedAttention(call).isOk()) failed = true;
            }
        };
        if (m_pool) m_pool->parallelFor(int64_t(m_items.size()), work);
        else work(0, int64_t(m_items.size()));
        if (failed) return internalError("attention: a position outside its sequence's blocks");
        return Status::ok();
    }

    std::shared_ptr<const CpuWeights> m_weights;
    ThreadPool* m_pool = nullptr;
    HostTensors m_h;
    std::vector<Step> m_steps;
    std::vector<RopeTable> m_ropes;
    int64_t m_ropeTokens = 0;
    std::vector<ExpertStep> m_experts;
    int64_t m_expertPairs = 0, m_expertWidth = 0;
    std::vector<float> m_expertX, m_expertY;
    std::vector<int64_t> m_expertOrder, m_expertStart, m_expertFill;
    std::vector<ExpertMatMul> m_expertJobs, m_nextExpertJobs;
    std::vector<uint8_t> m_raw; // an embedding row read from the file
    bool m_attentionReady = false;
    bool m_plannedCausal = true; // the mask m_positions were planned for
    int64_t m_itemHeads = 0; // the KV heads m_items were made for
    std::vector<int64_t> m_rows;
    std::vector<int32_t> m_positions;
    std::vector<int32_t> m_ownPositions; // each token's own position (a window's end without the mask)
    std::vector<int> m_seqOf;
    std::vector<Sequence> m_sequences;
    std::vector<AttentionItem> m_items;
    RecurrentOps m_recurrent; // the hybrid models' ops, with their scratch
};

} // namespace

Result<std::unique_ptr<backend::Program>> compileCpu(const backend::ProgramSpec& spec,
                                                     std::shared_ptr<const CpuWeights> weights, ThreadPool* pool) {
    auto p = std::make_unique<CpuProgram>(std::move(weights), pool);
    HEARTH_RETURN_IF_ERROR(p->compile(spec));
    return std::unique_ptr<backend::Program>(std::move(p));
}

} // namespace hearth::cpu
