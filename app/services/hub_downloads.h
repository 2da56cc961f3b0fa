// HubDownloads turns a choice on the hub into downloads into the models folder: a quantization's
// files and the vision projector paired with it, each file's origin recorded (model_origins.h);
// and, for a model downloaded before without its projector, that projector beside it.
#pragma once

#include "services/hub_client.h"
#include "services/model_library.h"
#include "services/model_origins.h"

#include <QDateTime>
#include <QHash>
#include <QList>
#include <QObject>
#include <QString>

namespace hearth::app {

class DownloadManager;

class HubDownloads : public QObject {
    Q_OBJECT
public:
    // Files go to `library`'s models folder.
    HubDownloads(HubClient* hub, DownloadManager* downloads, ModelLibrary* library, QObject* parent = nullptr);

    // Queues the files of `option` from `repo` and, when `withProjector` and the repository has
    // one, the projector paired with it (each a download of its own, resumable and cancellable
    // alone). A file that an unfinished download already writes is not queued again, nor is one
    // there already (a model file of the listed size; an identical projector). Records every file's origin, the projector's included even when
    // it is not fetched now (so that projectorOffer can offer it later). Returns the ids queued.
    QList<quint64> downloadOption(const QString& repo, const QuantOption& option, bool withProjector = true);

    // Where `projector` of `repo` goes in `folder`: its own file name, or "<repo name>-<file
    // name>" when a different file has that name already (repositories name theirs alike:
    // "mmproj-F16.gguf"). *present: an identical file (same size, and the same SHA-256 where
    // both are known from the hub) is there already.
    QString projectorDestination(const QString& folder, const QString& repo, const HubFile& projector,
                                 bool* present = nullptr) const;

    // Where `modelPath` (a file in the models folder) came from; not known for files the app
    // did not download from the hub, nor for those downloaded before origins were recorded.
    ModelOrigin originOf(const QString& modelPath) const;
    // The projector to fetch for a library model that has none beside it: the one its
    // repository had when the model was downloaded. Empty path when the origin is not known,
    // the repository had none, or it lies beside the model already (the library found it unfit).
    HubFile projectorOffer(const ModelEntry& entry) const;
    // Queues projectorOffer(entry) beside the model; its id (that of the unfinished download
    // already fetching it, if any), or 0 when there is nothing to offer.
    quint64 downloadProjectorFor(const ModelEntry& entry);

Q_SIGNALS:
    // A download this queued (for the download list).
    void enqueued(quint64 id, const QString& displayName);

private:
    // Queues `file` of `repo` to `destination` unless an unfinished download writes it already
    // (then its id; *fresh false).
    quint64 enqueueFile(const QString& repo, const HubFile& file, const QString& destination, bool* fresh);
    // The models folder's origins, read again when the file changed.
    const QHash<QString, ModelOrigin>& origins() const;
    void record(const QHash<QString, ModelOrigin>& files);

    HubClient* m_hub;
    DownloadManager* m_downloads;
    ModelLibrary* m_library;
    mutable QString m_originsFile; // what m_origins was read from, and when it was written
    mutable QDateTime m_originsStamp;
    mutable QHash<QString, ModelOrigin> m_origins;
};

} // namespace hearth::app
