// Whether a load with given settings would run (wholly or partly) on the CPU although a GPU was
// chosen, told before loading: the combinations the GPU backends refuse (their supportsOp rules)
// and what EngineHost's layer placement does (a device not found, not one layer fitting).
#pragma once

#include "services/service_types.h"

#include "hearth/devices.h"
#include "hearth/model_info.h"
#include "hearth/quant.h"

#include <QString>

namespace hearth::app {

// Why `device` keeps no K/V cache of this type ("f16", "q8_0", "f32") for attention heads of
// headDim values (0: not known): the CUDA backend's Q8_0 cache holds whole blocks of 32 per head
// (its KvWrite/Attention support), so with other heads every layer's K/V and attention run on the
// CPU. Empty when the device keeps it (always for the CPU and Vulkan, and when headDim is unknown).
QString kvTypeRefusal(const DeviceDescription& device, const QString& kvType, uint32_t headDim = 0);

// Whether the device's matrix kernels read weights of this type (the CPU reads every type).
bool gpuRunsWeightType(DeviceKind kind, quant::Type type);

// Why loading with `settings` would put work on the CPU instead of the chosen GPU, in words for
// the user ("cuda:0 keeps a Q8_0 KV cache for attention heads of ..."), several reasons joined by
// "; ". `info` (may be null) adds the model's checks: weight types without GPU kernels, attention
// heads wider than the kernels take. Empty when the CPU is chosen or nothing falls back.
QString fallbackReasonFor(const LoadSettings& settings, const DeviceList& devices, const ModelInfo* info = nullptr);
// The same for a model file (header only), adding "not even one layer fits" for "as many as fit".
QString fallbackReasonFor(const LoadSettings& settings, const DeviceList& devices, const QString& modelPath);
// The same from a plan made for these settings and devices (planMemory: no second header read).
struct MemoryPlan;
QString fallbackReasonFor(const LoadSettings& settings, const DeviceList& devices, const MemoryPlan& plan);

} // namespace hearth::app
