// An MCP tool round trip in the chat page, against the reference "everything" server from npm
// over stdio: the chat offers the server's tools to the model (a synthesized Qwen3 with Qwen3's
// real template, made to write a call of `echo` by an output grammar), the call shows in the
// transcript with Allow once / Always allow / Deny, a click on Allow once runs it, the result is
// stored as a tool message and the model answers again; everything is read back from the store
// after a reopen; a denied call does not run and the model is told. Screenshot: chat-tools.png.
#include "chat_steps.h"
#include "chat_view.h"
#include "mcp_prompt_dialog.h"
#include "mcp_resource_dialog.h"
#include "gemma3_vision_files.h"
#include "gguf_rewrite.h"
#include "mcp_npm_servers.h"
#include "services/chat_tools.h"
#include "services/engine_host.h"
#include "services/mcp_host.h"
#include "services/store.h"
#include "test_support.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

namespace {

QString toolScreenshotDir() {
    const QString dir = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR") ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                                                                           : QDir::current().filePath(QStringLiteral("screenshots"));
    QDir().mkpath(dir);
    return dir;
}

// The model writes this call and nothing else: a GBNF grammar of one sentence.
const char* const kEchoCallGrammar =
    "root ::= \"<tool_call>\\n{\\\"name\\\": \\\"everything__echo\\\", \\\"arguments\\\": "
    "{\\\"message\\\": \\\"hello from hearth\\\"}}\\n</tool_call>\"";

app::Sampling callingSampling() {
    app::Sampling s = app::Sampling::greedy(96);
    s.grammar = QString::fromLatin1(kEchoCallGrammar);
    return s;
}

} // namespace

class TestChatMcpTools : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_model;

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("templates/Qwen-Qwen3-0.6B.jinja"));
        std::string synth;
        const QString error = test::synthTextOnlyModel(m_dir.path(), synth);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QFile jinja(QString::fromStdString(test::testDataPath("templates/Qwen-Qwen3-0.6B.jinja")));
        QVERIFY(jinja.open(QIODevice::ReadOnly));
        const std::string chatTemplate = jinja.readAll().toStdString();
        m_model = m_dir.filePath(QStringLiteral("qwen3-tools.gguf"));
        const Status st = test::rewriteGguf(synth, m_model.toStdString(), [&](gguf::Writer& w) {
            w.set("tokenizer.chat_template", gguf::Value::string(chatTemplate));
        });
        QVERIFY2(st.isOk(), st.toString().c_str());
    }

    void mcpResourcesAttachToTheNextMessage();
    void mcpPromptGoesIntoTheMessageBox();

    void mcpToolRoundTripInTheChat() {
        QString why;
        const QString script = test::mcpServerScript(QStringLiteral("server-everything"), why);
        if (script.isEmpty()) QSKIP(qPrintable(why));
        QTemporaryDir data;
        QVERIFY(data.isValid());
        app::McpHost host(data.path());
        QVERIFY(host.setServers({test::everythingServer(script)}));
        host.startAll();
        QVERIFY(QTest::qWaitFor([&] { return host.toolFor(QStringLiteral("everything__echo")).has_value(); }, 30000));
        app::ChatToolRunner runner(&host);

        app::Store store;
        store.open(data.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QSignalSpy loaded(&engine, &app::EngineHost::loaded);
        app::LoadSettings settings;
        settings.contextLength = 4096;
        settings.threads = 2;
        engine.loadModel(m_model, settings);
        QVERIFY(loaded.wait(60000));
        ui::ChatView chat(&engine, &store);
        chat.setToolRunner(&runner);
        chat.resize(900, 760);
        chat.show();
        chat.setSampling(callingSampling());

        // The reply is a call: shown as one, waiting for the user; nothing more can be sent.
        chat.sendText(QStringLiteral("Say hello through the echo tool."));
        QTRY_VERIFY_WITH_TIMEOUT(chat.waitingToolCalls().size() == 1, 60000);
        QVERIFY(!chat.isGenerating());
        const QString callId = chat.waitingToolCalls().first();
        QString md = chat.transcriptMarkdown();
        QVERIFY2(md.contains(QStringLiteral("**Tool call:** `everything__echo`")), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("{\"message\":\"hello from hearth\"}")), qPrintable(md));
        QVERIFY2(!md.contains(QStringLiteral("<tool_call>")), qPrintable(md)); // the markup is not shown
        QVERIFY(md.contains(QStringLiteral("(hearth:tool-once/%1)").arg(callId)));
        QVERIFY(md.contains(QStringLiteral("(hearth:tool-deny/%1)").arg(callId)));
        QVERIFY(!chat.canSend());
        QVERIFY2(chat.inputPlaceholder().contains(QStringLiteral("allow or deny")), qPrintable(chat.inputPlaceholder()));
        QCOMPARE(chat.messageCount(), 2);

        // Allowed once: it runs, its result is stored, and the model answers (free text now).
        chat.setSampling(app::Sampling::greedy(6));
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
        QVERIFY(test::clickLink(chat, QStringLiteral("hearth:tool-once/%1").arg(callId)));
        QTRY_VERIFY_WITH_TIMEOUT(replies.size() == 1 && !chat.isGenerating(), 60000);
        QCOMPARE(chat.messageCount(), 4); // question, call, result, answer
        md = chat.transcriptMarkdown();
        QVERIFY2(md.contains(QStringLiteral("**Result of `everything__echo`:**")), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("Echo: hello from hearth")), qPrintable(md));
        QVERIFY(!md.contains(QStringLiteral("hearth:tool-once/")));
        QVERIFY(chat.canSend());
        // Asked once: the tool still asks next time.
        QCOMPARE(host.toolSettings(QStringLiteral("everything"), QStringLiteral("echo")).approval, app::McpApproval::Ask);

        // All of it was stored: reopened, the chat reads the same.
        const qint64 conversation = chat.conversationId();
        test::reopenConversation(chat, store, conversation);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 4, 10000);
        md = chat.transcriptMarkdown();
        QVERIFY2(md.contains(QStringLiteral("**Tool call:** `everything__echo`")), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("Echo: hello from hearth")), qPrintable(md));
        QVERIFY(chat.waitingToolCalls().isEmpty());

        // Another call, denied: the server is not asked, the model is told and answers.
        chat.setSampling(callingSampling());
        chat.sendText(QStringLiteral("Once more, please."));
        QTRY_VERIFY_WITH_TIMEOUT(chat.waitingToolCalls().size() == 1, 60000);
        QTest::qWait(200);
        QVERIFY(chat.grab().save(QDir(toolScreenshotDir()).filePath(QStringLiteral("chat-tools.png"))));
        const QString second = chat.waitingToolCalls().first();
        chat.setSampling(app::Sampling::greedy(6));
        QVERIFY(test::clickLink(chat, QStringLiteral("hearth:tool-deny/%1").arg(second)));
        QTRY_VERIFY_WITH_TIMEOUT(replies.size() == 3 && !chat.isGenerating(), 60000); // the call, the answer
        QCOMPARE(chat.messageCount(), 8);
        md = chat.transcriptMarkdown();
        QVERIFY2(md.contains(QStringLiteral("The user denied this call of everything__echo")), qPrintable(md));

        // Stop while a call waits: the call ends as stopped and the model is not asked again.
        chat.setSampling(callingSampling());
        chat.sendText(QStringLiteral("And again."));
        QTRY_VERIFY_WITH_TIMEOUT(chat.waitingToolCalls().size() == 1, 60000);
        auto* stop = chat.findChild<QPushButton*>(QStringLiteral("stopReply"));
        QVERIFY(stop);
        QVERIFY(stop->isEnabled());
        QTest::mouseClick(stop, Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 11, 10000);
        QTest::qWait(300);
        QVERIFY(!chat.isGenerating());
        QCOMPARE(replies.size(), 4); // the call's reply, no answer after it
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("The user stopped this call")));
        QVERIFY(chat.canSend());
    }
};

// (continued) Resources the server offers, attached to the next message through the picker.
void TestChatMcpTools::mcpResourcesAttachToTheNextMessage() {
    QString why;
    const QString script = test::mcpServerScript(QStringLiteral("server-everything"), why);
    if (script.isEmpty()) QSKIP(qPrintable(why));
    QTemporaryDir data;
    QVERIFY(data.isValid());
    app::McpHost host(data.path());
    {
        ui::McpResourceDialog none(&host); // no server running: says so, nothing to attach
        QVERIFY(!none.isListing());
        QCOMPARE(none.list()->count(), 0);
    }
    QVERIFY(host.setServers({test::everythingServer(script)}));
    host.startAll();
    QVERIFY(QTest::qWaitFor([&] { return host.client(QStringLiteral("everything"))->state() == app::McpClient::State::Ready; }, 30000));
    ui::McpResourceDialog dialog(&host);
    QVERIFY(dialog.isListing());
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.isListing(), 20000);
    QListWidgetItem* chosen = nullptr;
    for (int i = 0; i < dialog.list()->count(); ++i)
        if (dialog.list()->item(i)->text() == QStringLiteral("everything · architecture.md")) chosen = dialog.list()->item(i);
    QVERIFY(chosen);
    chosen->setSelected(true);
    dialog.readChosen();
    QTRY_COMPARE_WITH_TIMEOUT(dialog.result(), int(QDialog::Accepted), 20000);
    QCOMPARE(dialog.documents().size(), 1);
    QCOMPARE(dialog.documents().first().name, QStringLiteral("architecture.md"));
    QVERIFY(dialog.documents().first().text.size() > 100);

    app::EngineHost engine;
    app::Store store;
    ui::ChatView chat(&engine, &store);
    chat.addDocuments(dialog.documents(), dialog.problems());
    QCOMPARE(chat.attachedDocuments(), dialog.documents());
}

// Tools › Insert prompt…: the everything server's prompts listed, the chosen one's arguments
// asked for (Insert waits for the required one), a refusal shown with the dialog left open, the
// filled-in text put into the chat's message box.
void TestChatMcpTools::mcpPromptGoesIntoTheMessageBox() {
    QString why;
    const QString script = test::mcpServerScript(QStringLiteral("server-everything"), why);
    if (script.isEmpty()) QSKIP(qPrintable(why));
    QTemporaryDir data;
    QVERIFY(data.isValid());
    app::McpHost host(data.path());
    {
        ui::McpPromptDialog none(&host); // no server running: says so
        QVERIFY(!none.isListing());
        QCOMPARE(none.list()->count(), 0);
        QVERIFY(none.statusText().contains(QStringLiteral("No running MCP server")));
    }
    QVERIFY(host.setServers({test::everythingServer(script)}));
    host.startAll();
    QVERIFY(QTest::qWaitFor([&] { return host.client(QStringLiteral("everything"))->state() == app::McpClient::State::Ready; }, 30000));
    ui::McpPromptDialog dialog(&host);
    QVERIFY(dialog.isListing());
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.isListing(), 20000);
    int row = -1;
    for (int i = 0; i < dialog.list()->count(); ++i)
        if (dialog.list()->item(i)->text() == QStringLiteral("everything · Arguments Prompt")) row = i;
    QVERIFY(row >= 0);
    dialog.list()->setCurrentRow(row);
    QLineEdit* city = dialog.argumentField(QStringLiteral("city"));
    QVERIFY(city);
    QVERIFY(dialog.argumentField(QStringLiteral("state")));
    auto* insert = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
    QVERIFY(!insert->isEnabled()); // city is required
    dialog.insertChosen();         // refused here, nothing asked
    QVERIFY(dialog.statusText().contains(QStringLiteral("city needs a value")));
    QCOMPARE(dialog.result(), int(QDialog::Rejected));
    city->setText(QStringLiteral("Oslo"));
    QVERIFY(insert->isEnabled());
    dialog.insertChosen();
    QTRY_COMPARE_WITH_TIMEOUT(dialog.result(), int(QDialog::Accepted), 20000);
    QCOMPARE(dialog.text(), QStringLiteral("What's weather in Oslo?"));

    app::EngineHost engine;
    app::Store store;
    ui::ChatView chat(&engine, &store);
    chat.insertDraft(dialog.text());
    QCOMPARE(chat.draftText(), QStringLiteral("What's weather in Oslo?"));
}

QTEST_MAIN(TestChatMcpTools)
#include "test_chat_mcp_tools.moc"
