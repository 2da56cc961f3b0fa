// What the CUDA kernels take beyond the operand checks every op device shares
// (backend/op_graph_device.h): weight types, sort widths, head sizes, kernel widths, Q8_0 blocks.
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_op_device.h"

namespace hearth::cuda {

using graph::Node;
using graph::Op;
using graph::Tensor;

namespace {

constexpr int64_t kMaxHeadDim = 256;  // attention.cu
constexpr int64_t kMaxTokens = 65535; // attention's grid.y

} // namespace

bool CudaCapabilities::supportsOp(backend::ops::Op op, quant::Type type) const {
    switch (op) {
    case backend::ops::Op::MatMul:
    case backend::ops::Op::MatMulId:
    case backend::ops::Op::GetRows: return weightTypeSupported(type);
    default: return type == quant::Type::F32;
    }
}

bool CudaCapabilities::nodeFits(const graph::Graph& g, const Node& n) const {
    switch (n.op) {
    case Op::TopK:
    case Op::ArgSort: return g.tensor(n.src[0]).ne[0] <= kMaxSortWidth;
    case Op::Rope: // the kernel reads nRot / 2 frequency factors
        return n.src[2] == graph::kNone || g.tensor(n.src[2]).elements() >= n.rope.nRot / 2;
    case Op::KvWrite: {
        const Tensor& C = g.tensor(n.src[0]);
        return C.type != quant::Type::Q8_0 || C.ne[0] % 32 == 0;
    }
    case Op::Attention: {
        const Tensor &Q = g.tensor(n.src[0]), &K = g.tensor(n.src[1]);
        const int64_t D = Q.ne[0];
        return D <= kMaxHeadDim && Q.ne[2] <= kMaxTokens && (K.type != quant::Type::Q8_0 || D % 32 == 0);
    }
    case Op::SsmConv: return g.tensor(n.src[1]).ne[0] <= kMaxConvKernel;
    case Op::DeltaNet: {
        const int64_t S = g.tensor(n.out).ne[0];
        return S >= 32 && S <= kMaxDeltaHead && S % 32 == 0;
    }
    default: return true;
    }
}

bool CudaCapabilities::kvShapeFits(const backend::KvLayerShape& shape, KvType type) const {
    if (type != KvType::Q8_0) return true;
    return shape.kRow % 32 == 0 && shape.vRow % 32 == 0 && shape.headDim % 32 == 0; // whole blocks per head
}

backend::ops::OpLimits CudaCapabilities::limits() const {
    return backend::ops::OpLimits{}; // pointers: no binding limit, any 4-byte aligned offset
}

} // namespace hearth::cuda
