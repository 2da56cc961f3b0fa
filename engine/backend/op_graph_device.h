// The one graph device of the accelerator backends: a backend::Device (device.h) over any
// OpDevice (op_device.h), Vulkan's and CUDA's alike. It decides which step-graph nodes the op
// device runs, uploads each weight once, keeps the K/V pools of the layers placed on it, and
// compiles a run of nodes into the op device's calls recorded once and submitted every step.
#pragma once

#include "backend/device.h"
#include "backend/op_device.h"

#include <memory>
#include <string>

namespace hearth::backend {

// Whether a device of these capabilities runs node n: its operands are plain tensors of the kinds
// and types the op takes (F32 activations, I32 indices, contiguous, at their storage's start,
// within one binding unless the op is cut into chunks), its shapes agree with each other, and the
// device takes the op, the weight type and the sizes (OpCapabilities::nodeFits). Needs no device.
bool opDeviceRunsNode(const OpCapabilities& caps, const graph::Graph& g, const graph::Node& n);

// The graph device over `ops`; `id` is its registry name ("vulkan:0", "cuda:1").
std::unique_ptr<Device> makeOpGraphDevice(std::unique_ptr<OpDevice> ops, const std::string& id);

// Tokens per matMul call for n tokens of rows xRow and yRow bytes: n when the activations fit one
// binding and one call, else the most that do (a multiple of the view alignment); 0 when not even
// one aligned chunk fits.
int64_t matMulChunk(const ops::OpLimits& limits, int64_t n, uint64_t xRow, uint64_t yRow);

// The blocks of Concat node n (contiguous F32 a and b joined along n.dim).
ops::ConcatShape concatShape(const graph::Graph& g, const graph::Node& n);

// The root of a tensor's view chain, with the summed byte offset of the views.
graph::TensorId viewRoot(const graph::Graph& g, graph::TensorId id, uint64_t& offset);

// The cache type of a graph K/V tensor's type (F32, F16, Q8_0); false for any other.
bool kvTypeOf(quant::Type t, KvType& out);

} // namespace hearth::backend
