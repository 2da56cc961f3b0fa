// The MCP host's parts without a display: the mcpServers configuration (Claude Desktop's layout,
// bad entries refused with the reason), a client against the reference MCP servers from npm
// (server-everything's echo over stdio and streamable HTTP, server-filesystem's directory listing), and servers that
// misbehave (hang, flood, write garbage, exit, never answer a call): each reported with the reason,
// nothing left waiting.
#include "services/mcp_client.h"
#include "services/mcp_config.h"

#include "mcp_npm_servers.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QtTest>

#include <optional>

using namespace hearth::app;

namespace {

using hearth::test::mcpServerScript;

McpServerConfig shellServer(const QString& script) {
    McpServerConfig c;
    c.name = QStringLiteral("fake");
    c.command = QStringLiteral("/bin/sh");
    c.args = {QStringLiteral("-c"), script};
    return c;
}

// A server that answers initialize and tools/list (one tool, "slow") and then reads on without
// ever answering.
const char* const kSilentAfterListing =
    "read l; echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
    "\"serverInfo\":{\"name\":\"fake\"}}}'; read l; read l; "
    "echo '{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"slow\",\"inputSchema\":{\"type\":\"object\"}}]}}'; "
    "while read l; do :; done";

// Claude Desktop's layout: three usable entries and six that are not (plain literals: moc cannot
// read raw strings).
const char* const kMixedConfig =
    "{\"mcpServers\": {\n"
    "    \"files\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"],\n"
    "              \"env\": {\"DEBUG\": \"1\"}},\n"
    "    \"remote\": {\"url\": \"http://127.0.0.1:3001/mcp\", \"headers\": {\"Authorization\": \"Bearer x\"}},\n"
    "    \"off\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\"], \"disabled\": true},\n"
    "    \"bad-args\": {\"command\": \"x\", \"args\": \"not a list\"},\n"
    "    \"bad-env\": {\"command\": \"x\", \"env\": {\"N\": 1}},\n"
    "    \"nothing\": {\"args\": []},\n"
    "    \"both\": {\"command\": \"x\", \"url\": \"http://a/\"},\n"
    "    \"ftp\": {\"url\": \"ftp://host/x\"},\n"
    "    \"sse\": {\"type\": \"sse\", \"url\": \"http://127.0.0.1:3001/sse\"}\n"
    "}}\n";
const char* const kBareConfig = "{\"t\": {\"command\": \"x\"}}";

// Starts `client` and waits for ready or failed; "" when ready, else the failure.
QString startAndWait(McpClient& client, int ms = 30000) {
    QSignalSpy ready(&client, &McpClient::ready);
    QSignalSpy failed(&client, &McpClient::failed);
    client.start();
    if (!QTest::qWaitFor([&] { return !ready.isEmpty() || !failed.isEmpty(); }, ms)) return QStringLiteral("no outcome");
    return failed.isEmpty() ? QString() : failed.first().at(0).toString();
}

} // namespace

class TestMcpClient : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void mcpConfigReadsClaudeDesktopLayout() {
        const McpConfigParse p = parseMcpServers(kMixedConfig);
        QCOMPARE(p.servers.size(), 3);
        QCOMPARE(p.servers[0].name, QStringLiteral("files"));
        QCOMPARE(p.servers[0].command, QStringLiteral("npx"));
        QCOMPARE(p.servers[0].args.size(), 3);
        QCOMPARE(p.servers[0].env.value(QStringLiteral("DEBUG")), QStringLiteral("1"));
        QVERIFY(p.servers[1].disabled);
        QCOMPARE(p.servers[2].url, QUrl(QStringLiteral("http://127.0.0.1:3001/mcp")));
        QCOMPARE(p.servers[2].headers.value(QStringLiteral("Authorization")), QStringLiteral("Bearer x"));
        QCOMPARE(p.errors.size(), 6);
        const QString all = p.errors.join(QLatin1Char('\n'));
        QVERIFY2(all.contains(QStringLiteral("bad-args: 'args' must be a list of strings")), qPrintable(all));
        QVERIFY2(all.contains(QStringLiteral("bad-env: 'env.N' must be a string")), qPrintable(all));
        QVERIFY2(all.contains(QStringLiteral("nothing: the entry needs a 'command'")), qPrintable(all));
        QVERIFY2(all.contains(QStringLiteral("both: give either")), qPrintable(all));
        QVERIFY2(all.contains(QStringLiteral("ftp: 'url' must be an http or https URL")), qPrintable(all));
        QVERIFY2(all.contains(QStringLiteral("sse: the old SSE transport")), qPrintable(all));

        // What the app writes reads back the same.
        const McpConfigParse again = parseMcpServers(mcpServersJson(p.servers));
        QVERIFY(again.errors.isEmpty());
        QCOMPARE(again.servers, p.servers);

        QCOMPARE(parseMcpServers("{\"mcpServers\": [1]}").errors.size(), 1);
        QCOMPARE(parseMcpServers("[]").errors.size(), 1);
        QVERIFY(parseMcpServers("{nope").errors.first().startsWith(QStringLiteral("not JSON")));
        // A bare object of servers (how some tools export them) is taken too.
        QCOMPARE(parseMcpServers(kBareConfig).servers.size(), 1);
    }

    // The everything server's resources: listed (its documents among them), one read as text, an
    // unknown one refused; a server that offers none is refused before anything is sent.
    void mcpEverythingResources() {
        QString why;
        const QString script = mcpServerScript(QStringLiteral("server-everything"), why);
        if (script.isEmpty()) QSKIP(qPrintable(why));
        McpClient client(hearth::test::everythingServer(script));
        QSignalSpy failedEarly(&client, &McpClient::resourceFailed);
        client.listResources(); // not started: refused
        QVERIFY(failedEarly.wait(5000));
        QCOMPARE(startAndWait(client), QString());
        QVERIFY(client.offersResources());
        QSignalSpy listed(&client, &McpClient::resourcesListed);
        QSignalSpy read(&client, &McpClient::resourceRead);
        QSignalSpy failed(&client, &McpClient::resourceFailed);
        const quint64 ticket = client.listResources();
        QVERIFY(listed.wait(20000));
        QCOMPARE(listed.first().at(0).toULongLong(), ticket);
        const auto resources = listed.first().at(1).value<QList<McpResource>>();
        QString uri;
        for (const McpResource& r : resources)
            if (r.name == QStringLiteral("architecture.md")) uri = r.uri;
        QVERIFY2(!uri.isEmpty(), "architecture.md is among the resources");
        const quint64 reading = client.readResource(uri);
        QVERIFY(read.wait(20000));
        QCOMPARE(read.first().at(0).toULongLong(), reading);
        QCOMPARE(read.first().at(1).toString(), uri);
        QVERIFY(read.first().at(2).toString().size() > 100);
        client.readResource(QStringLiteral("demo://no/such/thing"));
        QVERIFY(failed.wait(20000));
        QCOMPARE(client.state(), McpClient::State::Ready);

        McpClient plain(shellServer(QString::fromLatin1(kSilentAfterListing)));
        QCOMPARE(startAndWait(plain), QString());
        QVERIFY(!plain.offersResources());
        QSignalSpy refused(&plain, &McpClient::resourceFailed);
        plain.readResource(QStringLiteral("file:///etc/passwd"));
        QVERIFY(refused.wait(5000));
        QVERIFY(refused.first().at(1).toString().contains(QStringLiteral("offers no resources")));
    }

    // The everything server's prompts: listed with their arguments, filled in (a required and an
    // optional argument), a missing required one refused by the server, an unknown prompt refused;
    // a server without prompts refused before anything is sent.
    void mcpEverythingPrompts() {
        QString why;
        const QString script = mcpServerScript(QStringLiteral("server-everything"), why);
        if (script.isEmpty()) QSKIP(qPrintable(why));
        McpClient client(hearth::test::everythingServer(script));
        QSignalSpy failedEarly(&client, &McpClient::promptFailed);
        client.listPrompts(); // not started: refused
        QVERIFY(failedEarly.wait(5000));
        QCOMPARE(startAndWait(client), QString());
        QVERIFY(client.offersPrompts());
        QSignalSpy listed(&client, &McpClient::promptsListed);
        QSignalSpy got(&client, &McpClient::promptGot);
        QSignalSpy failed(&client, &McpClient::promptFailed);
        const quint64 ticket = client.listPrompts();
        QVERIFY(listed.wait(20000));
        QCOMPARE(listed.first().at(0).toULongLong(), ticket);
        const auto prompts = listed.first().at(1).value<QList<McpPrompt>>();
        std::optional<McpPrompt> args;
        QStringList names;
        for (const McpPrompt& p : prompts) {
            names << p.name;
            if (p.name == QStringLiteral("args-prompt")) args = p;
        }
        QVERIFY2(args.has_value() && names.contains(QStringLiteral("simple-prompt")), qPrintable(names.join(QLatin1Char(' '))));
        QCOMPARE(args->arguments.size(), 2);
        QCOMPARE(args->arguments.at(0).name, QStringLiteral("city"));
        QVERIFY(args->arguments.at(0).required);
        QVERIFY(!args->arguments.at(1).required);

        const quint64 filling = client.getPrompt(QStringLiteral("args-prompt"),
                                                 QJsonObject{{QStringLiteral("city"), QStringLiteral("Lyon")},
                                                             {QStringLiteral("state"), QStringLiteral("Rhône")}});
        QVERIFY(got.wait(20000));
        QCOMPARE(got.first().at(0).toULongLong(), filling);
        const auto messages = got.first().at(2).value<QList<McpPromptMessage>>();
        QCOMPARE(messages.size(), 1);
        QCOMPARE(messages.first().role, QStringLiteral("user"));
        QCOMPARE(messages.first().text, QStringLiteral("What's weather in Lyon, Rhône?"));

        const quint64 missing = client.getPrompt(QStringLiteral("args-prompt"), {}); // city is required
        QVERIFY(failed.wait(20000));
        QCOMPARE(failed.last().at(0).toULongLong(), missing);
        client.getPrompt(QStringLiteral("no-such-prompt"), {});
        QVERIFY(failed.wait(20000));
        client.getPrompt(QStringLiteral("args-prompt"), QJsonObject{{QStringLiteral("city"), 3}}); // not a string
        QVERIFY(failed.wait(5000));
        QVERIFY(failed.last().at(1).toString().contains(QStringLiteral("not a string")));
        QCOMPARE(got.size(), 1);
        QCOMPARE(client.state(), McpClient::State::Ready);

        McpClient plain(shellServer(QString::fromLatin1(kSilentAfterListing)));
        QCOMPARE(startAndWait(plain), QString());
        QVERIFY(!plain.offersPrompts());
        QSignalSpy refused(&plain, &McpClient::promptFailed);
        plain.listPrompts();
        QVERIFY(refused.wait(5000));
        QVERIFY(refused.first().at(1).toString().contains(QStringLiteral("offers no prompts")));
    }

    // The reference "everything" server: initialized, tools listed, echo called and answered.
    void mcpEverythingServerRoundTrip() {
        QString why;
        const QString script = mcpServerScript(QStringLiteral("server-everything"), why);
        if (script.isEmpty()) QSKIP(qPrintable(why));
        McpClient client(hearth::test::everythingServer(script));
        QCOMPARE(startAndWait(client), QString());
        QCOMPARE(client.state(), McpClient::State::Ready);
        QVERIFY(!client.serverTitle().isEmpty());
        QStringList names;
        for (const McpTool& t : client.tools()) names << t.name;
        QVERIFY2(names.contains(QStringLiteral("echo")), qPrintable(names.join(QLatin1Char(' '))));
        const McpTool echo = client.tools().at(int(names.indexOf(QStringLiteral("echo"))));
        QCOMPARE(echo.inputSchema.value(QStringLiteral("type")).toString(), QStringLiteral("object"));

        QSignalSpy results(&client, &McpClient::toolResult);
        QSignalSpy failures(&client, &McpClient::toolFailed);
        const quint64 ticket = client.callTool(QStringLiteral("echo"), {{QStringLiteral("message"), QStringLiteral("hi there")}});
        QVERIFY(results.wait(20000));
        QCOMPARE(results.first().at(0).toULongLong(), ticket);
        const auto result = results.first().at(1).value<McpToolResult>();
        QCOMPARE(result.text, QStringLiteral("Echo: hi there"));
        QVERIFY(!result.isError);

        // An unknown tool: an error either way (a JSON-RPC error or a result marked isError).
        client.callTool(QStringLiteral("no-such-tool"), {});
        QVERIFY(QTest::qWaitFor([&] { return results.size() + failures.size() == 2; }, 20000));
        if (results.size() == 2) QVERIFY(results.last().at(1).value<McpToolResult>().isError);
        QCOMPARE(client.state(), McpClient::State::Ready);

        client.stop();
        QCOMPARE(client.state(), McpClient::State::Stopped);
        client.callTool(QStringLiteral("echo"), {});
        QVERIFY(failures.wait(5000) || failures.size() == 2);
        QVERIFY(failures.last().at(1).toString().contains(QStringLiteral("not running")));
    }

    // The reference filesystem server lists a folder it was given.
    void mcpFilesystemServerListsAFolder() {
        QString why;
        const QString script = mcpServerScript(QStringLiteral("server-filesystem"), why);
        if (script.isEmpty()) QSKIP(qPrintable(why));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QFile f(dir.filePath(QStringLiteral("notes.txt")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("hello\n");
        f.close();
        McpServerConfig c;
        c.name = QStringLiteral("files");
        c.command = QStandardPaths::findExecutable(QStringLiteral("node"));
        c.args = {script, dir.path()};
        McpClient client(c);
        QCOMPARE(startAndWait(client), QString());
        QSignalSpy results(&client, &McpClient::toolResult);
        client.callTool(QStringLiteral("list_directory"), {{QStringLiteral("path"), dir.path()}});
        QVERIFY(results.wait(20000));
        const QString text = results.first().at(1).value<McpToolResult>().text;
        QVERIFY2(text.contains(QStringLiteral("notes.txt")), qPrintable(text));
    }

    void mcpServerThatNeverAnswersTimesOut() {
        McpClient client(shellServer(QStringLiteral("while read l; do :; done")));
        client.setStartTimeoutMs(300);
        const QString why = startAndWait(client);
        QVERIFY2(why.contains(QStringLiteral("initialize: no answer within 0.3 s")), qPrintable(why));
        QCOMPARE(client.state(), McpClient::State::Failed);
    }

    void mcpServerWritingGarbageIsRefused() {
        McpClient client(shellServer(QStringLiteral("echo 'Server starting...'; while read l; do :; done")));
        const QString why = startAndWait(client);
        QVERIFY2(why.contains(QStringLiteral("not JSON-RPC on stdout: Server starting...")), qPrintable(why));
    }

    // Over HTTP: an answer that is not JSON-RPC breaks the session with the reason.
    void mcpHttpServerWritingGarbageIsRefused() {
        QTcpServer http;
        QVERIFY(http.listen(QHostAddress::LocalHost, 0));
        connect(&http, &QTcpServer::newConnection, &http, [&http] {
            while (QTcpSocket* s = http.nextPendingConnection()) {
                connect(s, &QTcpSocket::readyRead, s, [s] {
                    s->readAll();
                    s->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n<html></html>");
                    s->disconnectFromHost();
                });
            }
        });
        McpServerConfig c;
        c.name = QStringLiteral("garbage");
        c.url = QUrl(QStringLiteral("http://127.0.0.1:%1/mcp").arg(http.serverPort()));
        McpClient client(c);
        const QString why = startAndWait(client, 10000);
        QVERIFY2(why.contains(QStringLiteral("not JSON-RPC: <html></html>")), qPrintable(why));
    }

    void mcpServerFloodingIsCut() {
        McpClient client(shellServer(QStringLiteral("head -c 3000000 /dev/zero | tr '\\0' x; while read l; do :; done")));
        client.setMaxMessageBytes(1 << 20);
        const QString why = startAndWait(client);
        QVERIFY2(why.contains(QStringLiteral("a message over 1 MiB")), qPrintable(why));
    }

    void mcpServerThatExitsSaysWhy() {
        McpClient client(shellServer(QStringLiteral("echo 'missing API key' >&2; exit 3")));
        const QString why = startAndWait(client);
        QVERIFY2(why.contains(QStringLiteral("exited with code 3")), qPrintable(why));
        QVERIFY2(why.contains(QStringLiteral("missing API key")), qPrintable(why));
        McpServerConfig none;
        none.name = QStringLiteral("none");
        none.command = QStringLiteral("/nonexistent/mcp-server");
        McpClient missing(none);
        const QString notStarted = startAndWait(missing);
        QVERIFY2(notStarted.contains(QStringLiteral("could not start '/nonexistent/mcp-server'")), qPrintable(notStarted));
    }

    // A call the server never answers fails at the call limit and the server stays usable; a call
    // pending when the server is stopped fails with that reason.
    void mcpCallWithoutAnswerTimesOut() {
        McpClient client(shellServer(QString::fromLatin1(kSilentAfterListing)));
        QCOMPARE(startAndWait(client), QString());
        QCOMPARE(client.tools().size(), 1);
        client.setCallTimeoutMs(300);
        QSignalSpy failures(&client, &McpClient::toolFailed);
        const quint64 ticket = client.callTool(QStringLiteral("slow"), {});
        QVERIFY(failures.wait(5000));
        QCOMPARE(failures.first().at(0).toULongLong(), ticket);
        QVERIFY2(failures.first().at(1).toString().contains(QStringLiteral("no answer within 0.3 s")),
                 qPrintable(failures.first().at(1).toString()));
        QCOMPARE(client.state(), McpClient::State::Ready);
        client.setCallTimeoutMs(60000);
        client.callTool(QStringLiteral("slow"), {});
        client.stop();
        QCOMPARE(failures.size(), 2);
        QVERIFY(failures.last().at(1).toString().contains(QStringLiteral("stopped")));
    }

    // The everything server over streamable HTTP (its own process on a free port): the same
    // round trip through a session.
    void mcpEverythingServerOverHttp() {
        QString why;
        const QString script = mcpServerScript(QStringLiteral("server-everything"), why);
        if (script.isEmpty()) QSKIP(qPrintable(why));
        QTcpServer probe;
        QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
        const quint16 port = probe.serverPort();
        probe.close();
        QProcess server;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("PORT"), QString::number(port));
        server.setProcessEnvironment(env);
        server.setProcessChannelMode(QProcess::MergedChannels);
        server.start(QStandardPaths::findExecutable(QStringLiteral("node")), {script, QStringLiteral("streamableHttp")});
        QByteArray said;
        QVERIFY2(QTest::qWaitFor([&] { return (said += server.readAll()).contains("listening"); }, 20000), said.constData());
        McpServerConfig c;
        c.name = QStringLiteral("everything-http");
        c.url = QUrl(QStringLiteral("http://127.0.0.1:%1/mcp").arg(port));
        McpClient client(c);
        QCOMPARE(startAndWait(client), QString());
        QVERIFY(client.tools().size() > 3);
        QSignalSpy results(&client, &McpClient::toolResult);
        client.callTool(QStringLiteral("echo"), {{QStringLiteral("message"), QStringLiteral("over http")}});
        QVERIFY(results.wait(20000));
        QCOMPARE(results.first().at(1).value<McpToolResult>().text, QStringLiteral("Echo: over http"));
        client.stop();
        server.kill();
        server.waitForFinished(5000);
    }

    // Turned off, or nothing listening at the URL: refused with the reason.
    void mcpServerNotStartableSaysWhy() {
        McpServerConfig c;
        c.name = QStringLiteral("web");
        c.url = QUrl(QStringLiteral("http://127.0.0.1:9/mcp"));
        McpClient web(c);
        const QString why = startAndWait(web, 10000);
        QVERIFY2(why.startsWith(QStringLiteral("initialize: http://127.0.0.1:9/mcp: Connection refused")), qPrintable(why));
        McpServerConfig off = shellServer(QStringLiteral("exit 0"));
        off.disabled = true;
        McpClient client(off);
        QVERIFY(startAndWait(client, 2000).contains(QStringLiteral("turned off")));
    }
};

QTEST_GUILESS_MAIN(TestMcpClient)
#include "test_mcp_client.moc"
