// fallbackReasonFor: the facts below mirror the GPU backends' placement (engine/backend/
// op_node_support.cpp over vulkan/vk_capabilities.cpp and cuda/cuda_capabilities.cpp); the test
// test_app_load_fallback loads a model on a real Vulkan device to check they still agree.
#include "services/load_fallback.h"

#include "services/memory_estimate.h"

#include <QObject>
#include <QStringList>

namespace hearth::app {

namespace {

constexpr uint32_t kGpuMaxHeadDim = 256; // both backends' attention kernels

QString kindName(DeviceKind kind) {
    return kind == DeviceKind::Cuda ? QStringLiteral("CUDA") : QStringLiteral("Vulkan");
}

} // namespace

QString kvTypeRefusal(const DeviceDescription& device, const QString& kvType, uint32_t headDim) {
    if (device.kind != DeviceKind::Cuda) return {}; // the CPU and Vulkan keep all three for any head
    if (kvType.compare(QStringLiteral("q8_0"), Qt::CaseInsensitive) != 0) return {};
    if (headDim == 0 || headDim % 32 == 0) return {};
    return QObject::tr("%1 keeps a Q8_0 KV cache for attention heads of a multiple of 32 values only (this "
                       "model's have %2): every layer's KV cache and attention run on the CPU")
        .arg(QString::fromStdString(device.id))
        .arg(headDim);
}

bool gpuRunsWeightType(DeviceKind kind, quant::Type type) {
    using T = quant::Type;
    switch (type) {
    case T::F32: case T::F16: case T::BF16: case T::Q8_0: case T::Q4_0: case T::Q4_1: case T::Q5_0:
    case T::Q5_1: case T::Q2_K: case T::Q3_K: case T::Q4_K: case T::Q5_K: case T::Q6_K: case T::IQ4_NL:
    case T::IQ4_XS: case T::MXFP4: case T::TQ1_0: case T::TQ2_0: case T::Q8_1: case T::Q8_K:
    case T::IQ1_S: case T::IQ1_M: case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S: case T::IQ3_XXS: case T::IQ3_S:
        return true;
    default:
        return kind == DeviceKind::Cpu;
    }
}

QString fallbackReasonFor(const LoadSettings& settings, const DeviceList& devices, const ModelInfo* info) {
    const QString wanted = settings.device.trimmed();
    if (wanted.isEmpty() || wanted == QStringLiteral("cpu") || settings.gpuLayers == 0) return {};
    const DeviceDescription* device = findDevice(devices, wanted.toStdString());
    if (!device) {
        QStringList notes;
        for (const std::string& n : devices.notes) notes << QString::fromStdString(n);
        return QObject::tr("%1 was not found (%2): every layer runs on the CPU")
            .arg(wanted, notes.isEmpty() ? QObject::tr("no such device") : notes.join(QStringLiteral("; ")));
    }
    if (device->kind == DeviceKind::Cpu) return {};
    QStringList reasons;
    const uint32_t headDim = !info                 ? 0
                             : info->keyLength > 0 ? info->keyLength
                             : info->headCount > 0 ? info->embeddingLength / info->headCount
                                                   : 0;
    if (const QString kv = kvTypeRefusal(*device, settings.kvType, headDim); !kv.isEmpty()) reasons << kv;
    if (info) {
        QStringList types;
        for (const auto& [name, count] : info->tensorsByType) {
            const auto type = quant::typeFromName(name);
            const bool integer = type && (*type == quant::Type::I8 || *type == quant::Type::I16 ||
                                          *type == quant::Type::I32 || *type == quant::Type::I64);
            if (type && !integer && !gpuRunsWeightType(device->kind, *type)) types << QString::fromStdString(name);
        }
        if (!types.isEmpty())
            reasons << QObject::tr("%1 has no kernels for %2 weights: the matrices of that type run on the CPU")
                           .arg(kindName(device->kind), types.join(QStringLiteral(", ")));
        if (headDim > kGpuMaxHeadDim)
            reasons << QObject::tr("attention heads of %1 dimensions are wider than the %2 the %3 kernels take: "
                                   "attention runs on the CPU")
                           .arg(headDim).arg(kGpuMaxHeadDim).arg(kindName(device->kind));
    }
    return reasons.join(QStringLiteral("; "));
}

QString fallbackReasonFor(const LoadSettings& settings, const DeviceList& devices, const MemoryPlan& plan) {
    const bool read = plan.error.isEmpty() && !plan.approximate;
    QString reason = fallbackReasonFor(settings, devices, read ? &plan.info : nullptr);
    if (read && plan.gpu && settings.gpuLayers < 0 && plan.gpuLayers == 0) {
        const QString none = QObject::tr("not even one layer fits in %1's free memory: every layer runs on the CPU")
                                 .arg(settings.device);
        reason = reason.isEmpty() ? none : none + QStringLiteral("; ") + reason;
    }
    return reason;
}

QString fallbackReasonFor(const LoadSettings& settings, const DeviceList& devices, const QString& modelPath) {
    // An unreadable file: the settings' own reasons (the load reports what is wrong with it).
    return fallbackReasonFor(settings, devices, planMemory(modelPath, settings, devices, 0));
}

} // namespace hearth::app
