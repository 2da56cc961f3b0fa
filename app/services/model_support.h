// Whether a model file will run in this build, decided before downloading it from what the hub
// tells: the quantization in its file name and the architecture the hub read from its metadata.
#pragma once

#include <QString>
#include <QStringList>

namespace hearth {
struct ModelInfo;
}

namespace hearth::app {

// The general.architecture values the engine binds ("llama", "qwen2", ...).
QStringList supportedArchitectureNames();

// Why a file of this quantization ("Q4_K_M", "IQ1_S", "MXFP4", a name from
// HubClient::quantizationOf) and architecture ("qwen2", from the hub's GGUF metadata) will not
// run here, in words for the user: "architecture 'mamba' not supported", "IQ1_S weights not
// supported". Empty when it should run, and for what cannot be told from the name (an empty or
// unrecognised quantization, an unknown architecture): those are checked when the file loads.
QString wontRunReason(const QString& quantization, const QString& architecture);

// The same for a file on disk, from its header: an architecture the engine does not bind, or
// tensors of a type without a dequantizer (every such type named). Empty when it should run.
QString wontRunReason(const ModelInfo& info);

} // namespace hearth::app
