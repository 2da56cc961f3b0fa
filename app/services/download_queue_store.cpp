// The queue file: {"version": 1, "downloads": [{"url", "destination", "sha256", "size", "name",
// "paused"}, ...]}, written through QSaveFile so a crash leaves the old or the new one.
#include "services/download_queue_store.h"

#include "services/json_file.h"

#include <QJsonArray>
#include <QJsonObject>

namespace hearth::app {

bool readDownloadQueue(const QString& path, QList<QueuedDownload>* out, QString* error) {
    out->clear();
    QJsonObject root;
    if (!readJsonObjectFile(path, QStringLiteral("a download queue"), &root, error)) return false;
    for (const QJsonValue& v : root.value(QStringLiteral("downloads")).toArray()) {
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
    return writeJsonObjectFile(path, root, error);
}

} // namespace hearth::app
