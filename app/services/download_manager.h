// DownloadManager fetches model files on a worker thread: a queue with N at a time, progress,
// pause/resume/cancel, resumable ".part" files, retries with backoff on errors and stalls, and a
// SHA-256 check before a file gets its final name.
#pragma once

#include <QHash>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QUrl>

class QThread;

namespace hearth::app {

struct DownloadRequest {
    QUrl url;
    QString destination;    // the final path; data goes to destination + ".part" until verified
    QString expectedSha256; // hex; empty: not checked
    qint64 expectedSize = -1; // bytes; -1: unknown (taken from the server's answer)
    QString displayName;
};

enum class DownloadState {
    Queued,    // waiting for a free slot
    Running,
    Retrying,  // waiting out a backoff after an error or a stall
    Paused,
    Verifying,
    Completed,
    Failed,
    Cancelled,
};
QString downloadStateName(DownloadState state); // "queued", "running", ...

// What a download in `state` can be asked to do: pause one that waits or runs, resume one that
// is paused or failed, cancel any that has not ended.
struct DownloadActions {
    bool pause = false;
    bool resume = false;
    bool cancel = false;
};
DownloadActions downloadActions(DownloadState state);

struct DownloadRetryPolicy {
    int maxRetries = 6;          // consecutive failures without progress before giving up
    int initialDelayMs = 1000;   // doubled per consecutive failure
    int maxDelayMs = 60000;
    int stallTimeoutMs = 30000;  // no byte for this long counts as a failure
};

namespace detail {
class DownloadWorker;
}

class DownloadManager : public QObject {
    Q_OBJECT
public:
    explicit DownloadManager(QObject* parent = nullptr);
    // Stops every transfer, keeping the .part files for the next run.
    ~DownloadManager() override;

    // Queues a download. A .part file already there (from a pause, a crash or an earlier run)
    // is continued with a Range request.
    quint64 enqueue(const DownloadRequest& request);
    void pause(quint64 id);
    void resume(quint64 id); // also restarts a failed download
    void cancel(quint64 id); // deletes the .part file

    void setMaxParallel(int n);
    int maxParallel() const { return m_maxParallel; }
    void setRetryPolicy(const DownloadRetryPolicy& policy);
    // Free space to leave on the disk beyond the file itself.
    void setDiskMargin(qint64 bytes);
    // Sends "Authorization: Bearer <token>" to `host` only (not to redirect targets elsewhere).
    void setAccessToken(const QString& token, const QString& host);

    // Keeps the unfinished downloads (queued, running, paused, failed) in `path`, a JSON file
    // rewritten on every change (see download_queue_store.h); empty: not kept.
    void setQueueFile(const QString& path);
    QString queueFile() const { return m_queueFile; }
    // Enqueues the downloads the queue file holds (once; later calls return nothing): those not
    // paused start again, continuing their .part with a Range request; paused and failed ones
    // wait for resume(). Returns their ids in the file's order.
    QList<quint64> restoreQueue(QString* error = nullptr);
    // What `id` downloads (an empty request for unknown ids).
    DownloadRequest request(quint64 id) const { return m_requests.value(id); }
    // The unfinished download (queued, running, paused or failed) writing `destination`; 0: none.
    quint64 unfinishedFor(const QString& destination) const;

    // The last state reported for `id` (Failed for unknown ids).
    DownloadState state(quint64 id) const { return m_states.value(id, DownloadState::Failed); }

Q_SIGNALS:
    void stateChanged(quint64 id, hearth::app::DownloadState state);
    // total: -1 when unknown; etaSeconds: -1 when unknown.
    void progress(quint64 id, qint64 received, qint64 total, double bytesPerSecond, int etaSeconds);
    // A network error or stall that will be retried after `delayMs`.
    void retrying(quint64 id, int attempt, int delayMs, const QString& reason);
    void completed(quint64 id, const QString& path);
    void failed(quint64 id, const QString& message);

private:
    friend class detail::DownloadWorker;
    template <typename F> void toWorker(F&& f);
    quint64 add(const DownloadRequest& request, bool paused);
    void noteState(quint64 id, DownloadState state);
    void writeQueue();

    QThread* m_thread = nullptr;
    detail::DownloadWorker* m_worker = nullptr; // lives in m_thread
    quint64 m_nextId = 1;
    int m_maxParallel = 1;
    QHash<quint64, DownloadState> m_states;
    QHash<quint64, DownloadRequest> m_requests; // unfinished downloads, for the queue file
    QString m_queueFile;
    bool m_restored = false;
};

} // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::DownloadState)
