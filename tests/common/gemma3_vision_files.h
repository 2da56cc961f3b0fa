// Models hearth-cli synth writes into a test's folder for the image tests (F32, llama's SPM
// vocabulary): a synthesized Gemma 3 (the tiny preset) with its projector, the model and
// projector those tests share, and a text-only model (qwen3-tiny, as wide) that takes no images
// whatever projector it is given.
#pragma once

#include "test_support.h"

#include <QProcess>
#include <QString>
#include <QStringList>
#include <string>

namespace hearth::test {

// Writes the preset as dir/<name>.gguf, and its projector as dir/<name>-mmproj.gguf when projector
// is given, and sets their paths; returns "" or why not.
inline QString synthTestModel(const QString& dir, const QString& preset, const QString& name, std::string& model,
                              std::string* projector = nullptr) {
    model = (dir + QStringLiteral("/") + name + QStringLiteral(".gguf")).toStdString();
    QStringList args{QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"),
                     QStringLiteral("F32"), QStringLiteral("--vocab"),
                     QString::fromStdString(testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"))),
                     QStringLiteral("-o"), QString::fromStdString(model)};
    if (projector) {
        *projector = (dir + QStringLiteral("/") + name + QStringLiteral("-mmproj.gguf")).toStdString();
        args << QStringLiteral("--mmproj") << QString::fromStdString(*projector);
    }
    QProcess synth;
    synth.start(binDir() + QStringLiteral("/hearth-cli"), args);
    if (!synth.waitForFinished(300000)) return QStringLiteral("hearth-cli synth did not finish");
    if (synth.exitCode() != 0) return QString::fromUtf8(synth.readAllStandardError().right(2000));
    return {};
}

// Writes dir/gemma3.gguf and dir/gemma3-mmproj.gguf and sets their paths; returns "" or why not.
inline QString synthGemma3WithProjector(const QString& dir, std::string& model, std::string& projector) {
    return synthTestModel(dir, QStringLiteral("gemma3-tiny"), QStringLiteral("gemma3"), model, &projector);
}

// Writes dir/qwen3-tiny.gguf, a text-only model as wide as gemma3-tiny (256), and sets its path.
inline QString synthTextOnlyModel(const QString& dir, std::string& model) {
    return synthTestModel(dir, QStringLiteral("qwen3-tiny"), QStringLiteral("qwen3-tiny"), model);
}

} // namespace hearth::test
