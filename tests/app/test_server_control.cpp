// The embedded API server's lifetime without a page (ServerControl): it serves the model the
// host loaded on a real loopback port, its request log arrives as signals on the test's thread,
// it holds the engine against the idle unload while it runs, a taken port is refused with the
// reason, and after stop nothing listens.
#include "services/engine_host.h"
#include "services/server_control.h"

#include "test_support.h"

#include <httplib.h>

#include <QSignalSpy>
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
};

QTEST_GUILESS_MAIN(TestServerControl)
#include "test_server_control.moc"
