// The CUDA op device (cuda_op_device.h). Each op checks its buffers' sizes and appends its kernel
// launches to the current step, or to the list being recorded; run() enqueues the step on the
// device's stream and waits. Matrix products pick their kernel by batch: matVec up to
// kMatVecMaxBatch tokens; beyond, int8 dot products for quantized weights (the activations
// quantized once for consecutive products of the same input: q/k/v, gate/up), tensor-core tiles
// for F16/BF16, and matVec over runs of rows for F32 weights (kept in fp32). Expert products of
// many tokens group their (token, slot) pairs by expert on the device. A list recorded as
// repeated (a decode step) is captured as a CUDA graph on its first submit and replayed after
// (the runner rewrites the inputs in the same buffers), falling back to direct launches if
// capturing fails or HEARTH_CUDA_GRAPHS=0; HEARTH_CUDA_INT8=0 keeps quantized prefill on the
// tensor cores.
#include "backend/cuda/cuda_op_device.h"

#include "backend/cpu/rope_math.h" // ropeYarnRange
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/int8_math.h"
#include "backend/op_graph_device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace hearth::cuda {

namespace {

using backend::Buffer;
namespace ops = backend::ops;

// The device, its one stream, and the switches read when it opens.
struct CudaContext {
    int device = 0;
    Stream stream;
    bool useGraphs = true; // HEARTH_CUDA_GRAPHS=0: repeated lists launch directly
    bool useInt8 = true;   // HEARTH_CUDA_INT8=0: prefill of quantized weights on tensor cores
};

// Device memory, whole (CudaBuffer) or a range of it (CudaView).
class CudaMemory : public Buffer {
public:
    virtual uint8_t* data() const = 0;
};

class CudaBuffer final : public CudaMemory {
public:
    CudaBuffer(std::shared_ptr<CudaContext> ctx, DeviceBuffer memory) : m_ctx(std::move(ctx)), m_memory(std::move(memory)) {}
    uint64_t size() const override { return m_memory.bytes(); }
    uint8_t* data() const override { return m_memory.as<uint8_t>(); }
    Status write(uint64_t offset, const void* src, uint64_t bytes) override {
        if (offset > size() || bytes > size() - offset) return outOfRange("CUDA buffer write past its end");
        if (bytes == 0) return Status::ok();
        HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
        // Ordered on the stream before the next run; no wait: pageable sources are staged before
        // the call returns, so the caller may reuse them at once.
        return copyToDevice(data() + offset, src, size_t(bytes), m_ctx->stream.handle());
    }
    Status read(uint64_t offset, void* dst, uint64_t bytes) const override {
        if (offset > size() || bytes > size() - offset) return outOfRange("CUDA buffer read past its end");
        if (bytes == 0) return Status::ok();
        HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
        return copyToHost(dst, data() + offset, size_t(bytes), m_ctx->stream.handle()); // waits for the stream
    }
    const CudaContext* context() const { return m_ctx.get(); }

private:
    std::shared_ptr<CudaContext> m_ctx;
    DeviceBuffer m_memory;
};

class CudaView final : public CudaMemory {
public:
    CudaView(CudaBuffer& parent, uint64_t offset, uint64_t bytes) : m_parent(&parent), m_offset(offset), m_size(bytes) {}
    uint64_t size() const override { return m_size; }
    uint8_t* data() const override { return m_parent->data() + m_offset; }
    Status write(uint64_t offset, const void* src, uint64_t bytes) override {
        if (offset > m_size || bytes > m_size - offset) return outOfRange("CUDA view write past its end");
        return m_parent->write(m_offset + offset, src, bytes);
    }
    Status read(uint64_t offset, void* dst, uint64_t bytes) const override {
        if (offset > m_size || bytes > m_size - offset) return outOfRange("CUDA view read past its end");
        return m_parent->read(m_offset + offset, dst, bytes);
    }
    CudaBuffer& parent() const { return *m_parent; }
    uint64_t offset() const { return m_offset; }

private:
    CudaBuffer* m_parent;
    uint64_t m_offset, m_size;
};

struct Launch {
    const char* op = "";
    std::function<Status(StreamHandle)> fn;
};

// Launches in order, with what they need kept alive (the int8 activation buffers they address).
class CudaList final : public backend::OpList {
public:
    std::vector<Launch> launches;
    std::vector<std::shared_ptr<DeviceBuffer>> keep;
    bool repeated = false;
    // A repeated list's graph, captured on its first submit.
    mutable Graph captured;
    mutable bool captureTried = false;

    Status enqueue(StreamHandle stream) const {
        for (const Launch& l : launches) {
            const Status s = l.fn(stream);
            if (!s.isOk()) return s.withContext(std::string("CUDA ") + l.op);
        }
        return Status::ok();
    }
    void clear() {
        launches.clear();
        keep.clear();
    }
};

bool envSwitchOn(const char* name) {
    const char* v = std::getenv(name);
    return !(v && std::strcmp(v, "0") == 0);
}

class CudaOpDevice final : public backend::OpDevice {
public:
    CudaOpDevice(std::shared_ptr<CudaContext> ctx, backend::DeviceInfo info) : m_ctx(std::move(ctx)), m_info(std::move(info)) {}

    bool supportsOp(ops::Op op, quant::Type type) const override { return m_caps.supportsOp(op, type); }
    bool nodeFits(const graph::Graph& g, const graph::Node& n) const override { return m_caps.nodeFits(g, n); }
    bool kvShapeFits(const backend::KvLayerShape& s, KvType type) const override { return m_caps.kvShapeFits(s, type); }
    ops::OpLimits limits() const override { return m_caps.limits(); }
    const backend::DeviceInfo& info() const override { return m_info; }

    Result<std::unique_ptr<Buffer>> allocate(uint64_t bytes, bool hostVisible) override {
        (void)hostVisible; // host copies go through the stream either way
        HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
        HEARTH_ASSIGN_OR_RETURN(DeviceBuffer memory, DeviceBuffer::allocate(size_t(std::max<uint64_t>(bytes, 1))));
        // Zeroed, as K/V pools and recurrent states expect before their first write.
        HEARTH_RETURN_IF_ERROR(fillZero(memory.data(), memory.bytes(), m_ctx->stream.handle()));
        return std::unique_ptr<Buffer>(new CudaBuffer(m_ctx, std::move(memory)));
    }
    Result<std::unique_ptr<Buffer>> view(const Buffer& parent, uint64_t offset, uint64_t bytes) override {
        CudaBuffer* root = nullptr;
        uint64_t base = 0;
        if (auto* b = dynamic_cast<const CudaBuffer*>(&parent)) {
            root = const_cast<CudaBuffer*>(b);
        } else if (auto* v = dynamic_cast<const CudaView*>(&parent)) {
            root = &v->parent();
            base = v->offset();
        }
        if (!root || root->context() != m_ctx.get()) return internalError("a CUDA view of another device's buffer");
        if (offset > parent.size() || bytes > parent.size() - offset) return internalError("a CUDA view past its buffer's end");
        return std::unique_ptr<Buffer>(new CudaView(*root, base + offset, bytes));
    }
    uint64_t availableMemory() const override {
        uint64_t freeBytes = 0, totalBytes = 0;
        if (!setDevice(m_ctx->device).isOk() || !memoryInfo(freeBytes, totalBytes).isOk()) return 1;
        // Leave a tenth of the device for the weights, step buffers and the runtime.
        return std::max<uint64_t>(freeBytes > totalBytes / 10 ? freeBytes - totalBytes / 10 : 0, 1);
    }

    Status matMul(const ops::DeviceMatrix& w, const Buffer& x, int64_t n, Buffer& y) override;
    Status getRows(const ops::DeviceMatrix& w, const Buffer& ids, int64_t n, Buffer& out) override;
    Status rmsNorm(const Buffer& x, const Buffer* weight, int64_t rows, int64_t dim, float eps, Buffer& out) override;
    Status rope(const Buffer& x, const Buffer& pos, const Buffer* freqFactors, const ops::RopeParams& p,
                Buffer& out) override;
    Status unary(ops::Unary op, const Buffer& x, int64_t count, float param, Buffer& out) override;
    Status binary(ops::Binary op, const Buffer& a, const Buffer& b, int64_t count, int64_t bLen, Buffer& out) override;
    Status swigluOai(const Buffer& gate, const Buffer& up, int64_t count, float alpha, float limit, Buffer& out) override;
    Status matMulId(const ops::DeviceExperts& w, const Buffer& x, int64_t xSlots, const Buffer& ids, int64_t k,
                    int64_t n, Buffer& y, Buffer* scratch) override;
    uint64_t matMulIdScratchBytes(int64_t nExp, int64_t k, int64_t n) const override {
        return n > kMatVecMaxBatch ? matMulIdGroupedScratchBytes(nExp, n, int(k)) : 0;
    }
    Status gather(const Buffer& x, const Buffer& ids, int64_t rows, int64_t width, int64_t k, Buffer& out) override;
    Status copyRows(const Buffer& x, uint64_t offset, int64_t rows, int64_t width, int64_t stride,
                    Buffer& out) override;
    Status weightedSum(const Buffer& y, const Buffer& w, int64_t n, int64_t k, int64_t width, Buffer& out) override;
    Status softmax(const Buffer& x, int64_t rows, int64_t width, float scale, Buffer& out) override;
    Status topK(const Buffer& x, int64_t rows, int64_t width, int64_t k, Buffer& out) override;
    Status kvWrite(const Buffer& src, const Buffer& slots, int64_t n, int64_t rowSize, KvType type,
                   Buffer& cache) override;
    Status attention(const Buffer& q, const Buffer& kCache, const Buffer& vCache, const Buffer& info,
                     const Buffer& tables, const Buffer* sinks, const ops::AttentionParams& p, Buffer& out) override;
    Status copy(const Buffer& src, uint64_t srcOffset, Buffer& dst, uint64_t dstOffset, uint64_t bytes) override;
    Status layerNorm(const Buffer& x, const Buffer* w, const Buffer* b, int64_t rows, int64_t dim, float eps,
                     Buffer& out) override;
    Status concat(const Buffer& a, const Buffer& b, const ops::ConcatShape& s, Buffer& out) override;
    Status rmsNormGated(const Buffer& x, const Buffer& w, const Buffer& z, int64_t rows, int64_t dim, float eps,
                        Buffer& out) override;
    Status ssmConv(const Buffer& x, const Buffer& w, Buffer& state, const Buffer& info, const ops::ConvShape& s,
                   Buffer& out) override;
    Status deltaNet(const Buffer& qkv, const Buffer& g, const Buffer& beta, Buffer& state, const Buffer& info,
                    const ops::DeltaShape& s, Buffer& out) override;

    Status run() override;
    void discard() override {
        m_step.clear();
        m_quantized = {};
    }
    Result<std::unique_ptr<backend::OpList>> record(const std::function<Status()>& body, bool repeated) override;
    Status submit(const backend::OpList& list) override;

private:
    // Appends a launch to the step or the list being recorded; any op but a matrix product
    // forgets which activations the int8 buffer holds.
    void push(const char* op, std::function<Status(StreamHandle)> fn, bool keepsQuantized = false) {
        if (!keepsQuantized) m_quantized = {};
        m_rec->launches.push_back({op, std::move(fn)});
    }
    // The int8 buffer for n rows of cols activations, grown (a new buffer) when too small.
    Result<math::ActChunk*> int8Activations(int64_t n, int64_t cols);

    CudaCapabilities m_caps;
    std::shared_ptr<CudaContext> m_ctx;
    backend::DeviceInfo m_info;
    CudaList m_step;
    CudaList* m_rec = &m_step;
    std::shared_ptr<DeviceBuffer> m_actQ; // the int8 activations of the products (math::ActChunk)
    struct Quantized {
        const float* x = nullptr;
        int64_t n = 0, cols = 0;
        bool operator==(const Quantized&) const = default;
    } m_quantized; // what m_actQ holds at this point of the step or list
};

const float* F(const Buffer& b) { return reinterpret_cast<const float*>(static_cast<const CudaMemory&>(b).data()); }
float* Fw(Buffer& b) { return reinterpret_cast<float*>(static_cast<CudaMemory&>(b).data()); }
const int32_t* I(const Buffer& b) { return reinterpret_cast<const int32_t*>(static_cast<const CudaMemory&>(b).data()); }
uint8_t* B(const Buffer& b) { return static_cast<const CudaMemory&>(b).data(); }

// Whether every buffer is this device's memory holding at least its bytes.
bool fits(std::initializer_list<std::pair<const Buffer*, uint64_t>> uses) {
    for (const auto& [b, bytes] : uses)
        if (b && (!dynamic_cast<const CudaMemory*>(b) || b->size() < bytes)) return false;
    return true;
}
Status tooSmall(const char* op) {
    return invalidArgument(std::string("CUDA ") + op + ": a buffer of another device, or smaller than the op's shape");
}

KernelMatrix kernelMatrix(const ops::DeviceMatrix& w) {
    return KernelMatrix{static_cast<const CudaMemory*>(w.buffer)->data(), w.type, w.cols, w.rows, w.rowBytes};
}

KvFormat formatOf(KvType t) { return t == KvType::F32 ? KvFormat::F32 : t == KvType::Q8_0 ? KvFormat::Q8_0 : KvFormat::F16; }

uint64_t f32s(int64_t count) { return uint64_t(std::max<int64_t>(count, 0)) * 4; }

// ---- running -------------------------------------------------------------------------------------

Status CudaOpDevice::run() {
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    const Status s = m_step.enqueue(m_ctx->stream.handle());
    m_step.clear();
    m_quantized = {};
    const Status synced = m_ctx->stream.synchronize();
    return s.isOk() ? synced : s;
}

Result<std::unique_ptr<backend::OpList>> CudaOpDevice::record(const std::function<Status()>& body, bool repeated) {
    if (m_rec != &m_step) return internalError("a CUDA op list is already being recorded");
    auto list = std::make_unique<CudaList>();
    list->repeated = repeated;
    const Quantized before = m_quantized;
    m_rec = list.get();
    m_quantized = {};
    const Status s = body();
    m_rec = &m_step;
    m_quantized = before;
    if (!s.isOk()) return s;
    return std::unique_ptr<backend::OpList>(std::move(list));
}

Status CudaOpDevice::submit(const backend::OpList& list) {
    const auto* l = dynamic_cast<const CudaList*>(&list);
    if (!l) return invalidArgument("an op list of another device");
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    const StreamHandle stream = m_ctx->stream.handle();
    if (l->repeated && m_ctx->useGraphs && !l->captureTried && !l->launches.empty()) {
        // First run of a repeated list: record the launches (nothing runs yet), then launch the
        // recording. Any failure leaves the list on direct launches, whose own error, if there is
        // one, then surfaces below.
        l->captureTried = true;
        if (Graph::beginCapture(stream).isOk()) {
            if (l->enqueue(stream).isOk()) {
                Result<Graph> captured = Graph::endCapture(stream);
                if (captured.isOk()) l->captured = std::move(captured).value();
            } else {
                Graph::abortCapture(stream);
            }
        }
    }
    HEARTH_RETURN_IF_ERROR(l->captured.valid() ? l->captured.launch(stream) : l->enqueue(stream));
    return m_ctx->stream.synchronize();
}

// ---- matrix products -------------------------------------------------------------------------------

Result<math::ActChunk*> CudaOpDevice::int8Activations(int64_t n, int64_t cols) {
    const uint64_t bytes = uint64_t(n) * uint64_t(cols / math::kChunk) * sizeof(math::ActChunk);
    if (!m_actQ || m_actQ->bytes() < bytes) {
        HEARTH_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(size_t(bytes)));
        m_actQ = std::make_shared<DeviceBuffer>(std::move(buffer)); // lists recorded before keep theirs
        m_quantized = {};
    }
    if (m_rec->keep.empty() || m_rec->keep.back() != m_actQ) m_rec->keep.push_back(m_actQ);
    return static_cast<math::ActChunk*>(m_actQ->data());
}

Status CudaOpDevice::matMul(const ops::DeviceMatrix& w, const Buffer& x, int64_t n, Buffer& y) {
    if (n <= 0) return Status::ok();
    if (!w.buffer || !fits({{w.buffer, uint64_t(w.rows) * w.rowBytes}, {&x, f32s(n * w.cols)}, {&y, f32s(n * w.rows)}}))
        return tooSmall("matMul");
    const KernelMatrix m = kernelMatrix(w);
    const float* xp = F(x);
    float* yp = Fw(y);
    if (n <= kMatVecMaxBatch) {
        push("matMul", [=](StreamHandle s) { return cuda::matVec(m, xp, yp, int(n), s); }, true);
    } else if (m_ctx->useInt8 && int8TypeSupported(w.type) && w.cols % math::kChunk == 0) {
        HEARTH_ASSIGN_OR_RETURN(math::ActChunk* xq, int8Activations(n, w.cols));
        const Quantized now{xp, n, w.cols};
        if (!(m_quantized == now)) {
            const int64_t cols = w.cols;
            push("matMul", [=](StreamHandle s) { return cuda::quantizeActivations(xp, n, cols, xq, s); }, true);
            m_quantized = now;
        }
        push("matMul", [=](StreamHandle s) { return cuda::matMulInt8(m, xq, yp, n, s); }, true);
    } else if (w.type == quant::Type::F32) {
        // F32 weights keep fp32 products at every batch size (the tensor-core tiles round to fp16):
        // the decode kernel over runs of kMatVecMaxBatch rows.
        const int64_t cols = w.cols, outs = w.rows;
        push("matMul", [=](StreamHandle s) {
            for (int64_t r = 0; r < n; r += kMatVecMaxBatch) {
                const int run = int(std::min<int64_t>(kMatVecMaxBatch, n - r));
                HEARTH_RETURN_IF_ERROR(cuda::matVec(m, xp + r * cols, yp + r * outs, run, s));
            }
            return Status::ok();
        }, true);
    } else {
        push("matMul", [=](StreamHandle s) { return cuda::matMul(m, xp, yp, n, s); }, true);
    }
    return Status::ok();
}

Status CudaOpDevice::matMulId(const ops::DeviceExperts& w, const Buffer& x, int64_t xSlots, const Buffer& ids,
                              int64_t k, int64_t n, Buffer& y, Buffer* scratch) {
    if (n <= 0) return Status::ok();
    const ops::DeviceMatrix& m = w.matrix;
    if (!m.buffer || w.expertRows < 1 || m.rows % w.expertRows != 0 || k < 1 || k > INT32_MAX ||
        (xSlots != 1 && xSlots != k))
        return invalidArgument("CUDA matMulId: bad expert shape");
    if (!fits({{m.buffer, uint64_t(m.rows) * m.rowBytes}, {&x, f32s(n * xSlots * m.cols)}, {&ids, uint64_t(n * k) * 4},
               {&y, f32s(n * k * w.expertRows)}}))
        return tooSmall("matMulId");
    const int64_t nExp = m.rows / w.expertRows;
    const KernelExperts e{{B(*m.buffer), m.type, m.cols, w.expertRows, m.rowBytes}, nExp,
                          uint64_t(w.expertRows) * m.rowBytes};
    const float* xp = F(x);
    const int32_t* ip = I(ids);
    float* yp = Fw(y);
    const bool shared = xSlots == 1;
    const int kk = int(k);
    const uint64_t need = matMulIdScratchBytes(nExp, k, n);
    if (need > 0 && scratch && fits({{scratch, need}})) {
        void* sp = B(*scratch);
        push("matMulId", [=](StreamHandle s) { return cuda::matMulIdGrouped(e, xp, shared, ip, n, kk, yp, sp, s); }, true);
    } else {
        push("matMulId", [=](StreamHandle s) { return cuda::matMulId(e, xp, shared, ip, n, kk, yp, s); }, true);
    }
    return Status::ok();
}

Status CudaOpDevice::getRows(const ops::DeviceMatrix& w, const Buffer& ids, int64_t n, Buffer& out) {
    if (n <= 0) return Status::ok();
    if (!w.buffer || !fits({{w.buffer, uint64_t(w.rows) * w.rowBytes}, {&ids, uint64_t(n) * 4}, {&out, f32s(n * w.cols)}}))
        return tooSmall("getRows");
    const KernelMatrix m = kernelMatrix(w);
    const int32_t* ip = I(ids);
    float* op = Fw(out);
    push("getRows", [=](StreamHandle s) { return cuda::getRows(m, ip, n, op, s); });
    return Status::ok();
}

// ---- per row and element-wise ----------------------------------------------------------------------

Status CudaOpDevice::rmsNorm(const Buffer& x, const Buffer* weight, int64_t rows, int64_t dim, float eps, Buffer& out) {
    if (rows <= 0 || dim <= 0) return Status::ok();
    if (!fits({{&x, f32s(rows * dim)}, {weight, f32s(dim)}, {&out, f32s(rows * dim)}})) return tooSmall("rmsNorm");
    const float *xp = F(x), *wp = weight ? F(*weight) : nullptr;
    float* op = Fw(out);
    push("rmsNorm", [=](StreamHandle s) { return cuda::rmsNorm(xp, wp, op, rows, dim, eps, s); });
    return Status::ok();
}

Status CudaOpDevice::layerNorm(const Buffer& x, const Buffer* w, const Buffer* b, int64_t rows, int64_t dim, float eps,
                               Buffer& out) {
    if (rows <= 0 || dim <= 0) return Status::ok();
    if (!fits({{&x, f32s(rows * dim)}, {w, f32s(dim)}, {b, f32s(dim)}, {&out, f32s(rows * dim)}}))
        return tooSmall("layerNorm");
    const float *xp = F(x), *wp = w ? F(*w) : nullptr, *bp = b ? F(*b) : nullptr;
    float* op = Fw(out);
    push("layerNorm", [=](StreamHandle s) { return cuda::layerNorm(xp, wp, bp, op, rows, dim, eps, s); });
    return Status::ok();
}

Status CudaOpDevice::rmsNormGated(const Buffer& x, const Buffer& w, const Buffer& z, int64_t rows, int64_t dim,
                                  float eps, Buffer& out) {
    if (rows <= 0 || dim <= 0) return Status::ok();
    if (!fits({{&x, f32s(rows * dim)}, {&w, f32s(dim)}, {&z, f32s(rows * dim)}, {&out, f32s(rows * dim)}}))
        return tooSmall("rmsNormGated");
    const float *xp = F(x), *wp = F(w), *zp = F(z);
    float* op = Fw(out);
    push("rmsNormGated", [=](StreamHandle s) { return cuda::rmsNormGated(xp, wp, zp, op, rows, dim, eps, s); });
    return Status::ok();
}

Status CudaOpDevice::rope(const Buffer& x, const Buffer& pos, const Buffer* freqFactors, const ops::RopeParams& p,
                          Buffer& out) {
    const int64_t count = p.n * p.nHeads * p.headDim;
    if (count <= 0) return Status::ok();
    if (!fits({{&x, f32s(count)}, {&pos, uint64_t(p.n) * 4}, {freqFactors, f32s(p.nFreqFactors)}, {&out, f32s(count)}}))
        return tooSmall("rope");
    if (freqFactors && p.nFreqFactors < p.nRot / 2) return invalidArgument("CUDA rope: fewer frequency factors than pairs");
    RopeParams k;
    k.nHeads = p.nHeads;
    k.headDim = p.headDim;
    k.nRot = p.nRot;
    k.freqBase = p.freqBase;
    k.freqScale = p.freqScale;
    k.neox = p.neox;
    k.freqFactors = freqFactors ? F(*freqFactors) : nullptr;
    k.magnitude = p.attnFactor;
    if (p.extFactor != 0.0f && p.nCtxOrig > 0) { // YaRN, as cpu::ropeAngles
        graph::RopeParams r;
        r.nRot = p.nRot;
        r.freqBase = p.freqBase;
        r.freqScale = p.freqScale;
        r.extFactor = p.extFactor;
        r.attnFactor = p.attnFactor;
        r.betaFast = p.betaFast;
        r.betaSlow = p.betaSlow;
        r.nCtxOrig = p.nCtxOrig;
        double low = 0.0, high = 0.0;
        cpu::ropeYarnRange(r, low, high);
        k.extFactor = p.extFactor;
        k.yarnLow = float(low);
        k.yarnHigh = float(high);
        k.magnitude *= float(1.0 + 0.1 * std::log(1.0 / double(p.freqScale)));
    }
    k.tempScale = p.tempScale;
    k.tempLength = p.tempLength;
    const float* xp = F(x);
    const int32_t* pp = I(pos);
    float* op = Fw(out);
    const int64_t n = p.n;
    // The kernel rotates in place: the output starts as a copy of x.
    if (xp != op) push("rope", [=](StreamHandle s) { return cuda::copyDeviceToDevice(op, xp, size_t(f32s(count)), s); });
    push("rope", [=](StreamHandle s) { return cuda::rope(op, pp, n, k, s); });
    return Status::ok();
}

Status CudaOpDevice::unary(ops::Unary op, const Buffer& x, int64_t count, float param, Buffer& out) {
    if (count <= 0) return Status::ok();
    if (!fits({{&x, f32s(count)}, {&out, f32s(count)}})) return tooSmall("unary");
    const float* xp = F(x);
    float* yp = Fw(out);
    switch (op) {
    case ops::Unary::Scale: push("scale", [=](StreamHandle s) { return cuda::scale(xp, param, yp, count, s); }); break;
    case ops::Unary::Softcap:
        if (!(param > 0.0f)) return invalidArgument("CUDA softcap: the cap must be positive");
        push("softcap", [=](StreamHandle s) { return cuda::softcap(xp, param, yp, count, s); });
        break;
    default: {
        const UnaryOp f = op == ops::Unary::Silu      ? UnaryOp::Silu
                          : op == ops::Unary::Gelu    ? UnaryOp::Gelu
                          : op == ops::Unary::Sigmoid ? UnaryOp::Sigmoid
                                                      : UnaryOp::Softplus;
        push("unary", [=](StreamHandle s) { return cuda::unary(f, xp, yp, count, s); });
    }
    }
    return Status::ok();
}

Status CudaOpDevice::binary(ops::Binary op, const Buffer& a, const Buffer& b, int64_t count, int64_t bLen, Buffer& out) {
    if (count <= 0) return Status::ok();
    if (bLen < 1 || count % bLen != 0) return invalidArgument("CUDA binary: b must repeat a whole number of times");
    if (!fits({{&a, f32s(count)}, {&b, f32s(bLen)}, {&out, f32s(count)}})) return tooSmall("binary");
    const float *ap = F(a), *bp = F(b);
    float* op_ = Fw(out);
    switch (op) {
    case ops::Binary::Add:
        if (bLen == count) {
            push("add", [=](StreamHandle s) { return cuda::add(ap, bp, op_, count, s); });
        } else { // one row of b added to every row of a: out starts as a copy of a
            if (ap != op_) push("add", [=](StreamHandle s) { return cuda::copyDeviceToDevice(op_, ap, size_t(f32s(count)), s); });
            push("add", [=](StreamHandle s) { return cuda::addRows(op_, bp, count / bLen, bLen, s); });
        }
        break;
    case ops::Binary::Mul: push("mul", [=](StreamHandle s) { return cuda::mul(ap, bp, op_, count, bLen, s); }); break;
    case ops::Binary::Swiglu:
    case ops::Binary::Geglu:
        if (bLen != count) return invalidArgument("CUDA gated unit: gate and up differ in size");
        if (op == ops::Binary::Swiglu) push("swiglu", [=](StreamHandle s) { return cuda::swiglu(ap, bp, op_, count, s); });
        else push("geglu", [=](StreamHandle s) { return cuda::geglu(ap, bp, op_, count, s); });
        break;
    }
    return Status::ok();
}

Status CudaOpDevice::swigluOai(const Buffer& gate, const Buffer& up, int64_t count, float alpha, float limit, Buffer& out) {
    if (count <= 0) return Status::ok();
    if (!fits({{&gate, f32s(count)}, {&up, f32s(count)}, {&out, f32s(count)}})) return tooSmall("swigluOai");
    const float *gp = F(gate), *up_ = F(up);
    float* op = Fw(out);
    push("swigluOai", [=](StreamHandle s) { return cuda::swigluOai(gp, up_, op, count, alpha, limit, s); });
    return Status::ok();
}

// ---- routing, mixing and copies ----------------------------------------------------------------------

Status CudaOpDevice::gather(const Buffer& x, const Buffer& ids, int64_t rows, int64_t width, int64_t k, Buffer& out) {
    if (rows <= 0 || k <= 0) return Status::ok();
    if (k > INT32_MAX || !fits({{&x, f32s(rows * width)}, {&ids, uint64_t(rows * k) * 4}, {&out, f32s(rows * k)}}))
        return tooSmall("gather");
    const float* xp = F(x);
    const int32_t* ip = I(ids);
    float* op = Fw(out);
    const int kk = int(k);
    push("gather", [=](StreamHandle s) { return cuda::gather(xp, width, ip, rows, kk, op, s); });
    return Status::ok();
}

Status CudaOpDevice::copyRows(const Buffer& x, uint64_t offset, int64_t rows, int64_t width, int64_t stride,
                              Buffer& out) {
    if (rows <= 0 || width <= 0) return Status::ok();
    if (stride < width || !fits({{&x, (offset + uint64_t(rows - 1) * uint64_t(stride) + uint64_t(width)) * 4},
                                 {&out, f32s(rows * width)}}))
        return tooSmall("copyRows");
    StridedF32 v;
    v.data = F(x) + offset;
    v.ne[0] = width;
    v.ne[1] = rows;
    v.nb[1] = stride * 4;
    v.nb[2] = v.nb[3] = rows * stride * 4;
    float* op = Fw(out);
    push("copyRows", [=](StreamHandle s) { return cuda::copyStrided(v, op, s); });
    return Status::ok();
}

Status CudaOpDevice::concat(const Buffer& a, const Buffer& b, const ops::ConcatShape& sh, Buffer& out) {
    const int64_t count = sh.outer * (sh.aBlock + sh.bBlock);
    if (sh.outer < 0 || sh.aBlock < 0 || sh.bBlock < 0) return invalidArgument("CUDA concat: negative extents");
    if (count == 0) return Status::ok();
    if (!fits({{&a, f32s(sh.outer * sh.aBlock)}, {&b, f32s(sh.outer * sh.bBlock)}, {&out, f32s(count)}}))
        return tooSmall("concat");
    // [outer][block] rows side by side: a concatenation along dim 0 of two 2-D tensors.
    auto rowsOf = [&](const Buffer& buf, int64_t block) {
        StridedF32 v;
        v.data = F(buf);
        v.ne[0] = block;
        v.ne[1] = sh.outer;
        v.nb[1] = block * 4;
        v.nb[2] = v.nb[3] = block * sh.outer * 4;
        return v;
    };
    const StridedF32 av = rowsOf(a, sh.aBlock), bv = rowsOf(b, sh.bBlock);
    float* op = Fw(out);
    push("concat", [=](StreamHandle s) { return cuda::concat(av, bv, 0, op, s); });
    return Status::ok();
}

Status CudaOpDevice::weightedSum(const Buffer& y, const Buffer& w, int64_t n, int64_t k, int64_t width, Buffer& out) {
    if (n <= 0 || width <= 0) return Status::ok();
    if (k < 1 || k > INT32_MAX || !fits({{&y, f32s(n * k * width)}, {&w, f32s(n * k)}, {&out, f32s(n * width)}}))
        return tooSmall("weightedSum");
    const float *yp = F(y), *wp = F(w);
    float* op = Fw(out);
    const int kk = int(k);
    push("weightedSum", [=](StreamHandle s) { return cuda::weightedSum(yp, wp, n, kk, width, op, s); });
    return Status::ok();
}

Status CudaOpDevice::softmax(const Buffer& x, int64_t rows, int64_t width, float scale, Buffer& out) {
    if (rows <= 0 || width <= 0) return Status::ok();
    if (!fits({{&x, f32s(rows * width)}, {&out, f32s(rows * width)}})) return tooSmall("softmax");
    const float* xp = F(x);
    float* op = Fw(out);
    push("softmax", [=](StreamHandle s) { return cuda::softmaxScaled(xp, op, rows, width, scale, s); });
    return Status::ok();
}

Status CudaOpDevice::topK(const Buffer& x, int64_t rows, int64_t width, int64_t k, Buffer& out) {
    if (rows <= 0) return Status::ok();
    if (k < 1 || k > width || width > kMaxSortWidth) return unsupported("CUDA topK: k or the row width out of range");
    if (!fits({{&x, f32s(rows * width)}, {&out, uint64_t(rows * k) * 4}})) return tooSmall("topK");
    const float* xp = F(x);
    auto* op = reinterpret_cast<int32_t*>(B(out));
    const int kk = int(k);
    push("topK", [=](StreamHandle s) { return cuda::topK(xp, rows, width, kk, op, s); });
    return Status::ok();
}

Status CudaOpDevice::copy(const Buffer& src, uint64_t srcOffset, Buffer& dst, uint64_t dstOffset, uint64_t bytes) {
    if (bytes == 0) return Status::ok();
    if (!fits({{&src, srcOffset + bytes}, {&dst, dstOffset + bytes}}) || srcOffset + bytes < bytes ||
        dstOffset + bytes < bytes)
        return tooSmall("copy");
    const uint8_t* sp = B(src) + srcOffset;
    uint8_t* dp = B(dst) + dstOffset;
    push("copy", [=](StreamHandle s) { return cuda::copyDeviceToDevice(dp, sp, size_t(bytes), s); });
    return Status::ok();
}

// ---- the paged K/V cache -------------------------------------------------------------------------

Status CudaOpDevice::kvWrite(const Buffer& src, const Buffer& slots, int64_t n, int64_t rowSize, KvType type,
                             Buffer& cache) {
    if (n <= 0) return Status::ok();
    const KvFormat f = formatOf(type);
    if (rowSize < 1 || (f == KvFormat::Q8_0 && rowSize % 32 != 0)) return unsupported("CUDA kvWrite: row size");
    if (!fits({{&src, f32s(n * rowSize)}, {&slots, uint64_t(n) * 4}, {&cache, 0}})) return tooSmall("kvWrite");
    const int64_t nSlots = int64_t(cache.size() / kvRowBytes(f, rowSize));
    const float* rp = F(src);
    const int32_t* sp = I(slots);
    void* cp = B(cache);
    push("kvWrite", [=](StreamHandle s) { return cuda::kvWrite(cp, f, nSlots, rowSize, rp, sp, n, s); });
    return Status::ok();
}

Status CudaOpDevice::attention(const Buffer& q, const Buffer& kCache, const Buffer& vCache, const Buffer& info,
                               const Buffer& tables, const Buffer* sinks, const ops::AttentionParams& p, Buffer& out) {
    if (p.n <= 0) return Status::ok();
    if (p.nHeadKv < 1 || p.nHead % p.nHeadKv != 0 || p.headDim < 1 || p.blockSize < 1)
        return invalidArgument("CUDA attention: bad head or block shape");
    const KvFormat f = formatOf(p.kvType);
    const int64_t count = p.n * p.nHead * p.headDim;
    if (!fits({{&q, f32s(count)}, {&kCache, 0}, {&vCache, 0}, {&info, uint64_t(p.n) * 8}, {&tables, 0},
               {sinks, f32s(p.nHead)}, {&out, f32s(count)}}))
        return tooSmall("attention");
    PagedKvView view;
    view.k = B(kCache);
    view.v = B(vCache);
    view.type = f;
    view.blockSize = p.blockSize;
    view.nKvHeads = p.nHeadKv;
    view.headDim = p.headDim;
    const uint64_t blockBytes = uint64_t(p.blockSize) * kvRowBytes(f, int64_t(p.nHeadKv) * p.headDim);
    view.numBlocks = int(std::min<uint64_t>(std::min(kCache.size(), vCache.size()) / blockBytes, INT32_MAX));
    AttentionArgs a;
    a.q = F(q);
    a.out = Fw(out);
    a.tables = I(tables);
    a.info = I(info);
    a.nTokens = p.n;
    a.nHeads = p.nHead;
    a.scale = p.scale;
    a.window = p.window;
    a.softcap = p.softcap;
    a.sinks = sinks ? F(*sinks) : nullptr;
    a.causal = p.causal;
    push("attention", [=](StreamHandle s) { return cuda::pagedAttention(view, a, s); });
    return Status::ok();
}

// ---- the hybrid models' recurrences ----------------------------------------------------------------

Status CudaOpDevice::ssmConv(const Buffer& x, const Buffer& w, Buffer& state, const Buffer& info,
                             const ops::ConvShape& sh, Buffer& out) {
    if (sh.n <= 0 || sh.C <= 0) return Status::ok();
    if (sh.K < 2 || sh.K > kMaxConvKernel) return unsupported("CUDA ssmConv: kernel width outside [2, 8]");
    if (!fits({{&x, f32s(sh.n * sh.C)}, {&w, f32s(sh.C * sh.K)}, {&state, f32s(sh.slots * (sh.K - 1) * sh.C)},
               {&info, uint64_t(sh.n) * 12}, {&out, f32s(sh.n * sh.C)}}))
        return tooSmall("ssmConv");
    const float *xp = F(x), *wp = F(w);
    float *stp = Fw(state), *op = Fw(out);
    const int32_t* ip = I(info);
    const int64_t n = sh.n, C = sh.C;
    const int K = int(sh.K);
    push("ssmConv", [=](StreamHandle s) { return cuda::ssmConv(xp, wp, stp, ip, op, n, C, K, s); });
    return Status::ok();
}

Status CudaOpDevice::deltaNet(const Buffer& qkv, const Buffer& g, const Buffer& beta, Buffer& state, const Buffer& info,
                              const ops::DeltaShape& sh, Buffer& out) {
    if (sh.n <= 0 || sh.Hv <= 0) return Status::ok();
    if (sh.S < 32 || sh.S > kMaxDeltaHead || sh.S % 32 != 0) return unsupported("CUDA deltaNet: head size");
    if (sh.Hk < 1 || sh.Hv % sh.Hk != 0) return invalidArgument("CUDA deltaNet: v heads must be a multiple of the k heads");
    if (!fits({{&qkv, f32s(sh.n * (2 * sh.Hk + sh.Hv) * sh.S)}, {&g, f32s(sh.n * sh.Hv)}, {&beta, f32s(sh.n * sh.Hv)},
               {&state, f32s(sh.slots * sh.Hv * sh.S * sh.S)}, {&info, uint64_t(sh.n) * 12},
               {&out, f32s(sh.n * sh.Hv * sh.S)}}))
        return tooSmall("deltaNet");
    const float *qp = F(qkv), *gp = F(g), *bp = F(beta);
    float *stp = Fw(state), *op = Fw(out);
    const int32_t* ip = I(info);
    const int64_t n = sh.n;
    const int Hk = int(sh.Hk), Hv = int(sh.Hv), S = int(sh.S);
    const float eps = sh.eps;
    push("deltaNet", [=](StreamHandle s) { return cuda::deltaNet(qp, gp, bp, stp, ip, op, n, Hk, Hv, S, eps, s); });
    return Status::ok();
}

} // namespace

Result<std::unique_ptr<backend::OpDevice>> createCudaOpDevice(int index) {
    HEARTH_ASSIGN_OR_RETURN(const std::vector<DeviceInfo> devices, listDevices());
    if (index < 0 || size_t(index) >= devices.size())
        return notFound("CUDA device " + std::to_string(index) + " does not exist (" + std::to_string(devices.size()) +
                        " found)");
    const DeviceInfo& d = devices[size_t(index)];
    if (d.ccMajor < 7)
        return unsupported("CUDA device " + std::to_string(index) + " (" + d.name + ") has compute capability " +
                           std::to_string(d.ccMajor) + "." + std::to_string(d.ccMinor) +
                           "; the CUDA kernels need 7.0 or newer");
    HEARTH_RETURN_IF_ERROR(setDevice(index));
    auto ctx = std::make_shared<CudaContext>();
    ctx->device = index;
    HEARTH_ASSIGN_OR_RETURN(ctx->stream, Stream::create());
    ctx->useGraphs = envSwitchOn("HEARTH_CUDA_GRAPHS");
    ctx->useInt8 = envSwitchOn("HEARTH_CUDA_INT8");
    backend::DeviceInfo info;
    info.id = "cuda:" + std::to_string(index);
    info.api = "cuda";
    info.name = d.name;
    info.type = d.integrated ? "integrated" : "discrete";
    info.deviceMemory = d.totalBytes;
    info.freeMemory = d.freeBytes;
    info.sharesHostMemory = d.integrated;
    info.subgroupSize = 32;
    info.fp16 = true;
    info.int8 = true;
    info.host = false;
    return std::unique_ptr<backend::OpDevice>(new CudaOpDevice(std::move(ctx), std::move(info)));
}

Result<std::unique_ptr<backend::Device>> openCudaDevice(int index) {
    HEARTH_ASSIGN_OR_RETURN(auto ops, createCudaOpDevice(index));
    return backend::makeOpGraphDevice(std::move(ops), "cuda:" + std::to_string(index));
}

} // namespace hearth::cuda
