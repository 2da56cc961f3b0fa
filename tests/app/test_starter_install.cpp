// StarterInstall against a stand-in hub on loopback: the starter's file is found, downloaded and
// checked; a second run finds it already there; a split model arrives in all its parts; a missing
// file, a corrupted download and an unreachable hub each end with a clear failure.
#include "services/starter_install.h"

#include "services/download_manager.h"

#include "test_hub.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth::app;
using hearth::test::TestHub;

namespace {

StarterModel tinyStarter(const QString& pattern = QStringLiteral("tiny-q4_k_m.gguf")) {
    StarterModel s;
    s.repo = QStringLiteral("acme/tiny-GGUF");
    s.title = QStringLiteral("Tiny");
    s.filePattern = pattern;
    s.quantization = QStringLiteral("Q4_K_M");
    return s;
}

QByteArray starterFileBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestStarterInstall : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void downloadsTheNamedVariant() {
        TestHub hub;
        const std::string wanted = TestHub::makeContent(200000, 7);
        hub.addFile("acme/tiny-GGUF", "tiny-Q4_K_M.gguf", {wanted, {}, {}});
        hub.addFile("acme/tiny-GGUF", "tiny-Q8_0.gguf", {TestHub::makeContent(300000, 8), {}, {}});
        QTemporaryDir folder;
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        DownloadManager downloads;
        StarterInstall install(&client, &downloads, folder.path());
        QSignalSpy done(&install, &StarterInstall::finished);
        QSignalSpy failed(&install, &StarterInstall::failed);
        QSignalSpy progress(&install, &StarterInstall::progress);
        install.start(tinyStarter());
        QVERIFY(install.isBusy());
        QVERIFY(done.wait(20000));
        QVERIFY(failed.isEmpty());
        const QString path = done.first().first().toString();
        QCOMPARE(path, folder.filePath(QStringLiteral("tiny-Q4_K_M.gguf")));
        QCOMPARE(starterFileBytes(path), QByteArray::fromStdString(wanted));
        QVERIFY(!QFile::exists(folder.filePath(QStringLiteral("tiny-Q8_0.gguf"))));
        QVERIFY(progress.count() >= 2);
        QCOMPARE(progress.last().at(2).toLongLong(), qint64(wanted.size()));
        QVERIFY(!install.isBusy());

        // Again: the file is there, nothing is downloaded.
        const size_t before = hub.downloads().size();
        install.start(tinyStarter());
        QVERIFY(done.wait(10000));
        QCOMPARE(hub.downloads().size(), before);
    }

    void splitModelAllParts() {
        TestHub hub;
        hub.addFile("acme/tiny-GGUF", "big-Q4_K_M-00001-of-00002.gguf", {TestHub::makeContent(5000, 1), {}, {}});
        hub.addFile("acme/tiny-GGUF", "big-Q4_K_M-00002-of-00002.gguf", {TestHub::makeContent(6000, 2), {}, {}});
        QTemporaryDir folder;
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        DownloadManager downloads;
        StarterInstall install(&client, &downloads, folder.path());
        QSignalSpy done(&install, &StarterInstall::finished);
        install.start(tinyStarter(QStringLiteral("big-q4_k_m-*.gguf")));
        QVERIFY(done.wait(20000));
        QCOMPARE(done.first().first().toString(), folder.filePath(QStringLiteral("big-Q4_K_M-00001-of-00002.gguf")));
        QVERIFY(QFile::exists(folder.filePath(QStringLiteral("big-Q4_K_M-00002-of-00002.gguf"))));
    }

    void failuresSayWhy() {
        TestHub hub;
        hub.addFile("acme/tiny-GGUF", "tiny-Q8_0.gguf", {TestHub::makeContent(1000), {}, {}});
        QTemporaryDir folder;
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        DownloadManager downloads;
        DownloadRetryPolicy quick;
        quick.maxRetries = 0;
        quick.initialDelayMs = 10;
        downloads.setRetryPolicy(quick);
        StarterInstall install(&client, &downloads, folder.path());
        QSignalSpy failed(&install, &StarterInstall::failed);
        // No such variant in the repository.
        install.start(tinyStarter(QStringLiteral("tiny-q2_k.gguf")));
        QVERIFY(failed.wait(10000));
        QVERIFY2(failed.last().first().toString().contains(QStringLiteral("no file matching")),
                 qPrintable(failed.last().first().toString()));
        QVERIFY(!install.isBusy());

        // A download whose bytes do not match the hub's SHA-256.
        hub.addFile("acme/tiny-GGUF", "tiny-Q4_K_M.gguf", {TestHub::makeContent(4000), {}, TestHub::makeContent(4000, 9)});
        install.start(tinyStarter());
        QVERIFY(failed.wait(20000));
        QVERIFY2(failed.last().first().toString().contains(QStringLiteral("SHA-256"), Qt::CaseInsensitive),
                 qPrintable(failed.last().first().toString()));
        QVERIFY(!QFile::exists(folder.filePath(QStringLiteral("tiny-Q4_K_M.gguf"))));

        // The hub cannot be reached.
        client.setBaseUrl(QUrl(QStringLiteral("http://127.0.0.1:1")));
        install.start(tinyStarter());
        QVERIFY(failed.wait(20000));
        QVERIFY(!failed.last().first().toString().isEmpty());
        QVERIFY(!install.isBusy());
    }
};

QTEST_GUILESS_MAIN(TestStarterInstall)
#include "test_starter_install.moc"
