// wontRunReason: the engine's architecture list and its weight types (a type runs when it has a
// reference dequantizer, the rule the binder applies), matched against hub file names.
#include "services/model_support.h"

#include <hearth/model_info.h>
#include <hearth/quant.h>

#include <optional>

namespace hearth::app {

namespace {

// The weight type most of a file's matrices have, from a quantization name: a type ("IQ1_S",
// "MXFP4"), a mix the engine knows ("Q4_K_M"), llama.cpp's i-quant mixes, or a type with a
// size suffix ("Q3_K_XL", "Q4_K_S").
std::optional<quant::Type> baseType(const QString& quantization) {
    const std::string name = quantization.toUpper().toStdString();
    if (auto t = quant::typeFromName(name)) return t;
    if (auto mix = quant::mixFromName(name)) return mix->baseType;
    // llama.cpp's i-quant file types named after a size rather than a type.
    if (name == "IQ2_M") return quant::Type::IQ2_S;
    if (name == "IQ3_M" || name == "IQ3_XS") return quant::Type::IQ3_S;
    const auto cut = name.rfind('_');
    if (cut != std::string::npos) {
        const std::string suffix = name.substr(cut + 1);
        if (suffix == "S" || suffix == "M" || suffix == "L" || suffix == "XL")
            return quant::typeFromName(name.substr(0, cut));
    }
    return std::nullopt;
}

} // namespace

QStringList supportedArchitectureNames() {
    QStringList out;
    for (const std::string& a : hearth::supportedArchitectures()) out << QString::fromStdString(a);
    return out;
}

QString wontRunReason(const QString& quantization, const QString& architecture) {
    if (!architecture.isEmpty() && !supportedArchitectureNames().contains(architecture))
        return QStringLiteral("architecture '%1' not supported").arg(architecture);
    if (quantization.isEmpty()) return {};
    const std::optional<quant::Type> type = baseType(quantization);
    if (!type) return {};
    const quant::TypeInfo* info = quant::typeInfo(*type);
    if (!info || !info->canDequantize)
        return QStringLiteral("%1 weights not supported").arg(quantization.toUpper());
    return {};
}

QString wontRunReason(const ModelInfo& info) {
    const QString arch = QString::fromStdString(info.architecture);
    if (!supportedArchitectureNames().contains(arch))
        return QStringLiteral("architecture '%1' not supported").arg(arch);
    QStringList types;
    for (const auto& [name, count] : info.tensorsByType) {
        const auto type = quant::typeFromName(name);
        const quant::TypeInfo* t = type ? quant::typeInfo(*type) : nullptr;
        const bool integer = type && (*type == quant::Type::I8 || *type == quant::Type::I16 ||
                                      *type == quant::Type::I32 || *type == quant::Type::I64);
        if (!integer && (!t || !t->canDequantize)) types << QString::fromStdString(name);
    }
    if (!types.isEmpty()) return QStringLiteral("%1 weights not supported").arg(types.join(QStringLiteral(", ")));
    return {};
}

} // namespace hearth::app
