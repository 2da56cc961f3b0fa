// CUDA as a backend::OpDevice: device buffers and views, each op enqueued as one or two of the
// kernels of cuda_kernels.h on the device's one stream, and lists recorded once that replay from a
// captured CUDA graph when they are run again and again (decode steps). The one graph device over
// op devices (backend/op_graph_device.h) makes it the "cuda:N" of the registry.
//
// What it runs (CudaCapabilities): GetRows, MatMul and MatMulId of every weight type the kernels
// read (cuda::weightTypeSupported), RmsNorm, LayerNorm and the gated RmsNorm, RoPE (linear
// scaling, YaRN, frequency factors, the attention temperature), KvWrite and Attention on F32, F16
// and Q8_0 caches (causal or not, window, soft-capping and sinks; heads up to 256 values, Q8_0
// heads a multiple of 32), the element-wise ops, Softmax, TopK/ArgSort of rows up to 4096 wide,
// Gather, WeightedSum, Copy, Concat, and the recurrent SsmConv (kernels up to 8) and DeltaNet
// (heads of 32..256, a multiple of 32).
#pragma once

#include "backend/cuda/cuda_device.h"
#include "backend/op_device.h"

#include <memory>

namespace hearth::cuda {

// What the CUDA kernels take, known without a GPU (the placement tests ask it on any machine).
class CudaCapabilities final : public backend::OpCapabilities {
public:
    bool supportsOp(backend::ops::Op op, quant::Type type = quant::Type::F32) const override;
    bool nodeFits(const graph::Graph& g, const graph::Node& n) const override;
    bool kvShapeFits(const backend::KvLayerShape& shape, KvType type) const override;
    backend::ops::OpLimits limits() const override;
};

// Opens CUDA device `index` as an op device: Unsupported without a driver or with a GPU older
// than compute capability 7.0, NotFound for an index past the last device.
Result<std::unique_ptr<backend::OpDevice>> createCudaOpDevice(int index);

// "cuda:N" for the backend registry (registry.cpp): the graph device over createCudaOpDevice(N).
Result<std::unique_ptr<backend::Device>> openCudaDevice(int index);

} // namespace hearth::cuda
