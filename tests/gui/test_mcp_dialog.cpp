// The MCP servers dialog: a server typed in (checked as a file entry would be), imported from a
// Claude Desktop file, started with its tools listed, each tool's switch and approval set through
// the table's widgets and honoured by the host (a call the user set to "never" does not reach the
// server), stopped; and a screenshot of it (mcp-servers.png).
#include "mcp_dialog.h"

#include "mcp_fake_server.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

namespace {

QString screenshotDir() {
    const QString dir = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR") ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                                                                           : QDir::current().filePath(QStringLiteral("screenshots"));
    QDir().mkpath(dir);
    return dir;
}

const char* const kClaudeFile = "{\"mcpServers\": {\"time\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}}}";

} // namespace

class TestMcpDialog : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void mcpDialogConfiguresServersAndTools() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString log = dir.filePath(QStringLiteral("calls.log"));
        const QString script = dir.filePath(QStringLiteral("server.sh"));
        QFile f(script);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(test::loggingMcpServerScript(log).toUtf8());
        f.close();

        app::McpHost host(dir.path());
        ui::McpDialog dialog(&host);
        dialog.show();
        QVERIFY(!dialog.saveServer(QString(), QStringLiteral("/bin/sh x")));
        QCOMPARE(dialog.statusText(), QStringLiteral("Give the server a name."));
        QVERIFY(!dialog.saveServer(QStringLiteral("x"), QString()));
        QCOMPARE(dialog.statusText(), QStringLiteral("Give either a command or a URL."));
        QVERIFY(!dialog.saveServer(QStringLiteral("web"), QString(), QStringLiteral("ftp://host/x")));
        QVERIFY2(dialog.statusText().contains(QStringLiteral("http or https")), qPrintable(dialog.statusText()));
        QVERIFY(host.servers().isEmpty());

        QVERIFY2(dialog.saveServer(QStringLiteral("notes"), QStringLiteral("/bin/sh \"%1\"").arg(script)),
                 qPrintable(dialog.statusText()));
        QCOMPARE(host.servers().size(), 1);
        QCOMPARE(host.servers().first().args, QStringList{script});
        QCOMPARE(dialog.serverStateText(QStringLiteral("notes")), QStringLiteral("stopped"));

        dialog.startServer(QStringLiteral("notes"));
        QTRY_COMPARE_WITH_TIMEOUT(dialog.shownToolCount(), 2, 10000);
        QCOMPARE(dialog.serverStateText(QStringLiteral("notes")), QStringLiteral("running · 2 tools"));
        QCOMPARE(dialog.shownToolName(0), QStringLiteral("note"));
        dialog.setShownToolApproval(0, app::McpApproval::Never);
        dialog.setShownToolEnabled(1, false);
        QCOMPARE(host.toolSettings(QStringLiteral("notes"), QStringLiteral("note")).approval, app::McpApproval::Never);
        QVERIFY(!host.toolSettings(QStringLiteral("notes"), QStringLiteral("rm")).enabled);

        // What the dialog set is what the host enforces: neither call reaches the server.
        QSignalSpy failed(&host, &app::McpHost::callFailed);
        host.call(QStringLiteral("notes__note"), {}, true);
        host.call(QStringLiteral("notes__rm"), {}, true);
        QTRY_COMPARE(failed.size(), 2);
        QVERIFY(failed.at(0).at(1).toString().contains(QStringLiteral("does not allow")));
        QVERIFY(failed.at(1).at(1).toString().contains(QStringLiteral("turned off")));
        QTest::qWait(200);
        QVERIFY(!QFile::exists(log));

        const QString claude = dir.filePath(QStringLiteral("claude_desktop_config.json"));
        QFile c(claude);
        QVERIFY(c.open(QIODevice::WriteOnly));
        c.write(kClaudeFile);
        c.close();
        QVERIFY(dialog.importFile(claude));
        QCOMPARE(dialog.serverNames(), (QStringList{QStringLiteral("notes"), QStringLiteral("time")}));
        QVERIFY2(dialog.statusText().startsWith(QStringLiteral("Imported 1 server.")), qPrintable(dialog.statusText()));
        QCOMPARE(dialog.serverStateText(QStringLiteral("notes")), QStringLiteral("running · 2 tools"));

        QTest::qWait(100);
        QVERIFY(dialog.grab().save(QDir(screenshotDir()).filePath(QStringLiteral("mcp-servers.png"))));

        dialog.stopServer(QStringLiteral("notes"));
        QCOMPARE(dialog.serverStateText(QStringLiteral("notes")), QStringLiteral("stopped"));
        QCOMPARE(dialog.shownToolCount(), 0);
        QVERIFY(dialog.removeServer(QStringLiteral("time")));
        QCOMPARE(dialog.serverNames(), QStringList{QStringLiteral("notes")});
    }
};

QTEST_MAIN(TestMcpDialog)
#include "test_mcp_dialog.moc"
