// DownloadManager: every transfer, file write and hash update happens on the worker thread; the
// manager only forwards calls there and re-emits what comes back.
#include "services/download_manager.h"

#include "services/download_queue_store.h"
#include "services/hub_client.h" // describeReplyError

#include <QCryptographicHash>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QMetaObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QRegularExpression>
#include <QStorageInfo>
#include <QThread>
#include <QTimer>

#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <vector>
#include <memory>

#ifdef Q_OS_UNIX
#include <unistd.h>
#endif

namespace hearth::app {

QString downloadStateName(DownloadState state) {
    switch (state) {
    case DownloadState::Queued: return QStringLiteral("queued");
    case DownloadState::Running: return QStringLiteral("running");
    case DownloadState::Retrying: return QStringLiteral("retrying");
    case DownloadState::Paused: return QStringLiteral("paused");
    case DownloadState::Verifying: return QStringLiteral("verifying");
    case DownloadState::Completed: return QStringLiteral("completed");
    case DownloadState::Failed: return QStringLiteral("failed");
    case DownloadState::Cancelled: return QStringLiteral("cancelled");
    }
    return QStringLiteral("unknown");
}

// As the worker's pause, resume and cancel accept them.
DownloadActions downloadActions(DownloadState state) {
    DownloadActions a;
    a.pause = state == DownloadState::Queued || state == DownloadState::Running || state == DownloadState::Retrying;
    a.resume = state == DownloadState::Paused || state == DownloadState::Failed;
    a.cancel = state != DownloadState::Completed && state != DownloadState::Cancelled;
    return a;
}

namespace {

constexpr int kMaxRedirects = 10;
constexpr qint64 kSpeedWindowMs = 5000;
constexpr int kProgressIntervalMs = 200;

QString formatBytes(qint64 bytes) {
    const double gib = double(bytes) / double(1ll << 30);
    if (gib >= 1.0) return QStringLiteral("%1 GiB").arg(gib, 0, 'f', 2);
    return QStringLiteral("%1 MiB").arg(double(bytes) / double(1 << 20), 0, 'f', 1);
}

bool isRetryableStatus(int status) { return status == 408 || status == 429 || status >= 500; }

bool isRetryableNetworkError(QNetworkReply::NetworkError e) {
    switch (e) {
    case QNetworkReply::ConnectionRefusedError:
    case QNetworkReply::RemoteHostClosedError:
    case QNetworkReply::HostNotFoundError:
    case QNetworkReply::TimeoutError:
    case QNetworkReply::OperationCanceledError: // transfer timeout
    case QNetworkReply::TemporaryNetworkFailureError:
    case QNetworkReply::NetworkSessionFailedError:
    case QNetworkReply::UnknownNetworkError:
    case QNetworkReply::ProxyConnectionClosedError:
    case QNetworkReply::ProxyTimeoutError:
    case QNetworkReply::InternalServerError:
    case QNetworkReply::ServiceUnavailableError:
    case QNetworkReply::UnknownServerError:
        return true;
    default:
        return false;
    }
}

} // namespace

namespace detail {

// The worker: owns the network manager, the tasks and their files. Used only on its thread.
class DownloadWorker : public QObject {
public:
    explicit DownloadWorker(DownloadManager* manager) : m_manager(manager) {}

    // Runs once on the worker thread before anything else.
    void init() {
        m_network = new QNetworkAccessManager(this);
        m_network->setRedirectPolicy(QNetworkRequest::ManualRedirectPolicy);
        m_ticker = new QTimer(this);
        m_ticker->setInterval(100);
        connect(m_ticker, &QTimer::timeout, this, [this] { tick(); });
        m_ticker->start();
    }

    // Runs on the worker thread last: timers and sockets must go away on the thread they use.
    void shutdown() {
        for (auto& [id, task] : m_tasks) detach(*task);
        m_tasks.clear();
        delete m_ticker;
        m_ticker = nullptr;
        delete m_network;
        m_network = nullptr;
    }

    void add(quint64 id, const DownloadRequest& request, bool paused) {
        auto task = std::make_unique<Task>();
        task->id = id;
        task->request = request;
        task->request.expectedSha256 = request.expectedSha256.trimmed().toLower();
        task->total = request.expectedSize;
        m_tasks[id] = std::move(task);
        setState(*m_tasks[id], paused ? DownloadState::Paused : DownloadState::Queued);
        if (paused) {
            // What an earlier run left in the .part, so the list shows how far it got.
            m_tasks[id]->received = QFileInfo(m_tasks[id]->partPath()).size();
            emitProgress(*m_tasks[id]);
        }
        schedule();
    }

    void pause(quint64 id) {
        Task* t = find(id);
        if (!t) return;
        if (t->state == DownloadState::Running || t->state == DownloadState::Retrying ||
            t->state == DownloadState::Queued) {
            detach(*t);
            setState(*t, DownloadState::Paused);
            emitProgress(*t);
            schedule();
        }
    }

    void resume(quint64 id) {
        Task* t = find(id);
        if (!t || (t->state != DownloadState::Paused && t->state != DownloadState::Failed)) return;
        t->failures = 0;
        setState(*t, DownloadState::Queued);
        schedule();
    }

    void cancel(quint64 id) {
        Task* t = find(id);
        if (!t || t->state == DownloadState::Completed || t->state == DownloadState::Cancelled) return;
        detach(*t);
        QFile::remove(t->partPath());
        setState(*t, DownloadState::Cancelled);
        m_tasks.erase(id);
        schedule();
    }

    void setMaxParallel(int n) {
        m_maxParallel = std::max(1, n);
        schedule();
    }
    void setPolicy(const DownloadRetryPolicy& p) { m_policy = p; }
    void setDiskMargin(qint64 bytes) { m_diskMargin = std::max<qint64>(0, bytes); }
    void setAccessToken(const QString& token, const QString& host) {
        m_token = token;
        m_tokenHost = host;
    }

private:
    enum class StopReason { None, Stall };

    struct Task {
        quint64 id = 0;
        DownloadRequest request;
        DownloadState state = DownloadState::Queued;
        QNetworkReply* reply = nullptr;
        QFile file;
        QCryptographicHash hash{QCryptographicHash::Sha256};
        qint64 received = 0; // bytes in the .part file, all of them hashed
        bool hashValid = false; // `hash` covers `received` bytes of the current .part
        qint64 total = -1;
        QUrl url;            // the current URL (after redirects)
        int redirects = 0;
        bool responseChecked = false;
        bool discardBody = false; // an error or redirect body: not file data
        int failures = 0;    // consecutive failures without progress
        qint64 receivedAtStart = 0;
        QTimer* retryTimer = nullptr;
        QElapsedTimer lastData;
        QElapsedTimer lastProgress;
        std::deque<std::pair<qint64, qint64>> samples; // (ms, received) for the speed
        QElapsedTimer clock;

        QString partPath() const { return request.destination + QStringLiteral(".part"); }
        QString name() const {
            return request.displayName.isEmpty() ? QFileInfo(request.destination).fileName()
                                                 : request.displayName;
        }
    };

    Task* find(quint64 id) {
        auto it = m_tasks.find(id);
        return it == m_tasks.end() ? nullptr : it->second.get();
    }

    template <typename F> void toManager(F&& f) {
        DownloadManager* m = m_manager;
        QMetaObject::invokeMethod(m, [m, fn = std::forward<F>(f)]() mutable { fn(m); }, Qt::QueuedConnection);
    }

    void setState(Task& t, DownloadState s) {
        t.state = s;
        toManager([id = t.id, s](DownloadManager* m) {
            m->noteState(id, s);
            Q_EMIT m->stateChanged(id, s);
        });
    }

    void emitProgress(Task& t) {
        double speed = 0.0;
        if (t.samples.size() >= 2) {
            const auto& [t0, b0] = t.samples.front();
            const auto& [t1, b1] = t.samples.back();
            if (t1 > t0) speed = double(b1 - b0) * 1000.0 / double(t1 - t0);
        }
        const int eta = speed > 0.0 && t.total > 0 ? int(double(t.total - t.received) / speed) : -1;
        t.lastProgress.restart();
        toManager([id = t.id, r = t.received, total = t.total, speed, eta](DownloadManager* m) {
            Q_EMIT m->progress(id, r, total, speed, eta);
        });
    }

    void fail(Task& t, const QString& message) {
        detach(t);
        spdlog::warn("download {}: {}", t.name().toStdString(), message.toStdString());
        setState(t, DownloadState::Failed);
        toManager([id = t.id, message](DownloadManager* m) { Q_EMIT m->failed(id, message); });
        schedule();
    }

    // Stops the transfer (no signal from it afterwards) and closes the file; keeps the .part.
    void detach(Task& t) {
        if (t.retryTimer) {
            t.retryTimer->stop();
            t.retryTimer->deleteLater();
            t.retryTimer = nullptr;
        }
        if (t.reply) {
            QNetworkReply* r = t.reply;
            t.reply = nullptr;
            r->disconnect(this);
            r->abort();
            r->deleteLater();
        }
        if (t.file.isOpen()) {
            t.file.flush();
            t.file.close();
        }
    }

    // Starts queued tasks while slots are free. Re-entrant calls (a start that fails or finishes
    // at once schedules again) are folded into the outer loop.
    void schedule() {
        if (m_scheduling) {
            m_scheduleAgain = true;
            return;
        }
        m_scheduling = true;
        do {
            m_scheduleAgain = false;
            int active = 0;
            for (auto& [id, t] : m_tasks)
                if (t->state == DownloadState::Running || t->state == DownloadState::Verifying) ++active;
            std::vector<quint64> next;
            for (auto& [id, t] : m_tasks)
                if (t->state == DownloadState::Queued && active + int(next.size()) < m_maxParallel)
                    next.push_back(id);
            for (quint64 id : next)
                if (Task* t = find(id); t && t->state == DownloadState::Queued) start(*t);
        } while (m_scheduleAgain);
        m_scheduling = false;
    }

    // Prepares the .part file and sends the request (with Range when there is data already).
    void start(Task& t) {
        const QString dest = t.request.destination;
        if (QFileInfo::exists(dest))
            return fail(t, QStringLiteral("%1 already exists").arg(dest));
        if (!QDir().mkpath(QFileInfo(dest).absolutePath()))
            return fail(t, QStringLiteral("cannot create the folder %1").arg(QFileInfo(dest).absolutePath()));
        t.file.setFileName(t.partPath());
        const qint64 onDisk = QFileInfo(t.partPath()).size();
        if (!t.hashValid || onDisk != t.received) {
            // A .part from a crash or an earlier run, or one that changed: hash what is there.
            if (!rehash(t)) return;
        }
        if (t.request.expectedSize > 0 && t.received > t.request.expectedSize) truncate(t);
        if (!t.file.open(QIODevice::ReadWrite | QIODevice::Append))
            return fail(t, QStringLiteral("cannot write %1: %2").arg(t.partPath(), t.file.errorString()));
        if (!checkDiskSpace(t, t.request.expectedSize)) return;
        t.clock.start();
        t.samples.clear();
        t.receivedAtStart = t.received;
        setState(t, DownloadState::Running);
        if (t.request.expectedSize > 0 && t.received == t.request.expectedSize) {
            t.total = t.received; // complete already (stopped before the rename): just verify
            finish(t);
            return;
        }
        t.url = t.request.url;
        t.redirects = 0;
        sendRequest(t);
    }

    bool rehash(Task& t) {
        t.hash.reset();
        t.received = 0;
        t.hashValid = true;
        QFile existing(t.partPath());
        if (!existing.exists()) return true;
        if (!existing.open(QIODevice::ReadOnly)) {
            fail(t, QStringLiteral("cannot read %1: %2").arg(t.partPath(), existing.errorString()));
            return false;
        }
        if (!t.hash.addData(&existing)) {
            fail(t, QStringLiteral("cannot read %1").arg(t.partPath()));
            return false;
        }
        t.received = existing.size();
        spdlog::info("download {}: continuing after {} bytes already on disk", t.name().toStdString(),
                     t.received);
        return true;
    }

    void truncate(Task& t) {
        if (t.file.isOpen()) t.file.resize(0);
        else QFile::resize(t.partPath(), 0);
        t.hash.reset();
        t.received = 0;
        t.hashValid = true;
        t.samples.clear();
    }

    bool checkDiskSpace(Task& t, qint64 total) {
        if (total <= 0) return true;
        QStorageInfo storage(QFileInfo(t.partPath()).absolutePath());
        storage.refresh();
        if (!storage.isValid()) return true;
        const qint64 needed = total - t.received + m_diskMargin;
        if (storage.bytesAvailable() < needed) {
            fail(t, QStringLiteral("not enough disk space for %1: it needs %2 more, %3 has %4 free")
                        .arg(t.name(), formatBytes(needed), storage.rootPath(),
                             formatBytes(storage.bytesAvailable())));
            return false;
        }
        return true;
    }

    void sendRequest(Task& t) {
        QNetworkRequest request(t.url);
        request.setRawHeader("Accept-Encoding", "identity"); // byte ranges of the file itself
        if (t.received > 0) request.setRawHeader("Range", "bytes=" + QByteArray::number(t.received) + "-");
        if (!m_token.isEmpty() && t.url.host() == m_tokenHost)
            request.setRawHeader("Authorization", "Bearer " + m_token.toUtf8());
        t.responseChecked = false;
        t.discardBody = false;
        t.lastData.start();
        QNetworkReply* reply = m_network->get(request);
        reply->setReadBufferSize(4 << 20);
        t.reply = reply;
        const quint64 id = t.id;
        connect(reply, &QNetworkReply::readyRead, this, [this, id, reply] {
            Task* task = find(id);
            if (task && task->reply == reply) onData(*task);
        });
        connect(reply, &QNetworkReply::finished, this, [this, id, reply] {
            Task* task = find(id);
            if (task && task->reply == reply) onFinished(*task);
        });
    }

    // Looks at the status once the headers are in; false when the transfer must not go on.
    bool checkResponse(Task& t) {
        if (t.responseChecked) return true;
        t.responseChecked = true;
        const int status = t.reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        if (status < 200 || status >= 300) {
            t.discardBody = true; // redirects and errors are handled when the reply finishes
            return true;
        }
        if (status == 206) {
            static const QRegularExpression range(QStringLiteral(R"(bytes\s+(\d+)-(\d+)/(\d+|\*))"));
            const auto m = range.match(QString::fromLatin1(t.reply->rawHeader("Content-Range")));
            if (!m.hasMatch() || m.captured(1).toLongLong() != t.received) {
                // Not the range we asked for: start over from the first byte.
                spdlog::warn("download {}: unexpected Content-Range '{}'; starting over",
                             t.name().toStdString(), t.reply->rawHeader("Content-Range").toStdString());
                truncate(t);
                restartSoon(t);
                return false;
            }
            if (m.captured(3) != QStringLiteral("*")) t.total = m.captured(3).toLongLong();
        } else {
            if (t.received > 0) {
                // The server ignored the Range header and sends the whole file.
                spdlog::info("download {}: the server ignored Range; starting from byte 0",
                             t.name().toStdString());
                truncate(t);
            }
            const QVariant length = t.reply->header(QNetworkRequest::ContentLengthHeader);
            if (length.isValid()) t.total = length.toLongLong();
        }
        if (t.request.expectedSize > 0 && t.total > 0 && t.total != t.request.expectedSize) {
            fail(t, QStringLiteral("the server offers %1 bytes, but %2 bytes were expected")
                        .arg(t.total)
                        .arg(t.request.expectedSize));
            return false;
        }
        return checkDiskSpace(t, t.total);
    }

    void onData(Task& t) {
        if (!checkResponse(t)) return;
        const QByteArray chunk = t.reply->readAll();
        if (chunk.isEmpty() || t.discardBody) return;
        t.lastData.restart();
        if (t.file.write(chunk) != chunk.size())
            return fail(t, QStringLiteral("cannot write %1: %2").arg(t.partPath(), t.file.errorString()));
        t.hash.addData(chunk);
        t.received += chunk.size();
        const qint64 ms = t.clock.elapsed();
        t.samples.emplace_back(ms, t.received);
        while (t.samples.size() > 2 && ms - t.samples.front().first > kSpeedWindowMs) t.samples.pop_front();
        if (t.total > 0 && t.received > t.total)
            return fail(t, QStringLiteral("the server sent more than the %1 bytes announced").arg(t.total));
        if (!t.lastProgress.isValid() || t.lastProgress.elapsed() >= kProgressIntervalMs) emitProgress(t);
    }

    void onFinished(Task& t) {
        QNetworkReply* reply = t.reply;
        if (checkResponse(t)) onData(t); // whatever is left in the buffer
        if (t.reply != reply) return;    // the checks above replaced or dropped the transfer
        t.reply = nullptr;
        reply->deleteLater();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        if (status >= 300 && status < 400) {
            const QUrl location = reply->attribute(QNetworkRequest::RedirectionTargetAttribute).toUrl();
            if (!location.isValid() || ++t.redirects > kMaxRedirects)
                return fail(t, QStringLiteral("too many or broken redirects from %1").arg(t.request.url.host()));
            t.url = t.url.resolved(location);
            sendRequest(t);
            return;
        }
        if (status == 416 && t.received > 0) {
            // Nothing beyond what we have: either it is complete, or our part is not this file.
            if (t.request.expectedSize > 0 && t.received == t.request.expectedSize) {
                t.total = t.received;
                return finish(t);
            }
            truncate(t);
            return retryLater(t, QStringLiteral("the server refused the range; starting over"));
        }
        // The file was coming (a 2xx) and the connection broke: go on from where it ended.
        if (status >= 200 && status < 300 && isRetryableNetworkError(reply->error()))
            return retryLater(t, QStringLiteral("the connection ended after %1 of %2 bytes (%3)")
                                     .arg(t.received)
                                     .arg(t.total)
                                     .arg(reply->errorString()));
        const QString error = describeReplyError(reply, QStringLiteral("downloading %1").arg(t.name()));
        if (!error.isEmpty()) {
            const bool retryable = status > 0 ? isRetryableStatus(status) : isRetryableNetworkError(reply->error());
            if (retryable) return retryLater(t, error);
            return fail(t, error);
        }
        if (t.total >= 0 && t.received < t.total)
            return retryLater(t, QStringLiteral("the connection ended after %1 of %2 bytes")
                                     .arg(t.received)
                                     .arg(t.total));
        finish(t);
    }

    // Verifies the hash and gives the file its final name.
    void finish(Task& t) {
        emitProgress(t);
        setState(t, DownloadState::Verifying);
        if (t.file.isOpen()) {
            t.file.flush();
#ifdef Q_OS_UNIX
            ::fsync(t.file.handle());
#endif
            t.file.close();
        }
        const QString actual = QString::fromLatin1(t.hash.result().toHex());
        if (!t.request.expectedSha256.isEmpty() && actual != t.request.expectedSha256) {
            QFile::remove(t.partPath());
            t.hashValid = false;
            t.received = 0;
            return fail(t, QStringLiteral("%1 is corrupt: its SHA-256 is %2, expected %3. The download "
                                          "was deleted; try again.")
                               .arg(t.name(), actual, t.request.expectedSha256));
        }
        if (!QFile::rename(t.partPath(), t.request.destination))
            return fail(t, QStringLiteral("cannot rename %1 to %2").arg(t.partPath(), t.request.destination));
        spdlog::info("download {}: complete, {} bytes, sha256 {}", t.name().toStdString(), t.received,
                     actual.toStdString());
        setState(t, DownloadState::Completed);
        toManager([id = t.id, path = t.request.destination](DownloadManager* m) { Q_EMIT m->completed(id, path); });
        m_tasks.erase(t.id); // `t` is gone from here on
        schedule();
    }

    void retryLater(Task& t, const QString& reason) {
        detach(t);
        if (t.received > t.receivedAtStart) t.failures = 0; // it got somewhere: a fresh budget
        if (t.failures >= m_policy.maxRetries)
            return fail(t, QStringLiteral("%1 (gave up after %2 retries)").arg(reason).arg(t.failures));
        const int delay = int(std::min<qint64>(qint64(m_policy.initialDelayMs) << std::min(t.failures, 20),
                                               m_policy.maxDelayMs));
        ++t.failures;
        spdlog::info("download {}: {}; retry {} in {} ms", t.name().toStdString(), reason.toStdString(),
                     t.failures, delay);
        setState(t, DownloadState::Retrying);
        toManager([id = t.id, n = t.failures, delay, reason](DownloadManager* m) {
            Q_EMIT m->retrying(id, n, delay, reason);
        });
        t.retryTimer = new QTimer(this);
        t.retryTimer->setSingleShot(true);
        const quint64 id = t.id;
        connect(t.retryTimer, &QTimer::timeout, this, [this, id] {
            Task* task = find(id);
            if (!task || task->state != DownloadState::Retrying) return;
            task->retryTimer->deleteLater();
            task->retryTimer = nullptr;
            setState(*task, DownloadState::Queued);
            schedule();
        });
        t.retryTimer->start(delay);
        schedule();
    }

    // After a bad answer seen while reading: drop this transfer and ask again at once.
    void restartSoon(Task& t) {
        detach(t);
        if (!t.file.open(QIODevice::ReadWrite | QIODevice::Append))
            return fail(t, QStringLiteral("cannot write %1: %2").arg(t.partPath(), t.file.errorString()));
        t.url = t.request.url;
        t.redirects = 0;
        const quint64 id = t.id;
        QTimer::singleShot(0, this, [this, id] {
            Task* task = find(id);
            if (task && task->state == DownloadState::Running && !task->reply) sendRequest(*task);
        });
    }

    // Stall detection and regular progress.
    void tick() {
        std::vector<quint64> stalled;
        for (auto& [id, t] : m_tasks) {
            if (t->state != DownloadState::Running || !t->reply) continue;
            if (t->lastData.isValid() && t->lastData.elapsed() > m_policy.stallTimeoutMs) stalled.push_back(id);
            else if (!t->lastProgress.isValid() || t->lastProgress.elapsed() >= kProgressIntervalMs)
                emitProgress(*t);
        }
        for (quint64 id : stalled)
            if (Task* t = find(id))
                retryLater(*t, QStringLiteral("no data for %1 s").arg(m_policy.stallTimeoutMs / 1000.0));
    }

    DownloadManager* m_manager;
    QNetworkAccessManager* m_network = nullptr;
    QTimer* m_ticker = nullptr;
    std::map<quint64, std::unique_ptr<Task>> m_tasks;
    int m_maxParallel = 1;
    bool m_scheduling = false;
    bool m_scheduleAgain = false;
    DownloadRetryPolicy m_policy;
    qint64 m_diskMargin = 256ll << 20;
    QString m_token;
    QString m_tokenHost;
};

} // namespace detail

DownloadManager::DownloadManager(QObject* parent) : QObject(parent) {
    qRegisterMetaType<DownloadState>();
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("hearth-downloads"));
    m_worker = new detail::DownloadWorker(this);
    m_worker->moveToThread(m_thread);
    m_thread->start();
    toWorker([](detail::DownloadWorker* w) { w->init(); });
}

DownloadManager::~DownloadManager() {
    toWorker([](detail::DownloadWorker* w) {
        w->shutdown();
        QThread::currentThread()->quit();
    });
    m_thread->wait();
    delete m_worker; // its timers and network manager went on its own thread
}

template <typename F> void DownloadManager::toWorker(F&& f) {
    detail::DownloadWorker* w = m_worker;
    QMetaObject::invokeMethod(w, [w, fn = std::forward<F>(f)]() mutable { fn(w); }, Qt::QueuedConnection);
}

quint64 DownloadManager::enqueue(const DownloadRequest& request) { return add(request, false); }

quint64 DownloadManager::add(const DownloadRequest& request, bool paused) {
    const quint64 id = m_nextId++;
    m_states[id] = paused ? DownloadState::Paused : DownloadState::Queued;
    m_requests.insert(id, request);
    writeQueue();
    toWorker([id, request, paused](detail::DownloadWorker* w) { w->add(id, request, paused); });
    return id;
}

void DownloadManager::noteState(quint64 id, DownloadState state) {
    const DownloadState before = m_states.value(id, DownloadState::Queued);
    m_states[id] = state;
    if (state == DownloadState::Completed || state == DownloadState::Cancelled) {
        if (m_requests.remove(id)) writeQueue();
    } else if ((state == DownloadState::Paused) != (before == DownloadState::Paused) ||
               (state == DownloadState::Failed) != (before == DownloadState::Failed)) {
        writeQueue(); // whether it waits for the user changed
    }
}

void DownloadManager::setQueueFile(const QString& path) {
    m_queueFile = path;
    if (!m_requests.isEmpty()) writeQueue();
}

QList<quint64> DownloadManager::restoreQueue(QString* error) {
    QList<quint64> ids;
    if (m_restored || m_queueFile.isEmpty()) return ids;
    m_restored = true;
    QList<QueuedDownload> queue;
    if (!readDownloadQueue(m_queueFile, &queue, error)) return ids;
    for (const QueuedDownload& d : queue) {
        bool known = false; // enqueued again already in this run
        for (const DownloadRequest& r : std::as_const(m_requests)) known = known || r.destination == d.request.destination;
        if (known) continue;
        if (QFileInfo::exists(d.request.destination)) continue; // finished after the file was written
        ids << add(d.request, d.paused);
    }
    writeQueue();
    return ids;
}

quint64 DownloadManager::unfinishedFor(const QString& destination) const {
    const QString wanted = QFileInfo(destination).absoluteFilePath();
    for (auto it = m_requests.begin(); it != m_requests.end(); ++it)
        if (QFileInfo(it.value().destination).absoluteFilePath() == wanted) return it.key();
    return 0;
}

void DownloadManager::writeQueue() {
    if (m_queueFile.isEmpty()) return;
    QList<quint64> ids = m_requests.keys();
    std::sort(ids.begin(), ids.end());
    QList<QueuedDownload> queue;
    for (quint64 id : ids) {
        const DownloadState s = m_states.value(id, DownloadState::Queued);
        queue.append({m_requests.value(id), s == DownloadState::Paused || s == DownloadState::Failed});
    }
    QString error;
    if (!writeDownloadQueue(m_queueFile, queue, &error)) spdlog::warn("downloads: {}", error.toStdString());
}

void DownloadManager::pause(quint64 id) {
    toWorker([id](detail::DownloadWorker* w) { w->pause(id); });
}

void DownloadManager::resume(quint64 id) {
    toWorker([id](detail::DownloadWorker* w) { w->resume(id); });
}

void DownloadManager::cancel(quint64 id) {
    toWorker([id](detail::DownloadWorker* w) { w->cancel(id); });
}

void DownloadManager::setMaxParallel(int n) {
    m_maxParallel = std::max(1, n);
    toWorker([n = m_maxParallel](detail::DownloadWorker* w) { w->setMaxParallel(n); });
}

void DownloadManager::setRetryPolicy(const DownloadRetryPolicy& policy) {
    toWorker([policy](detail::DownloadWorker* w) { w->setPolicy(policy); });
}

void DownloadManager::setDiskMargin(qint64 bytes) {
    toWorker([bytes](detail::DownloadWorker* w) { w->setDiskMargin(bytes); });
}

void DownloadManager::setAccessToken(const QString& token, const QString& host) {
    toWorker([token, host](detail::DownloadWorker* w) { w->setAccessToken(token, host); });
}

} // namespace hearth::app
