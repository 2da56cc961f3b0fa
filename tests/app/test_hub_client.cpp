// HubClient against a local stand-in hub: search and tree requests and their parsing, pages,
// tokens, errors as messages; quantization names and split files grouped into variants.
#include "services/hub_client.h"

#include "test_hub.h"
#include "test_support.h"

#include <QSignalSpy>
#include <QtTest>

using namespace hearth::app;
using hearth::test::TestHub;

namespace {

HubFile file(const QString& path, qint64 size, const QString& sha = {}) {
    HubFile f;
    f.path = path;
    f.size = size;
    f.sha256 = sha;
    return f;
}

QString failureOf(const QSignalSpy& failed, quint64 ticket) {
    for (const auto& args : failed)
        if (args.at(0).toULongLong() == ticket) return args.at(1).toString();
    return {};
}

} // namespace

class TestHubClient : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void quantizationNames_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("quant");
        QTest::newRow("k-quant") << "Llama-3.2-1B-Instruct-Q4_K_M.gguf" << "Q4_K_M";
        QTest::newRow("lower case") << "qwen2.5-0.5b-instruct-q5_k_s.gguf" << "Q5_K_S";
        QTest::newRow("dot separated") << "mistral-7b-instruct-v0.2.Q8_0.gguf" << "Q8_0";
        QTest::newRow("f16") << "phi-2-f16.gguf" << "F16";
        QTest::newRow("fp16") << "model.fp16.gguf" << "F16";
        QTest::newRow("bf16") << "gemma-2b-BF16.gguf" << "BF16";
        QTest::newRow("i-quant") << "Meta-Llama-3.1-8B-Instruct-IQ4_XS.gguf" << "IQ4_XS";
        QTest::newRow("iq2_xxs") << "model-IQ2_XXS.gguf" << "IQ2_XXS";
        QTest::newRow("iq4_nl") << "model-iq4_nl.gguf" << "IQ4_NL";
        QTest::newRow("q4_0") << "ggml-model-q4_0.gguf" << "Q4_0";
        QTest::newRow("q6_k") << "tiny-Q6_K.gguf" << "Q6_K";
        QTest::newRow("split") << "qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf" << "Q4_K_M";
        QTest::newRow("folder names it") << "Q5_K_M/model-00001-of-00003.gguf" << "Q5_K_M";
        QTest::newRow("suffix after quant") << "model-Q4_K_M_imatrix.gguf" << "Q4_K_M";
        QTest::newRow("version numbers are not quants") << "Qwen2.5-0.5B-Instruct.gguf" << "";
        QTest::newRow("none") << "stories260K.gguf" << "";
    }
    void quantizationNames() {
        QFETCH(QString, name);
        QFETCH(QString, quant);
        QCOMPARE(HubClient::quantizationOf(name), quant);
    }

    void groupsSplitFilesAndSorts() {
        const QList<HubFile> files = {
            file(QStringLiteral("README.md"), 10),
            file(QStringLiteral("model-Q8_0.gguf"), 800, QStringLiteral("aa")),
            file(QStringLiteral("model-Q4_K_M-00002-of-00003.gguf"), 200),
            file(QStringLiteral("model-Q4_K_M-00001-of-00003.gguf"), 150),
            file(QStringLiteral("model-Q4_K_M-00003-of-00003.gguf"), 50),
            file(QStringLiteral("model-F16-00001-of-00002.gguf"), 1000), // part 2 missing
            file(QStringLiteral("mmproj-model-f16.gguf"), 300),
            file(QStringLiteral("model-IQ4_XS.GGUF"), 380),
        };
        const QList<QuantOption> options = HubClient::groupByQuantization(files);
        QCOMPARE(options.size(), 4);
        QCOMPARE(options[0].quantization, QStringLiteral("IQ4_XS"));
        QCOMPARE(options[1].quantization, QStringLiteral("Q4_K_M"));
        QCOMPARE(options[1].totalSize, 400);
        QVERIFY(options[1].isSplit());
        QVERIFY(options[1].isComplete());
        QCOMPARE(options[1].name, QStringLiteral("model-Q4_K_M.gguf"));
        QCOMPARE(options[1].files.size(), 3);
        QCOMPARE(options[1].files[0].path, QStringLiteral("model-Q4_K_M-00001-of-00003.gguf"));
        QCOMPARE(options[1].files[2].path, QStringLiteral("model-Q4_K_M-00003-of-00003.gguf"));
        QCOMPARE(options[2].quantization, QStringLiteral("Q8_0"));
        QCOMPARE(options[2].files.first().sha256, QStringLiteral("aa"));
        QVERIFY(!options[2].isSplit());
        QCOMPARE(options[3].quantization, QStringLiteral("F16"));
        QCOMPARE(options[3].partCount, 2);
        QVERIFY(!options[3].isComplete());
    }

    void repoIdsAndUrls() {
        QVERIFY(HubClient::isValidRepoId(QStringLiteral("Qwen/Qwen2.5-0.5B-Instruct-GGUF")));
        QVERIFY(!HubClient::isValidRepoId(QStringLiteral("no-slash")));
        QVERIFY(!HubClient::isValidRepoId(QStringLiteral("a/b/c")));
        QVERIFY(!HubClient::isValidRepoId(QStringLiteral("../etc")));
        QVERIFY(!HubClient::isValidRepoId(QStringLiteral("a/..")));
        QVERIFY(HubClient::isSafeRepoPath(QStringLiteral("sub/model-Q4_K_M.gguf")));
        for (const char* bad : {"../x.gguf", "a/../../x.gguf", "/etc/passwd", "a//b.gguf", "C:\\x.gguf", "./x", ""})
            QVERIFY2(!HubClient::isSafeRepoPath(QString::fromLatin1(bad)), bad);
        HubClient client;
        client.setBaseUrl(QUrl(QStringLiteral("https://hub.example/")));
        QCOMPARE(client.downloadUrl(QStringLiteral("org/repo"), QStringLiteral("sub dir/m-Q4_K_M.gguf")).toString(QUrl::FullyEncoded),
                 QStringLiteral("https://hub.example/org/repo/resolve/main/sub%20dir/m-Q4_K_M.gguf"));
    }

    void searchParsesModels() {
        TestHub hub;
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        QSignalSpy done(&client, &HubClient::searchFinished);
        QSignalSpy failed(&client, &HubClient::failed);
        const quint64 t = client.searchModels(QStringLiteral("tiny llama+q&x"), 5);
        QVERIFY(done.wait(10000));
        QVERIFY(failed.isEmpty());
        QCOMPARE(done.first().at(0).toULongLong(), t);
        const auto models = done.first().at(1).value<QList<HubModel>>();
        QCOMPARE(models.size(), 2);
        QCOMPARE(models[0].id, QStringLiteral("acme/tiny-GGUF"));
        QCOMPARE(models[0].downloads, 1234);
        QCOMPARE(models[0].likes, 56);
        QCOMPARE(models[0].pipelineTag, QStringLiteral("text-generation"));
        QCOMPARE(models[0].lastModified.date(), QDate(2025, 1, 2));
        QVERIFY(models[0].tags.contains(QStringLiteral("gguf")));
        QVERIFY(!models[0].gated);
        QCOMPARE(models[1].downloads, 7);
        QVERIFY(models[1].gated);
        const auto req = hub.requests().back();
        QCOMPARE(req.path, std::string("/api/models"));
        QCOMPARE(req.params.at("search"), std::string("tiny llama+q&x"));
        QCOMPARE(req.params.at("filter"), std::string("gguf"));
        QCOMPARE(req.params.at("limit"), std::string("5"));
        QVERIFY(req.authorization.empty()); // no token configured
    }

    void treeListsFilesWithHashesAcrossPages() {
        TestHub hub;
        hub.treePageSize = 2;
        hub.addFile("acme/tiny-GGUF", "tiny-Q4_K_M.gguf", {TestHub::makeContent(1000)});
        hub.addFile("acme/tiny-GGUF", "tiny-Q8_0.gguf", {TestHub::makeContent(2000)});
        hub.addFile("acme/tiny-GGUF", "big/tiny-F16-00001-of-00002.gguf", {TestHub::makeContent(3000)});
        hub.addFile("acme/tiny-GGUF", "big/tiny-F16-00002-of-00002.gguf", {TestHub::makeContent(500)});
        hub.addFile("acme/tiny-GGUF", "../escape-Q4_0.gguf", {TestHub::makeContent(10)}); // dropped
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        client.setAccessToken(QStringLiteral("secret"));
        QSignalSpy listed(&client, &HubClient::filesListed);
        QSignalSpy failed(&client, &HubClient::failed);
        client.listFiles(QStringLiteral("acme/tiny-GGUF"));
        QVERIFY(listed.wait(10000));
        QVERIFY(failed.isEmpty());
        QCOMPARE(listed.first().at(1).toString(), QStringLiteral("acme/tiny-GGUF"));
        const auto files = listed.first().at(2).value<QList<HubFile>>();
        QCOMPARE(files.size(), 5); // README + 4 GGUF; the directory entry is skipped
        int trees = 0;
        for (const auto& r : hub.requests()) {
            if (r.path.find("/tree/") == std::string::npos) continue;
            ++trees;
            QCOMPARE(r.params.at("recursive"), std::string("true"));
            QCOMPARE(r.authorization, std::string("Bearer secret"));
        }
        QCOMPARE(trees, 4); // 7 entries, 2 per page
        HubFile q8;
        for (const auto& f : files)
            if (f.path == QStringLiteral("tiny-Q8_0.gguf")) q8 = f;
        QCOMPARE(q8.size, 2000);
        QCOMPARE(q8.sha256, QString::fromStdString(TestHub::sha256(TestHub::makeContent(2000))));
        const auto options = HubClient::groupByQuantization(files);
        QCOMPARE(options.size(), 3);
        QCOMPARE(options.last().quantization, QStringLiteral("F16"));
        QCOMPARE(options.last().totalSize, 3500);
    }

    // The repository's GGUF metadata as the hub reads it: the architecture the page checks.
    void fetchesDetails() {
        TestHub hub;
        hub.setArchitecture("acme/tiny-GGUF", "qwen2");
        hub.setArchitecture("acme/plain", "");
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        QSignalSpy fetched(&client, &HubClient::detailsFetched);
        QSignalSpy failed(&client, &HubClient::failed);
        const quint64 t = client.fetchDetails(QStringLiteral("acme/tiny-GGUF"));
        QVERIFY(fetched.wait(10000));
        QCOMPARE(fetched.first().at(0).toULongLong(), t);
        QCOMPARE(fetched.first().at(1).toString(), QStringLiteral("acme/tiny-GGUF"));
        auto details = fetched.first().at(2).value<HubModelDetails>();
        QCOMPARE(details.architecture, QStringLiteral("qwen2"));
        QCOMPARE(details.contextLength, 32768);
        bool sawExpand = false;
        for (const auto& r : hub.requests())
            if (r.path == "/api/models/acme/tiny-GGUF") sawExpand = r.params.count("expand[]") && r.params.at("expand[]") == "gguf";
        QVERIFY(sawExpand);

        client.fetchDetails(QStringLiteral("acme/plain")); // no GGUF metadata: empty fields
        QVERIFY(fetched.wait(10000));
        QVERIFY(fetched.last().at(2).value<HubModelDetails>().architecture.isEmpty());

        client.fetchDetails(QStringLiteral("acme/missing"));
        QVERIFY(failed.wait(10000));
        QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("404")));
    }

    void errorsBecomeMessages() {
        TestHub hub;
        hub.requireToken = true;
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        QSignalSpy failed(&client, &HubClient::failed);
        QSignalSpy listed(&client, &HubClient::filesListed);

        quint64 t = client.listFiles(QStringLiteral("acme/private"));
        QVERIFY(failed.wait(10000));
        QString msg = failureOf(failed, t);
        QVERIFY2(msg.contains(QStringLiteral("401")) && msg.contains(QStringLiteral("access token")), qPrintable(msg));

        client.setAccessToken(QStringLiteral("secret"));
        t = client.listFiles(QStringLiteral("acme/missing"));
        QVERIFY(failed.wait(10000));
        msg = failureOf(failed, t);
        QVERIFY2(msg.contains(QStringLiteral("404")) && msg.contains(QStringLiteral("Repository not found")), qPrintable(msg));

        t = client.listFiles(QStringLiteral("not a repo"));
        QVERIFY(failed.wait(10000));
        QVERIFY(failureOf(failed, t).contains(QStringLiteral("not a repository id")));

        hub.searchBody = "{not json";
        t = client.searchModels(QStringLiteral("x"));
        QVERIFY(failed.wait(10000));
        msg = failureOf(failed, t);
        QVERIFY2(msg.contains(QStringLiteral("not JSON")), qPrintable(msg));

        hub.searchBody = R"({"models": []})";
        t = client.searchModels(QStringLiteral("x"));
        QVERIFY(failed.wait(10000));
        QVERIFY(failureOf(failed, t).contains(QStringLiteral("expected a JSON list")));

        hub.searchStatus = 500;
        t = client.searchModels(QStringLiteral("x"));
        QVERIFY(failed.wait(10000));
        msg = failureOf(failed, t);
        QVERIFY2(msg.contains(QStringLiteral("500")) && msg.contains(QStringLiteral("search is down")), qPrintable(msg));

        // Nobody listening.
        HubClient nowhere;
        nowhere.setBaseUrl(QUrl(QStringLiteral("http://127.0.0.1:1")));
        QSignalSpy failedNowhere(&nowhere, &HubClient::failed);
        nowhere.searchModels(QStringLiteral("x"));
        QVERIFY(failedNowhere.wait(10000));
        QVERIFY(failedNowhere.first().at(1).toString().contains(QStringLiteral("cannot reach")));
        QVERIFY(listed.isEmpty());
    }

    void abortSendsNothing() {
        TestHub hub;
        HubClient client;
        client.setBaseUrl(hub.baseUrl());
        QSignalSpy done(&client, &HubClient::searchFinished);
        QSignalSpy failed(&client, &HubClient::failed);
        const quint64 t = client.searchModels(QStringLiteral("x"));
        client.abort(t);
        QTest::qWait(200);
        QVERIFY(done.isEmpty());
        QVERIFY(failed.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestHubClient)
#include "test_hub_client.moc"
