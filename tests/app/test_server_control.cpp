// The embedded API server's lifetime without a page (ServerControl): it serves the model the
// host loaded on a real loopback port, its request log arrives as signals on the test's thread,
// it holds the engine against the idle unload while it runs, a taken port is refused with the
// reason, and after stop nothing listens; with a models folder it serves the library too.
#include "services/engine_host.h"
#include "services/server_control.h"

#include "test_support.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTcpServer>
#include <QtTest>

using namespace hearth::app;

namespace {

bool loadStoriesModel(EngineHost& host) {
    LoadSettings s;
    s.contextLength = 256;
    s.threads = 1;
    QSignalSpy loaded(&host, &EngineHost::loaded);
    host.loadModel(QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")), s);
    return loaded.wait(20000);
}

} // namespace

class TestServerControl : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void servesTheLoadedModelUntilStopped() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStoriesModel(host));
        ServerControl control(&host);
        QSignalSpy running(&control, &ServerControl::runningChanged);
        QSignalSpy log(&control, &ServerControl::logLine);
        ServerOptions options;
        options.port = 0; // any free port
        QString error;
        QVERIFY2(control.start(options, &error), qPrintable(error));
        QVERIFY(control.isRunning());
        QCOMPARE(running.size(), 1);
        QVERIFY(running.first().at(0).toBool());
        const int port = control.port();
        QVERIFY(port > 0);

        {
            httplib::Client client("127.0.0.1", port);
            auto res = client.Get("/v1/models");
            QVERIFY(res);
            QCOMPARE(res->status, 200);
            QVERIFY2(res->body.find("stories260K") != std::string::npos, res->body.c_str());
        }
        QTRY_VERIFY_WITH_TIMEOUT(
            std::any_of(log.begin(), log.end(),
                        [](const QList<QVariant>& l) { return l.at(0).toString().contains(QStringLiteral("GET /v1/models 200")); }),
            5000);

        // Held: the idle unload waits while the server runs.
        host.setIdleUnloadMs(50);
        QTest::qWait(300);
        QVERIFY(host.isLoaded());

        // The port is taken now: a second server says so.
        ServerControl second(&host);
        ServerOptions same;
        same.port = port;
        QString taken;
        QVERIFY(!second.start(same, &taken));
        QVERIFY(!taken.isEmpty());
        QVERIFY(!second.isRunning());

        control.stop();
        QVERIFY(!control.isRunning());
        QCOMPARE(control.port(), 0);
        QCOMPARE(running.size(), 2);
        QVERIFY(!running.last().at(0).toBool());
        httplib::Client after("127.0.0.1", port);
        after.set_connection_timeout(2);
        QVERIFY(!after.Get("/v1/models"));
        // No longer held: the idle unload goes ahead.
        QTRY_VERIFY_WITH_TIMEOUT(!host.isLoaded(), 5000);
    }

    // With the models folder: the loaded model under its file's name (no second copy), any other
    // library model by name loaded beside it, the library read-only through the API.
    void servesTheLibraryBesideTheLoadedModel() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        const QString src = QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf"));
        QVERIFY(QFile::copy(src, folder.filePath(QStringLiteral("alpha.gguf"))));
        QVERIFY(QFile::copy(src, folder.filePath(QStringLiteral("beta.gguf"))));
        EngineHost host;
        LoadSettings s;
        s.contextLength = 256;
        s.threads = 1;
        QSignalSpy loaded(&host, &EngineHost::loaded);
        host.loadModel(folder.filePath(QStringLiteral("alpha.gguf")), s);
        QVERIFY(loaded.wait(20000));
        ServerControl control(&host);
        QSignalSpy log(&control, &ServerControl::logLine);
        ServerOptions options;
        options.port = 0;
        options.modelsFolder = folder.path();
        QString error;
        QVERIFY2(control.start(options, &error), qPrintable(error));
        httplib::Client client("127.0.0.1", control.port());
        auto models = [&] { return nlohmann::json::parse(client.Get("/v1/models")->body)["data"]; };
        auto complete = [&](const std::string& model) {
            auto r = client.Post("/v1/completions", R"({"model":")" + model + R"(","prompt":"Once","max_tokens":2})",
                                 "application/json");
            return r ? std::make_pair(r->status, nlohmann::json::parse(r->body, nullptr, false)) : std::make_pair(0, nlohmann::json());
        };
        auto loads = [&] {
            int n = 0;
            for (const auto& l : log) n += l.at(0).toString().startsWith(QStringLiteral("loading "));
            return n;
        };
        nlohmann::json list = models();
        QCOMPARE(list.size(), size_t(2));
        QCOMPARE(list[0]["id"], "alpha");
        QVERIFY(list[0]["loaded"].get<bool>());
        QVERIFY(!list[1]["loaded"].get<bool>());
        // The loaded model answers by its name, with or without .gguf, and for no name at all.
        for (const char* name : {"alpha", "alpha.gguf", ""}) {
            const auto [status, body] = complete(name);
            QVERIFY2(status == 200, body.dump().c_str());
            QCOMPARE(body["model"], "alpha");
        }
        QCOMPARE(loads(), 0);
        // Another library model loads beside it.
        const auto [status, body] = complete("beta");
        QVERIFY2(status == 200, body.dump().c_str());
        QCOMPARE(body["model"], "beta");
        QTRY_COMPARE_WITH_TIMEOUT(loads(), 1, 5000);
        list = models();
        QVERIFY(list[0]["loaded"].get<bool>() && list[1]["loaded"].get<bool>());
        QVERIFY(host.isLoaded());
        // Read-only: the app manages the library.
        auto del = client.Delete("/api/delete", R"({"model":"beta"})", "application/json");
        QCOMPARE(del->status, 501);
        QVERIFY(QFile::exists(folder.filePath(QStringLiteral("beta.gguf"))));
        control.stop();
    }
};

QTEST_GUILESS_MAIN(TestServerControl)
#include "test_server_control.moc"
