// The origins file: {"version": 1, "files": {"<file name>": {"repo", "path", "sha256", "size",
// "projector": {"path", "sha256", "size"}}}}, read whole and rewritten through QSaveFile.
#include "services/model_origins.h"

#include "services/json_file.h"

#include <QDir>
#include <QJsonObject>

namespace hearth::app {

namespace {

QJsonObject fileToJson(const QString& path, const QString& sha256, qint64 size) {
    QJsonObject o;
    o.insert(QStringLiteral("path"), path);
    o.insert(QStringLiteral("sha256"), sha256);
    o.insert(QStringLiteral("size"), double(size));
    return o;
}

} // namespace

QString modelOriginsFile(const QString& modelsFolder) {
    return QDir(modelsFolder).filePath(QStringLiteral(".hearth-origins.json"));
}

bool readModelOrigins(const QString& modelsFolder, QHash<QString, ModelOrigin>* out, QString* error) {
    out->clear();
    QJsonObject root;
    if (!readJsonObjectFile(modelOriginsFile(modelsFolder), QStringLiteral("a list of origins"), &root, error))
        return false;
    const QJsonObject files = root.value(QStringLiteral("files")).toObject();
    for (auto it = files.begin(); it != files.end(); ++it) {
        const QJsonObject o = it.value().toObject();
        ModelOrigin origin;
        origin.repo = o.value(QStringLiteral("repo")).toString();
        origin.repoPath = o.value(QStringLiteral("path")).toString();
        origin.sha256 = o.value(QStringLiteral("sha256")).toString();
        origin.size = qint64(o.value(QStringLiteral("size")).toDouble());
        const QJsonObject p = o.value(QStringLiteral("projector")).toObject();
        origin.projector.path = p.value(QStringLiteral("path")).toString();
        origin.projector.sha256 = p.value(QStringLiteral("sha256")).toString();
        origin.projector.size = qint64(p.value(QStringLiteral("size")).toDouble());
        // What a hand-edited or damaged entry would point at is never trusted.
        if (!HubClient::isValidRepoId(origin.repo) || !HubClient::isSafeRepoPath(origin.repoPath)) continue;
        if (!origin.projector.path.isEmpty() && !HubClient::isSafeRepoPath(origin.projector.path))
            origin.projector = {};
        out->insert(it.key(), origin);
    }
    return true;
}

bool recordModelOrigins(const QString& modelsFolder, const QHash<QString, ModelOrigin>& files, QString* error) {
    QHash<QString, ModelOrigin> all;
    if (!readModelOrigins(modelsFolder, &all, error)) all.clear(); // a damaged file is replaced
    for (auto it = files.begin(); it != files.end(); ++it) all.insert(it.key(), it.value());
    QJsonObject list;
    for (auto it = all.begin(); it != all.end(); ++it) {
        const ModelOrigin& origin = it.value();
        QJsonObject o = fileToJson(origin.repoPath, origin.sha256, origin.size);
        o.insert(QStringLiteral("repo"), origin.repo);
        if (!origin.projector.path.isEmpty())
            o.insert(QStringLiteral("projector"),
                     fileToJson(origin.projector.path, origin.projector.sha256, origin.projector.size));
        list.insert(it.key(), o);
    }
    QJsonObject root;
    root.insert(QStringLiteral("version"), 1);
    root.insert(QStringLiteral("files"), list);
    return writeJsonObjectFile(modelOriginsFile(modelsFolder), root, error);
}

} // namespace hearth::app
