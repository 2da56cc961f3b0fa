// llama.cpp's embeddings as the engine tests compare with them (tests/tools/ref_embed.mjs runs
// node-llama-cpp's embedding context), and the vector arithmetic of the comparisons.
#pragma once

#include "test_support.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace hearth::test {

struct ReferenceEmbedding {
    std::vector<int32_t> tokens;
    std::vector<float> vector;
};

// Why llama.cpp's embeddings cannot be had here (HEARTH_REF unset, or no node-llama-cpp in it: the
// reference is not set up), or empty when they can.
inline QString referenceEmbeddingsMissing() {
    const QString ref = qEnvironmentVariable("HEARTH_REF");
    if (ref.isEmpty()) return QStringLiteral("HEARTH_REF is not set: no llama.cpp oracle here");
    if (!QFileInfo::exists(ref + QStringLiteral("/node_modules/node-llama-cpp/package.json")))
        return QStringLiteral("the reference engine is not set up in HEARTH_REF (%1): no llama.cpp oracle here").arg(ref);
    return {};
}

// llama.cpp's embedding of `text` (or of `ids` when given); empty tokens when the run failed
// (its message in err).
inline ReferenceEmbedding referenceEmbedding(const QString& model, const QString& text,
                                             const std::vector<int32_t>& ids, QString& err) {
    QStringList args{QDir(sourceDir()).filePath(QStringLiteral("tests/tools/ref_embed.mjs")), model};
    if (ids.empty()) {
        args << QStringLiteral("--text") << text;
    } else {
        QStringList list;
        for (int32_t id : ids) list << QString::number(id);
        args << QStringLiteral("--tokens") << list.join(',');
    }
    QProcess p;
    p.start(QStringLiteral("node"), args);
    ReferenceEmbedding r;
    if (!p.waitForFinished(120000) || p.exitCode() != 0) {
        err = QString::fromUtf8(p.readAllStandardError());
        return r;
    }
    const QJsonObject o = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    for (const auto& v : o.value(QStringLiteral("tokens")).toArray()) r.tokens.push_back(v.toInt());
    for (const auto& v : o.value(QStringLiteral("vector")).toArray()) r.vector.push_back(float(v.toDouble()));
    return r;
}

inline std::vector<float> normalized(std::vector<float> v) {
    double n = 0.0;
    for (float x : v) n += double(x) * x;
    n = std::sqrt(n);
    for (float& x : v) x = float(x / n);
    return v;
}

inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    return ab / std::sqrt(aa * bb);
}

// Infinite when the sizes differ.
inline double maxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return INFINITY;
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

} // namespace hearth::test
