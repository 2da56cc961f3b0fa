// The CUDA device of the backend interface: which nodes its kernels run, its buffers, K/V pools and weights.
#include "backend/cuda/cuda_graph_device.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hearth::cuda {

using graph::Node;
using graph::Op;
using graph::Tensor;
using graph::TensorId;
using graph::TensorKind;

// ---- buffers -----------------------------------------------------------------------------------

Status CudaBuffer::write(uint64_t offset, const void* src, uint64_t bytes) {
    if (offset > size() || bytes > size() - offset) return outOfRange("CUDA buffer write past its end");
    if (bytes == 0) return Status::ok();
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    // Ordered on the device's stream before the next program; no wait here: the engine's sources
    // are pageable host memory, which the driver stages before this call returns, so the caller
    // may reuse them at once (a step's six input writes each waited for the stream before).
    return copyToDevice(data() + offset, src, size_t(bytes), m_ctx->stream.handle());
}

Status CudaBuffer::read(uint64_t offset, void* dst, uint64_t bytes) const {
    if (offset > size() || bytes > size() - offset) return outOfRange("CUDA buffer read past its end");
    if (bytes == 0) return Status::ok();
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    return copyToHost(dst, data() + offset, size_t(bytes), m_ctx->stream.handle()); // waits for the stream
}

// ---- K/V pools ---------------------------------------------------------------------------------

namespace {

Result<KvFormat> kvFormatOf(KvType type) {
    switch (type) {
    case KvType::F32: return KvFormat::F32;
    case KvType::F16: return KvFormat::F16;
    case KvType::Q8_0: return KvFormat::Q8_0;
    }
    return invalidArgument("CUDA: unknown K/V cache type");
}

} // namespace

Result<std::unique_ptr<CudaKvPool>> CudaKvPool::create(std::shared_ptr<CudaContext> ctx, const backend::KvPoolSpec& spec) {
    HEARTH_ASSIGN_OR_RETURN(const KvFormat format, kvFormatOf(spec.type));
    if (spec.numBlocks < 1 || spec.blockSize < 1 || spec.kRow < 1 || spec.vRow < 1 || spec.layers.empty())
        return invalidArgument("CUDA K/V pool: no layers, blocks or rows");
    if (int64_t(spec.numBlocks) * spec.blockSize > INT32_MAX)
        return invalidArgument("CUDA K/V pool: more slots than int32 slot ids address");
    auto pool = std::unique_ptr<CudaKvPool>(new CudaKvPool());
    pool->m_ctx = std::move(ctx);
    pool->m_spec = spec;
    pool->m_format = format;
    HEARTH_RETURN_IF_ERROR(setDevice(pool->m_ctx->device));
    const StreamHandle stream = pool->m_ctx->stream.handle();
    for (size_t l = 0; l < spec.layers.size(); ++l) {
        // Each layer its own K and V buffers of its own row sizes (gemma4's sliding and full layers differ).
        const backend::KvLayerShape shape = spec.shapeAt(l);
        if (shape.kRow < 1 || shape.vRow < 1) return invalidArgument("CUDA K/V pool: a layer without K/V rows");
        if (format == KvFormat::Q8_0 && (shape.kRow % 32 != 0 || shape.vRow % 32 != 0 || shape.headDim % 32 != 0))
            return unsupported("a Q8_0 K/V cache needs K/V heads of a multiple of 32 values (this model's are " +
                               std::to_string(shape.headDim) + ")");
        pool->m_kBlockBytes.push_back(uint64_t(spec.blockSize) * kvRowBytes(format, shape.kRow));
        pool->m_vBlockBytes.push_back(uint64_t(spec.blockSize) * kvRowBytes(format, shape.vRow));
        for (bool value : {false, true}) {
            const uint64_t bytes = (value ? pool->m_vBlockBytes : pool->m_kBlockBytes)[l] * uint64_t(spec.numBlocks);
            HEARTH_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(size_t(bytes)));
            HEARTH_RETURN_IF_ERROR(fillZero(buffer.data(), size_t(bytes), stream));
            (value ? pool->m_v : pool->m_k).push_back(std::move(buffer));
            pool->m_bytes += bytes;
        }
    }
    HEARTH_RETURN_IF_ERROR(pool->m_ctx->stream.synchronize());
    return pool;
}

uint8_t* CudaKvPool::cache(int index, bool value) const {
    if (index < 0 || size_t(index) >= m_k.size()) return nullptr;
    return (value ? m_v : m_k)[size_t(index)].as<uint8_t>();
}

Status CudaKvPool::copyBlock(int32_t src, int32_t dst) {
    if (src < 0 || dst < 0 || src >= m_spec.numBlocks || dst >= m_spec.numBlocks)
        return outOfRange("block id outside the CUDA K/V pool");
    if (src == dst) return Status::ok();
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    const StreamHandle stream = m_ctx->stream.handle();
    for (size_t l = 0; l < m_k.size(); ++l)
        for (bool value : {false, true}) {
            const uint64_t blockBytes = (value ? m_vBlockBytes : m_kBlockBytes)[l];
            uint8_t* base = cache(int(l), value);
            HEARTH_RETURN_IF_ERROR(copyDeviceToDevice(base + uint64_t(dst) * blockBytes, base + uint64_t(src) * blockBytes,
                                                      size_t(blockBytes), stream));
        }
    return m_ctx->stream.synchronize();
}

// ---- what the kernels run ----------------------------------------------------------------------

namespace {

constexpr int kMaxHeadDim = 256;   // attention.cu
constexpr int64_t kMaxTokens = 65535; // attention's grid.y

// Bytes from the start of the tensor's root, summed over its views.
uint64_t viewOffset(const graph::Graph& g, TensorId id) {
    uint64_t offset = 0;
    while (g.tensor(id).viewOf != graph::kNone) {
        offset += g.tensor(id).offset;
        id = g.tensor(id).viewOf;
    }
    return offset;
}

bool valid(const graph::Graph& g, TensorId id) { return id >= 0 && size_t(id) < g.tensors().size(); }

// A contiguous operand at its root's start.
bool plain(const graph::Graph& g, TensorId id) {
    return valid(g, id) && g.tensor(id).contiguous() && viewOffset(g, id) == 0;
}
bool f32(const graph::Graph& g, TensorId id) { return plain(g, id) && g.tensor(id).type == quant::Type::F32; }
bool i32(const graph::Graph& g, TensorId id) { return plain(g, id) && g.tensor(id).type == quant::Type::I32; }
// An F32 activation (the graph's activations and op outputs are never weights).
bool f32Act(const graph::Graph& g, TensorId id) {
    return f32(g, id) && g.tensor(g.root(id)).kind != TensorKind::Weight && g.tensor(g.root(id)).kind != TensorKind::KvCache;
}
// A 2-D weight whose type the matVec / matMul / getRows kernels read.
bool weightMatrix(const graph::Graph& g, TensorId id) {
    if (!plain(g, id) || g.tensor(g.root(id)).kind != TensorKind::Weight) return false;
    const Tensor& t = g.tensor(id);
    return weightTypeSupported(t.type) && t.ne[2] == 1 && t.ne[3] == 1 && t.ne[0] >= 1 && t.ne[1] >= 1;
}
// A 3-D expert weight [nExperts][rows][cols] of a type the matMulId kernel reads.
bool expertWeights(const graph::Graph& g, TensorId id) {
    if (!plain(g, id) || g.tensor(g.root(id)).kind != TensorKind::Weight) return false;
    const Tensor& t = g.tensor(id);
    return weightTypeSupported(t.type) && t.ne[3] == 1 && t.ne[0] >= 1 && t.ne[1] >= 1 && t.ne[2] >= 1;
}
// An I32 activation (router choices).
bool i32Act(const graph::Graph& g, TensorId id) {
    return i32(g, id) && g.tensor(g.root(id)).kind != TensorKind::Weight && g.tensor(g.root(id)).kind != TensorKind::KvCache;
}
// An F32 view of an activation or input, of any strides inside its root (Copy / Concat sources).
bool f32View(const graph::Graph& g, TensorId id) {
    if (!valid(g, id)) return false;
    const Tensor& t = g.tensor(id);
    const Tensor& root = g.tensor(g.root(id));
    if (t.type != quant::Type::F32 || root.type != quant::Type::F32) return false;
    if (root.kind != TensorKind::Activation && root.kind != TensorKind::Input) return false;
    uint64_t reach = 4;
    for (size_t d = 0; d < graph::kMaxDims; ++d) {
        if (t.ne[d] < 1 || t.nb[d] % 4 != 0) return false;
        reach += uint64_t(t.ne[d] - 1) * t.nb[d];
    }
    return viewOffset(g, id) % 4 == 0 && viewOffset(g, id) + reach <= root.bytes();
}
// An optional F32 row of n values (norm weights and biases).
bool optionalRow(const graph::Graph& g, TensorId id, int64_t n) {
    return id == graph::kNone || (f32(g, id) && g.tensor(id).elements() == n);
}
bool kvCache(const graph::Graph& g, TensorId id) {
    const quant::Type t = valid(g, id) ? g.tensor(id).type : quant::Type::F32;
    return valid(g, id) && g.tensor(id).kind == TensorKind::KvCache && g.tensor(id).viewOf == graph::kNone &&
           (t == quant::Type::F16 || t == quant::Type::F32 || (t == quant::Type::Q8_0 && g.tensor(id).ne[0] % 32 == 0));
}

bool sameShape(const Tensor& a, const Tensor& b) { return a.ne == b.ne; }

} // namespace

bool cudaSupportsNode(const graph::Graph& g, const Node& n) {
    auto src = [&](int i) { return n.src[size_t(i)]; };
    auto t = [&](int i) -> const Tensor& { return g.tensor(src(i)); };
    const bool sorts = n.op == Op::TopK || n.op == Op::ArgSort;
    const bool outOk = n.op == Op::KvWrite || (sorts ? i32Act(g, n.out) : f32Act(g, n.out));
    if (!outOk) return false;
    const Tensor* out = valid(g, n.out) ? &g.tensor(n.out) : nullptr;
    switch (n.op) {
    case Op::GetRows:
        if (!i32(g, src(1)) || out->ne[0] != t(0).ne[0] || out->rows() != t(1).elements()) return false;
        if (t(1).elements() < 1 || t(1).elements() > INT32_MAX) return false;
        if (weightMatrix(g, src(0))) return true;
        return f32Act(g, src(0)); // a gather of activation rows
    case Op::MatMul:
        return weightMatrix(g, src(0)) && f32Act(g, src(1)) && t(1).ne[0] == t(0).ne[0] && out->ne[0] == t(0).ne[1] &&
               out->rows() == t(1).rows();
    case Op::MatMulId: {
        if (!expertWeights(g, src(0)) || !f32Act(g, src(1)) || !i32Act(g, src(2))) return false;
        const Tensor &W = t(0), &X = t(1), &I = t(2);
        const int64_t k = I.ne[0], tokens = I.ne[1];
        return I.ne[2] == 1 && I.ne[3] == 1 && k >= 1 && k <= INT32_MAX && tokens >= 1 && X.ne[0] == W.ne[0] &&
               (X.ne[1] == 1 || X.ne[1] == k) && X.ne[2] == tokens && X.ne[3] == 1 && out->ne[0] == W.ne[1] &&
               out->ne[1] == k && out->ne[2] == tokens && out->ne[3] == 1;
    }
    case Op::RmsNorm:
        return f32Act(g, src(0)) && optionalRow(g, src(1), t(0).ne[0]) && sameShape(*out, t(0)) &&
               t(0).rows() <= INT32_MAX;
    case Op::RmsNormGated:
        return f32Act(g, src(0)) && f32(g, src(1)) && t(1).elements() == t(0).ne[0] && f32Act(g, src(2)) &&
               sameShape(t(2), t(0)) && sameShape(*out, t(0)) && t(0).rows() <= INT32_MAX;
    case Op::LayerNorm:
        return f32Act(g, src(0)) && optionalRow(g, src(1), t(0).ne[0]) && optionalRow(g, src(2), t(0).ne[0]) &&
               sameShape(*out, t(0)) && t(0).rows() <= INT32_MAX;
    case Op::Softmax: return f32Act(g, src(0)) && sameShape(*out, t(0)) && t(0).rows() <= INT32_MAX;
    case Op::TopK:
    case Op::ArgSort: {
        const int64_t width = t(0).ne[0], k = n.op == Op::TopK ? n.k : width;
        return f32Act(g, src(0)) && width >= 1 && width <= kMaxSortWidth && k >= 1 && k <= width &&
               out->ne[0] == k && out->rows() == t(0).rows() && t(0).rows() <= INT32_MAX;
    }
    case Op::Gather:
        return f32Act(g, src(0)) && i32Act(g, src(1)) && t(1).rows() == t(0).rows() && t(1).ne[0] <= INT32_MAX &&
               out->ne[0] == t(1).ne[0] && out->rows() == t(1).rows();
    case Op::WeightedSum: {
        const Tensor &Y = t(0), &Wt = t(1);
        return f32Act(g, src(0)) && f32(g, src(1)) && Y.ne[3] == 1 && Wt.ne[0] == Y.ne[1] && Wt.rows() == Y.ne[2] &&
               Y.ne[1] <= INT32_MAX && out->ne[0] == Y.ne[0] && out->rows() == Y.ne[2];
    }
    case Op::Rope: {
        const graph::RopeParams& p = n.rope;
        const bool factors = src(2) == graph::kNone || (f32(g, src(2)) && t(2).elements() >= p.nRot / 2);
        return factors && f32Act(g, src(0)) && i32(g, src(1)) && t(0).ne[3] == 1 &&
               t(1).elements() == t(0).ne[2] && p.nRot >= 2 && p.nRot % 2 == 0 && p.nRot <= t(0).ne[0] &&
               sameShape(*out, t(0)) && t(0).ne[1] <= INT32_MAX && t(0).ne[0] <= INT32_MAX;
    }
    case Op::KvWrite:
        return kvCache(g, src(0)) && n.out == src(0) && f32Act(g, src(1)) && i32(g, src(2)) &&
               t(1).elements() == t(0).ne[0] * t(2).elements() && t(2).elements() >= 1;
    case Op::Attention: {
        const graph::AttentionParams& p = n.attn;
        if (!f32Act(g, src(0)) || !kvCache(g, src(1)) || !kvCache(g, src(2)) || !i32(g, src(3)) || !i32(g, src(4)))
            return false;
        const Tensor &q = t(0), &k = t(1), &v = t(2);
        const int64_t D = q.ne[0], nHead = q.ne[1], tokens = q.ne[2];
        const bool sinks = src(5) == graph::kNone || (f32(g, src(5)) && t(5).elements() == nHead);
        const bool blocks = k.type != quant::Type::Q8_0 || D % 32 == 0; // Q8_0: whole blocks per head
        return sinks && blocks && k.type == v.type && p.nHeadKv > 0 && nHead % p.nHeadKv == 0 &&
               D <= kMaxHeadDim && out->ne[0] == D && out->ne[1] == nHead && out->ne[2] == tokens && q.ne[3] == 1 &&
               k.ne[0] == p.nHeadKv * D && v.ne[0] == k.ne[0] && tokens >= 1 && tokens <= kMaxTokens &&
               t(3).ne[0] == 2 && t(3).ne[1] == tokens && p.window >= 0 && p.softcap >= 0.0f && p.blockSize >= 1;
    }
    case Op::Add:
        return f32Act(g, src(0)) && f32(g, src(1)) && sameShape(*out, t(0)) &&
               (t(1).elements() == t(0).elements() || t(1).elements() == t(0).ne[0]);
    case Op::SsmConv: {
        const Tensor &X = t(0), &W = t(1), &S = t(2), &I = t(3);
        return f32Act(g, src(0)) && f32(g, src(1)) && valid(g, src(2)) && S.kind == TensorKind::State &&
               S.type == quant::Type::F32 && i32(g, src(3)) && W.ne[0] >= 2 && W.ne[0] <= kMaxConvKernel &&
               W.ne[1] == X.ne[0] && S.ne[0] == (W.ne[0] - 1) * X.ne[0] && I.ne[0] == 3 && I.ne[1] == X.ne[1] &&
               sameShape(*out, X);
    }
    case Op::DeltaNet: {
        const Tensor &S = t(3), &I = t(4);
        const int64_t headSize = out->ne[0], Hv = out->ne[1], tokens = out->ne[2], Hk = n.k;
        return f32Act(g, src(0)) && f32Act(g, src(1)) && f32Act(g, src(2)) && valid(g, src(3)) &&
               S.kind == TensorKind::State && S.type == quant::Type::F32 && i32(g, src(4)) && headSize >= 32 &&
               headSize <= kMaxDeltaHead && headSize % 32 == 0 && Hk >= 1 && Hv % Hk == 0 &&
               t(0).ne[0] == (2 * Hk + Hv) * headSize && t(0).rows() == tokens && S.ne[0] == Hv * headSize * headSize &&
               I.ne[0] == 3 && I.ne[1] == tokens && Hv <= INT32_MAX / headSize;
    }
    case Op::Copy: return f32View(g, src(0)) && out->elements() == t(0).elements();
    case Op::Concat: {
        if (!f32View(g, src(0)) || !f32View(g, src(1)) || n.dim < 0 || n.dim > 3) return false;
        for (size_t d = 0; d < graph::kMaxDims; ++d)
            if (out->ne[d] != (int(d) == n.dim ? t(0).ne[d] + t(1).ne[d] : t(0).ne[d]) ||
                (int(d) != n.dim && t(1).ne[d] != t(0).ne[d]))
                return false;
        return true;
    }
    case Op::Mul:
        return f32Act(g, src(0)) && f32(g, src(1)) && sameShape(*out, t(0)) && t(1).elements() >= 1 &&
               t(0).elements() % t(1).elements() == 0;
    case Op::Silu:
    case Op::Gelu:
    case Op::Sigmoid:
    case Op::Softplus: return f32Act(g, src(0)) && sameShape(*out, t(0));
    case Op::Scale:
    case Op::Softcap: return f32Act(g, src(0)) && sameShape(*out, t(0)) && (n.op != Op::Softcap || n.cap > 0.0f);
    case Op::SwiGlu:
    case Op::GeGlu:
    case Op::SwiGluOai:
        return f32Act(g, src(0)) && f32Act(g, src(1)) && sameShape(t(0), t(1)) && sameShape(*out, t(0));
    default: return false;
    }
}

// ---- the device --------------------------------------------------------------------------------

namespace {

bool envSwitchOn(const char* name) {
    const char* v = std::getenv(name);
    return !(v && std::strcmp(v, "0") == 0);
}

} // namespace

Result<std::unique_ptr<CudaGraphDevice>> CudaGraphDevice::open(int index) {
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
    auto dev = std::unique_ptr<CudaGraphDevice>(new CudaGraphDevice());
    dev->m_ctx = std::make_shared<CudaContext>();
    dev->m_ctx->device = index;
    HEARTH_ASSIGN_OR_RETURN(dev->m_ctx->stream, Stream::create());
    dev->m_ctx->useGraphs = envSwitchOn("HEARTH_CUDA_GRAPHS");
    dev->m_ctx->useInt8 = envSwitchOn("HEARTH_CUDA_INT8");
    dev->m_weights = std::make_shared<CudaWeights>();
    backend::DeviceInfo& info = dev->m_info;
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
    return dev;
}

bool CudaGraphDevice::supportsOp(const graph::Graph& g, const Node& node) const { return cudaSupportsNode(g, node); }

Result<std::unique_ptr<backend::Buffer>> CudaGraphDevice::allocate(uint64_t bytes) {
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    HEARTH_ASSIGN_OR_RETURN(DeviceBuffer memory, DeviceBuffer::allocate(size_t(std::max<uint64_t>(bytes, 1))));
    return std::unique_ptr<backend::Buffer>(new CudaBuffer(m_ctx, std::move(memory)));
}

Result<uint64_t> CudaGraphDevice::loadWeights(const std::vector<graph::Weight>& all,
                                              std::span<const backend::WeightUse> used) {
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    CudaWeights& W = *m_weights;
    if (W.buffers.size() < all.size()) W.buffers.resize(all.size());
    const StreamHandle stream = m_ctx->stream.handle();
    for (const backend::WeightUse& u : used) {
        if (u.index < 0 || size_t(u.index) >= all.size()) return invalidArgument("CUDA: weight index out of range");
        if (W.buffers[size_t(u.index)].data()) continue; // each weight once, however many nodes read it
        const graph::Weight& w = all[size_t(u.index)];
        if ((u.matMul || u.rows) && !weightTypeSupported(w.type))
            return unsupported("CUDA: weight " + w.name + " has type " + std::string(quant::typeName(w.type)) +
                               ", which has no CUDA kernel");
        if (!w.data || w.bytes() == 0) return invalidArgument("CUDA: weight " + w.name + " has no data");
        HEARTH_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(size_t(w.bytes())));
        HEARTH_RETURN_IF_ERROR(copyToDevice(buffer.data(), w.data, size_t(w.bytes()), stream));
        // Pageable copies return once staged; wait so that the file's pages may be released.
        HEARTH_RETURN_IF_ERROR(m_ctx->stream.synchronize());
        W.bytes += w.bytes();
        W.buffers[size_t(u.index)] = std::move(buffer);
    }
    return W.bytes;
}

Result<std::unique_ptr<backend::KvPool>> CudaGraphDevice::createKvPool(const backend::KvPoolSpec& spec) {
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<CudaKvPool> pool, CudaKvPool::create(m_ctx, spec));
    return std::unique_ptr<backend::KvPool>(std::move(pool));
}

int CudaGraphDevice::maxKvBlocks(const backend::KvPoolSpec& spec) const {
    const Result<KvFormat> format = kvFormatOf(spec.type);
    if (!format.isOk() || spec.blockSize < 1) return 0;
    uint64_t rowBytes = 0; // per slot, every layer's K and V rows
    for (size_t l = 0; l < spec.layers.size(); ++l)
        rowBytes += kvRowBytes(*format, spec.shapeAt(l).kRow) + kvRowBytes(*format, spec.shapeAt(l).vRow);
    const uint64_t perBlock = uint64_t(spec.blockSize) * rowBytes;
    // Slots are int32 (block * blockSize + offset).
    const uint64_t bySlots = uint64_t(INT32_MAX) / uint64_t(spec.blockSize);
    uint64_t freeBytes = 0, totalBytes = 0;
    if (!setDevice(m_ctx->device).isOk() || !memoryInfo(freeBytes, totalBytes).isOk()) return 0;
    // Leave a tenth of the device for the weights, step buffers and the runtime.
    const uint64_t usable = freeBytes > totalBytes / 10 ? freeBytes - totalBytes / 10 : 0;
    const uint64_t byMemory = perBlock ? usable / perBlock : bySlots;
    return int(std::min<uint64_t>({byMemory, bySlots, uint64_t(INT_MAX)}));
}

Result<std::unique_ptr<backend::Program>> CudaGraphDevice::compile(const backend::ProgramSpec& spec) {
    HEARTH_RETURN_IF_ERROR(setDevice(m_ctx->device));
    return compileCudaProgram(spec, m_ctx, m_weights);
}

Result<std::unique_ptr<backend::Device>> openCudaDevice(int index) {
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<CudaGraphDevice> dev, CudaGraphDevice::open(index));
    return std::unique_ptr<backend::Device>(std::move(dev));
}

} // namespace hearth::cuda
