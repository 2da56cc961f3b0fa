// The queue file: {"version": 1, "downloads": [{"url", "destination", "sha256", "size", "name",
// "paused"}, ...]}, written through QSaveFile so a crash leaves the old or the new one.
#include "services/download_queue_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

namespace hearth::app {

bool readDownloadQueue(const QString& path, QList<QueuedDownload>* out, QString* error) {
    out->clear();
    QFile f(path);
    if (!f.exists()) return true;
    if (!f.open(QIODevice::ReadOnly)) {
        if (error) *error = QStringLiteral("cannot read %1: %2").arg(path, f.errorString());
        return false;
    }
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &parseError);
    if (!doc.isObject()) {
        if (error) *error = QStringLiteral("%1 is not a download queue: %2").arg(path, parseError.errorString());
        return false;
    }
    for (const QJsonValue& v : doc.object().value(QStringLiteral("downloads")).toArray()) {
        const QJsonObject o = v.toObject();
        QueuedDownload d;
        d.request.url = QUrl(o.value(QStringLiteral("url")).toString());
        d.request.destination = o.value(QStringLiteral("destination")).toString();
        d.request.expectedSha256 = o.value(QStringLiteral("sha256")).toString();
        d.request.expectedSize = qint64(o.value(QStringLiteral("size")).toDouble(-1));
        d.request.displayName = o.value(QStringLiteral("name")).toString();
        d.paused = o.value(QStringLiteral("paused")).toBool();
        if (!d.request.url.isValid() || d.request.url.isEmpty() || d.request.destination.isEmpty()) continue;
        out->append(d);
    }
    return true;
}

bool writeDownloadQueue(const QString& path, const QList<QueuedDownload>& queue, QString* error) {
    QJsonArray list;
    for (const QueuedDownload& d : queue) {
        QJsonObject o;
        o.insert(QStringLiteral("url"), d.request.url.toString());
        o.insert(QStringLiteral("destination"), d.request.destination);
        o.insert(QStringLiteral("sha256"), d.request.expectedSha256);
        o.insert(QStringLiteral("size"), double(d.request.expectedSize));
        o.insert(QStringLiteral("name"), d.request.displayName);
        o.insert(QStringLiteral("paused"), d.paused);
        list.append(o);
    }
    QJsonObject root;
    root.insert(QStringLiteral("version"), 1);
    root.insert(QStringLiteral("downloads"), list);
    QDir().mkpath(QFileInfo(path).absolutePath());
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(root).toJson()) < 0 || !f.commit()) {
        if (error) *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

} // namespace hearth::app
