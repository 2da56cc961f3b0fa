// LlamaModel's forward pass on a CUDA device: the steps of forwardCpu (embedding, per layer
// RMSNorm, Q/K/V projections with optional bias and Q/K norm, RoPE, paged K/V write, causal GQA
// attention, output projection, SwiGLU feed-forward, residual adds; final norm and logits) as
// kernels from backend/cuda/cuda_ops.h enqueued on one stream. Small batches (decode) are captured
// once per shape as a CUDA graph and replayed, so a step costs one launch instead of hundreds.
// Larger batches (prefill) multiply quantized weights with int8 activations (dp4a), plain
// F32/F16/BF16 weights on tensor cores.
#include "model/llama_forward_cuda.h"

#include "backend/cuda/cuda_device.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/int8_math.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>

namespace hearth::model {

namespace {

struct DeviceLayer {
    const float* attnNorm = nullptr;
    const float* ffnNorm = nullptr;
    const float *bq = nullptr, *bk = nullptr, *bv = nullptr;
    const float *qNorm = nullptr, *kNorm = nullptr;
    cuda::DeviceMatrix wq, wk, wv, wo, wGate, wUp, wDown;
    cuda::DeviceBuffer kCache, vCache; // [numBlocks][blockSize][kvDim] of F16 or F32
};

// Device copies of the step's activations; grown, never shrunk.
struct Scratch {
    int64_t capacity = 0; // tokens
    cuda::DeviceBuffer x, xn, tmp;   // [n][E]
    cuda::DeviceBuffer q, att;       // [n][qDim]
    cuda::DeviceBuffer k, v;         // [n][kvDim]
    cuda::DeviceBuffer gate, up;     // [n][F]
    cuda::DeviceBuffer actQ;         // ActChunk [n][max(E, qDim, F) / 32]: int8 activations
    cuda::DeviceBuffer ids, pos;     // int32 [n]
    cuda::DeviceBuffer tableStart;   // int32 [n]: where token i's block table starts in tables
    cuda::DeviceBuffer rows;         // int32 [wanted]: the tokens whose logits are wanted
    cuda::DeviceBuffer slots;        // int64 [n]
    int64_t tableCapacity = 0;
    cuda::DeviceBuffer tables;       // int32, every sequence's block table back to back
    int64_t logitRows = 0;
    cuda::DeviceBuffer logits;       // [wanted][nVocab]
};

} // namespace

struct CudaLlamaForward::Impl {
    const LlamaModel* model = nullptr;
    int device = 0;
    int numBlocks = 0, blockSize = 0, gpuLayers = 0;
    cuda::KvFormat kvFormat = cuda::KvFormat::F16;
    uint64_t blockBytes = 0; // one block of one layer's K (or V)
    cuda::Stream stream;
    std::vector<cuda::DeviceBuffer> weightBuffers;
    std::map<const void*, cuda::DeviceMatrix> uploadedMatrices; // tied embeddings upload once
    cuda::DeviceMatrix tokEmbd, output;
    const float* outputNorm = nullptr;
    const float* ropeFreqs = nullptr; // nRot/2 values or null
    std::vector<DeviceLayer> layers;
    Scratch s;
    uint64_t weightBytes = 0, kvBytes = 0;
    // Replayable steps keyed by (tokens, wanted logits); dropped whenever reserve() moves a buffer.
    bool useGraphs = true;
    bool useInt8 = true;                  // prefill of quantized weights through matMulInt8
    const float* quantizedInput = nullptr; // whose int8 copy actQ holds, during enqueueStep
    std::map<std::pair<int64_t, int64_t>, cuda::Graph> graphs;

    Result<const float*> uploadFloats(const float* data, int64_t n);
    Result<cuda::DeviceMatrix> uploadMatrix(const cpu::ref::Matrix& m, const char* what);
    Status reserve(int64_t n, int64_t tableLen, int64_t wanted);
    Status linear(const cuda::DeviceMatrix& w, const float* x, float* y, int64_t n, bool sameInput = false);
    Status enqueueStep(int64_t n, int64_t wanted, bool split);
    Status runStep(int64_t n, int64_t wanted, bool split);
};

Result<const float*> CudaLlamaForward::Impl::uploadFloats(const float* data, int64_t n) {
    HEARTH_ASSIGN_OR_RETURN(cuda::DeviceBuffer buf, cuda::DeviceBuffer::allocate(size_t(n) * sizeof(float)));
    HEARTH_RETURN_IF_ERROR(cuda::copyToDevice(buf.data(), data, size_t(n) * sizeof(float), stream.handle()));
    weightBytes += buf.bytes();
    const float* p = buf.as<float>();
    weightBuffers.push_back(std::move(buf));
    return p;
}

Result<cuda::DeviceMatrix> CudaLlamaForward::Impl::uploadMatrix(const cpu::ref::Matrix& m, const char* what) {
    if (auto it = uploadedMatrices.find(m.data); it != uploadedMatrices.end()) return it->second;
    if (!cuda::weightTypeSupported(m.type))
        return unsupported(std::string("CUDA: weight ") + what + " has type " +
                           std::string(quant::typeName(m.type)) + ", which has no CUDA kernel");
    const size_t bytes = size_t(m.rowBytes) * size_t(m.rows);
    HEARTH_ASSIGN_OR_RETURN(cuda::DeviceBuffer buf, cuda::DeviceBuffer::allocate(bytes));
    HEARTH_RETURN_IF_ERROR(cuda::copyToDevice(buf.data(), m.data, bytes, stream.handle()));
    weightBytes += buf.bytes();
    cuda::DeviceMatrix d{buf.data(), m.type, m.cols, m.rows, m.rowBytes};
    weightBuffers.push_back(std::move(buf));
    uploadedMatrices.emplace(m.data, d);
    return d;
}

Status CudaLlamaForward::Impl::reserve(int64_t n, int64_t tableLen, int64_t wanted) {
    const LlamaHParams& hp = model->hparams();
    auto floats = [](cuda::DeviceBuffer& b, int64_t count) -> Status {
        HEARTH_ASSIGN_OR_RETURN(b, cuda::DeviceBuffer::allocate(size_t(count) * sizeof(float)));
        return Status::ok();
    };
    if (n > s.capacity) {
        const int64_t c = std::max<int64_t>(n, 16);
        const int64_t E = hp.nEmbd, qDim = int64_t(hp.nHead) * hp.headDim,
                      kvDim = int64_t(hp.nHeadKv) * hp.headDim, F = hp.nFf;
        HEARTH_RETURN_IF_ERROR(floats(s.x, c * E));
        HEARTH_RETURN_IF_ERROR(floats(s.xn, c * E));
        HEARTH_RETURN_IF_ERROR(floats(s.tmp, c * E));
        HEARTH_RETURN_IF_ERROR(floats(s.q, c * qDim));
        HEARTH_RETURN_IF_ERROR(floats(s.att, c * qDim));
        HEARTH_RETURN_IF_ERROR(floats(s.k, c * kvDim));
        HEARTH_RETURN_IF_ERROR(floats(s.v, c * kvDim));
        HEARTH_RETURN_IF_ERROR(floats(s.gate, c * F));
        HEARTH_RETURN_IF_ERROR(floats(s.up, c * F));
        const int64_t maxCols = std::max({E, qDim, F});
        HEARTH_ASSIGN_OR_RETURN(s.actQ, cuda::DeviceBuffer::allocate(size_t(c) * size_t((maxCols + 31) / 32) *
                                                                     sizeof(cuda::math::ActChunk)));
        HEARTH_RETURN_IF_ERROR(floats(s.ids, c));  // int32, same size as float
        HEARTH_RETURN_IF_ERROR(floats(s.pos, c));
        HEARTH_RETURN_IF_ERROR(floats(s.tableStart, c));
        HEARTH_RETURN_IF_ERROR(floats(s.rows, c));
        HEARTH_RETURN_IF_ERROR(floats(s.slots, 2 * c)); // int64
        s.capacity = c;
        graphs.clear();
    }
    if (tableLen > s.tableCapacity) {
        const int64_t c = std::max<int64_t>(tableLen, 64);
        HEARTH_RETURN_IF_ERROR(floats(s.tables, c));
        s.tableCapacity = c;
        graphs.clear();
    }
    if (wanted > s.logitRows) {
        HEARTH_RETURN_IF_ERROR(floats(s.logits, wanted * hp.nVocab));
        s.logitRows = wanted;
        graphs.clear();
    }
    return Status::ok();
}

// y[n][rows] = x[n][cols] · Wᵀ: the decode kernel for small batches; otherwise int8 dot products
// for quantized weights (x quantized once per group of projections of the same input: sameInput
// says x is unchanged since the previous call) and tensor cores for plain ones.
Status CudaLlamaForward::Impl::linear(const cuda::DeviceMatrix& w, const float* x, float* y, int64_t n,
                                      bool sameInput) {
    if (!sameInput) quantizedInput = nullptr;
    if (n <= cuda::kMatVecMaxBatch) return cuda::matVec(w, x, y, int(n), stream.handle());
    if (!useInt8 || !cuda::int8TypeSupported(w.type)) return cuda::matMul(w, x, y, n, stream.handle());
    auto* xq = static_cast<cuda::math::ActChunk*>(s.actQ.data());
    if (quantizedInput != x) {
        HEARTH_RETURN_IF_ERROR(cuda::quantizeActivations(x, n, w.cols, xq, stream.handle()));
        quantizedInput = x;
    }
    return cuda::matMulInt8(w, xq, y, n, stream.handle());
}

CudaLlamaForward::CudaLlamaForward(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
CudaLlamaForward::~CudaLlamaForward() = default;

uint64_t CudaLlamaForward::weightBytes() const { return m_impl->weightBytes; }
uint64_t CudaLlamaForward::kvBytes() const { return m_impl->kvBytes; }
int CudaLlamaForward::gpuLayers() const { return m_impl->gpuLayers; }

Result<std::unique_ptr<CudaLlamaForward>> CudaLlamaForward::create(const LlamaModel& model, int deviceIndex,
                                                                   int numBlocks, int blockSize, KvType kvType,
                                                                   int gpuLayers) {
    const LlamaHParams& hp = model.hparams();
    if (numBlocks <= 0 || blockSize <= 0) return invalidArgument("CUDA forward: empty K/V pool");
    if (kvType == KvType::Q8_0) return unsupported("CUDA: Q8_0 K/V cache is not supported (use f16 or f32)");
    if (hp.headDim > 256) return unsupported("CUDA: head size " + std::to_string(hp.headDim) + " > 256");
    if (hp.nRot % 2 != 0 || hp.nRot > hp.headDim)
        return unsupported("CUDA: rope dimension " + std::to_string(hp.nRot) + " is odd or above the head size");
    HEARTH_ASSIGN_OR_RETURN(const int count, cuda::deviceCount());
    if (deviceIndex < 0 || deviceIndex >= count)
        return invalidArgument("CUDA device " + std::to_string(deviceIndex) + " does not exist (" +
                               std::to_string(count) + " found)");
    HEARTH_RETURN_IF_ERROR(cuda::setDevice(deviceIndex));

    auto impl = std::make_unique<Impl>();
    Impl& I = *impl;
    I.model = &model;
    I.device = deviceIndex;
    I.numBlocks = numBlocks;
    I.blockSize = blockSize;
    I.gpuLayers = gpuLayers < 0 ? hp.nLayer : std::min(gpuLayers, hp.nLayer);
    I.kvFormat = kvType == KvType::F32 ? cuda::KvFormat::F32 : cuda::KvFormat::F16;
    if (const char* env = std::getenv("HEARTH_CUDA_GRAPHS")) I.useGraphs = std::strcmp(env, "0") != 0;
    if (const char* env = std::getenv("HEARTH_CUDA_INT8")) I.useInt8 = std::strcmp(env, "0") != 0;
    const uint64_t kvDim = uint64_t(hp.nHeadKv) * uint64_t(hp.headDim);
    I.blockBytes = uint64_t(blockSize) * kvDim * (kvType == KvType::F32 ? 4u : 2u);
    HEARTH_ASSIGN_OR_RETURN(I.stream, cuda::Stream::create());

    HEARTH_ASSIGN_OR_RETURN(I.tokEmbd, I.uploadMatrix(model.tokenEmbedding(), "token_embd"));
    if (I.gpuLayers == hp.nLayer) { // otherwise the CPU computes the logits
        HEARTH_ASSIGN_OR_RETURN(I.output, I.uploadMatrix(model.outputMatrix(), "output"));
        HEARTH_ASSIGN_OR_RETURN(I.outputNorm, I.uploadFloats(model.outputNorm().data, model.outputNorm().n));
    }
    if (!model.ropeFreqs().empty()) {
        HEARTH_ASSIGN_OR_RETURN(I.ropeFreqs, I.uploadFloats(model.ropeFreqs().data(), int64_t(model.ropeFreqs().size())));
    }
    I.layers.resize(size_t(I.gpuLayers));
    for (int l = 0; l < I.gpuLayers; ++l) {
        const LayerWeights& L = model.layer(l);
        DeviceLayer& D = I.layers[size_t(l)];
        HEARTH_ASSIGN_OR_RETURN(D.attnNorm, I.uploadFloats(L.attnNorm.data, L.attnNorm.n));
        HEARTH_ASSIGN_OR_RETURN(D.ffnNorm, I.uploadFloats(L.ffnNorm.data, L.ffnNorm.n));
        for (auto [src, dst] : {std::pair{&L.bq, &D.bq}, {&L.bk, &D.bk}, {&L.bv, &D.bv}, {&L.qNorm, &D.qNorm},
                                {&L.kNorm, &D.kNorm}})
            if (*src) {
                HEARTH_ASSIGN_OR_RETURN(*dst, I.uploadFloats((*src)->data, (*src)->n));
            }
        HEARTH_ASSIGN_OR_RETURN(D.wq, I.uploadMatrix(L.wq, "attn_q"));
        HEARTH_ASSIGN_OR_RETURN(D.wk, I.uploadMatrix(L.wk, "attn_k"));
        HEARTH_ASSIGN_OR_RETURN(D.wv, I.uploadMatrix(L.wv, "attn_v"));
        HEARTH_ASSIGN_OR_RETURN(D.wo, I.uploadMatrix(L.wo, "attn_output"));
        HEARTH_ASSIGN_OR_RETURN(D.wGate, I.uploadMatrix(L.wGate, "ffn_gate"));
        HEARTH_ASSIGN_OR_RETURN(D.wUp, I.uploadMatrix(L.wUp, "ffn_up"));
        HEARTH_ASSIGN_OR_RETURN(D.wDown, I.uploadMatrix(L.wDown, "ffn_down"));
        const size_t cacheBytes = size_t(I.blockBytes) * size_t(numBlocks);
        HEARTH_ASSIGN_OR_RETURN(D.kCache, cuda::DeviceBuffer::allocate(cacheBytes));
        HEARTH_ASSIGN_OR_RETURN(D.vCache, cuda::DeviceBuffer::allocate(cacheBytes));
        I.kvBytes += 2 * cacheBytes;
    }
    HEARTH_RETURN_IF_ERROR(I.stream.synchronize());
    return std::unique_ptr<CudaLlamaForward>(new CudaLlamaForward(std::move(impl)));
}

Status CudaLlamaForward::copyBlock(int32_t src, int32_t dst) {
    Impl& I = *m_impl;
    if (src < 0 || dst < 0 || src >= I.numBlocks || dst >= I.numBlocks)
        return outOfRange("block id outside the CUDA K/V pool");
    if (src == dst) return Status::ok();
    HEARTH_RETURN_IF_ERROR(cuda::setDevice(I.device));
    for (DeviceLayer& L : I.layers)
        for (cuda::DeviceBuffer* cache : {&L.kCache, &L.vCache}) {
            auto* base = static_cast<uint8_t*>(cache->data());
            HEARTH_RETURN_IF_ERROR(cuda::copyDeviceToDevice(base + uint64_t(dst) * I.blockBytes,
                                                            base + uint64_t(src) * I.blockBytes, I.blockBytes,
                                                            I.stream.handle()));
        }
    return I.stream.synchronize();
}

// Enqueues the step's kernels for n tokens, wanted of them with logits (none with a split), reading
// the batch from the scratch arrays forward() uploaded. Launch arguments depend only on (n,
// wanted) and the scratch addresses, which is what lets runStep replay a captured copy.
Status CudaLlamaForward::Impl::enqueueStep(int64_t n, int64_t wanted, bool split) {
    const LlamaHParams& hp = model->hparams();
    const int64_t E = hp.nEmbd, D = hp.headDim, F = hp.nFf, qDim = int64_t(hp.nHead) * D,
                  kvDim = int64_t(hp.nHeadKv) * D;
    Scratch& S = s;
    const cuda::StreamHandle st = stream.handle();
    float *x = S.x.as<float>(), *xn = S.xn.as<float>(), *tmp = S.tmp.as<float>(), *q = S.q.as<float>(),
          *att = S.att.as<float>(), *k = S.k.as<float>(), *v = S.v.as<float>(), *gate = S.gate.as<float>(),
          *up = S.up.as<float>();
    const int32_t* dPos = S.pos.as<int32_t>();

    cuda::RopeParams rope;
    rope.headDim = hp.headDim;
    rope.nRot = hp.nRot;
    rope.freqBase = hp.ropeBase;
    rope.neox = hp.neoxRope;
    rope.freqFactors = ropeFreqs;
    cuda::AttentionArgs a;
    a.q = q;
    a.out = att;
    a.tables = S.tables.as<int32_t>();
    a.tableStart = S.tableStart.as<int32_t>();
    a.positions = dPos;
    a.nTokens = n;
    a.nHeads = hp.nHead;
    a.scale = 1.0f / std::sqrt(float(D));

    HEARTH_RETURN_IF_ERROR(cuda::getRows(tokEmbd, S.ids.as<int32_t>(), n, x, st));
    for (int l = 0; l < gpuLayers; ++l) {
        DeviceLayer& L = layers[size_t(l)];
        // x, xn [n][E]; q, att [n][qDim]; k, v [n][kvDim]; gate, up [n][F]; tmp [n][E].
        HEARTH_RETURN_IF_ERROR(cuda::rmsNorm(x, L.attnNorm, xn, n, E, hp.rmsEps, st));
        HEARTH_RETURN_IF_ERROR(linear(L.wq, xn, q, n));
        HEARTH_RETURN_IF_ERROR(linear(L.wk, xn, k, n, true));
        HEARTH_RETURN_IF_ERROR(linear(L.wv, xn, v, n, true));
        if (L.bq) HEARTH_RETURN_IF_ERROR(cuda::addRows(q, L.bq, n, qDim, st));
        if (L.bk) HEARTH_RETURN_IF_ERROR(cuda::addRows(k, L.bk, n, kvDim, st));
        if (L.bv) HEARTH_RETURN_IF_ERROR(cuda::addRows(v, L.bv, n, kvDim, st));
        // Q/K norm per head ([n * heads][D] rows, in place), then RoPE at each token's position.
        if (L.qNorm) HEARTH_RETURN_IF_ERROR(cuda::rmsNorm(q, L.qNorm, q, n * hp.nHead, D, hp.rmsEps, st));
        if (L.kNorm) HEARTH_RETURN_IF_ERROR(cuda::rmsNorm(k, L.kNorm, k, n * hp.nHeadKv, D, hp.rmsEps, st));
        rope.nHeads = hp.nHead;
        HEARTH_RETURN_IF_ERROR(cuda::rope(q, dPos, n, rope, st));
        rope.nHeads = hp.nHeadKv;
        HEARTH_RETURN_IF_ERROR(cuda::rope(k, dPos, n, rope, st));

        cuda::PagedKvView view;
        view.k = L.kCache.data();
        view.v = L.vCache.data();
        view.type = kvFormat;
        view.numBlocks = numBlocks;
        view.blockSize = blockSize;
        view.nKvHeads = hp.nHeadKv;
        view.headDim = hp.headDim;
        HEARTH_RETURN_IF_ERROR(cuda::kvWrite(view, k, v, S.slots.as<int64_t>(), n, st));
        // Every token of the batch in one launch, each through its own sequence's block table.
        HEARTH_RETURN_IF_ERROR(cuda::pagedAttention(view, a, st));
        HEARTH_RETURN_IF_ERROR(linear(L.wo, att, tmp, n));
        HEARTH_RETURN_IF_ERROR(cuda::add(x, tmp, x, n * E, st));
        HEARTH_RETURN_IF_ERROR(cuda::rmsNorm(x, L.ffnNorm, xn, n, E, hp.rmsEps, st));
        HEARTH_RETURN_IF_ERROR(linear(L.wGate, xn, gate, n));
        HEARTH_RETURN_IF_ERROR(linear(L.wUp, xn, up, n, true));
        HEARTH_RETURN_IF_ERROR(cuda::swiglu(gate, up, gate, n * F, st));
        HEARTH_RETURN_IF_ERROR(linear(L.wDown, gate, tmp, n));
        HEARTH_RETURN_IF_ERROR(cuda::add(x, tmp, x, n * E, st));
    }
    if (split || wanted == 0) return Status::ok();
    // The wanted rows of x gathered into xn [wanted][E], final norm, then the output matrix.
    HEARTH_RETURN_IF_ERROR(cuda::gatherRows(x, S.rows.as<int32_t>(), wanted, E, xn, st));
    HEARTH_RETURN_IF_ERROR(cuda::rmsNorm(xn, outputNorm, xn, wanted, E, hp.rmsEps, st));
    return linear(output, xn, S.logits.as<float>(), wanted);
}

// Enqueues a step, through a CUDA graph for decode-sized batches: the first step of a shape is
// captured (and run from the capture), later ones replay it. If capturing fails for any reason the
// step is enqueued directly and graphs stay off for this object.
Status CudaLlamaForward::Impl::runStep(int64_t n, int64_t wanted, bool split) {
    if (!useGraphs || n > cuda::kMatVecMaxBatch) return enqueueStep(n, wanted, split);
    const std::pair<int64_t, int64_t> key{n, wanted};
    if (auto it = graphs.find(key); it != graphs.end()) return it->second.launch(stream.handle());
    if (!cuda::Graph::beginCapture(stream.handle()).isOk()) {
        useGraphs = false;
        return enqueueStep(n, wanted, split);
    }
    if (!enqueueStep(n, wanted, split).isOk()) {
        cuda::Graph::abortCapture(stream.handle());
        useGraphs = false;
        return enqueueStep(n, wanted, split); // the real error, if there is one, surfaces here
    }
    Result<cuda::Graph> graph = cuda::Graph::endCapture(stream.handle());
    if (!graph.isOk()) {
        useGraphs = false;
        return enqueueStep(n, wanted, split);
    }
    const cuda::Graph& g = graphs.emplace(key, std::move(graph).value()).first->second;
    return g.launch(stream.handle());
}

Status CudaLlamaForward::forward(const Batch& batch, std::vector<float>& logits, cpu::PagedKvStore* cpuKv,
                                 cpu::ThreadPool* pool) {
    Impl& I = *m_impl;
    const LlamaHParams& hp = I.model->hparams();
    const int64_t n = int64_t(batch.tokens.size());
    const int64_t E = hp.nEmbd;
    logits.clear();
    if (n == 0) return Status::ok();
    const bool split = I.gpuLayers < hp.nLayer;
    if (split && !cpuKv) return invalidArgument("CUDA forward: a layer split needs the CPU layers' K/V store");

    // Host side: check the batch as forwardCpu does, and derive each token's slot.
    const size_t nSeq = batch.blockTables.size();
    std::vector<int32_t> ids(static_cast<size_t>(n)), pos(static_cast<size_t>(n)),
        tableStart(static_cast<size_t>(n)), rows;
    std::vector<int64_t> slots(static_cast<size_t>(n));
    std::vector<int32_t> tableOffset(nSeq);
    std::vector<int32_t> tables;
    for (size_t s = 0; s < nSeq; ++s) {
        tableOffset[s] = int32_t(tables.size());
        for (int32_t b : batch.blockTables[s]) {
            if (b < 0 || b >= I.numBlocks) return outOfRange("block id " + std::to_string(b) + " outside the CUDA K/V pool");
            tables.push_back(b);
        }
    }
    for (int64_t i = 0; i < n; ++i) {
        const BatchToken& t = batch.tokens[size_t(i)];
        if (t.token < 0 || t.token >= hp.nVocab)
            return outOfRange("token id " + std::to_string(t.token) + " outside the vocabulary");
        if (t.seq < 0 || size_t(t.seq) >= nSeq) return invalidArgument("batch token names an unknown sequence");
        if (t.pos < 0) return invalidArgument("negative position");
        const auto& table = batch.blockTables[size_t(t.seq)];
        if (size_t(t.pos / I.blockSize) >= table.size())
            return invalidArgument("position " + std::to_string(t.pos) + " of a sequence has no KV slot");
        ids[size_t(i)] = t.token;
        pos[size_t(i)] = t.pos;
        tableStart[size_t(i)] = tableOffset[size_t(t.seq)];
        slots[size_t(i)] = int64_t(table[size_t(t.pos / I.blockSize)]) * I.blockSize + t.pos % I.blockSize;
        if (t.wantLogits) rows.push_back(int32_t(i));
    }
    const int64_t wanted = split ? 0 : int64_t(rows.size());

    HEARTH_RETURN_IF_ERROR(cuda::setDevice(I.device));
    HEARTH_RETURN_IF_ERROR(I.reserve(n, int64_t(tables.size()), wanted));
    Scratch& S = I.s;
    const cuda::StreamHandle st = I.stream.handle();
    auto upload = [&](cuda::DeviceBuffer& dst, const auto& v) {
        return v.empty() ? Status::ok() : cuda::copyToDevice(dst.data(), v.data(), v.size() * sizeof(v[0]), st);
    };
    HEARTH_RETURN_IF_ERROR(upload(S.ids, ids));
    HEARTH_RETURN_IF_ERROR(upload(S.pos, pos));
    HEARTH_RETURN_IF_ERROR(upload(S.tableStart, tableStart));
    HEARTH_RETURN_IF_ERROR(upload(S.slots, slots));
    HEARTH_RETURN_IF_ERROR(upload(S.tables, tables));
    if (wanted > 0) HEARTH_RETURN_IF_ERROR(upload(S.rows, rows));

    HEARTH_RETURN_IF_ERROR(I.runStep(n, wanted, split));

    if (split) {
        // The hidden state comes back; the CPU runs the remaining layers and the logits.
        std::vector<float> hidden(static_cast<size_t>(n * E));
        HEARTH_RETURN_IF_ERROR(cuda::copyToHost(hidden.data(), S.x.data(), hidden.size() * sizeof(float), st));
        return I.model->forwardCpuFrom(batch, I.gpuLayers, hidden, *cpuKv, logits, pool);
    }
    if (wanted == 0) return I.stream.synchronize();
    logits.resize(size_t(wanted) * size_t(hp.nVocab));
    return cuda::copyToHost(logits.data(), S.logits.data(), logits.size() * sizeof(float), st);
}

} // namespace hearth::model
