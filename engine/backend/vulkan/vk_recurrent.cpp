// Recording of the hybrid models' ops on Vulkan (vk_recurrent.h): push constants and grids of the
// gated RMSNorm (one workgroup per row), the convolution (64 channels per workgroup, one
// workgroup row per token, of which those starting a run work) and the delta rule (one workgroup
// of S invocations per v head and token, likewise).
#include "backend/vulkan/vk_recurrent.h"

#include <algorithm>
#include <string>

namespace hearth::vk {

using backend::Buffer;

namespace {

using graph::Node;
using graph::Op;
using graph::Tensor;

// A State pool bound whole: the root F32 pool itself (no view), within one binding.
bool statePool(const graph::Graph& g, graph::TensorId id, int64_t row, uint64_t maxBindRange) {
    if (id == graph::kNone) return false;
    const Tensor& s = g.tensor(id);
    return s.kind == graph::TensorKind::State && s.viewOf == graph::kNone && s.type == quant::Type::F32 &&
           s.contiguous() && s.ne[0] == row && s.bytes() <= maxBindRange && uint64_t(s.elements()) < (1ull << 32);
}

} // namespace

bool deltaNetHeadSize(int64_t S) { return S == 16 || S == 32 || S == 64 || S == 128 || S == 256; }

bool recurrentNodeFits(const graph::Graph& g, const Node& n, uint64_t maxBindRange) {
    switch (n.op) {
    case Op::RmsNormGated: {
        const Tensor& X = g.tensor(n.src[0]);
        return g.tensor(n.src[1]).elements() == X.ne[0] && g.tensor(n.src[2]).ne == X.ne &&
               uint64_t(X.elements()) < (1ull << 32);
    }
    case Op::SsmConv: {
        const Tensor &X = g.tensor(n.src[0]), &W = g.tensor(n.src[1]);
        const int64_t C = X.ne[0], K = W.ne[0], tokens = X.ne[1];
        return K >= 2 && K <= kMaxConvKernel && W.ne[1] == C && tokens <= kMaxWorkGroups && (C + 63) / 64 <= kMaxWorkGroups &&
               g.tensor(n.src[3]).ne[1] == tokens && statePool(g, n.src[2], (K - 1) * C, maxBindRange);
    }
    case Op::DeltaNet: {
        const Tensor& out = g.tensor(n.out); // [n][Hv][S]
        const int64_t S = out.ne[0], Hv = out.ne[1], tokens = out.ne[2];
        return deltaNetHeadSize(S) && n.k > 0 && Hv % n.k == 0 && Hv <= kMaxWorkGroups && tokens <= kMaxWorkGroups &&
               g.tensor(n.src[4]).ne[1] == tokens && statePool(g, n.src[3], Hv * S * S, maxBindRange);
    }
    default: return false;
    }
}

Status VulkanOpDevice::rmsNormGated(const Buffer& x, const Buffer& w, const Buffer& z, int64_t rows, int64_t dim,
                                    float eps, Buffer& out) {
    if (rows <= 0 || dim <= 0) return Status::ok();
    if (!(eps > 0.0f)) return invalidArgument("rms_norm_gated: eps must be positive");
    struct { uint32_t dim, rows; float eps; uint32_t hasWeight; } p{uint32_t(dim), uint32_t(rows), eps, 1u};
    const int64_t gx = std::min<int64_t>(rows, kMaxWorkGroups), gy = (rows + gx - 1) / gx;
    return dispatchShader("rms_norm_gated", {&x, &w, &out, &z}, &p, sizeof p, uint32_t(gx), uint32_t(gy));
}

Status VulkanOpDevice::ssmConv(const Buffer& x, const Buffer& w, Buffer& state, const Buffer& info,
                               const backend::ops::ConvShape& s, Buffer& out) {
    if (s.n <= 0 || s.C <= 0) return Status::ok();
    if (s.K < 2 || s.K > kMaxConvKernel) return unsupported("Vulkan ssm_conv: kernel width outside [2, 8]");
    if (s.n > kMaxWorkGroups || (s.C + 63) / 64 > kMaxWorkGroups)
        return unsupported("Vulkan ssm_conv: too many tokens or channels");
    struct { uint32_t C, K, n, nSlots; } p{uint32_t(s.C), uint32_t(s.K), uint32_t(s.n), uint32_t(s.slots)};
    return dispatchShader("ssm_conv", {&x, &w, &state, &info, &out}, &p, sizeof p, uint32_t((s.C + 63) / 64),
                            uint32_t(s.n));
}

Status VulkanOpDevice::deltaNet(const Buffer& qkv, const Buffer& g, const Buffer& beta, Buffer& state,
                                const Buffer& info, const backend::ops::DeltaShape& s, Buffer& out) {
    if (s.n <= 0 || s.Hv <= 0) return Status::ok();
    if (!deltaNetHeadSize(s.S)) return unsupported("Vulkan delta_net: head size " + std::to_string(s.S));
    if (s.Hk <= 0 || s.Hv % s.Hk) return invalidArgument("delta_net: v heads must be a multiple of the k heads");
    if (s.n > kMaxWorkGroups || s.Hv > kMaxWorkGroups) return unsupported("Vulkan delta_net: too many tokens or heads");
    struct { uint32_t Hk, Hv, n, nSlots; float eps; } p{uint32_t(s.Hk), uint32_t(s.Hv), uint32_t(s.n),
                                                        uint32_t(s.slots), s.eps};
    return dispatchShader("delta_net_" + std::to_string(s.S), {&qkv, &g, &beta, &state, &info, &out}, &p, sizeof p,
                            uint32_t(s.Hv), uint32_t(s.n));
}

} // namespace hearth::vk
