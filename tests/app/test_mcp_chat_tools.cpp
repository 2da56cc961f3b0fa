// The chat's side of MCP tools: calls read from a finished reply (only with tools offered; the
// markup hidden while it streams), calls kept as JSON, and ChatToolRunner's rounds against the
// logging stand-in server: "ask" waits for the user, a denied call never reaches the server,
// "always" runs at once and is remembered, an unknown tool or broken arguments come back as
// errors for the model, Stop ends the round, and rounds are bounded.
#include "services/chat_tools.h"

#include "mcp_fake_server.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using namespace hearth::app;

namespace {

using hearth::test::mcpCallsLogged;

// A host in `dir` running the logging stand-in server (its log in `log`), its tools listed.
std::unique_ptr<McpHost> startedHost(const QTemporaryDir& dir, const QString& log) {
    auto host = std::make_unique<McpHost>(dir.path());
    if (!host->setServers({hearth::test::loggingMcpServer(log)})) return nullptr;
    host->startAll();
    if (!QTest::qWaitFor([&] { return host->tools().size() == 2; }, 10000)) return nullptr;
    return host;
}

QJsonArray offeredFunction(const QString& name) {
    const QJsonObject fn{{QStringLiteral("name"), name}, {QStringLiteral("parameters"), QJsonObject{{QStringLiteral("type"), QStringLiteral("object")}}}};
    return {QJsonObject{{QStringLiteral("type"), QStringLiteral("function")}, {QStringLiteral("function"), fn}}};
}

ChatToolCall chatCall(const QString& id, const QString& name, const QString& arguments = QStringLiteral("{}")) {
    return ChatToolCall{id, name, arguments};
}

// Each callFinished as "<id>: <result>" (an error marked "!").
QStringList outcomes(const QSignalSpy& spy) {
    QStringList out;
    for (const QList<QVariant>& args : spy)
        out << args.at(0).value<ChatToolCall>().id + (args.at(2).toBool() ? QStringLiteral(": !") : QStringLiteral(": ")) +
                   args.at(1).toString();
    return out;
}

} // namespace

class TestMcpChatTools : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void mcpCallsAreReadOnlyWhenOffered() {
        const QString reply = QStringLiteral("Let me look.\n<tool_call>\n{\"name\": \"fake__note\", \"arguments\": {\"text\": \"hi\"}}\n</tool_call>");
        ReplyToolCalls none = readToolCalls(reply, {});
        QCOMPARE(none.content, reply);
        QVERIFY(none.calls.isEmpty());
        ReplyToolCalls read = readToolCalls(reply, offeredFunction(QStringLiteral("fake__note")));
        QCOMPARE(read.content, QStringLiteral("Let me look."));
        QCOMPARE(read.calls.size(), 1);
        QCOMPARE(read.calls[0].name, QStringLiteral("fake__note"));
        QCOMPARE(read.calls[0].arguments, QStringLiteral("{\"text\":\"hi\"}"));
        QVERIFY(read.calls[0].id.startsWith(QStringLiteral("call_")));
        // Llama 3.x bare JSON counts only for an offered name: other JSON stays the answer.
        const QString json = QStringLiteral("{\"name\": \"Ada\", \"parameters\": {}}");
        QCOMPARE(readToolCalls(json, offeredFunction(QStringLiteral("fake__note"))).calls.size(), 0);

        QCOMPARE(visibleReplyText(QStringLiteral("Sure.\n<tool_call>\n{\"na")), QStringLiteral("Sure."));
        QCOMPARE(visibleReplyText(QStringLiteral("Sure. <tool_")), QStringLiteral("Sure."));
        QCOMPARE(visibleReplyText(QStringLiteral("a < b")), QStringLiteral("a < b"));
        QCOMPARE(visibleReplyText(QStringLiteral("[TOOL_CALLS][{")), QString());

        const QList<ChatToolCall> calls{chatCall(QStringLiteral("call_1"), QStringLiteral("a"), QStringLiteral("{\"x\":1}")),
                                        chatCall(QStringLiteral("call_2"), QStringLiteral("b"))};
        const QList<ChatToolCall> back = toolCallsFromJson(toolCallsJson(calls));
        QCOMPARE(back.size(), 2);
        QCOMPARE(back[0].arguments, QStringLiteral("{\"x\":1}"));
        QCOMPARE(back[1].name, QStringLiteral("b"));
        QCOMPARE(toolCallsJson({}), QString());
        QVERIFY(toolCallsFromJson(QStringLiteral("[{\"oops")).isEmpty());
    }

    void mcpRunnerAsksDeniesAndRemembers() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString log = dir.filePath(QStringLiteral("calls.log"));
        const std::unique_ptr<McpHost> started = startedHost(dir, log);
        QVERIFY(started);
        McpHost& host = *started;
        ChatToolRunner runner(&host);
        QCOMPARE(runner.offeredTools().size(), 2);
        QSignalSpy finished(&runner, &ChatToolRunner::callFinished);
        QSignalSpy rounds(&runner, &ChatToolRunner::roundFinished);

        // Two calls of "ask" tools and one of a tool nobody has.
        runner.begin({chatCall(QStringLiteral("c1"), QStringLiteral("fake__note")),
                      chatCall(QStringLiteral("c2"), QStringLiteral("fake__rm")),
                      chatCall(QStringLiteral("c3"), QStringLiteral("other__x"))});
        QCOMPARE(runner.rounds(), 1);
        QVERIFY(QTest::qWaitFor([&] { return finished.size() == 1; }, 5000));
        QCOMPARE(outcomes(finished), QStringList{QStringLiteral("c3: !Error: no tool named other__x is available in this chat.")});
        QCOMPARE(runner.waitingCalls(), (QStringList{QStringLiteral("c1"), QStringLiteral("c2")}));
        QTest::qWait(200);
        QCOMPARE(mcpCallsLogged(log), 0); // nothing ran without the user

        runner.deny(QStringLiteral("c2"));
        QCOMPARE(runner.phase(QStringLiteral("c2")), ChatToolRunner::Phase::Done);
        runner.allowOnce(QStringLiteral("c1"));
        QCOMPARE(runner.phase(QStringLiteral("c1")), ChatToolRunner::Phase::Running);
        QVERIFY(QTest::qWaitFor([&] { return rounds.size() == 1; }, 10000));
        QCOMPARE(rounds.first().at(0).toBool(), false);
        QCOMPARE(outcomes(finished).mid(1), (QStringList{QStringLiteral("c2: !The user denied this call of fake__rm; it did not run."),
                                                          QStringLiteral("c1: done 3")}));
        QCOMPARE(mcpCallsLogged(log), 1); // the denied one never reached the server
        QVERIFY(!runner.isActive());
        QCOMPARE(host.toolSettings(QStringLiteral("fake"), QStringLiteral("note")).approval, McpApproval::Ask);

        // Always allow: runs now, remembered, and the next call of that tool runs without asking.
        finished.clear();
        runner.begin({chatCall(QStringLiteral("c4"), QStringLiteral("fake__note"))});
        runner.allowAlways(QStringLiteral("c4"));
        QVERIFY(QTest::qWaitFor([&] { return rounds.size() == 2; }, 10000));
        QCOMPARE(host.toolSettings(QStringLiteral("fake"), QStringLiteral("note")).approval, McpApproval::Always);
        runner.begin({chatCall(QStringLiteral("c5"), QStringLiteral("fake__note"), QStringLiteral("{\"text\": \"x\"}"))});
        QCOMPARE(runner.waitingCalls(), QStringList{QStringLiteral("c5")}); // until the event loop runs it
        QVERIFY(QTest::qWaitFor([&] { return rounds.size() == 3; }, 10000));
        QCOMPARE(outcomes(finished), (QStringList{QStringLiteral("c4: done 4"), QStringLiteral("c5: done 5")}));
        QCOMPARE(mcpCallsLogged(log), 3);
        // Calls found unanswered in a reopened chat wait for the user even for "always" tools.
        runner.begin({chatCall(QStringLiteral("c6"), QStringLiteral("fake__note"))}, true);
        QTest::qWait(100);
        QCOMPARE(runner.waitingCalls(), QStringList{QStringLiteral("c6")});
        runner.cancel();
        QVERIFY(!runner.isActive());
        QCOMPARE(runner.rounds(), 4);
    }

    void mcpRunnerStopsRefusesBrokenArgumentsAndBoundsRounds() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString log = dir.filePath(QStringLiteral("calls.log"));
        const std::unique_ptr<McpHost> started = startedHost(dir, log);
        QVERIFY(started);
        McpHost& host = *started;
        ChatToolRunner runner(&host);
        QSignalSpy finished(&runner, &ChatToolRunner::callFinished);
        QSignalSpy rounds(&runner, &ChatToolRunner::roundFinished);

        // Arguments cut short (a reply that hit its token limit): an error, nothing sent.
        runner.begin({chatCall(QStringLiteral("b1"), QStringLiteral("fake__note"), QStringLiteral("{\"text\": \"unfini"))});
        runner.allowOnce(QStringLiteral("b1"));
        QCOMPARE(rounds.size(), 1);
        QVERIFY(outcomes(finished).first().startsWith(QStringLiteral("b1: !Error: the arguments of this call are not a JSON object")));
        QCOMPARE(mcpCallsLogged(log), 0);

        // Stop: every open call ends as stopped, and the round says so.
        finished.clear();
        runner.begin({chatCall(QStringLiteral("s1"), QStringLiteral("fake__note")),
                      chatCall(QStringLiteral("s2"), QStringLiteral("fake__rm"))});
        runner.stopAll();
        QCOMPARE(rounds.size(), 2);
        QCOMPARE(rounds.last().at(0).toBool(), true);
        QCOMPARE(finished.size(), 2);
        QVERIFY(outcomes(finished).first().contains(QStringLiteral("stopped")));
        QTest::qWait(100);
        QCOMPARE(finished.size(), 2);
        QCOMPARE(mcpCallsLogged(log), 0);

        // Bounded: after kMaxRounds rounds the chat may not ask the model again until reset.
        for (int i = runner.rounds(); i < ChatToolRunner::kMaxRounds; ++i) {
            runner.begin({chatCall(QStringLiteral("r%1").arg(i), QStringLiteral("fake__rm"))});
            runner.deny(QStringLiteral("r%1").arg(i));
        }
        QCOMPARE(runner.rounds(), ChatToolRunner::kMaxRounds);
        QVERIFY(!runner.mayContinue());
        runner.resetRounds();
        QVERIFY(runner.mayContinue());

        // Without a host nothing is offered and a call ends as an error.
        ChatToolRunner bare(nullptr);
        QVERIFY(bare.offeredTools().isEmpty());
        QSignalSpy bareDone(&bare, &ChatToolRunner::callFinished);
        bare.begin({chatCall(QStringLiteral("n1"), QStringLiteral("fake__note"))});
        QVERIFY(QTest::qWaitFor([&] { return bareDone.size() == 1; }, 5000));
        QVERIFY(bareDone.first().at(2).toBool());
    }
};

QTEST_GUILESS_MAIN(TestMcpChatTools)
#include "test_mcp_chat_tools.moc"
