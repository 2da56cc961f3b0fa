// Vision models from the hub, against the local stand-in hub: the listing pairs each quantization
// with the repository's projector (F16, BF16, F32, others; the smallest among equals; its own
// folder first); a download brings the model and its projector, and the library pairs the real
// files (a synthesized Gemma 3 and its projector); an identical projector is not fetched twice
// and a different one of the same name gets its own; a cut projector download resumes with a
// Range request; a model downloaded without its projector is offered it (origin recorded), a
// model of unknown origin is not.
#include "services/download_manager.h"
#include "services/hub_client.h"
#include "services/hub_downloads.h"
#include "services/model_library.h"
#include "services/model_origins.h"

#include "gemma3_vision_files.h"
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

const QString kVisionRepo = QStringLiteral("acme/gemma3-vision-GGUF");

HubFile hubFile(const QString& path, qint64 size) {
    HubFile f;
    f.path = path;
    f.size = size;
    return f;
}

std::string bytesOf(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll().toStdString() : std::string();
}

bool rescanLibrary(ModelLibrary& lib) {
    QSignalSpy scanning(&lib, &ModelLibrary::scanningChanged);
    lib.refresh();
    for (int i = 0; i < 200; ++i) {
        if (!scanning.isEmpty() && !scanning.last().first().toBool()) return true;
        scanning.wait(50);
    }
    return false;
}

const ModelEntry* entryNamed(const ModelLibrary& lib, const QString& fileName) {
    for (const ModelEntry& e : lib.models())
        if (e.fileName == fileName) return &e;
    return nullptr;
}

// The repository's listing, as the app gets it.
QList<HubFile> listRepoFiles(HubClient& client, const QString& repo) {
    QSignalSpy listed(&client, &HubClient::filesListed);
    client.listFiles(repo);
    if (!listed.wait(10000)) return {};
    return listed.first().at(2).value<QList<HubFile>>();
}

// Waits until `count` downloads completed (false on a failure or after 30 s).
bool waitForCompleted(QSignalSpy& completed, QSignalSpy& failed, int count) {
    QElapsedTimer t;
    t.start();
    while (completed.size() < count && failed.isEmpty() && t.elapsed() < 30000) completed.wait(50);
    if (!failed.isEmpty()) qWarning() << "download failed:" << failed.first().at(1).toString();
    return completed.size() >= count;
}

int downloadCount(const TestHub& hub, const std::string& pathEnd) {
    int n = 0;
    for (const auto& r : hub.downloads())
        if (r.path.size() >= pathEnd.size() && r.path.compare(r.path.size() - pathEnd.size(), pathEnd.size(), pathEnd) == 0)
            ++n;
    return n;
}

} // namespace

class TestHubDownloads : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_synth.isValid());
        if (!QFileInfo::exists(QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf")))))
            return; // the functions that need the real files skip
        std::string model, projector;
        const QString error = hearth::test::synthGemma3WithProjector(m_synth.path(), model, projector);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        m_model = bytesOf(QString::fromStdString(model));
        m_projector = bytesOf(QString::fromStdString(projector));
        QVERIFY(!m_model.empty() && !m_projector.empty());
    }

    // Without projectors nothing is paired; with several, F16 before BF16 before F32 before the
    // rest, the smallest among equals, those in the model's folder first; none is an option.
    void listingPairsProjectors() {
        const QList<HubFile> plain = {hubFile(QStringLiteral("model-Q4_K_M.gguf"), 400), hubFile(QStringLiteral("model-Q8_0.gguf"), 800),
                                      hubFile(QStringLiteral("README.md"), 10)};
        QList<QuantOption> options = HubClient::groupByQuantization(plain);
        QCOMPARE(options.size(), 2);
        for (const QuantOption& o : options) QVERIFY(!o.hasProjector());
        QVERIFY(HubClient::preferredProjector(plain).path.isEmpty());

        QList<HubFile> files = plain;
        files << hubFile(QStringLiteral("mmproj-Q8_0.gguf"), 100) << hubFile(QStringLiteral("mmproj-F32.gguf"), 600)
              << hubFile(QStringLiteral("mmproj-BF16.gguf"), 300) << hubFile(QStringLiteral("mmproj-model-f16.gguf"), 320)
              << hubFile(QStringLiteral("mmproj-F16.gguf"), 310) << hubFile(QStringLiteral("gemma3-mmproj.gguf"), 50)
              << hubFile(QStringLiteral("sub/model-Q5_K_M.gguf"), 500) << hubFile(QStringLiteral("sub/mmproj-F32.gguf"), 620)
              << hubFile(QStringLiteral("mmproj-F16.txt"), 5);
        QStringList order;
        for (const HubFile& f : HubClient::projectorFiles(files)) order << f.path;
        QCOMPARE(order, (QStringList{QStringLiteral("mmproj-F16.gguf"), QStringLiteral("mmproj-model-f16.gguf"),
                                     QStringLiteral("mmproj-BF16.gguf"), QStringLiteral("mmproj-F32.gguf"),
                                     QStringLiteral("gemma3-mmproj.gguf"), QStringLiteral("mmproj-Q8_0.gguf"),
                                     QStringLiteral("sub/mmproj-F32.gguf")}));
        options = HubClient::groupByQuantization(files);
        QStringList names;
        for (const QuantOption& o : options) names << o.name;
        QCOMPARE(names, (QStringList{QStringLiteral("model-Q4_K_M.gguf"), QStringLiteral("sub/model-Q5_K_M.gguf"),
                                     QStringLiteral("model-Q8_0.gguf")}));
        QCOMPARE(options[0].projector.path, QStringLiteral("mmproj-F16.gguf"));
        QCOMPARE(options[0].projector.size, 310);
        QCOMPARE(options[2].projector.path, QStringLiteral("mmproj-F16.gguf"));
        QCOMPARE(options[1].projector.path, QStringLiteral("sub/mmproj-F32.gguf")); // its own folder's
        // BF16 wins when there is no F16; F32 when neither; else the smallest other.
        files.removeIf([](const HubFile& f) { return f.path.contains(QStringLiteral("f16"), Qt::CaseInsensitive) &&
                                                     !f.path.contains(QStringLiteral("bf16"), Qt::CaseInsensitive); });
        QCOMPARE(HubClient::preferredProjector(files).path, QStringLiteral("mmproj-BF16.gguf"));
        files.removeIf([](const HubFile& f) { return f.path.contains(QStringLiteral("BF16")); });
        QCOMPARE(HubClient::preferredProjector(files).path, QStringLiteral("mmproj-F32.gguf"));
        files.removeIf([](const HubFile& f) { return f.path.contains(QStringLiteral("F32")); });
        QCOMPARE(HubClient::preferredProjector(files).path, QStringLiteral("gemma3-mmproj.gguf"));
    }

    // Download brings the model and its projector (not the other projectors); the library pairs
    // them; the origins are recorded; a second download fetches neither again; another repository's
    // different "mmproj-F16.gguf" lands under its own name.
    void downloadBringsModelAndProjector() {
        if (m_model.empty()) QSKIP("needs models/ggml-vocab-llama-spm.gguf");
        TestHub hub;
        hub.addFile(kVisionRepo.toStdString(), "gemma3-tiny-F32.gguf", {m_model, {}, {}});
        hub.addFile(kVisionRepo.toStdString(), "mmproj-F16.gguf", {m_projector, {}, {}});
        hub.addFile(kVisionRepo.toStdString(), "mmproj-F32.gguf", {TestHub::makeContent(m_projector.size() + 7), {}, {}});
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        ModelLibrary library(folder);
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        DownloadManager downloads;
        HubDownloads hubDownloads(&client, &downloads, &library);
        QSignalSpy enqueued(&hubDownloads, &HubDownloads::enqueued);
        QSignalSpy completed(&downloads, &DownloadManager::completed);
        QSignalSpy failed(&downloads, &DownloadManager::failed);

        const QList<QuantOption> options = HubClient::groupByQuantization(listRepoFiles(client, kVisionRepo));
        QCOMPARE(options.size(), 1);
        QVERIFY(options[0].hasProjector());
        QCOMPARE(options[0].projector.path, QStringLiteral("mmproj-F16.gguf"));
        const QList<quint64> ids = hubDownloads.downloadOption(kVisionRepo, options[0]);
        QCOMPARE(ids.size(), 2);
        QCOMPARE(enqueued.size(), 2);
        QCOMPARE(enqueued.at(1).at(1).toString(), QStringLiteral("mmproj-F16.gguf"));
        QVERIFY(waitForCompleted(completed, failed, 2));
        QCOMPARE(bytesOf(folder + QStringLiteral("/mmproj-F16.gguf")), m_projector);
        QCOMPARE(bytesOf(folder + QStringLiteral("/gemma3-tiny-F32.gguf")), m_model);
        QCOMPARE(downloadCount(hub, "/mmproj-F32.gguf"), 0);

        QVERIFY(rescanLibrary(library));
        QCOMPARE(library.models().size(), 1); // the projector is no model of its own
        const ModelEntry* entry = entryNamed(library, QStringLiteral("gemma3-tiny-F32.gguf"));
        QVERIFY(entry);
        QVERIFY2(entry->isVision(), qPrintable(entry->error));
        QCOMPARE(entry->projectorPath, folder + QStringLiteral("/mmproj-F16.gguf"));
        const ModelOrigin origin = hubDownloads.originOf(entry->path);
        QCOMPARE(origin.repo, kVisionRepo);
        QCOMPARE(origin.repoPath, QStringLiteral("gemma3-tiny-F32.gguf"));
        QCOMPARE(origin.projector.path, QStringLiteral("mmproj-F16.gguf"));
        QVERIFY(hubDownloads.projectorOffer(*entry).path.isEmpty()); // it has its projector

        // Again: both are there, nothing is fetched.
        const size_t before = hub.downloads().size();
        QVERIFY(hubDownloads.downloadOption(kVisionRepo, options[0]).isEmpty());
        QTest::qWait(200);
        QCOMPARE(hub.downloads().size(), before);

        // Another repository's projector of the same name but other bytes does not overwrite it.
        const std::string other = TestHub::makeContent(4000, 9);
        hub.addFile("acme/other-vision-GGUF", "other-Q4_K_M.gguf", {TestHub::makeContent(3000, 8), {}, {}});
        hub.addFile("acme/other-vision-GGUF", "mmproj-F16.gguf", {other, {}, {}});
        const QList<QuantOption> others = HubClient::groupByQuantization(listRepoFiles(client, QStringLiteral("acme/other-vision-GGUF")));
        QCOMPARE(others.size(), 1);
        QCOMPARE(hubDownloads.downloadOption(QStringLiteral("acme/other-vision-GGUF"), others[0]).size(), 2);
        QVERIFY(waitForCompleted(completed, failed, 4));
        QCOMPARE(bytesOf(folder + QStringLiteral("/mmproj-F16.gguf")), m_projector);
        QCOMPARE(bytesOf(folder + QStringLiteral("/other-vision-GGUF-mmproj-F16.gguf")), other);
    }

    // The projector's transfer stalls half way: it is retried with a Range request for the rest
    // and completes intact; without the option, only the model is fetched.
    void cutProjectorDownloadResumes() {
        TestHub hub;
        const std::string model = TestHub::makeContent(50000, 3);
        const std::string projector = TestHub::makeContent(300000, 4);
        hub.addFile("acme/cut-GGUF", "cut-Q4_K_M.gguf", {model, {}, {}});
        hub.addFile("acme/cut-GGUF", "sub/mmproj-cut-BF16.gguf", {projector, {}, {}});
        QTemporaryDir dir;
        ModelLibrary library(dir.path());
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        DownloadManager downloads;
        DownloadRetryPolicy policy;
        policy.initialDelayMs = 20;
        policy.maxDelayMs = 200;
        policy.stallTimeoutMs = 400;
        downloads.setRetryPolicy(policy);
        HubDownloads hubDownloads(&client, &downloads, &library);
        QSignalSpy completed(&downloads, &DownloadManager::completed);
        QSignalSpy failed(&downloads, &DownloadManager::failed);
        QSignalSpy retrying(&downloads, &DownloadManager::retrying);

        const QList<QuantOption> options = HubClient::groupByQuantization(listRepoFiles(client, QStringLiteral("acme/cut-GGUF")));
        QCOMPARE(options.size(), 1);
        QCOMPARE(options[0].projector.path, QStringLiteral("sub/mmproj-cut-BF16.gguf"));
        // Without the projector first: only the model comes, its projector is recorded for later.
        QCOMPARE(hubDownloads.downloadOption(QStringLiteral("acme/cut-GGUF"), options[0], false).size(), 1);
        QVERIFY(waitForCompleted(completed, failed, 1));
        QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("mmproj-cut-BF16.gguf"))));
        QCOMPARE(hubDownloads.originOf(dir.filePath(QStringLiteral("cut-Q4_K_M.gguf"))).projector.path,
                 QStringLiteral("sub/mmproj-cut-BF16.gguf"));

        hub.stallAfter = 120000;
        hub.stallRequests = 1;
        const QList<quint64> ids = hubDownloads.downloadOption(QStringLiteral("acme/cut-GGUF"), options[0]);
        QCOMPARE(ids.size(), 1); // the model is there already
        QCOMPARE(downloads.request(ids[0]).destination, dir.filePath(QStringLiteral("mmproj-cut-BF16.gguf")));
        QVERIFY(waitForCompleted(completed, failed, 2));
        QVERIFY(!retrying.isEmpty());
        QCOMPARE(bytesOf(dir.filePath(QStringLiteral("mmproj-cut-BF16.gguf"))), projector);
        std::vector<std::string> ranges;
        for (const auto& r : hub.downloads())
            if (r.path.find("mmproj-cut-BF16.gguf") != std::string::npos) ranges.push_back(r.range);
        QCOMPARE(ranges.size(), size_t(2));
        QCOMPARE(ranges[0], std::string());
        QCOMPARE(ranges[1], std::string("bytes=120000-"));
        QVERIFY(!QFileInfo::exists(dir.filePath(QStringLiteral("mmproj-cut-BF16.gguf.part"))));
    }

    // A model downloaded without its projector is offered it, which then lands beside it and
    // pairs; a model the app did not download (no origin) is offered nothing.
    void offerForExistingModel() {
        if (m_model.empty()) QSKIP("needs models/ggml-vocab-llama-spm.gguf");
        TestHub hub;
        hub.addFile(kVisionRepo.toStdString(), "gemma3-tiny-F32.gguf", {m_model, {}, {}});
        hub.addFile(kVisionRepo.toStdString(), "mmproj-F16.gguf", {m_projector, {}, {}});
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        QVERIFY(QDir().mkpath(folder));
        { // a copy of unknown origin
            QFile f(folder + QStringLiteral("/copied.gguf"));
            QVERIFY(f.open(QIODevice::WriteOnly));
            QCOMPARE(f.write(m_model.data(), qint64(m_model.size())), qint64(m_model.size()));
        }
        ModelLibrary library(folder);
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        DownloadManager downloads;
        HubDownloads hubDownloads(&client, &downloads, &library);
        QSignalSpy completed(&downloads, &DownloadManager::completed);
        QSignalSpy failed(&downloads, &DownloadManager::failed);

        const QList<QuantOption> options = HubClient::groupByQuantization(listRepoFiles(client, kVisionRepo));
        QCOMPARE(options.size(), 1);
        QCOMPARE(hubDownloads.downloadOption(kVisionRepo, options[0], false).size(), 1);
        QVERIFY(waitForCompleted(completed, failed, 1));
        QVERIFY(rescanLibrary(library));
        const ModelEntry* copied = entryNamed(library, QStringLiteral("copied.gguf"));
        QVERIFY(copied && copied->isUsable() && !copied->isVision());
        QVERIFY(hubDownloads.projectorOffer(*copied).path.isEmpty());
        QCOMPARE(hubDownloads.downloadProjectorFor(*copied), quint64(0));
        const ModelEntry* entry = entryNamed(library, QStringLiteral("gemma3-tiny-F32.gguf"));
        QVERIFY(entry && entry->isUsable() && !entry->isVision());
        QCOMPARE(hubDownloads.projectorOffer(*entry).path, QStringLiteral("mmproj-F16.gguf"));
        QCOMPARE(hubDownloads.projectorOffer(*entry).size, qint64(m_projector.size()));

        const quint64 id = hubDownloads.downloadProjectorFor(*entry);
        QVERIFY(id != 0);
        QCOMPARE(hubDownloads.downloadProjectorFor(*entry), id); // queued once
        QVERIFY(waitForCompleted(completed, failed, 2));
        QCOMPARE(downloadCount(hub, "/mmproj-F16.gguf"), 1);
        QVERIFY(rescanLibrary(library));
        entry = entryNamed(library, QStringLiteral("gemma3-tiny-F32.gguf"));
        QVERIFY(entry && entry->isVision());
        QCOMPARE(entry->projectorPath, folder + QStringLiteral("/mmproj-F16.gguf"));
        QVERIFY(hubDownloads.projectorOffer(*entry).path.isEmpty());
        // The copy beside it pairs with the same projector now: still nothing to offer.
        copied = entryNamed(library, QStringLiteral("copied.gguf"));
        QVERIFY(copied && copied->isVision());
        QVERIFY(hubDownloads.projectorOffer(*copied).path.isEmpty());
    }

    // Damaged or hand-edited origins are not trusted; a missing file is no origins.
    void originsFile() {
        QTemporaryDir dir;
        QHash<QString, ModelOrigin> origins;
        QVERIFY(readModelOrigins(dir.path(), &origins));
        QVERIFY(origins.isEmpty());
        QVERIFY(recordModelOrigins(dir.path(), {{QStringLiteral("a.gguf"), ModelOrigin{kVisionRepo, QStringLiteral("a.gguf"), QStringLiteral("ab"), 5,
                                                                                      hubFile(QStringLiteral("mmproj-F16.gguf"), 7)}},
                                                {QStringLiteral("b.gguf"), ModelOrigin{QStringLiteral("../x"), QStringLiteral("b.gguf"), {}, 1, {}}}}));
        QVERIFY(recordModelOrigins(dir.path(), {{QStringLiteral("c.gguf"), ModelOrigin{kVisionRepo, QStringLiteral("../c.gguf"), {}, 1, {}}}}));
        QVERIFY(readModelOrigins(dir.path(), &origins));
        QCOMPARE(origins.keys(), QList<QString>{QStringLiteral("a.gguf")});
        QCOMPARE(origins.value(QStringLiteral("a.gguf")).projector.size, 7);
        QCOMPARE(origins.value(QStringLiteral("a.gguf")).sha256, QStringLiteral("ab"));
        QFile f(modelOriginsFile(dir.path()));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not json");
        f.close();
        QString error;
        QVERIFY(!readModelOrigins(dir.path(), &origins, &error));
        QVERIFY(error.contains(QStringLiteral(".hearth-origins.json")));
    }

private:
    QTemporaryDir m_synth;
    std::string m_model, m_projector;
};

QTEST_GUILESS_MAIN(TestHubDownloads)
#include "test_hub_downloads.moc"
