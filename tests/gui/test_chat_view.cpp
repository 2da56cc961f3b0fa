// The chat page on the real engine (stories260K) and a real SQLite store, offscreen: copy links on
// code blocks, edit and resend (the edited turn and its reply replace the old ones in the store),
// per-chat sampling stored with the conversation and restored on reopening, rename and delete;
// a reply's reasoning in a block (open while thinking, closed once the answer starts, a click on
// its header toggles it, stored apart and shown again on reopening); plus the Markdown decorators
// and the sampling JSON on their own.
#include "chat_markdown.h"
#include "chat_view.h"
#include "test_support.h"

#include "services/engine_host.h"
#include "services/sampling_json.h"
#include "services/store.h"

#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextBrowser>
#include <QUrl>
#include <QtTest>

using namespace hearth;

namespace {

QList<app::StoredMessage> storedMessages(app::Store& store, qint64 conversation) {
    QSignalSpy loaded(&store, &app::Store::messagesLoaded);
    const quint64 t = store.messages(conversation);
    for (int i = 0; i < 500; ++i) {
        for (const auto& args : loaded)
            if (args.first().toULongLong() == t) return args.at(2).value<QList<app::StoredMessage>>();
        loaded.wait(20);
    }
    return {};
}

QList<app::Conversation> conversations(app::Store& store) {
    QSignalSpy listed(&store, &app::Store::conversationsListed);
    const quint64 t = store.listConversations();
    for (int i = 0; i < 500; ++i) {
        for (const auto& args : listed)
            if (args.first().toULongLong() == t) return args.at(1).value<QList<app::Conversation>>();
        listed.wait(20);
    }
    return {};
}

QString screenshotDir() {
    const QString shots = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR")
                              ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                              : QDir::current().filePath(QStringLiteral("screenshots"));
    QDir().mkpath(shots);
    return shots;
}

// Clicks the transcript's link to `href` with the mouse, as a user would; false if not shown.
bool clickLink(ui::ChatView& chat, const QString& href) {
    auto* browser = chat.findChild<QTextBrowser*>();
    if (!browser) return false;
    for (QTextBlock b = browser->document()->begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QTextFragment f = it.fragment();
            if (f.charFormat().anchorHref() != href) continue;
            QTextCursor c(browser->document());
            c.setPosition(f.position() + f.length() / 2);
            browser->ensureCursorVisible();
            browser->setTextCursor(c);
            browser->ensureCursorVisible();
            const QPoint at = browser->cursorRect(c).center();
            browser->setTextCursor(QTextCursor(browser->document())); // no selection left behind
            QTest::mouseClick(browser->viewport(), Qt::LeftButton, {}, at);
            return true;
        }
    return false;
}

// The foreground of the transcript text that starts with `text` (invalid if none, or no colour set).
QColor textColour(ui::ChatView& chat, const QString& text) {
    auto* browser = chat.findChild<QTextBrowser*>();
    for (QTextBlock b = browser->document()->begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it)
            if (it.fragment().text().startsWith(text)) {
                const QTextCharFormat f = it.fragment().charFormat();
                return f.hasProperty(QTextFormat::ForegroundBrush) ? f.foreground().color() : QColor(Qt::black);
            }
    return QColor();
}

} // namespace

class TestChatView : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void copyLinksMarkCodeBlocks() {
        QStringList blocks;
        const QString md = ui::withCopyLinks(
            QStringLiteral("Run this:\n```python\nprint(1)\nprint(2)\n```\nthen\n~~~~\na ``` b\n~~~~\n"), blocks);
        QCOMPARE(blocks, QStringList({QStringLiteral("print(1)\nprint(2)\n"), QStringLiteral("a ``` b\n")}));
        QVERIFY(md.contains(QStringLiteral("Run this:\n\n[Copy code](hearth:copy/0)\n\n```python")));
        QVERIFY(md.contains(QStringLiteral("[Copy code](hearth:copy/1)\n\n~~~~")));
        // Numbering continues; an unterminated block (still streaming) runs to the end.
        const QString open = ui::withCopyLinks(QStringLiteral("```\nx = 1"), blocks);
        QCOMPARE(blocks.size(), 3);
        QCOMPARE(blocks[2], QStringLiteral("x = 1\n"));
        QVERIFY(open.startsWith(QStringLiteral("[Copy code](hearth:copy/2)")));
        // No fences: unchanged.
        QStringList none;
        QCOMPARE(ui::withCopyLinks(QStringLiteral("plain `code` text"), none), QStringLiteral("plain `code` text"));
        QVERIFY(none.isEmpty());
    }

    void reasoningBlockMarkdown() {
        QCOMPARE(ui::reasoningHeader(true, 0.0), QStringLiteral("Thinking…"));
        QCOMPARE(ui::reasoningHeader(false, 4400.0), QStringLiteral("Thought for 4 s"));
        QCOMPARE(ui::reasoningHeader(false, 120.0), QStringLiteral("Thought for 1 s"));
        QCOMPARE(ui::reasoningHeader(false, 0.0), QStringLiteral("Thoughts"));
        const QString closed = ui::reasoningBlock(QStringLiteral("a\n\nb"), QStringLiteral("Thought for 2 s"), 3, false);
        QCOMPARE(closed, QStringLiteral("[▸ Thought for 2 s](hearth:think/3)\n\n"));
        // Open: one block quote, its blank line kept inside it.
        const QString open = ui::reasoningBlock(QStringLiteral("\na\n\nb\n"), QStringLiteral("Thinking…"), 0, true);
        QCOMPARE(open, QStringLiteral("[▾ Thinking…](hearth:think/0)\n\n> a\n>\n> b\n\n"));
    }

    void reasoningShownApartFromTheAnswer() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QSignalSpy loaded(&engine, &app::EngineHost::loaded);
        engine.loadModel(QString::fromStdString(test::testDataPath("models/stories260K.gguf")), app::LoadSettings());
        QVERIFY(loaded.wait(30000));
        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        chat.setSampling(app::Sampling::greedy(4));
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);

        // stories260K writes no reasoning: the real request runs with the host's signals held
        // back, then the reply is scripted through the same signals a reasoning model's would take.
        engine.blockSignals(true);
        chat.sendText(QStringLiteral("What is 2 + 2?"));
        QTRY_VERIFY_WITH_TIMEOUT(chat.isGenerating(), 10000);
        const quint64 id = chat.activeRequest();
        QTRY_VERIFY_WITH_TIMEOUT(engine.activeRequests().isEmpty(), 20000);
        engine.blockSignals(false);
        QVERIFY(chat.isGenerating());
        const int live = chat.messageCount(); // the reply being written
        QCOMPARE(live, 1);

        const QString thoughts = QStringLiteral("The user asks for 2 + 2.\n\nTwo plus two makes four.");
        Q_EMIT engine.reasoningReceived(id, thoughts.left(20));
        Q_EMIT engine.reasoningReceived(id, thoughts.mid(20));
        QTRY_VERIFY(chat.transcriptMarkdown().contains(QStringLiteral("Thinking…")));
        QVERIFY(chat.isReasoningExpanded(live));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("> Two plus two makes four.")));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("thinking…")));
        QVERIFY(chat.grab().save(QDir(screenshotDir()).filePath(QStringLiteral("chat_reasoning_thinking.png"))));

        QTest::qWait(1300); // so that it "thought" for a second
        Q_EMIT engine.tokenReceived(id, QStringLiteral("2 + 2 = **4**."));
        QTRY_VERIFY(chat.transcriptMarkdown().contains(QStringLiteral("2 + 2 = **4**.")));
        QVERIFY(!chat.isReasoningExpanded(live)); // closed once the answer starts
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("[▸ Thought for 1 s](hearth:think/1)")));
        QVERIFY(!chat.transcriptMarkdown().contains(QStringLiteral("Two plus two")));
        // Opened while the answer streams, it stays open when the reply ends.
        QVERIFY(clickLink(chat, QStringLiteral("hearth:think/1")));
        QVERIFY(chat.isReasoningExpanded(live));
        app::GenerationUsage usage;
        usage.completionTokens = 30;
        Q_EMIT engine.finished(id, QStringLiteral("stop"), usage);
        QCOMPARE(replies.size(), 1);
        QCOMPARE(replies.last().at(0).toString(), QStringLiteral("2 + 2 = **4**.")); // the answer alone
        QVERIFY(!chat.isGenerating());
        QCOMPARE(chat.messageCount(), 2);
        QVERIFY(chat.isReasoningExpanded(1));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("[▾ Thought for 1 s](hearth:think/1)")));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("> Two plus two makes four.")));
        QVERIFY(chat.grab().save(QDir(screenshotDir()).filePath(QStringLiteral("chat_reasoning_open.png"))));
        // The reasoning is tinted, the answer is not.
        const QColor thoughtColour = textColour(chat, QStringLiteral("Two plus two"));
        QVERIFY(thoughtColour.isValid());
        QVERIFY(thoughtColour != QColor(Qt::black));
        QVERIFY(textColour(chat, QStringLiteral("2 + 2 = ")) != thoughtColour);
        QVERIFY(clickLink(chat, QStringLiteral("hearth:think/1")));
        QVERIFY(!chat.isReasoningExpanded(1));
        QVERIFY(!chat.transcriptMarkdown().contains(QStringLiteral("Two plus two")));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("2 + 2 = **4**.")));
        QVERIFY(chat.grab().save(QDir(screenshotDir()).filePath(QStringLiteral("chat_reasoning_closed.png"))));
        chat.activateLink(QUrl(QStringLiteral("hearth:copy-message/1")));
        QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("2 + 2 = **4**."));
        chat.activateLink(QUrl(QStringLiteral("hearth:think/7"))); // no such message: nothing
        QVERIFY(!chat.isReasoningExpanded(7));

        // Stored apart from the answer, and shown again (closed) when the chat is reopened.
        const qint64 conv = chat.conversationId();
        QTRY_COMPARE_WITH_TIMEOUT(storedMessages(store, conv).size(), 2, 5000);
        const app::StoredMessage stored = storedMessages(store, conv).at(1);
        QCOMPARE(stored.content, QStringLiteral("2 + 2 = **4**."));
        QCOMPARE(stored.reasoning, thoughts);
        QVERIFY2(stored.reasoningMs >= 1200.0 && stored.reasoningMs < 10000.0, qPrintable(QString::number(stored.reasoningMs)));
        chat.newChat();
        QVERIFY(!chat.transcriptMarkdown().contains(QStringLiteral("Thought for")));
        chat.openConversation(conv);
        QTRY_COMPARE(chat.messageCount(), 2);
        QVERIFY(!chat.isReasoningExpanded(1));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("[▸ Thought for 1 s](hearth:think/1)")));
        // The setting that keeps reasoning open.
        chat.setCollapseReasoning(false);
        QVERIFY(chat.isReasoningExpanded(1));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("> The user asks for 2 + 2.")));
        QVERIFY(!chat.isReasoningExpanded(0)); // the user's message has none
    }

    void samplingJsonRoundTrip() {
        app::Sampling s;
        s.temperature = 0.3f;
        s.topK = 7;
        s.topP = 0.5f;
        s.minP = 0.1f;
        s.repetitionPenalty = 1.2f;
        s.seed = 18446744073709551557ull;
        s.maxTokens = 77;
        s.stopStrings = {QStringLiteral("END"), QStringLiteral("\n\n")};
        const app::Sampling back = app::samplingFromJson(app::samplingToJson(s), app::Sampling());
        QCOMPARE(back.temperature, s.temperature);
        QCOMPARE(back.topK, 7);
        QCOMPARE(back.topP, s.topP);
        QCOMPARE(back.minP, s.minP);
        QCOMPARE(back.repetitionPenalty, s.repetitionPenalty);
        QCOMPARE(back.seed, s.seed);
        QCOMPARE(back.maxTokens, 77);
        QCOMPARE(back.stopStrings, s.stopStrings);
        QVERIFY(!app::samplingJsonIsDefault(app::samplingToJson(s)));
        QVERIFY(app::samplingJsonIsDefault(QStringLiteral("{}")));
        QVERIFY(app::samplingJsonIsDefault(QStringLiteral("not json")));
        // Bad fields fall back to the defaults one by one.
        app::Sampling d;
        d.maxTokens = 99;
        const app::Sampling mixed = app::samplingFromJson(
            QStringLiteral(R"({"temperature":"hot","top_k":-5,"top_p":0.25,"max_tokens":1e30,"stop":[1,"x"]})"), d);
        QCOMPARE(mixed.temperature, d.temperature);
        QCOMPARE(mixed.topK, d.topK);
        QCOMPARE(mixed.topP, 0.25f);
        QCOMPARE(mixed.maxTokens, 99);
        QCOMPARE(mixed.stopStrings, QStringList({QStringLiteral("x")}));
    }

    void editResendCopyAndPerChatSettings() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QSignalSpy loaded(&engine, &app::EngineHost::loaded);
        engine.loadModel(QString::fromStdString(test::testDataPath("models/stories260K.gguf")), app::LoadSettings());
        QVERIFY(loaded.wait(30000));

        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        chat.setSampling(app::Sampling::greedy(24)); // the defaults
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);

        // This chat's own sampling, set before its first message, is stored with it.
        app::Sampling own = app::Sampling::greedy(6);
        chat.setChatSettings(QString(), true, own);
        chat.sendText(QStringLiteral("Look:\n```\nprint(1)\n```"));
        QVERIFY(replies.wait(30000));
        const qint64 conv = chat.conversationId();
        QVERIFY(conv > 0);
        QCOMPARE(chat.codeBlocks().value(0), QStringLiteral("print(1)\n"));
        chat.activateLink(QUrl(QStringLiteral("hearth:copy/0")));
        QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("print(1)\n"));
        chat.activateLink(QUrl(QStringLiteral("hearth:copy-message/1")));
        QCOMPARE(QGuiApplication::clipboard()->text(), replies.last().at(0).toString());
        chat.activateLink(QUrl(QStringLiteral("hearth:copy/99"))); // out of range: nothing
        QCOMPARE(QGuiApplication::clipboard()->text(), replies.last().at(0).toString());
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("hearth:edit/0")));
        const QString shots = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR")
                                  ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                                  : QDir::current().filePath(QStringLiteral("screenshots"));
        QDir().mkpath(shots);
        QVERIFY(chat.grab().save(QDir(shots).filePath(QStringLiteral("chat_code_block.png"))));

        // Edit and resend the first message: the store ends with the new turn and its reply.
        chat.activateLink(QUrl(QStringLiteral("hearth:edit/0")));
        QVERIFY(chat.isEditing());
        chat.sendText(QStringLiteral("Once upon a time"));
        QVERIFY(replies.wait(30000));
        QVERIFY(!chat.isEditing());
        const QString reply = replies.last().at(0).toString();
        QTRY_COMPARE_WITH_TIMEOUT(storedMessages(store, conv).size(), 2, 5000);
        const auto messages = storedMessages(store, conv);
        QCOMPARE(messages[0].content, QStringLiteral("Once upon a time"));
        QCOMPARE(messages[1].content, reply);
        QVERIFY(!chat.transcriptMarkdown().contains(QStringLiteral("print(1)")));

        // Per-chat settings come back when the chat is reopened; a new chat has the defaults.
        QList<app::Conversation> list = conversations(store);
        QCOMPARE(list.size(), 1);
        QCOMPARE(app::samplingFromJson(list[0].samplingJson, app::Sampling()).maxTokens, 6);
        chat.newChat();
        QCOMPARE(chat.currentSampling().maxTokens, 24);
        chat.reloadConversations();
        QTest::qWait(200);
        chat.openConversation(conv);
        QCOMPARE(chat.currentSampling().maxTokens, 6);
        chat.setChatSettings(QStringLiteral("Be brief."), false, app::Sampling());
        QCOMPARE(chat.currentSampling().maxTokens, 24);
        QTRY_VERIFY_WITH_TIMEOUT(conversations(store).value(0).systemPrompt == QStringLiteral("Be brief."), 5000);
        QVERIFY(app::samplingJsonIsDefault(conversations(store).value(0).samplingJson));

        // Rename and delete.
        chat.renameConversation(conv, QStringLiteral("  Balloon   story "));
        QTRY_COMPARE_WITH_TIMEOUT(conversations(store).value(0).title, QStringLiteral("Balloon story"), 5000);
        chat.deleteConversation(conv);
        QTRY_VERIFY_WITH_TIMEOUT(conversations(store).isEmpty(), 5000);
        QTRY_COMPARE_WITH_TIMEOUT(chat.conversationId(), qint64(0), 5000);
    }
};

QTEST_MAIN(TestChatView)
#include "test_chat_view.moc"
