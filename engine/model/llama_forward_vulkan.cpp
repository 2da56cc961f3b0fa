// The llama forward on a backend::Device: the steps of forwardCpu (embedding lookup, per layer
// RMSNorm, Q/K/V projections with optional bias and Q/K norm, RoPE, K/V written into paged
// blocks, paged attention, output projection and residual, SwiGLU FFN; final norm and output
// projection for the wanted tokens) recorded as device ops and run once per step. With a layer
// split the hidden state comes back after the device layers and the CPU kernels run the rest.
#include "model/llama_forward_vulkan.h"

#if HEARTH_HAS_VULKAN
#include "backend/vulkan/vk_device.h"
#endif

#include <algorithm>
#include <cmath>

namespace hearth::model {

namespace {

using BufferPtr = std::unique_ptr<backend::Buffer>;

struct DeviceLayer {
    BufferPtr attnNorm, ffnNorm, bq, bk, bv, qNorm, kNorm;
    BufferPtr wq, wk, wv, wo, wGate, wUp, wDown;
    backend::DeviceMatrix mq, mk, mv, mo, mGate, mUp, mDown;
    BufferPtr kCache, vCache; // [numBlocks * blockSize][nHeadKv * headDim] in the KV type
};

} // namespace

Result<std::unique_ptr<backend::Device>> openComputeDevice(const std::string& id) {
    const size_t colon = id.find(':');
    const std::string kind = id.substr(0, colon);
    int index = 0;
    if (colon != std::string::npos) {
        const std::string digits = id.substr(colon + 1);
        if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
            return invalidArgument("device id '" + id + "': expected KIND:INDEX such as vulkan:0");
        index = std::stoi(digits);
    }
    if (kind == "vulkan") {
#if HEARTH_HAS_VULKAN
        vk::VulkanOptions options;
        options.deviceIndex = index;
        auto dev = vk::createVulkanDevice(options);
        if (!dev) return dev.status().withContext("device " + id);
        return std::move(*dev);
#else
        (void)index;
        return unsupported("device " + id + ": the Vulkan backend is not built into this binary");
#endif
    }
    if (kind == "cuda") return unsupported("device " + id + ": the engine cannot run on CUDA devices yet");
    return invalidArgument("unknown device '" + id + "' (expected cpu or vulkan:N)");
}

struct DeviceForward::Impl {
    const LlamaModel* model = nullptr;
    backend::Device* dev = nullptr;
    int numBlocks = 0, blockSize = 0, gpuLayers = 0;
    uint64_t blockBytes = 0; // one K (or V) block of one layer
    KvType kvType = KvType::F16;
    BufferPtr tokEmbd, output, outputNorm, ropeFreqs;
    backend::DeviceMatrix mTokEmbd, mOutput;
    std::vector<DeviceLayer> layers;
    // Per-step buffers, grown to the largest step seen: activations for `capacity` tokens.
    int64_t capacity = 0, tableCapacity = 0, logitRows = 0;
    BufferPtr x, xn, q, k, v, att, gate, up, tmp, logits;
    BufferPtr ids, pos, slots, info, tables, wanted;

    Result<BufferPtr> upload(const void* data, uint64_t bytes, uint64_t& total) {
        HEARTH_ASSIGN_OR_RETURN(BufferPtr b, dev->allocate(bytes));
        HEARTH_RETURN_IF_ERROR(b->write(0, data, bytes));
        total += bytes;
        return b;
    }
    Result<BufferPtr> uploadVector(const Vector& v, uint64_t& total) {
        return upload(v.data, uint64_t(v.n) * sizeof(float), total);
    }
    Status uploadMatrix(const cpu::ref::Matrix& m, BufferPtr& buf, backend::DeviceMatrix& out, uint64_t& total) {
        if (!dev->supportsOp(backend::Op::MatMul, m.type))
            return unsupported(std::string("the device has no matMul for ") + std::string(quant::typeName(m.type)) +
                               " weights");
        HEARTH_ASSIGN_OR_RETURN(buf, upload(m.data, m.rowBytes * uint64_t(m.rows), total));
        out = {buf.get(), m.type, m.cols, m.rows, m.rowBytes};
        return Status::ok();
    }
    // Activations for n tokens, tableLen block ids, and logits for logitChunk rows.
    Status reserve(int64_t n, int64_t tableLen, int64_t logitChunk);
    Status step(const Batch& batch, std::vector<float>& logits, cpu::PagedKvStore* cpuKv, cpu::ThreadPool* pool);
};

DeviceForward::DeviceForward(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

int DeviceForward::maxBlocks(const backend::Device& device, const LlamaHParams& hp, int blockSize, KvType kvType) {
    const uint64_t blockBytes = uint64_t(std::max(1, blockSize)) * uint64_t(hp.nHeadKv) * uint64_t(hp.headDim) *
                                (kvType == KvType::F32 ? 4 : 2);
    const uint64_t limit = device.info().maxBindRange > 16 ? device.info().maxBindRange - 16 : 0;
    return int(std::min<uint64_t>(limit / std::max<uint64_t>(1, blockBytes), INT32_MAX));
}
DeviceForward::~DeviceForward() = default;

Result<std::unique_ptr<DeviceForward>> DeviceForward::create(const LlamaModel& model, backend::Device& device,
                                                             int numBlocks, int blockSize, KvType kvType,
                                                             int gpuLayers) {
    const LlamaHParams& hp = model.hparams();
    const int G = gpuLayers < 0 ? hp.nLayer : std::min(gpuLayers, hp.nLayer);
    if (kvType != KvType::F16 && kvType != KvType::F32)
        return unsupported(std::string("KV cache type ") + kvTypeName(kvType) + " on a device");
    if (numBlocks <= 0 || blockSize <= 0) return invalidArgument("K/V pool needs blocks");
    if (const int most = maxBlocks(device, hp, blockSize, kvType); numBlocks > most)
        return unsupported("a K/V cache of " + std::to_string(numBlocks) + " blocks per layer exceeds the device's " +
                           std::to_string(device.info().maxBindRange) + "-byte binding limit (at most " +
                           std::to_string(most) + " blocks)");
    if (hp.headDim > 256) return unsupported("head dimension above 256 on a device");
    for (backend::Op op : {backend::Op::RmsNorm, backend::Op::Rope, backend::Op::Add, backend::Op::Swiglu,
                           backend::Op::KvWrite, backend::Op::Attention})
        if (!device.supportsOp(op)) return unsupported(std::string("the device has no ") + backend::opName(op));
    if (!device.supportsOp(backend::Op::GetRows, model.tokenEmbedding().type) ||
        !device.supportsOp(backend::Op::GetRows, quant::Type::F32))
        return unsupported("the device cannot look up the token embedding");
    auto impl = std::make_unique<Impl>();
    impl->model = &model;
    impl->dev = &device;
    impl->numBlocks = numBlocks;
    impl->blockSize = blockSize;
    impl->kvType = kvType;
    impl->gpuLayers = G;
    uint64_t weights = 0, kvTotal = 0;
    const cpu::ref::Matrix& emb = model.tokenEmbedding();
    HEARTH_ASSIGN_OR_RETURN(impl->tokEmbd, impl->upload(emb.data, emb.rowBytes * uint64_t(emb.rows), weights));
    impl->mTokEmbd = {impl->tokEmbd.get(), emb.type, emb.cols, emb.rows, emb.rowBytes};
    if (G == hp.nLayer) {
        HEARTH_RETURN_IF_ERROR(impl->uploadMatrix(model.outputMatrix(), impl->output, impl->mOutput, weights));
        HEARTH_ASSIGN_OR_RETURN(impl->outputNorm, impl->uploadVector(model.outputNorm(), weights));
    }
    if (!model.ropeFreqs().empty()) {
        HEARTH_ASSIGN_OR_RETURN(impl->ropeFreqs, impl->upload(model.ropeFreqs().data(),
                                                              model.ropeFreqs().size() * sizeof(float), weights));
    }
    const uint64_t kvRow = uint64_t(hp.nHeadKv) * uint64_t(hp.headDim) * (kvType == KvType::F16 ? 2 : 4);
    impl->blockBytes = uint64_t(blockSize) * kvRow;
    const uint64_t cacheBytes = uint64_t(numBlocks) * impl->blockBytes;
    impl->layers.resize(size_t(G));
    for (int l = 0; l < G; ++l) {
        const LayerWeights& L = model.layer(l);
        DeviceLayer& D = impl->layers[size_t(l)];
        HEARTH_ASSIGN_OR_RETURN(D.attnNorm, impl->uploadVector(L.attnNorm, weights));
        HEARTH_ASSIGN_OR_RETURN(D.ffnNorm, impl->uploadVector(L.ffnNorm, weights));
        for (auto [src, dst] : {std::pair{&L.bq, &D.bq}, {&L.bk, &D.bk}, {&L.bv, &D.bv}, {&L.qNorm, &D.qNorm},
                                {&L.kNorm, &D.kNorm}})
            if (*src) {
                HEARTH_ASSIGN_OR_RETURN(*dst, impl->uploadVector(**src, weights));
            }
        HEARTH_RETURN_IF_ERROR(impl->uploadMatrix(L.wq, D.wq, D.mq, weights));
        HEARTH_RETURN_IF_ERROR(impl->uploadMatrix(L.wk, D.wk, D.mk, weights));
        HEARTH_RETURN_IF_ERROR(impl->uploadMatrix(L.wv, D.wv, D.mv, weights));
        HEARTH_RETURN_IF_ERROR(impl->uploadMatrix(L.wo, D.wo, D.mo, weights));
        HEARTH_RETURN_IF_ERROR(impl->uploadMatrix(L.wGate, D.wGate, D.mGate, weights));
        HEARTH_RETURN_IF_ERROR(impl->uploadMatrix(L.wUp, D.wUp, D.mUp, weights));
        HEARTH_RETURN_IF_ERROR(impl->uploadMatrix(L.wDown, D.wDown, D.mDown, weights));
        HEARTH_ASSIGN_OR_RETURN(D.kCache, device.allocate(cacheBytes));
        HEARTH_ASSIGN_OR_RETURN(D.vCache, device.allocate(cacheBytes));
        kvTotal += 2 * cacheBytes;
    }
    std::unique_ptr<DeviceForward> f(new DeviceForward(std::move(impl)));
    f->m_weightBytes = weights;
    f->m_kvBytes = kvTotal;
    return f;
}

Status DeviceForward::Impl::reserve(int64_t n, int64_t tableLen, int64_t logitChunk) {
    const LlamaHParams& hp = model->hparams();
    if (n > capacity) {
        const int64_t c = std::max<int64_t>(n, 16);
        const uint64_t E = uint64_t(hp.nEmbd), qDim = uint64_t(hp.nHead) * uint64_t(hp.headDim),
                       kvDim = uint64_t(hp.nHeadKv) * uint64_t(hp.headDim), F = uint64_t(hp.nFf);
        auto alloc = [&](BufferPtr& b, uint64_t floats, bool host) -> Status {
            HEARTH_ASSIGN_OR_RETURN(b, dev->allocate(floats * 4, host));
            return Status::ok();
        };
        const uint64_t uc = uint64_t(c);
        HEARTH_RETURN_IF_ERROR(alloc(x, uc * E, false));
        HEARTH_RETURN_IF_ERROR(alloc(xn, uc * E, false));
        HEARTH_RETURN_IF_ERROR(alloc(tmp, uc * E, false));
        HEARTH_RETURN_IF_ERROR(alloc(q, uc * qDim, false));
        HEARTH_RETURN_IF_ERROR(alloc(att, uc * qDim, false));
        HEARTH_RETURN_IF_ERROR(alloc(k, uc * kvDim, false));
        HEARTH_RETURN_IF_ERROR(alloc(v, uc * kvDim, false));
        HEARTH_RETURN_IF_ERROR(alloc(gate, uc * F, false));
        HEARTH_RETURN_IF_ERROR(alloc(up, uc * F, false));
        HEARTH_RETURN_IF_ERROR(alloc(ids, uc, true));
        HEARTH_RETURN_IF_ERROR(alloc(pos, uc, true));
        HEARTH_RETURN_IF_ERROR(alloc(slots, uc, true));
        HEARTH_RETURN_IF_ERROR(alloc(info, 2 * uc, true));
        capacity = c;
    }
    if (logitChunk > logitRows) {
        HEARTH_ASSIGN_OR_RETURN(logits, dev->allocate(uint64_t(logitChunk) * uint64_t(hp.nVocab) * 4, true));
        HEARTH_ASSIGN_OR_RETURN(wanted, dev->allocate(uint64_t(logitChunk) * 4, true));
        logitRows = logitChunk;
    }
    if (tableLen > tableCapacity) {
        const int64_t c = std::max<int64_t>(tableLen, 64);
        HEARTH_ASSIGN_OR_RETURN(tables, dev->allocate(uint64_t(c) * 4, true));
        tableCapacity = c;
    }
    return Status::ok();
}

int DeviceForward::gpuLayers() const { return m_impl->gpuLayers; }

Status DeviceForward::copyBlock(int32_t src, int32_t dst) {
    Impl& I = *m_impl;
    if (src < 0 || dst < 0 || src >= I.numBlocks || dst >= I.numBlocks) return outOfRange("block id outside the device pool");
    if (src == dst) return Status::ok();
    for (DeviceLayer& L : I.layers) {
        HEARTH_RETURN_IF_ERROR(I.dev->copy(*L.kCache, uint64_t(src) * I.blockBytes, *L.kCache,
                                           uint64_t(dst) * I.blockBytes, I.blockBytes));
        HEARTH_RETURN_IF_ERROR(I.dev->copy(*L.vCache, uint64_t(src) * I.blockBytes, *L.vCache,
                                           uint64_t(dst) * I.blockBytes, I.blockBytes));
    }
    return Status::ok();
}

Status DeviceForward::forward(const Batch& batch, std::vector<float>& logits, cpu::PagedKvStore* cpuKv,
                              cpu::ThreadPool* pool) {
    const Status s = m_impl->step(batch, logits, cpuKv, pool);
    if (!s.isOk()) {
        m_impl->dev->discard(); // nothing half-recorded runs with the next step
        logits.clear();
    }
    return s;
}

Status DeviceForward::Impl::step(const Batch& batch, std::vector<float>& logits, cpu::PagedKvStore* cpuKv,
                                 cpu::ThreadPool* pool) {
    Impl& I = *this;
    backend::Device& dev = *I.dev;
    const LlamaHParams& hp = I.model->hparams();
    const int64_t n = int64_t(batch.tokens.size());
    const int64_t E = hp.nEmbd, D = hp.headDim, F = hp.nFf, qDim = int64_t(hp.nHead) * D,
                  kvDim = int64_t(hp.nHeadKv) * D;
    logits.clear();
    if (n == 0) return Status::ok();
    const bool split = I.gpuLayers < hp.nLayer;
    if (split) {
        if (!cpuKv) return invalidArgument("a layer split needs a CPU K/V store for the CPU layers");
        const uint64_t layerBytes = 2 * uint64_t(I.numBlocks) * uint64_t(I.blockSize) *
                                    cpu::PagedKvStore::rowBytes(kvDim, cpuKv->type());
        if (cpuKv->rowSize() != kvDim || cpuKv->blockSize() != I.blockSize || cpuKv->numBlocks() != I.numBlocks ||
            cpuKv->bytes() != layerBytes * uint64_t(hp.nLayer - I.gpuLayers))
            return invalidArgument("the CPU K/V store does not match the split");
    }
    // Host-side inputs: ids, positions, K/V slots, (pos, table offset) per token, the block
    // tables concatenated, and which rows want logits.
    const size_t nSeq = batch.blockTables.size();
    const size_t count = static_cast<size_t>(n);
    std::vector<int32_t> tableOffset(nSeq), tables, ids(count), pos(count), slots(count), info(2 * count), wanted;
    for (size_t s = 0; s < nSeq; ++s) {
        tableOffset[s] = int32_t(tables.size());
        tables.insert(tables.end(), batch.blockTables[s].begin(), batch.blockTables[s].end());
    }
    for (int32_t b : tables)
        if (b < 0 || b >= I.numBlocks) return invalidArgument("block id " + std::to_string(b) + " outside the device pool");
    std::vector<int32_t> seqMaxPos(nSeq, -1);
    for (int64_t i = 0; i < n; ++i) {
        const BatchToken& t = batch.tokens[size_t(i)];
        if (t.token < 0 || t.token >= hp.nVocab)
            return outOfRange("token id " + std::to_string(t.token) + " outside the vocabulary");
        if (t.seq < 0 || size_t(t.seq) >= nSeq) return invalidArgument("batch token names an unknown sequence");
        if (t.pos < 0) return invalidArgument("negative position");
        seqMaxPos[size_t(t.seq)] = std::max(seqMaxPos[size_t(t.seq)], t.pos);
        ids[size_t(i)] = t.token;
        pos[size_t(i)] = t.pos;
        const auto& table = batch.blockTables[size_t(t.seq)];
        slots[size_t(i)] = table[size_t(t.pos / I.blockSize)] * I.blockSize + t.pos % I.blockSize;
        info[size_t(2 * i)] = t.pos;
        info[size_t(2 * i + 1)] = tableOffset[size_t(t.seq)];
        if (t.wantLogits) wanted.push_back(int32_t(i));
    }
    for (size_t s = 0; s < nSeq; ++s)
        if (int64_t(seqMaxPos[s]) >= int64_t(batch.blockTables[s].size()) * I.blockSize)
            return invalidArgument("position " + std::to_string(seqMaxPos[s]) + " of a sequence has no KV slot");
    // Logits come back in chunks of rows that one binding can address.
    const int64_t nWanted = int64_t(wanted.size());
    const uint64_t logitRowBytes = uint64_t(hp.nVocab) * 4, bindLimit = dev.info().maxBindRange;
    const int64_t logitChunk = std::clamp<int64_t>(
        bindLimit > 16 ? int64_t((bindLimit - 16) / logitRowBytes) : nWanted, 1, std::max<int64_t>(nWanted, 1));
    HEARTH_RETURN_IF_ERROR(I.reserve(n, int64_t(tables.size()), logitChunk));
    HEARTH_RETURN_IF_ERROR(I.ids->write(0, ids.data(), ids.size() * 4));
    HEARTH_RETURN_IF_ERROR(I.pos->write(0, pos.data(), pos.size() * 4));
    HEARTH_RETURN_IF_ERROR(I.slots->write(0, slots.data(), slots.size() * 4));
    HEARTH_RETURN_IF_ERROR(I.info->write(0, info.data(), info.size() * 4));
    HEARTH_RETURN_IF_ERROR(I.tables->write(0, tables.data(), tables.size() * 4));

    const backend::RopeParams qRope{n, hp.nHead, hp.headDim, hp.nRot, hp.ropeBase, hp.neoxRope,
                                    int(I.model->ropeFreqs().size())};
    backend::RopeParams kRope = qRope;
    kRope.nHeads = hp.nHeadKv;
    const backend::AttentionParams ap{n, hp.nHead, hp.nHeadKv, hp.headDim, I.blockSize,
                                      1.0f / std::sqrt(float(D)), I.kvType};
    const backend::Buffer* freqs = I.ropeFreqs.get();

    // x[n][E] = embedding rows
    HEARTH_RETURN_IF_ERROR(dev.getRows(I.mTokEmbd, *I.ids, n, *I.x));
    for (int l = 0; l < I.gpuLayers; ++l) {
        DeviceLayer& L = I.layers[size_t(l)];
        HEARTH_RETURN_IF_ERROR(dev.rmsNorm(*I.x, *L.attnNorm, n, E, hp.rmsEps, *I.xn));
        HEARTH_RETURN_IF_ERROR(dev.matMul(L.mq, *I.xn, n, *I.q)); // q[n][qDim]
        HEARTH_RETURN_IF_ERROR(dev.matMul(L.mk, *I.xn, n, *I.k)); // k[n][kvDim]
        HEARTH_RETURN_IF_ERROR(dev.matMul(L.mv, *I.xn, n, *I.v)); // v[n][kvDim]
        if (L.bq) HEARTH_RETURN_IF_ERROR(dev.add(*I.q, *L.bq, n * qDim, qDim, *I.q));
        if (L.bk) HEARTH_RETURN_IF_ERROR(dev.add(*I.k, *L.bk, n * kvDim, kvDim, *I.k));
        if (L.bv) HEARTH_RETURN_IF_ERROR(dev.add(*I.v, *L.bv, n * kvDim, kvDim, *I.v));
        if (L.qNorm) HEARTH_RETURN_IF_ERROR(dev.rmsNorm(*I.q, *L.qNorm, n * hp.nHead, D, hp.rmsEps, *I.q));
        if (L.kNorm) HEARTH_RETURN_IF_ERROR(dev.rmsNorm(*I.k, *L.kNorm, n * hp.nHeadKv, D, hp.rmsEps, *I.k));
        HEARTH_RETURN_IF_ERROR(dev.rope(*I.q, *I.pos, freqs, qRope));
        HEARTH_RETURN_IF_ERROR(dev.rope(*I.k, *I.pos, freqs, kRope));
        HEARTH_RETURN_IF_ERROR(dev.kvWrite(*I.k, *I.slots, n, kvDim, I.kvType, *L.kCache));
        HEARTH_RETURN_IF_ERROR(dev.kvWrite(*I.v, *I.slots, n, kvDim, I.kvType, *L.vCache));
        HEARTH_RETURN_IF_ERROR(dev.attention(*I.q, *L.kCache, *L.vCache, *I.info, *I.tables, ap, *I.att));
        HEARTH_RETURN_IF_ERROR(dev.matMul(L.mo, *I.att, n, *I.tmp)); // tmp[n][E]
        HEARTH_RETURN_IF_ERROR(dev.add(*I.x, *I.tmp, n * E, n * E, *I.x));
        HEARTH_RETURN_IF_ERROR(dev.rmsNorm(*I.x, *L.ffnNorm, n, E, hp.rmsEps, *I.xn));
        HEARTH_RETURN_IF_ERROR(dev.matMul(L.mGate, *I.xn, n, *I.gate)); // gate[n][F]
        HEARTH_RETURN_IF_ERROR(dev.matMul(L.mUp, *I.xn, n, *I.up));     // up[n][F]
        HEARTH_RETURN_IF_ERROR(dev.swiglu(*I.gate, *I.up, n * F, *I.gate));
        HEARTH_RETURN_IF_ERROR(dev.matMul(L.mDown, *I.gate, n, *I.tmp));
        HEARTH_RETURN_IF_ERROR(dev.add(*I.x, *I.tmp, n * E, n * E, *I.x));
    }
    if (split) {
        // The hidden state comes back; the CPU runs the remaining layers and the logits.
        HEARTH_RETURN_IF_ERROR(dev.run());
        std::vector<float> hidden(static_cast<size_t>(n * E));
        HEARTH_RETURN_IF_ERROR(I.x->read(0, hidden.data(), hidden.size() * sizeof(float)));
        return I.model->forwardCpuFrom(batch, I.gpuLayers, hidden, *cpuKv, logits, pool);
    }
    // Per chunk: the wanted rows of x gathered into xn[rows][E], normed, projected to logits.
    logits.assign(size_t(nWanted) * size_t(hp.nVocab), 0.0f);
    if (nWanted == 0) return dev.run();
    const backend::DeviceMatrix xRows{I.x.get(), quant::Type::F32, E, n, uint64_t(E) * 4};
    for (int64_t c0 = 0; c0 < nWanted; c0 += logitChunk) {
        const int64_t rows = std::min(logitChunk, nWanted - c0);
        HEARTH_RETURN_IF_ERROR(I.wanted->write(0, &wanted[size_t(c0)], uint64_t(rows) * 4));
        HEARTH_RETURN_IF_ERROR(dev.getRows(xRows, *I.wanted, rows, *I.xn));
        HEARTH_RETURN_IF_ERROR(dev.rmsNorm(*I.xn, *I.outputNorm, rows, E, hp.rmsEps, *I.xn));
        HEARTH_RETURN_IF_ERROR(dev.matMul(I.mOutput, *I.xn, rows, *I.logits));
        HEARTH_RETURN_IF_ERROR(dev.run());
        HEARTH_RETURN_IF_ERROR(I.logits->read(0, &logits[size_t(c0) * size_t(hp.nVocab)], uint64_t(rows) * logitRowBytes));
    }
    return Status::ok();
}

} // namespace hearth::model
