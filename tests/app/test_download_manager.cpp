// DownloadManager against the local stand-in hub: search -> tree -> quant -> verified download,
// pause and resume with a Range request, continuing a .part from an earlier run, servers that
// ignore Range, stall or fail, corrupt data, cancel, the parallel limit and the disk-space check;
// the queue file that makes downloads resume by themselves after a restart.
#include "services/download_manager.h"
#include "services/download_queue_store.h"
#include "services/hub_client.h"

#include "test_hub.h"
#include "test_support.h"

#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth::app;
using hearth::test::TestHub;

namespace {

const std::string kRepo = "acme/tiny-GGUF";

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeFile(const QString& path, const std::string& data) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(data.data(), qint64(data.size())), qint64(data.size()));
}

DownloadRequest requestFor(const TestHub& hub, const QString& dir, const std::string& path,
                           const std::string& content) {
    DownloadRequest r;
    HubClient client;
    client.setBaseUrl(hub.baseUrl());
    r.url = client.downloadUrl(QString::fromStdString(kRepo), QString::fromStdString(path));
    r.destination = dir + QLatin1Char('/') + QString::fromStdString(path);
    r.expectedSha256 = QString::fromStdString(TestHub::sha256(content));
    r.expectedSize = qint64(content.size());
    return r;
}

DownloadRetryPolicy fastPolicy() {
    DownloadRetryPolicy p;
    p.initialDelayMs = 20;
    p.maxDelayMs = 200;
    p.stallTimeoutMs = 400;
    p.maxRetries = 4;
    return p;
}

struct Watch {
    explicit Watch(DownloadManager& m)
        : completed(&m, &DownloadManager::completed), failed(&m, &DownloadManager::failed),
          states(&m, &DownloadManager::stateChanged), progress(&m, &DownloadManager::progress),
          retrying(&m, &DownloadManager::retrying) {}
    QSignalSpy completed, failed, states, progress, retrying;

    bool waitDone(int timeoutMs = 15000) {
        QElapsedTimer t;
        t.start();
        while (completed.isEmpty() && failed.isEmpty() && t.elapsed() < timeoutMs) completed.wait(20);
        if (!failed.isEmpty()) qWarning() << "download failed:" << failed.first().at(1).toString();
        return !completed.isEmpty();
    }
    qint64 lastReceived() const { return progress.isEmpty() ? 0 : progress.last().at(1).toLongLong(); }
};

} // namespace

class TestDownloadManager : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void searchTreeQuantDownload() {
        TestHub hub;
        const std::string q4 = TestHub::makeContent(300 * 1024, 4);
        const std::string q8 = TestHub::makeContent(500 * 1024, 8);
        hub.addFile(kRepo, "tiny-Q4_K_M.gguf", {q4});
        hub.addFile(kRepo, "tiny-Q8_0.gguf", {q8});
        QTemporaryDir dir;

        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        QSignalSpy found(&client, &HubClient::searchFinished);
        client.searchModels(QStringLiteral("tiny"));
        QVERIFY(found.wait(10000));
        const QString repo = found.first().at(1).value<QList<HubModel>>().first().id;
        QCOMPARE(repo, QString::fromStdString(kRepo));
        QSignalSpy listed(&client, &HubClient::filesListed);
        client.listFiles(repo);
        QVERIFY(listed.wait(10000));
        const auto options = HubClient::groupByQuantization(listed.first().at(2).value<QList<HubFile>>());
        QCOMPARE(options.size(), 2);
        const QuantOption pick = options.first();
        QCOMPARE(pick.quantization, QStringLiteral("Q4_K_M"));
        const HubFile f = pick.files.first();

        DownloadManager manager;
        Watch w(manager);
        DownloadRequest r;
        r.url = client.downloadUrl(repo, f.path);
        r.destination = dir.filePath(f.path);
        r.expectedSha256 = f.sha256;
        r.expectedSize = f.size;
        const quint64 id = manager.enqueue(r);
        QCOMPARE(manager.state(id), DownloadState::Queued);
        QVERIFY(w.waitDone());
        QCOMPARE(w.completed.first().at(0).toULongLong(), id);
        QCOMPARE(w.completed.first().at(1).toString(), r.destination);
        QCOMPARE(readAll(r.destination), QByteArray::fromStdString(q4));
        QVERIFY(!QFile::exists(r.destination + QStringLiteral(".part")));
        QCOMPARE(manager.state(id), DownloadState::Completed);
        QVERIFY(!w.progress.isEmpty());
        QCOMPARE(w.progress.last().at(1).toLongLong(), qint64(q4.size()));
        QCOMPARE(w.progress.last().at(2).toLongLong(), qint64(q4.size()));
        QList<DownloadState> seen;
        for (const auto& a : w.states) seen << a.at(1).value<DownloadState>();
        QCOMPARE(seen, (QList<DownloadState>{DownloadState::Queued, DownloadState::Running,
                                             DownloadState::Verifying, DownloadState::Completed}));
        QCOMPARE(hub.downloads().size(), size_t(1));
        QVERIFY(hub.downloads().front().range.empty());
    }

    void pauseAndResumeWithRange() {
        TestHub hub;
        const std::string content = TestHub::makeContent(1024 * 1024, 2);
        hub.addFile(kRepo, "slow-Q4_0.gguf", {content});
        hub.chunkBytes = 16 * 1024;
        hub.chunkDelayMs = 10; // about 1.6 MB/s: slow enough to pause in the middle
        QTemporaryDir dir;
        DownloadManager manager;
        manager.setRetryPolicy(fastPolicy());
        Watch w(manager);
        const DownloadRequest r = requestFor(hub, dir.path(), "slow-Q4_0.gguf", content);
        const quint64 id = manager.enqueue(r);
        QTRY_VERIFY_WITH_TIMEOUT(w.lastReceived() >= 200 * 1024, 10000);
        manager.pause(id);
        const auto& p = w.progress.last();
        QCOMPARE(p.at(2).toLongLong(), qint64(content.size()));
        QVERIFY2(p.at(3).toDouble() > 10000.0, qPrintable(QString::number(p.at(3).toDouble()))); // bytes/s
        QVERIFY(p.at(4).toInt() >= 0); // ETA in seconds
        QTRY_COMPARE_WITH_TIMEOUT(manager.state(id), DownloadState::Paused, 5000);
        const qint64 partSize = QFileInfo(r.destination + QStringLiteral(".part")).size();
        QVERIFY2(partSize >= 200 * 1024 && partSize < qint64(content.size()), qPrintable(QString::number(partSize)));
        QTest::qWait(100);
        QCOMPARE(QFileInfo(r.destination + QStringLiteral(".part")).size(), partSize); // nothing more written
        QCOMPARE(w.lastReceived(), partSize);
        QVERIFY(!QFile::exists(r.destination));

        hub.chunkDelayMs = 0;
        manager.resume(id);
        QVERIFY(w.waitDone());
        QCOMPARE(readAll(r.destination), QByteArray::fromStdString(content));
        const auto downloads = hub.downloads();
        QCOMPARE(downloads.size(), size_t(2));
        QVERIFY(downloads[0].range.empty());
        QCOMPARE(downloads[1].range, "bytes=" + std::to_string(partSize) + "-");
    }

    void continuesPartFromEarlierRun() {
        TestHub hub;
        const std::string content = TestHub::makeContent(400 * 1024, 3);
        hub.addFile(kRepo, "m-Q5_K_M.gguf", {content});
        QTemporaryDir dir;
        const DownloadRequest r = requestFor(hub, dir.path(), "m-Q5_K_M.gguf", content);
        writeFile(r.destination + QStringLiteral(".part"), content.substr(0, 123457)); // left by a crash
        DownloadManager manager;
        Watch w(manager);
        manager.enqueue(r);
        QVERIFY(w.waitDone());
        QCOMPARE(readAll(r.destination), QByteArray::fromStdString(content));
        QCOMPARE(hub.downloads().size(), size_t(1));
        QCOMPARE(hub.downloads().front().range, std::string("bytes=123457-"));

        // A complete .part that was never renamed needs no request at all.
        const std::string other = TestHub::makeContent(1000, 9);
        hub.addFile(kRepo, "done-Q8_0.gguf", {other});
        const DownloadRequest r2 = requestFor(hub, dir.path(), "done-Q8_0.gguf", other);
        writeFile(r2.destination + QStringLiteral(".part"), other);
        Watch w2(manager);
        manager.enqueue(r2);
        QVERIFY(w2.waitDone());
        QCOMPARE(hub.downloads().size(), size_t(1));
        QCOMPARE(readAll(r2.destination), QByteArray::fromStdString(other));
    }

    void serverIgnoringRangeStartsOver() {
        TestHub hub;
        hub.ignoreRange = true;
        const std::string content = TestHub::makeContent(300 * 1024, 5);
        hub.addFile(kRepo, "m-Q6_K.gguf", {content});
        QTemporaryDir dir;
        const DownloadRequest r = requestFor(hub, dir.path(), "m-Q6_K.gguf", content);
        writeFile(r.destination + QStringLiteral(".part"), std::string(100000, 'x')); // wrong bytes too
        DownloadManager manager;
        Watch w(manager);
        manager.enqueue(r);
        QVERIFY(w.waitDone());
        QCOMPARE(readAll(r.destination), QByteArray::fromStdString(content));
        QCOMPARE(hub.downloads().front().range, std::string("bytes=100000-"));
    }

    void corruptFileIsRejected() {
        TestHub hub;
        const std::string content = TestHub::makeContent(200 * 1024, 6);
        std::string bad = content;
        bad[150000] = char(bad[150000] ^ 0x20);
        hub.addFile(kRepo, "m-Q4_K_S.gguf", {content, "", bad});
        QTemporaryDir dir;
        const DownloadRequest r = requestFor(hub, dir.path(), "m-Q4_K_S.gguf", content);
        DownloadManager manager;
        Watch w(manager);
        const quint64 id = manager.enqueue(r);
        QVERIFY(!w.waitDone());
        QCOMPARE(w.failed.size(), 1);
        const QString msg = w.failed.first().at(1).toString();
        QVERIFY2(msg.contains(QStringLiteral("SHA-256")) && msg.contains(r.expectedSha256), qPrintable(msg));
        QCOMPARE(manager.state(id), DownloadState::Failed);
        QVERIFY(!QFile::exists(r.destination));
        QVERIFY(!QFile::exists(r.destination + QStringLiteral(".part")));
    }

    // A transfer that stops sending (a stall) or whose connection closes mid-body after a 200 and
    // its Content-Length (a cut) is retried from where it ended.
    void interruptedTransferIsResumed_data() {
        QTest::addColumn<bool>("cut");
        QTest::newRow("stalled") << false;
        QTest::newRow("connection closed") << true;
    }
    void interruptedTransferIsResumed() {
        QFETCH(bool, cut);
        TestHub hub;
        const std::string content = TestHub::makeContent(300 * 1024, 7);
        hub.addFile(kRepo, "m-IQ4_XS.gguf", {content});
        (cut ? hub.cutRequests : hub.stallRequests) = 1;
        (cut ? hub.cutAfter : hub.stallAfter) = 100000;
        QTemporaryDir dir;
        const DownloadRequest r = requestFor(hub, dir.path(), "m-IQ4_XS.gguf", content);
        DownloadManager manager;
        manager.setRetryPolicy(fastPolicy());
        Watch w(manager);
        manager.enqueue(r);
        QVERIFY(w.waitDone());
        QCOMPARE(readAll(r.destination), QByteArray::fromStdString(content));
        QCOMPARE(w.retrying.size(), 1);
        const QString reason = w.retrying.first().at(3).toString();
        QVERIFY2(reason.contains(cut ? QStringLiteral("ended after 100000") : QStringLiteral("no data")), qPrintable(reason));
        const auto downloads = hub.downloads();
        QCOMPARE(downloads.size(), size_t(2));
        QCOMPARE(downloads[1].range, std::string("bytes=100000-"));
    }

    void serverErrorsAreRetriedClientErrorsAreNot() {
        TestHub hub;
        const std::string content = TestHub::makeContent(50 * 1024, 8);
        hub.addFile(kRepo, "m-Q3_K_L.gguf", {content});
        hub.failRequests = 2;
        QTemporaryDir dir;
        DownloadManager manager;
        manager.setRetryPolicy(fastPolicy());
        Watch w(manager);
        const DownloadRequest r = requestFor(hub, dir.path(), "m-Q3_K_L.gguf", content);
        manager.enqueue(r);
        QVERIFY(w.waitDone());
        QCOMPARE(w.retrying.size(), 2);
        QCOMPARE(w.retrying.at(1).at(2).toInt(), 40); // backoff doubles: 20, 40
        QCOMPARE(readAll(r.destination), QByteArray::fromStdString(content));

        Watch w2(manager);
        DownloadRequest missing = requestFor(hub, dir.path(), "absent.gguf", content);
        manager.enqueue(missing);
        QVERIFY(!w2.waitDone());
        QVERIFY(w2.retrying.isEmpty());
        QVERIFY(w2.failed.first().at(1).toString().contains(QStringLiteral("404")));

        // Retries run out when a server keeps failing.
        hub.failRequests = 100;
        Watch w3(manager);
        DownloadRequest again = requestFor(hub, dir.path(), "m-Q3_K_L.gguf", content);
        again.destination = dir.filePath(QStringLiteral("copy.gguf"));
        manager.enqueue(again);
        QVERIFY(!w3.waitDone());
        QCOMPARE(w3.retrying.size(), fastPolicy().maxRetries);
        QVERIFY(w3.failed.first().at(1).toString().contains(QStringLiteral("gave up")));
    }

    void cancelDeletesThePart() {
        TestHub hub;
        const std::string content = TestHub::makeContent(1024 * 1024, 10);
        hub.addFile(kRepo, "c-Q4_K_M.gguf", {content});
        hub.chunkBytes = 16 * 1024;
        hub.chunkDelayMs = 10;
        QTemporaryDir dir;
        DownloadManager manager;
        Watch w(manager);
        const DownloadRequest r = requestFor(hub, dir.path(), "c-Q4_K_M.gguf", content);
        const quint64 id = manager.enqueue(r);
        QTRY_VERIFY_WITH_TIMEOUT(w.lastReceived() > 64 * 1024, 10000);
        manager.cancel(id);
        QTRY_COMPARE_WITH_TIMEOUT(manager.state(id), DownloadState::Cancelled, 5000);
        QVERIFY(!QFile::exists(r.destination + QStringLiteral(".part")));
        QVERIFY(!QFile::exists(r.destination));
        QVERIFY(w.completed.isEmpty());
    }

    void parallelLimit() {
        TestHub hub;
        hub.chunkBytes = 32 * 1024;
        hub.chunkDelayMs = 5;
        QTemporaryDir dir;
        std::vector<std::string> contents;
        for (int i = 0; i < 4; ++i) {
            contents.push_back(TestHub::makeContent(128 * 1024, 20 + i));
            hub.addFile(kRepo, "p" + std::to_string(i) + "-Q8_0.gguf", {contents.back()});
        }
        for (int limit : {1, 2}) {
            DownloadManager manager;
            manager.setMaxParallel(limit);
            int running = 0, peak = 0;
            QHash<quint64, DownloadState> last;
            connect(&manager, &DownloadManager::stateChanged, this, [&](quint64 id, DownloadState s) {
                if (last.value(id) == DownloadState::Running) --running;
                if (s == DownloadState::Running) ++running;
                last[id] = s;
                peak = std::max(peak, running);
            });
            QSignalSpy completed(&manager, &DownloadManager::completed);
            const QString sub = dir.filePath(QString::number(limit));
            for (int i = 0; i < 4; ++i)
                manager.enqueue(requestFor(hub, sub, "p" + std::to_string(i) + "-Q8_0.gguf", contents[size_t(i)]));
            QTRY_COMPARE_WITH_TIMEOUT(completed.size(), 4, 20000);
            QCOMPARE(peak, limit);
        }
    }

    void refusesWhenTheDiskIsTooSmall() {
        TestHub hub;
        hub.addFile(kRepo, "huge-F32.gguf", {TestHub::makeContent(1000)});
        QTemporaryDir dir;
        DownloadManager manager;
        Watch w(manager);
        DownloadRequest r = requestFor(hub, dir.path(), "huge-F32.gguf", TestHub::makeContent(1000));
        r.expectedSize = qint64(1) << 60; // an exabyte
        manager.enqueue(r);
        QVERIFY(!w.waitDone());
        QVERIFY2(w.failed.first().at(1).toString().contains(QStringLiteral("not enough disk space")),
                 qPrintable(w.failed.first().at(1).toString()));
        QVERIFY(hub.downloads().empty());
    }

    void tokenGoesToTheHubHost() {
        TestHub hub;
        hub.requireToken = true;
        const std::string content = TestHub::makeContent(10000, 11);
        hub.addFile(kRepo, "gated-Q4_K_M.gguf", {content});
        QTemporaryDir dir;
        DownloadManager manager;
        Watch w(manager);
        manager.enqueue(requestFor(hub, dir.path(), "gated-Q4_K_M.gguf", content));
        QVERIFY(!w.waitDone());
        QVERIFY(w.failed.first().at(1).toString().contains(QStringLiteral("401")));

        manager.setAccessToken(QStringLiteral("secret"), QStringLiteral("127.0.0.1"));
        Watch w2(manager);
        manager.enqueue(requestFor(hub, dir.path(), "gated-Q4_K_M.gguf", content));
        QVERIFY(w2.waitDone());
        QCOMPARE(hub.downloads().back().authorization, std::string("Bearer secret"));
    }

    // A restart mid-download: the queue file brings the download back, it continues its .part
    // with a Range request and completes with the right SHA-256; the file is then emptied.
    void resumesByItselfAfterARestart() {
        TestHub hub;
        const std::string content = TestHub::makeContent(2 * 1024 * 1024, 21); // seconds at this pace: stopped well before the end
        hub.addFile(kRepo, "restart-Q4_K_M.gguf", {content});
        hub.chunkBytes = 16 * 1024;
        hub.chunkDelayMs = 10;
        QTemporaryDir dir;
        const QString queueFile = dir.filePath(QStringLiteral("state/.hearth-downloads.json"));
        const DownloadRequest r = requestFor(hub, dir.path(), "restart-Q4_K_M.gguf", content);
        qint64 partSize = 0;
        {
            DownloadManager first;
            first.setQueueFile(queueFile);
            Watch w(first);
            first.enqueue(r);
            QTRY_VERIFY_WITH_TIMEOUT(w.lastReceived() >= 128 * 1024, 10000);
            QList<QueuedDownload> saved;
            QVERIFY(readDownloadQueue(queueFile, &saved));
            QCOMPARE(saved.size(), 1);
            QCOMPARE(saved.front().request.url, r.url);
            QCOMPARE(saved.front().request.destination, r.destination);
            QCOMPARE(saved.front().request.expectedSha256, r.expectedSha256);
            QCOMPARE(saved.front().request.expectedSize, r.expectedSize);
            QVERIFY(!saved.front().paused);
        } // the app quits (or dies) here, leaving the .part and the queue file
        partSize = QFileInfo(r.destination + QStringLiteral(".part")).size();
        QVERIFY2(partSize > 0 && partSize < qint64(content.size()), qPrintable(QString::number(partSize)));
        QCOMPARE(hub.downloads().size(), size_t(1));

        hub.chunkDelayMs = 0;
        DownloadManager second;
        Watch w(second);
        second.setQueueFile(queueFile);
        const QList<quint64> ids = second.restoreQueue();
        QCOMPARE(ids.size(), 1);
        QCOMPARE(second.request(ids.front()).destination, r.destination);
        QVERIFY(second.restoreQueue().isEmpty()); // once per run
        QVERIFY(w.waitDone());
        QCOMPARE(readAll(r.destination), QByteArray::fromStdString(content));
        const auto downloads = hub.downloads();
        QCOMPARE(downloads.size(), size_t(2));
        QVERIFY2(downloads[1].range.rfind("bytes=", 0) == 0 && downloads[1].range != "bytes=0-",
                 downloads[1].range.c_str());
        QVERIFY(std::stoll(downloads[1].range.substr(6)) >= partSize);
        QList<QueuedDownload> left;
        QTRY_VERIFY_WITH_TIMEOUT(readDownloadQueue(queueFile, &left) && left.isEmpty(), 5000);
    }

    // A paused download stays paused after a restart (no request until Resume); a cancelled
    // one is gone from the file.
    void pausedStaysPausedCancelledIsForgotten() {
        TestHub hub;
        const std::string content = TestHub::makeContent(1024 * 1024, 22);
        hub.addFile(kRepo, "p-Q4_K_M.gguf", {content});
        hub.addFile(kRepo, "c-Q4_K_M.gguf", {content});
        hub.chunkBytes = 16 * 1024;
        hub.chunkDelayMs = 10;
        QTemporaryDir dir;
        const QString queueFile = dir.filePath(QStringLiteral(".hearth-downloads.json"));
        const DownloadRequest paused = requestFor(hub, dir.path(), "p-Q4_K_M.gguf", content);
        const DownloadRequest cancelled = requestFor(hub, dir.path(), "c-Q4_K_M.gguf", content);
        {
            DownloadManager first;
            first.setQueueFile(queueFile);
            first.setMaxParallel(2);
            Watch w(first);
            const quint64 p = first.enqueue(paused);
            const quint64 c = first.enqueue(cancelled);
            QTRY_VERIFY_WITH_TIMEOUT(w.lastReceived() >= 32 * 1024, 10000);
            first.pause(p);
            first.cancel(c);
            QTRY_COMPARE_WITH_TIMEOUT(first.state(p), DownloadState::Paused, 5000);
            QTRY_COMPARE_WITH_TIMEOUT(first.state(c), DownloadState::Cancelled, 5000);
        }
        QList<QueuedDownload> saved;
        QVERIFY(readDownloadQueue(queueFile, &saved));
        QCOMPARE(saved.size(), 1);
        QVERIFY(saved.front().paused);
        const size_t requestsBefore = hub.downloads().size();

        hub.chunkDelayMs = 0;
        DownloadManager second;
        Watch w(second);
        second.setQueueFile(queueFile);
        const QList<quint64> ids = second.restoreQueue();
        QCOMPARE(ids.size(), 1);
        QTRY_COMPARE_WITH_TIMEOUT(second.state(ids.front()), DownloadState::Paused, 5000);
        QTest::qWait(200);
        QCOMPARE(hub.downloads().size(), requestsBefore);
        second.resume(ids.front());
        QVERIFY(w.waitDone());
        QCOMPARE(readAll(paused.destination), QByteArray::fromStdString(content));
        QVERIFY(!QFile::exists(cancelled.destination));
    }

    void queueFileErrors() {
        QTemporaryDir dir;
        QList<QueuedDownload> out;
        QVERIFY(readDownloadQueue(dir.filePath(QStringLiteral("missing.json")), &out)); // none yet
        QVERIFY(out.isEmpty());
        const QString bad = dir.filePath(QStringLiteral("bad.json"));
        writeFile(bad, "not json");
        QString error;
        QVERIFY(!readDownloadQueue(bad, &out, &error));
        QVERIFY(error.contains(QStringLiteral("bad.json")));
        DownloadManager manager;
        manager.setQueueFile(bad);
        error.clear();
        QVERIFY(manager.restoreQueue(&error).isEmpty());
        QVERIFY(!error.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestDownloadManager)
#include "test_download_manager.moc"
