// Ollama's /api/pull on the real hearth-server (--data-dir) against a stand-in hub on 127.0.0.1
// (HEARTH_HUB_URL): the progress stream in Ollama's shape ending in success, the file in the
// library and served by its hub name at once, a whole (not streamed) pull, and failures: a
// missing repository or quantization, a bad name, a corrupt download (no file left), a read-only
// library.
#include "test_hub.h"
#include "test_support.h"

#include "../server/http_test_support.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

using hearth::test::TestHub;
using PullJson = hearth::test::OJson;
using hearth::test::ndjson;

namespace {

std::string fileBytes(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

} // namespace

class TestServerPull : public QObject {
    Q_OBJECT

    std::unique_ptr<TestHub> m_hub;
    QTemporaryDir m_data;
    std::string m_model;
    QProcess m_server;
    int m_port = 0;

    QString models() const { return m_data.filePath(QStringLiteral("models")); }

    // Starts hearth-server on the data folder; the port, or 0 with the log in *log.
    int startServer(QProcess& p, const QStringList& extra, QString* log) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("HEARTH_HUB_URL"), m_hub->baseUrl().toString());
        env.remove(QStringLiteral("HEARTH_API_KEY"));
        p.setProcessEnvironment(env);
        p.setProcessChannelMode(QProcess::ForwardedOutputChannel); // stderr read here, stdout passed on
        p.start(hearth::test::binDir() + QStringLiteral("/hearth-server"),
                QStringList{QStringLiteral("--data-dir"), m_data.path(), QStringLiteral("--port"), QStringLiteral("0"),
                            QStringLiteral("--threads"), QStringLiteral("1")} +
                    extra);
        if (!p.waitForStarted()) return 0;
        static const QRegularExpression listening(QStringLiteral("listening on http://127\\.0\\.0\\.1:(\\d+)"));
        for (int i = 0; i < 200; ++i) {
            p.waitForReadyRead(100);
            *log += QString::fromUtf8(p.readAllStandardError());
            const auto m = listening.match(*log);
            if (m.hasMatch()) return m.captured(1).toInt();
        }
        return 0;
    }

    httplib::Result post(const std::string& path, const std::string& body) {
        httplib::Client c("127.0.0.1", m_port);
        c.set_read_timeout(60, 0);
        return c.Post(path, body, "application/json");
    }

private Q_SLOTS:
    void initTestCase() {
        if (!QFileInfo::exists(hearth::test::binDir() + QStringLiteral("/hearth-server")) ||
            !QFileInfo::exists(hearth::test::binDir() + QStringLiteral("/hearth-cli")))
            QSKIP("hearth-server or hearth-cli was not built");
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QVERIFY(m_data.isValid());
        m_model = fileBytes(QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"))));
        QVERIFY(m_model.size() > 100000);
        m_hub = std::make_unique<TestHub>();
        m_hub->chunkBytes = 100000; // several progress lines per file, even when the CPU is busy
        m_hub->chunkDelayMs = 60; // ~0.7 s a file: progress comes every 200 ms
        m_hub->addFile("acme/tiny-GGUF", "stories-Q8_0.gguf", {m_model, {}, {}});
        m_hub->addFile("acme/tiny-GGUF", "stories-Q4_K_M.gguf", {m_model, {}, {}});
        std::string corrupt = m_model;
        corrupt[corrupt.size() / 2] ^= 0x5a;
        m_hub->addFile("acme/bad-GGUF", "bad-Q8_0.gguf", {m_model, {}, corrupt});
        QString log;
        m_port = startServer(m_server, {}, &log);
        QVERIFY2(m_port > 0, qPrintable(log));
    }

    void cleanupTestCase() {
        if (m_server.state() != QProcess::NotRunning) {
            m_server.terminate();
            m_server.waitForFinished(20000);
        }
    }

    void streamedPullEndsInSuccessAndServes() {
        auto r = post("/api/pull", R"({"model":"acme/tiny-GGUF:Q8_0"})");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const std::vector<PullJson> lines = ndjson(r->body);
        QVERIFY2(lines.size() >= 5, r->body.c_str());
        QCOMPARE(lines.front()["status"], PullJson("pulling manifest"));
        QCOMPARE(lines.back()["status"], PullJson("success"));
        uint64_t completed = 0, total = 0;
        int downloads = 0;
        bool verified = false;
        for (const PullJson& l : lines) {
            QVERIFY2(l.is_object() && l.contains("status"), l.dump().c_str());
            if (l["status"] == "pulling stories-Q8_0.gguf") {
                ++downloads;
                QCOMPARE(l["digest"].get<std::string>(), "sha256:" + TestHub::sha256(m_model));
                QVERIFY(l["completed"].get<uint64_t>() >= completed); // never backwards
                completed = l["completed"].get<uint64_t>();
                total = l["total"].get<uint64_t>();
            }
            verified = verified || l["status"] == "verifying sha256 digest";
        }
        QVERIFY2(downloads >= 3, r->body.c_str());
        QCOMPARE(total, uint64_t(m_model.size()));
        QCOMPARE(completed, total);
        QVERIFY(verified);
        QCOMPARE(fileBytes(QDir(models()).filePath(QStringLiteral("stories-Q8_0.gguf"))), m_model);
        // Listed, and served at once by its hub name.
        httplib::Client c("127.0.0.1", m_port);
        QVERIFY(c.Get("/api/tags")->body.find("stories-Q8_0") != std::string::npos);
        auto g = post("/api/generate", R"({"model":"acme/tiny-GGUF:Q8_0","prompt":"Once","stream":false,"options":{"num_predict":4}})");
        QVERIFY2(g->status == 200, g->body.c_str());
        QVERIFY(PullJson::parse(g->body)["done"].get<bool>());
    }

    void wholePullAnswersOnce() {
        auto r = post("/api/pull", R"({"name":"acme/tiny-GGUF","stream":false})");
        QCOMPARE(r->status, 200);
        QCOMPARE(PullJson::parse(r->body), PullJson({{"status", "success"}}));
        QCOMPARE(fileBytes(QDir(models()).filePath(QStringLiteral("stories-Q4_K_M.gguf"))), m_model); // pull's default
    }

    void failuresAreClear() {
        // Before any progress: the status says it.
        auto missing = post("/api/pull", R"({"model":"acme/missing-GGUF","stream":false})");
        QVERIFY2(missing->status == 404, missing->body.c_str());
        QVERIFY(PullJson::parse(missing->body)["error"].is_string());
        auto bad = post("/api/pull", R"({"model":"not a repo","stream":false})");
        QVERIFY2(bad->status == 400, bad->body.c_str());
        QCOMPARE(post("/api/pull", R"({"stream":false})")->status, 400);
        QCOMPARE(post("/api/pull", R"({"model":"acme/tiny-GGUF","stream":"yes"})")->status, 400);
        // Streamed: the last line is the error, as Ollama sends it.
        auto quant = post("/api/pull", R"({"model":"acme/tiny-GGUF:Q5_K_M"})");
        QCOMPARE(quant->status, 200);
        auto lines = ndjson(quant->body);
        QVERIFY2(!lines.empty() && lines.back()["error"].get<std::string>().find("Q5_K_M") != std::string::npos,
                 quant->body.c_str());
        // A download whose SHA-256 differs: an error, and nothing left in the library.
        auto corrupt = post("/api/pull", R"({"model":"acme/bad-GGUF"})");
        lines = ndjson(corrupt->body);
        QVERIFY2(!lines.empty() && lines.back().contains("error"), corrupt->body.c_str());
        QVERIFY(!QFileInfo::exists(QDir(models()).filePath(QStringLiteral("bad-Q8_0.gguf"))));
        httplib::Client c("127.0.0.1", m_port);
        QVERIFY(c.Get("/api/tags")->body.find("bad-Q8_0") == std::string::npos);
    }

    void readOnlyLibraryRefuses() {
        QProcess other;
        QString log;
        const int port = startServer(other, {QStringLiteral("--no-library-changes")}, &log);
        QVERIFY2(port > 0, qPrintable(log));
        httplib::Client c("127.0.0.1", port);
        auto r = c.Post("/api/pull", R"({"model":"acme/tiny-GGUF:Q8_0"})", "application/json");
        QCOMPARE(r->status, 501);
        QVERIFY(PullJson::parse(r->body)["error"].get<std::string>().find("read-only") != std::string::npos);
        other.terminate();
        QVERIFY(other.waitForFinished(20000));
    }
};

QTEST_GUILESS_MAIN(TestServerPull)
#include "test_server_pull.moc"
