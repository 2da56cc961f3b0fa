// Compiles a run of step-graph nodes into a list of CUDA kernel launches on the device's stream.
//
// compile() resolves every tensor to a device address (weights uploaded by loadWeights, K/V
// caches of the device's pool, activations and inputs in the runner's buffers) and picks each
// node's kernel: matVec for decode-sized batches (<= kMatVecMaxBatch rows), otherwise int8 dot
// products for quantized weights, the activations quantized once for consecutive MatMul nodes
// of the same input (q/k/v, gate/up), tensor-core tiles for F16/BF16 (fp16 activations), and
// matVec over runs of rows for F32 weights (kept in fp32, as the self-test holds them to 1e-4;
// F32 weights are rare outside tests); expert products of prefill-sized steps group their
// (token, slot) pairs by expert on the device. run() launches the list; a program of a
// decode-sized step captures it as a CUDA graph on its first run and replays that afterwards (the
// runner rewrites the inputs in the same buffers, so replays read the new contents), falling back
// to direct launches if capturing fails or HEARTH_CUDA_GRAPHS=0.
#include "backend/cuda/cuda_graph_device.h"
#include "backend/cuda/int8_math.h"
#include "backend/cpu/rope_math.h" // ropeYarnRange

#include <algorithm>
#include <functional>
#include <string>

namespace hearth::cuda {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;
using graph::TensorKind;

namespace {

struct Launch {
    int node = -1; // for error messages
    std::function<Status(StreamHandle)> fn;
};

class CudaProgram final : public backend::Program {
public:
    CudaProgram(std::shared_ptr<CudaContext> ctx, std::shared_ptr<const CudaWeights> weights)
        : m_ctx(std::move(ctx)), m_weights(std::move(weights)) {}

    Status compile(const backend::ProgramSpec& spec);
    Status run() override;

private:
    Result<uint8_t*> address(const backend::ProgramSpec& spec, TensorId id) const;
    bool int8Path(const Node& n) const;
    Status addNode(const backend::ProgramSpec& spec, int index, TensorId& quantized);
    Status enqueue(StreamHandle stream) const;
    void push(int node, std::function<Status(StreamHandle)> fn) { m_launches.push_back({node, std::move(fn)}); }

    std::shared_ptr<CudaContext> m_ctx;
    std::shared_ptr<const CudaWeights> m_weights;
    const graph::Graph* m_graph = nullptr;
    CudaKvPool* m_kv = nullptr;
    std::shared_ptr<DeviceBuffer> m_actQ; // the int8 activations this program's matMuls read
    DeviceBuffer m_idScratch;             // the routing of its grouped expert products (one at a time)
    std::vector<Launch> m_launches;
    bool m_replay = false;      // capture on the first run, replay afterwards
    bool m_captureFailed = false;
    Graph m_captured;
};

// Where a tensor's bytes are on the device; checks that the whole tensor lies inside its storage.
Result<uint8_t*> CudaProgram::address(const backend::ProgramSpec& spec, TensorId id) const {
    const graph::Graph& g = *m_graph;
    const Tensor& t = g.tensor(id);
    TensorId r = id;
    uint64_t offset = 0;
    while (g.tensor(r).viewOf != graph::kNone) {
        offset += g.tensor(r).offset;
        r = g.tensor(r).viewOf;
    }
    const Tensor& root = g.tensor(r);
    // A strided view (Copy / Concat sources) reaches to its last element, not nb[3] * ne[3].
    uint64_t reach = 0;
    if (!t.contiguous()) {
        for (int d = 0; d < graph::kMaxDims; ++d) reach += uint64_t(t.ne[size_t(d)] - 1) * t.nb[size_t(d)];
        reach += t.nb[0]; // one element (strided views are of F32 / I32 values)
    }
    const uint64_t need = offset + (t.contiguous() ? t.bytes() : reach);
    switch (root.kind) {
    case TensorKind::Weight: {
        const uint8_t* p = m_weights->data(root.weight);
        if (!p) return internalError("CUDA: weight '" + root.name + "' was not uploaded");
        if (need > m_weights->buffers[size_t(root.weight)].bytes())
            return internalError("CUDA: tensor '" + t.name + "' reaches past its weight");
        return const_cast<uint8_t*>(p) + offset;
    }
    case TensorKind::KvCache: {
        const int index = m_kv ? m_kv->spec().indexOf(root.layer) : -1;
        if (index < 0) return internalError("CUDA: no K/V pool for layer " + std::to_string(root.layer));
        const backend::KvLayerShape shape = m_kv->spec().shapeAt(size_t(index));
        const int64_t rowValues = root.value ? shape.vRow : shape.kRow;
        if (root.ne[0] != rowValues || root.ne[1] > m_kv->slots() || offset != 0)
            return internalError("CUDA: cache '" + root.name + "' does not match the device's K/V pool");
        return m_kv->cache(index, root.value);
    }
    case TensorKind::Input:
    case TensorKind::State:
    case TensorKind::Activation: {
        if (size_t(r) >= spec.bindings.size() || !spec.bindings[size_t(r)].buffer)
            return internalError("CUDA: tensor '" + t.name + "' has no buffer");
        const backend::Binding& b = spec.bindings[size_t(r)];
        auto* buffer = dynamic_cast<CudaBuffer*>(b.buffer);
        if (!buffer) return internalError("CUDA: tensor '" + t.name + "' is bound to another device's buffer");
        if (b.offset + need > buffer->size())
            return internalError("CUDA: tensor '" + t.name + "' reaches past its buffer");
        return buffer->data() + b.offset + offset;
    }
    }
    return internalError("CUDA: tensor of an unknown kind");
}

// Whether a cache tensor's type is the pool's format.
bool sameKvType(quant::Type t, KvFormat f) {
    return (t == quant::Type::F32 && f == KvFormat::F32) || (t == quant::Type::F16 && f == KvFormat::F16) ||
           (t == quant::Type::Q8_0 && f == KvFormat::Q8_0);
}

// A prefill-sized MatMulId (more tokens than a decode batch): pairs grouped by expert.
bool groupedExperts(const Node& n, const graph::Graph& g) {
    return n.op == Op::MatMulId && g.tensor(n.src[2]).ne[1] > kMatVecMaxBatch;
}

// A prefill MatMul of a quantized weight through quantizeActivations + matMulInt8.
bool CudaProgram::int8Path(const Node& n) const {
    if (n.op != Op::MatMul || !m_ctx->useInt8) return false;
    const Tensor &w = m_graph->tensor(n.src[0]), &x = m_graph->tensor(n.src[1]);
    return x.rows() > kMatVecMaxBatch && int8TypeSupported(w.type) && w.ne[0] % math::kChunk == 0;
}

Status CudaProgram::compile(const backend::ProgramSpec& spec) {
    m_graph = spec.graph;
    if (!m_graph) return invalidArgument("CUDA: a program without a graph");
    if (spec.kv) {
        m_kv = dynamic_cast<CudaKvPool*>(spec.kv);
        if (!m_kv) return internalError("CUDA: the program's K/V pool belongs to another device");
    }
    const auto& nodes = m_graph->nodes();
    // The int8 activations: the largest input of an int8 matMul, in a buffer shared by the device.
    uint64_t actQBytes = 0, idScratchBytes = 0;
    for (int index : spec.nodes) {
        if (index < 0 || size_t(index) >= nodes.size()) return invalidArgument("CUDA: node index out of range");
        const Node& n = nodes[size_t(index)];
        if (!cudaSupportsNode(*m_graph, n))
            return unsupported(std::string("CUDA: node ") + std::to_string(index) + " (" + graph::opName(n.op) +
                               ") is not one the CUDA kernels run");
        if (groupedExperts(n, *m_graph)) {
            const Tensor &W = m_graph->tensor(n.src[0]), &I = m_graph->tensor(n.src[2]);
            idScratchBytes = std::max(idScratchBytes, matMulIdGroupedScratchBytes(W.ne[2], I.ne[1], int(I.ne[0])));
        }
        if (int8Path(n)) {
            const Tensor& x = m_graph->tensor(n.src[1]);
            actQBytes = std::max<uint64_t>(actQBytes, uint64_t(x.rows()) * uint64_t(x.ne[0] / math::kChunk) *
                                                          sizeof(math::ActChunk));
        }
    }
    if (actQBytes > 0) {
        if (!m_ctx->actQ || m_ctx->actQ->bytes() < actQBytes) {
            HEARTH_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(size_t(actQBytes)));
            m_ctx->actQ = std::make_shared<DeviceBuffer>(std::move(buffer));
        }
        m_actQ = m_ctx->actQ;
    }
    if (idScratchBytes > 0) {
        HEARTH_ASSIGN_OR_RETURN(m_idScratch, DeviceBuffer::allocate(size_t(idScratchBytes)));
    }
    TensorId quantized = graph::kNone; // the activation m_actQ holds at this point of the list
    for (int index : spec.nodes) HEARTH_RETURN_IF_ERROR(addNode(spec, index, quantized));

    // Decode-sized steps replay a captured graph: the step's token count is its ids' length.
    int64_t tokens = 0;
    for (const Tensor& t : m_graph->tensors())
        if (t.kind == TensorKind::Input && t.input == graph::StepInput::TokenIds) tokens = t.elements();
    m_replay = m_ctx->useGraphs && tokens >= 1 && tokens <= kMatVecMaxBatch && !m_launches.empty();
    return Status::ok();
}

Status CudaProgram::addNode(const backend::ProgramSpec& spec, int index, TensorId& quantized) {
    const graph::Graph& g = *m_graph;
    const Node& n = g.nodes()[size_t(index)];
    const Tensor& out = g.tensor(n.out);
    auto ptr = [&](TensorId id) { return address(spec, id); };
    const bool int8 = int8Path(n);
    if (!int8) quantized = graph::kNone;
    const int64_t count = out.elements();
    switch (n.op) {
    case Op::GetRows: {
        const Tensor &T = g.tensor(n.src[0]), &I = g.tensor(n.src[1]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* table, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* ids, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const int64_t nIds = I.elements(), cols = T.ne[0];
        if (g.tensor(g.root(n.src[0])).kind == TensorKind::Weight) {
            const DeviceMatrix m{table, T.type, cols, T.ne[1], T.nb[1]};
            push(index, [=](StreamHandle s) {
                return getRows(m, reinterpret_cast<const int32_t*>(ids), nIds, reinterpret_cast<float*>(y), s);
            });
        } else {
            push(index, [=](StreamHandle s) {
                return gatherRows(reinterpret_cast<const float*>(table), reinterpret_cast<const int32_t*>(ids), nIds, cols,
                                  reinterpret_cast<float*>(y), s);
            });
        }
        return Status::ok();
    }
    case Op::MatMul: {
        const Tensor &W = g.tensor(n.src[0]), &X = g.tensor(n.src[1]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* w, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* xb, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* yb, ptr(n.out));
        const DeviceMatrix m{w, W.type, W.ne[0], W.ne[1], W.nb[1]};
        const auto* x = reinterpret_cast<const float*>(xb);
        auto* y = reinterpret_cast<float*>(yb);
        const int64_t rows = X.rows();
        if (rows <= kMatVecMaxBatch) {
            push(index, [=](StreamHandle s) { return matVec(m, x, y, int(rows), s); });
        } else if (int8) {
            auto* xq = static_cast<math::ActChunk*>(m_actQ->data());
            if (quantized != n.src[1]) {
                const int64_t cols = X.ne[0];
                push(index, [=](StreamHandle s) { return quantizeActivations(x, rows, cols, xq, s); });
                quantized = n.src[1];
            }
            push(index, [=](StreamHandle s) { return matMulInt8(m, xq, y, rows, s); });
        } else if (W.type == quant::Type::F32) {
            // F32 weights keep fp32 products at every batch size (the tensor-core tiles round to
            // fp16): the decode kernel over runs of kMatVecMaxBatch rows.
            const int64_t cols = X.ne[0], outs = W.ne[1];
            push(index, [=](StreamHandle s) {
                for (int64_t r = 0; r < rows; r += kMatVecMaxBatch) {
                    const int run = int(std::min<int64_t>(kMatVecMaxBatch, rows - r));
                    HEARTH_RETURN_IF_ERROR(matVec(m, x + r * cols, y + r * outs, run, s));
                }
                return Status::ok();
            });
        } else {
            push(index, [=](StreamHandle s) { return matMul(m, x, y, rows, s); });
        }
        return Status::ok();
    }
    case Op::MatMulId: {
        const Tensor &W = g.tensor(n.src[0]), &X = g.tensor(n.src[1]), &I = g.tensor(n.src[2]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* w, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* ids, ptr(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const DeviceExperts e{{w, W.type, W.ne[0], W.ne[1], W.nb[1]}, W.ne[2], W.nb[2]};
        const bool shared = X.ne[1] == 1;
        const int64_t tokens = I.ne[1];
        const int k = int(I.ne[0]);
        if (groupedExperts(n, g)) {
            void* scratch = m_idScratch.data();
            push(index, [=](StreamHandle s) {
                return matMulIdGrouped(e, reinterpret_cast<const float*>(x), shared, reinterpret_cast<const int32_t*>(ids),
                                       tokens, k, reinterpret_cast<float*>(y), scratch, s);
            });
        } else {
            push(index, [=](StreamHandle s) {
                return matMulId(e, reinterpret_cast<const float*>(x), shared, reinterpret_cast<const int32_t*>(ids),
                                tokens, k, reinterpret_cast<float*>(y), s);
            });
        }
        return Status::ok();
    }
    case Op::RmsNorm:
    case Op::LayerNorm: {
        const Tensor& X = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const float* w = nullptr;
        const float* b = nullptr;
        if (n.src[1] != graph::kNone) {
            HEARTH_ASSIGN_OR_RETURN(uint8_t* p, ptr(n.src[1]));
            w = reinterpret_cast<const float*>(p);
        }
        if (n.op == Op::LayerNorm && n.src[2] != graph::kNone) {
            HEARTH_ASSIGN_OR_RETURN(uint8_t* p, ptr(n.src[2]));
            b = reinterpret_cast<const float*>(p);
        }
        const int64_t rows = X.rows(), width = X.ne[0];
        const float eps = n.eps;
        const auto* fx = reinterpret_cast<const float*>(x);
        auto* fy = reinterpret_cast<float*>(y);
        if (n.op == Op::RmsNorm) push(index, [=](StreamHandle s) { return rmsNorm(fx, w, fy, rows, width, eps, s); });
        else push(index, [=](StreamHandle s) { return layerNorm(fx, w, b, fy, rows, width, eps, s); });
        return Status::ok();
    }
    case Op::RmsNormGated: {
        const Tensor& X = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* w, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* z, ptr(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const int64_t rows = X.rows(), width = X.ne[0];
        const float eps = n.eps;
        push(index, [=](StreamHandle s) {
            return rmsNormGated(reinterpret_cast<const float*>(x), reinterpret_cast<const float*>(w),
                                reinterpret_cast<const float*>(z), reinterpret_cast<float*>(y), rows, width, eps, s);
        });
        return Status::ok();
    }
    case Op::Softmax: {
        const Tensor& X = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const int64_t rows = X.rows(), width = X.ne[0];
        const float factor = n.scale;
        push(index, [=](StreamHandle s) {
            return softmaxScaled(reinterpret_cast<const float*>(x), reinterpret_cast<float*>(y), rows, width, factor, s);
        });
        return Status::ok();
    }
    case Op::TopK:
    case Op::ArgSort: {
        const Tensor& X = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const int64_t rows = X.rows(), width = X.ne[0];
        const int k = int(out.ne[0]);
        push(index, [=](StreamHandle s) {
            return topK(reinterpret_cast<const float*>(x), rows, width, k, reinterpret_cast<int32_t*>(y), s);
        });
        return Status::ok();
    }
    case Op::Gather: {
        const Tensor &X = g.tensor(n.src[0]), &I = g.tensor(n.src[1]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* ids, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const int64_t width = X.ne[0], rows = I.rows();
        const int k = int(I.ne[0]);
        push(index, [=](StreamHandle s) {
            return gather(reinterpret_cast<const float*>(x), width, reinterpret_cast<const int32_t*>(ids), rows, k,
                          reinterpret_cast<float*>(y), s);
        });
        return Status::ok();
    }
    case Op::WeightedSum: {
        const Tensor& Y = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* yIn, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* w, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* o, ptr(n.out));
        const int64_t J = Y.ne[0], tokens = Y.ne[2];
        const int k = int(Y.ne[1]);
        push(index, [=](StreamHandle s) {
            return weightedSum(reinterpret_cast<const float*>(yIn), reinterpret_cast<const float*>(w), tokens, k, J,
                               reinterpret_cast<float*>(o), s);
        });
        return Status::ok();
    }
    case Op::Rope: {
        const Tensor& X = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* pos, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const float* factors = nullptr;
        if (n.src[2] != graph::kNone) {
            HEARTH_ASSIGN_OR_RETURN(uint8_t* f, ptr(n.src[2]));
            factors = reinterpret_cast<const float*>(f);
        }
        RopeParams p;
        p.nHeads = int(X.ne[1]);
        p.headDim = int(X.ne[0]);
        p.nRot = n.rope.nRot;
        p.freqBase = n.rope.freqBase;
        p.freqScale = n.rope.freqScale;
        p.neox = n.rope.neox;
        p.freqFactors = factors;
        const graph::RopeParams& r = n.rope;
        p.magnitude = r.attnFactor;
        if (r.extFactor != 0.0f && r.nCtxOrig > 0) { // YaRN, as cpu::ropeAngles
            double low = 0.0, high = 0.0;
            cpu::ropeYarnRange(r, low, high);
            p.extFactor = r.extFactor;
            p.yarnLow = float(low);
            p.yarnHigh = float(high);
            p.magnitude *= float(1.0 + 0.1 * std::log(1.0 / double(r.freqScale)));
        }
        p.tempScale = r.tempScale;
        p.tempLength = r.tempLength;
        const int64_t tokens = X.ne[2];
        const size_t bytes = size_t(X.bytes());
        // The kernel rotates in place: the output starts as a copy of x.
        if (x != y) push(index, [=](StreamHandle s) { return copyDeviceToDevice(y, x, bytes, s); });
        push(index, [=](StreamHandle s) {
            return rope(reinterpret_cast<float*>(y), reinterpret_cast<const int32_t*>(pos), tokens, p, s);
        });
        return Status::ok();
    }
    case Op::KvWrite: {
        const Tensor &C = g.tensor(n.src[0]), &S = g.tensor(n.src[2]);
        if (!m_kv || !sameKvType(C.type, m_kv->format()))
            return internalError("CUDA: cache '" + C.name + "' has another type than the device's K/V pool");
        HEARTH_ASSIGN_OR_RETURN(uint8_t* cache, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* rowsIn, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* slots, ptr(n.src[2]));
        const KvFormat format = m_kv->format();
        const int64_t nSlots = m_kv->slots(), rowSize = C.ne[0], tokens = S.elements();
        push(index, [=](StreamHandle s) {
            return kvWrite(cache, format, nSlots, rowSize, reinterpret_cast<const float*>(rowsIn),
                           reinterpret_cast<const int32_t*>(slots), tokens, s);
        });
        return Status::ok();
    }
    case Op::Attention: {
        const Tensor& Q = g.tensor(n.src[0]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* q, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* k, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* v, ptr(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* info, ptr(n.src[3]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* tables, ptr(n.src[4]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        if (n.attn.blockSize != m_kv->spec().blockSize)
            return internalError("CUDA: attention's block size differs from the K/V pool's");
        if (!sameKvType(g.tensor(n.src[1]).type, m_kv->format()))
            return internalError("CUDA: attention's caches have another type than the device's K/V pool");
        PagedKvView view;
        view.k = k;
        view.v = v;
        view.type = m_kv->format();
        view.numBlocks = m_kv->spec().numBlocks;
        view.blockSize = m_kv->spec().blockSize;
        view.nKvHeads = n.attn.nHeadKv;
        view.headDim = int(Q.ne[0]);
        AttentionArgs a;
        a.q = reinterpret_cast<const float*>(q);
        a.out = reinterpret_cast<float*>(y);
        a.tables = reinterpret_cast<const int32_t*>(tables);
        a.info = reinterpret_cast<const int32_t*>(info);
        a.nTokens = Q.ne[2];
        a.nHeads = int(Q.ne[1]);
        a.scale = n.attn.scale;
        a.window = n.attn.window;
        a.softcap = n.attn.softcap;
        a.causal = n.attn.causal;
        if (n.src[5] != graph::kNone) {
            HEARTH_ASSIGN_OR_RETURN(uint8_t* sinks, ptr(n.src[5]));
            a.sinks = reinterpret_cast<const float*>(sinks);
        }
        push(index, [=](StreamHandle s) { return pagedAttention(view, a, s); });
        return Status::ok();
    }
    case Op::Add: {
        const Tensor &A = g.tensor(n.src[0]), &B = g.tensor(n.src[1]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* a, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* b, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const auto *fa = reinterpret_cast<const float*>(a), *fb = reinterpret_cast<const float*>(b);
        auto* fy = reinterpret_cast<float*>(y);
        if (B.elements() == A.elements()) {
            push(index, [=](StreamHandle s) { return add(fa, fb, fy, count, s); });
        } else { // one row of b added to every row of a: out starts as a copy of a
            const int64_t rows = A.rows(), width = A.ne[0];
            const size_t bytes = size_t(A.bytes());
            if (a != y) push(index, [=](StreamHandle s) { return copyDeviceToDevice(fy, fa, bytes, s); });
            push(index, [=](StreamHandle s) { return addRows(fy, fb, rows, width, s); });
        }
        return Status::ok();
    }
    case Op::SsmConv: {
        const Tensor &X = g.tensor(n.src[0]), &W = g.tensor(n.src[1]);
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* w, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* st, ptr(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* info, ptr(n.src[3]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const int64_t tokens = X.ne[1], C = X.ne[0];
        const int K = int(W.ne[0]);
        push(index, [=](StreamHandle s) {
            return ssmConv(reinterpret_cast<const float*>(x), reinterpret_cast<const float*>(w),
                           reinterpret_cast<float*>(st), reinterpret_cast<const int32_t*>(info),
                           reinterpret_cast<float*>(y), tokens, C, K, s);
        });
        return Status::ok();
    }
    case Op::DeltaNet: {
        HEARTH_ASSIGN_OR_RETURN(uint8_t* qkv, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* gate, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* beta, ptr(n.src[2]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* st, ptr(n.src[3]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* info, ptr(n.src[4]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const int64_t tokens = out.ne[2];
        const int S = int(out.ne[0]), Hv = int(out.ne[1]), Hk = n.k;
        const float eps = n.eps;
        push(index, [=](StreamHandle s) {
            return deltaNet(reinterpret_cast<const float*>(qkv), reinterpret_cast<const float*>(gate),
                            reinterpret_cast<const float*>(beta), reinterpret_cast<float*>(st),
                            reinterpret_cast<const int32_t*>(info), reinterpret_cast<float*>(y), tokens, Hk, Hv, S, eps,
                            s);
        });
        return Status::ok();
    }
    case Op::Copy:
    case Op::Concat: {
        auto view = [&](TensorId id) -> Result<StridedF32> {
            HEARTH_ASSIGN_OR_RETURN(uint8_t* p, ptr(id));
            const Tensor& t = g.tensor(id);
            StridedF32 v;
            v.data = p;
            for (size_t d = 0; d < 4; ++d) {
                v.ne[d] = t.ne[d];
                v.nb[d] = int64_t(t.nb[d]);
            }
            return v;
        };
        HEARTH_ASSIGN_OR_RETURN(const StridedF32 a, view(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        auto* fy = reinterpret_cast<float*>(y);
        if (n.op == Op::Copy) {
            push(index, [=](StreamHandle s) { return copyStrided(a, fy, s); });
        } else {
            HEARTH_ASSIGN_OR_RETURN(const StridedF32 b, view(n.src[1]));
            const int dim = n.dim;
            push(index, [=](StreamHandle s) { return concat(a, b, dim, fy, s); });
        }
        return Status::ok();
    }
    case Op::Mul: {
        HEARTH_ASSIGN_OR_RETURN(uint8_t* a, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* b, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const int64_t bn = g.tensor(n.src[1]).elements();
        push(index, [=](StreamHandle s) {
            return mul(reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b), reinterpret_cast<float*>(y),
                       count, bn, s);
        });
        return Status::ok();
    }
    case Op::Silu:
    case Op::Gelu:
    case Op::Sigmoid:
    case Op::Softplus: {
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const UnaryOp f = n.op == Op::Silu      ? UnaryOp::Silu
                          : n.op == Op::Gelu    ? UnaryOp::Gelu
                          : n.op == Op::Sigmoid ? UnaryOp::Sigmoid
                                                : UnaryOp::Softplus;
        push(index, [=](StreamHandle s) {
            return unary(f, reinterpret_cast<const float*>(x), reinterpret_cast<float*>(y), count, s);
        });
        return Status::ok();
    }
    case Op::Scale:
    case Op::Softcap: {
        HEARTH_ASSIGN_OR_RETURN(uint8_t* x, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const auto* fx = reinterpret_cast<const float*>(x);
        auto* fy = reinterpret_cast<float*>(y);
        if (n.op == Op::Scale) {
            const float factor = n.scale;
            push(index, [=](StreamHandle s) { return scale(fx, factor, fy, count, s); });
        } else {
            const float cap = n.cap;
            push(index, [=](StreamHandle s) { return softcap(fx, cap, fy, count, s); });
        }
        return Status::ok();
    }
    case Op::SwiGlu:
    case Op::GeGlu:
    case Op::SwiGluOai: {
        HEARTH_ASSIGN_OR_RETURN(uint8_t* gate, ptr(n.src[0]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* up, ptr(n.src[1]));
        HEARTH_ASSIGN_OR_RETURN(uint8_t* y, ptr(n.out));
        const auto *fg = reinterpret_cast<const float*>(gate), *fu = reinterpret_cast<const float*>(up);
        auto* fy = reinterpret_cast<float*>(y);
        if (n.op == Op::SwiGlu) {
            push(index, [=](StreamHandle s) { return swiglu(fg, fu, fy, count, s); });
        } else if (n.op == Op::GeGlu) {
            push(index, [=](StreamHandle s) { return geglu(fg, fu, fy, count, s); });
        } else {
            const float alpha = n.scale, limit = n.cap;
            push(index, [=](StreamHandle s) { return swigluOai(fg, fu, fy, count, alpha, limit, s); });
        }
        return Status::ok();
    }
    default: break;
    }
    return unsupported(std::string("CUDA: no kernel for ") + graph::opName(n.op));
}

Status CudaProgram::enqueue(StreamHandle stream) const {
    for (const Launch& l : m_launches) {
        const Status s = l.fn(stream);
        if (!s.isOk()) {
            const Node& n = m_graph->nodes()[size_t(l.node)];
            return s.withContext(std::string("node ") + std::to_string(l.node) + " (" + graph::opName(n.op) + ")");
        }
    }
    return Status::ok();
}

Status CudaProgram::run() {
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    const StreamHandle stream = m_ctx->stream.handle();
    if (m_replay && !m_captureFailed && !m_captured.valid()) {
        // First run of a decode-sized step: record the launches (nothing runs yet), then launch
        // the recording. Any failure leaves this program on direct launches, whose own error, if
        // there is one, then surfaces below.
        m_captureFailed = true;
        if (Graph::beginCapture(stream).isOk()) {
            if (enqueue(stream).isOk()) {
                Result<Graph> captured = Graph::endCapture(stream);
                if (captured.isOk()) {
                    m_captured = std::move(captured).value();
                    m_captureFailed = false;
                }
            } else {
                Graph::abortCapture(stream);
            }
        }
    }
    if (m_replay && m_captured.valid()) {
        HEARTH_RETURN_IF_ERROR(m_captured.launch(stream));
    } else {
        HEARTH_RETURN_IF_ERROR(enqueue(stream));
    }
    return m_ctx->stream.synchronize();
}

} // namespace

Result<std::unique_ptr<backend::Program>> compileCudaProgram(const backend::ProgramSpec& spec,
                                                             std::shared_ptr<CudaContext> ctx,
                                                             std::shared_ptr<const CudaWeights> weights) {
    auto program = std::make_unique<CudaProgram>(std::move(ctx), std::move(weights));
    HEARTH_RETURN_IF_ERROR(program->compile(spec));
    return std::unique_ptr<backend::Program>(std::move(program));
}

} // namespace hearth::cuda
