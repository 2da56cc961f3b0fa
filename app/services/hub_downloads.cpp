// HubDownloads: requests built from hub listings (the same destination rules for model files and
// projectors), queued on the DownloadManager, origins written beside the models.
#include "services/hub_downloads.h"

#include "services/download_manager.h"

#include <QDir>
#include <QFileInfo>

#include <spdlog/spdlog.h>

namespace hearth::app {

namespace {

QString fileNameOf(const QString& repoPath) { return repoPath.section(QLatin1Char('/'), -1); }

} // namespace

HubDownloads::HubDownloads(HubClient* hub, DownloadManager* downloads, ModelLibrary* library, QObject* parent)
    : QObject(parent), m_hub(hub), m_downloads(downloads), m_library(library) {}

const QHash<QString, ModelOrigin>& HubDownloads::origins() const {
    const QString file = modelOriginsFile(m_library->modelsFolder());
    const QFileInfo info(file);
    const QDateTime stamp = info.exists() ? info.lastModified() : QDateTime();
    if (file != m_originsFile || stamp != m_originsStamp || !stamp.isValid()) {
        QString error;
        if (!readModelOrigins(m_library->modelsFolder(), &m_origins, &error))
            spdlog::warn("hub downloads: {}", error.toStdString());
        m_originsFile = file;
        m_originsStamp = stamp;
    }
    return m_origins;
}

void HubDownloads::record(const QHash<QString, ModelOrigin>& files) {
    QString error;
    if (!recordModelOrigins(m_library->modelsFolder(), files, &error))
        spdlog::warn("hub downloads: {}", error.toStdString());
    m_originsFile.clear(); // read again next time
}

ModelOrigin HubDownloads::originOf(const QString& modelPath) const {
    const QFileInfo info(modelPath);
    if (info.absolutePath() != QDir(m_library->modelsFolder()).absolutePath()) return {};
    return origins().value(info.fileName());
}

QString HubDownloads::projectorDestination(const QString& folder, const QString& repo, const HubFile& projector,
                                           bool* present) const {
    const QString name = fileNameOf(projector.path);
    const QString repoName = repo.section(QLatin1Char('/'), -1);
    const QString owner = repo.section(QLatin1Char('/'), 0, 0);
    const QStringList candidates = {name, repoName + QLatin1Char('-') + name,
                                    owner + QLatin1Char('-') + repoName + QLatin1Char('-') + name};
    const bool ownFolder = QDir(folder).absolutePath() == QDir(m_library->modelsFolder()).absolutePath();
    for (const QString& candidate : candidates) {
        const QString path = QDir(folder).filePath(candidate);
        const QFileInfo info(path);
        if (!info.exists()) {
            if (present) *present = false;
            return path;
        }
        bool same = info.isFile() && (projector.size <= 0 || info.size() == projector.size);
        if (same && ownFolder) {
            // Where the origin is known, the hub's SHA-256 tells files of one size apart.
            const ModelOrigin origin = origins().value(candidate);
            if (origin.isKnown() && !origin.sha256.isEmpty() && !projector.sha256.isEmpty())
                same = origin.sha256.compare(projector.sha256, Qt::CaseInsensitive) == 0;
        }
        if (same) {
            if (present) *present = true;
            return path;
        }
    }
    // Three different files of these names: the download reports that the last one exists.
    if (present) *present = false;
    return QDir(folder).filePath(candidates.last());
}

quint64 HubDownloads::enqueueFile(const QString& repo, const HubFile& file, const QString& destination, bool* fresh) {
    if (const quint64 id = m_downloads->unfinishedFor(destination)) {
        *fresh = false;
        return id;
    }
    DownloadRequest r;
    r.url = m_hub->downloadUrl(repo, file.path);
    r.destination = destination;
    r.expectedSha256 = file.sha256;
    r.expectedSize = file.size;
    r.displayName = QFileInfo(destination).fileName();
    const quint64 id = m_downloads->enqueue(r);
    *fresh = true;
    Q_EMIT enqueued(id, r.displayName);
    return id;
}

QList<quint64> HubDownloads::downloadOption(const QString& repo, const QuantOption& option, bool withProjector) {
    QList<quint64> ids;
    const QString folder = m_library->modelsFolder();
    QHash<QString, ModelOrigin> recorded;
    for (const HubFile& f : option.files) {
        const QString destination = QDir(folder).filePath(fileNameOf(f.path));
        recorded.insert(fileNameOf(f.path), ModelOrigin{repo, f.path, f.sha256, f.size, option.projector});
        // A file there in full (an earlier download) is not fetched again, as StarterInstall does.
        const QFileInfo there(destination);
        if (there.isFile() && (f.size <= 0 || there.size() == f.size)) continue;
        bool fresh = false;
        const quint64 id = enqueueFile(repo, f, destination, &fresh);
        if (fresh) ids << id;
    }
    if (option.hasProjector() && withProjector) {
        bool present = false;
        const QString destination = projectorDestination(folder, repo, option.projector, &present);
        if (!present) {
            recorded.insert(QFileInfo(destination).fileName(),
                           ModelOrigin{repo, option.projector.path, option.projector.sha256, option.projector.size, {}});
            bool fresh = false;
            const quint64 id = enqueueFile(repo, option.projector, destination, &fresh);
            if (fresh) ids << id;
        }
    }
    record(recorded);
    return ids;
}

HubFile HubDownloads::projectorOffer(const ModelEntry& entry) const {
    if (!entry.isUsable() || entry.isVision()) return {};
    const ModelOrigin origin = originOf(entry.path);
    if (!origin.isKnown() || origin.projector.path.isEmpty()) return {};
    bool present = false;
    projectorDestination(QFileInfo(entry.path).absolutePath(), origin.repo, origin.projector, &present);
    return present ? HubFile{} : origin.projector;
}

quint64 HubDownloads::downloadProjectorFor(const ModelEntry& entry) {
    const HubFile projector = projectorOffer(entry);
    if (projector.path.isEmpty()) return 0;
    const ModelOrigin origin = originOf(entry.path);
    const QString destination = projectorDestination(QFileInfo(entry.path).absolutePath(), origin.repo, projector);
    record({{QFileInfo(destination).fileName(), ModelOrigin{origin.repo, projector.path, projector.sha256, projector.size, {}}}});
    bool fresh = false;
    return enqueueFile(origin.repo, projector, destination, &fresh);
}

} // namespace hearth::app
