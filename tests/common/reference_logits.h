// The llama.cpp logits harness (tests/model/ref_logits.cpp) for the model tests: set up the
// reference engine, build the harness against it, run it on a model and read its logits
// (teacher-forced over a token list, or the rows of a greedy run from a prompt).
#pragma once

#include "test_support.h"

#include <QDir>
#include <QProcess>
#include <QStringList>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace hearth::test {

struct ReferenceLogits {
    QString refDir;     // the reference folder (HEARTH_REF): node_modules, llama.cpp-src
    QString backendDir; // llama.cpp's shared libraries
    QString harness;    // the built ref_logits

    // Runs setup.sh and builds the harness into `dir`; an empty string, or why not (the caller
    // skips when `skip` is set: the reference cannot be set up here).
    QString build(const QString& dir, bool& skip) {
        skip = false;
        const QString setup =
            QDir(testDataDir()).filePath(QStringLiteral("tools/reference/setup.sh"));
        QProcess p;
        p.start(QStringLiteral("bash"), {setup});
        if (!p.waitForFinished(600000) || p.exitCode() != 0) {
            skip = true;
            return QStringLiteral("the reference engine could not be set up here (needs node/npm)");
        }
        const QString ref =
            QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n').last();
        refDir = ref;
        backendDir = ref + QStringLiteral("/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64");
        harness = QDir(dir).filePath(QStringLiteral("ref_logits"));
        QProcess cc;
        cc.start(QStringLiteral("g++"),
                 {QStringLiteral("-O1"), QStringLiteral("-std=c++17"),
                  QStringLiteral("-I") + ref + QStringLiteral("/llama.cpp-src/include"),
                  QStringLiteral("-I") + ref + QStringLiteral("/llama.cpp-src/ggml/include"),
                  sourceDir() + QStringLiteral("/tests/model/ref_logits.cpp"), QStringLiteral("-o"),
                  harness, backendDir + QStringLiteral("/libllama.v0.5.0.so"),
                  backendDir + QStringLiteral("/libggml.v0.5.0.so"),
                  backendDir + QStringLiteral("/libggml-base.so"),
                  QStringLiteral("-Wl,-rpath,") + backendDir});
        if (!cc.waitForFinished(300000)) return QStringLiteral("building ref_logits timed out");
        if (cc.exitCode() != 0) return QString::fromUtf8(cc.readAllStandardError());
        return {};
    }

    // llama.cpp's logits [ids][vocab] for `model` (written to `out`, by default next to the
    // model); empty on failure.
    std::vector<float> run(const QString& model, const std::vector<int32_t>& ids,
                           QString out = {}) const {
        return call(model, ids, out, 0);
    }

    // llama.cpp's greedy run of `steps` tokens after `prompt`: the logits row that chose each
    // token [steps][vocab] (the token is its argmax, the first on ties); empty on failure.
    std::vector<float> greedy(const QString& model, const std::vector<int32_t>& prompt, int steps,
                              QString out = {}) const {
        return call(model, prompt, out, steps);
    }

private:
    std::vector<float> call(const QString& model, const std::vector<int32_t>& ids, QString out,
                            int steps) const {
        QStringList idList;
        for (int32_t id : ids) idList << QString::number(id);
        QProcess p;
        if (out.isEmpty()) out = model + QStringLiteral(".ref");
        QStringList args{model, backendDir, out, idList.join(',')};
        if (steps > 0) args << QString::number(steps);
        p.start(harness, args);
        std::vector<float> v;
        if (!p.waitForFinished(300000) || p.exitCode() != 0) {
            qWarning("%s", p.readAllStandardError().constData());
            return v;
        }
        std::ifstream in(out.toStdString(), std::ios::binary);
        std::vector<char> raw{std::istreambuf_iterator<char>(in), {}};
        v.resize(raw.size() / 4);
        std::memcpy(v.data(), raw.data(), v.size() * 4);
        return v;
    }
};

} // namespace hearth::test
