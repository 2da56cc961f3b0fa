// A synthesized Gemma 3 (the tiny preset, F32, llama's SPM vocabulary) and its projector, written
// by hearth-cli synth into a test's folder: the model and projector the image tests share.
#pragma once

#include "test_support.h"

#include <QProcess>
#include <QString>
#include <string>

namespace hearth::test {

// Writes dir/gemma3.gguf and dir/gemma3-mmproj.gguf and sets their paths; returns "" or why not.
inline QString synthGemma3WithProjector(const QString& dir, std::string& model, std::string& projector) {
    model = (dir + QStringLiteral("/gemma3.gguf")).toStdString();
    projector = (dir + QStringLiteral("/gemma3-mmproj.gguf")).toStdString();
    QProcess synth;
    synth.start(binDir() + QStringLiteral("/hearth-cli"),
                {QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("gemma3-tiny"),
                 QStringLiteral("--type"), QStringLiteral("F32"), QStringLiteral("--vocab"),
                 QString::fromStdString(testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"))),
                 QStringLiteral("-o"), QString::fromStdString(model), QStringLiteral("--mmproj"),
                 QString::fromStdString(projector)});
    if (!synth.waitForFinished(300000)) return QStringLiteral("hearth-cli synth did not finish");
    if (synth.exitCode() != 0) return QString::fromUtf8(synth.readAllStandardError().right(2000));
    return {};
}

} // namespace hearth::test
