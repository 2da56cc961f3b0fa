// The app's MCP servers together (McpHost): mcp.json read, imported and saved (a damaged file
// kept aside, never overwritten), tools named for the model, and calls run only when the tool is
// on and approved: "never" and an unapproved "ask" never reach the server (the fake server logs
// every request it gets), settings kept across restarts.
#include "services/mcp_host.h"

#include "mcp_fake_server.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth::app;

namespace {

using hearth::test::loggingMcpServer;
using hearth::test::mcpCallsLogged;

// The outcome of one host call: the result's text, or "failed: why".
QString callAndWait(McpHost& host, const QString& name, bool approved) {
    QSignalSpy done(&host, &McpHost::callFinished);
    QSignalSpy failed(&host, &McpHost::callFailed);
    const quint64 ticket = host.call(name, {}, approved);
    if (!QTest::qWaitFor([&] { return !done.isEmpty() || !failed.isEmpty(); }, 10000)) return QStringLiteral("no outcome");
    if (!failed.isEmpty())
        return failed.first().at(0).toULongLong() == ticket ? QStringLiteral("failed: ") + failed.first().at(1).toString()
                                                            : QStringLiteral("wrong ticket");
    if (done.first().at(0).toULongLong() != ticket) return QStringLiteral("wrong ticket");
    return done.first().at(1).value<McpToolResult>().text;
}

const char* const kClaudeDesktopFile =
    "{\"mcpServers\": {\"time\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]},"
    " \"broken\": {\"args\": []}}}";

} // namespace

class TestMcpHost : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void mcpHostRunsOnlyApprovedCalls() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString log = dir.filePath(QStringLiteral("calls.log"));
        {
            McpHost host(dir.path());
            QVERIFY(host.servers().isEmpty());
            QString error;
            QVERIFY2(host.setServers({loggingMcpServer(log)}, &error), qPrintable(error));
            QSignalSpy changed(&host, &McpHost::toolsChanged);
            host.startAll();
            QVERIFY(QTest::qWaitFor([&] { return host.tools().size() == 2; }, 10000));
            QCOMPARE(host.tools().first().modelName, QStringLiteral("fake__note"));
            QCOMPARE(host.tools().first().settings.approval, McpApproval::Ask);
            // Offered to the chat's model as OpenAI functions.
            QJsonArray offered = host.chatTools();
            QCOMPARE(offered.size(), 2);
            const QJsonObject fn = offered.at(0).toObject().value(QStringLiteral("function")).toObject();
            QCOMPARE(fn.value(QStringLiteral("name")).toString(), QStringLiteral("fake__note"));
            QCOMPARE(fn.value(QStringLiteral("parameters")).toObject().value(QStringLiteral("type")).toString(), QStringLiteral("object"));

            // "ask" without the user's yes: refused here, nothing sent.
            QVERIFY(callAndWait(host, QStringLiteral("fake__note"), false).contains(QStringLiteral("did not approve")));
            QCOMPARE(mcpCallsLogged(log), 0);
            QCOMPARE(callAndWait(host, QStringLiteral("fake__note"), true), QStringLiteral("done 3"));
            QCOMPARE(mcpCallsLogged(log), 1);

            QVERIFY(host.setToolSettings(QStringLiteral("fake"), QStringLiteral("note"), {true, McpApproval::Always}));
            QCOMPARE(callAndWait(host, QStringLiteral("fake__note"), false), QStringLiteral("done 4"));
            QVERIFY(host.setToolSettings(QStringLiteral("fake"), QStringLiteral("rm"), {true, McpApproval::Never}));
            offered = host.chatTools(); // "never" is not offered at all
            QCOMPARE(offered.size(), 1);
            QVERIFY(callAndWait(host, QStringLiteral("fake__rm"), true).contains(QStringLiteral("does not allow")));
            QVERIFY(host.setToolSettings(QStringLiteral("fake"), QStringLiteral("note"), {false, McpApproval::Always}));
            QVERIFY(callAndWait(host, QStringLiteral("fake__note"), true).contains(QStringLiteral("turned off")));
            QVERIFY(callAndWait(host, QStringLiteral("other__x"), true).contains(QStringLiteral("no running MCP server")));
            QCOMPARE(mcpCallsLogged(log), 2);
        }
        // Settings survive a restart.
        McpHost again(dir.path());
        QCOMPARE(again.servers().size(), 1);
        QCOMPARE(again.toolSettings(QStringLiteral("fake"), QStringLiteral("note")), (McpToolSettings{false, McpApproval::Always}));
        QCOMPARE(again.toolSettings(QStringLiteral("fake"), QStringLiteral("rm")).approval, McpApproval::Never);
        QCOMPARE(again.toolSettings(QStringLiteral("fake"), QStringLiteral("new")), McpToolSettings{});
    }

    void mcpHostImportsAndKeepsADamagedFile() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("mcp.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"mcpServers\": {\"a\": ");
        f.close();
        McpHost host(dir.path());
        QVERIFY(host.servers().isEmpty());
        QCOMPARE(host.configErrors().size(), 1);
        QVERIFY(host.configErrors().first().startsWith(QStringLiteral("not JSON")));

        const McpConfigParse p = host.importServers(kClaudeDesktopFile);
        QCOMPARE(p.servers.size(), 1);
        QCOMPARE(p.errors.size(), 1); // "broken" left out, with the reason
        QCOMPARE(host.servers().size(), 1);
        QCOMPARE(host.servers().first().name, QStringLiteral("time"));
        // The damaged file is kept beside the new one.
        QFile kept(path + QStringLiteral(".damaged"));
        QVERIFY(kept.open(QIODevice::ReadOnly));
        QCOMPARE(kept.readAll(), QByteArray("{\"mcpServers\": {\"a\": "));
        QFile saved(path);
        QVERIFY(saved.open(QIODevice::ReadOnly));
        QCOMPARE(parseMcpServers(saved.readAll()).servers, host.servers());

        // Two servers of one name are refused.
        QString error;
        QVERIFY(!host.setServers({host.servers().first(), host.servers().first()}, &error));
        QVERIFY(error.contains(QStringLiteral("name of its own")));
        QCOMPARE(mcpModelToolName(QStringLiteral("my server"), QStringLiteral("read.file")), QStringLiteral("my_server__read_file"));
    }
};

QTEST_GUILESS_MAIN(TestMcpHost)
#include "test_mcp_host.moc"
