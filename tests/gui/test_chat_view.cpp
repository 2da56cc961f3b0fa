// The chat page on the real engine (stories260K) and a real SQLite store, offscreen: copy links on
// code blocks, edit and resend (the edited turn and its reply replace the old ones in the store),
// per-chat sampling stored with the conversation and restored on reopening, rename and delete;
// a reply's reasoning in a block (open while thinking, closed once the answer starts, a click on
// its header toggles it, stored apart and shown again on reopening); plus the Markdown decorators
// and the sampling JSON on their own. Issue 25: regenerate replaces the reply (store too) with a
// fresh seed unless one is fixed; a reopened chat shows its own state; a full context offers to
// drop the oldest turns; a reply cut off by a crash is shown incomplete; export/import; code
// colouring, shortcuts, the empty state and the header widget.
#include "chat_highlight.h"
#include "chat_markdown.h"
#include "chat_view.h"
#include "search_hit_delegate.h"
#include "chat_steps.h"
#include "store_replies.h"
#include "test_support.h"

#include "services/engine_host.h"
#include "services/sampling_json.h"
#include "services/store.h"

#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QShortcut>
#include <QFileInfo>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QDir>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextBrowser>
#include <QUrl>
#include <QtTest>

using namespace hearth;
using hearth::test::clickLink;

namespace {

using test::storedMessages;

// A new conversation titled `title` in `store`, once the store says it exists: its id (-1 on a timeout).
qint64 createdConversation(app::Store& store, const QString& title) {
    app::Conversation draft;
    draft.title = title;
    draft.samplingJson = QStringLiteral("{}");
    return test::createdConversation(store, draft);
}

QList<app::Conversation> conversations(app::Store& store) { return test::storedConversations(store); }

QString screenshotDir() {
    const QString shots = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR")
                              ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                              : QDir::current().filePath(QStringLiteral("screenshots"));
    QDir().mkpath(shots);
    return shots;
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

QString storiesPath() { return QString::fromStdString(test::testDataPath("models/stories260K.gguf")); }

bool loadStories(app::EngineHost& engine, const app::LoadSettings& settings = app::LoadSettings()) {
    QSignalSpy loaded(&engine, &app::EngineHost::loaded);
    engine.loadModel(storiesPath(), settings);
    return loaded.wait(30000);
}

// Sends `text` and waits for its reply; returns it (null if none came).
QString sendAndWait(ui::ChatView& chat, const QString& text) {
    QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
    chat.sendText(text);
    if (!replies.wait(30000)) return QString();
    return replies.last().at(0).toString();
}

QString regenerateAndWait(ui::ChatView& chat) {
    QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
    chat.regenerate();
    if (!replies.wait(30000)) return QString();
    return replies.last().at(0).toString();
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
        const quint64 id = test::heldReply(engine, chat, [&] { chat.sendText(QStringLiteral("What is 2 + 2?")); });
        QVERIFY(id != 0);
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

    // While a long prompt is read, the reply being written says how far (until its first word).
    void promptProgressShowsUntilTheFirstWord() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(test::loadStories(engine));
        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        chat.setSampling(app::Sampling::greedy(4));
        // The real request runs with the host's signals held back; then it is scripted.
        const quint64 id = test::heldReply(engine, chat, [&] { chat.sendText(QStringLiteral("Once upon a time")); });
        QVERIFY(id != 0);
        QTRY_VERIFY(chat.transcriptMarkdown().contains(QStringLiteral("*generating…*")));
        Q_EMIT engine.promptProgress(id + 1, 5, 10); // another request's: not this reply's
        Q_EMIT engine.promptProgress(id, 1024, 2560);
        QTRY_VERIFY(chat.transcriptMarkdown().contains(QStringLiteral("*reading the conversation: 40% (1,024 of 2,560 tokens)…*")));
        QVERIFY(chat.grab().save(QDir(screenshotDir()).filePath(QStringLiteral("chat_reading_prompt.png"))));
        Q_EMIT engine.tokenReceived(id, QStringLiteral("Once"));
        QTRY_VERIFY(chat.transcriptMarkdown().contains(QStringLiteral("*generating…*")));
        QVERIFY(!chat.transcriptMarkdown().contains(QStringLiteral("reading the conversation")));
        Q_EMIT engine.finished(id, QStringLiteral("stop"), app::GenerationUsage());
        QTRY_VERIFY(!chat.isGenerating());
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
        test::reopenConversation(chat, store, conv);
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

    // Regenerate replaced nothing before (the reply appended in onFinished kept id 0, so the
    // next regenerate appended a second one, in the store too) and always passed seed 0.
    void regenerateReplacesTheReplyWithAFreshSeed() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(loadStories(engine));
        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        app::Sampling sampling; // temperature 0.8, seed 0: random
        sampling.maxTokens = 24;
        chat.setSampling(sampling);
        QVERIFY(!sendAndWait(chat, QStringLiteral("Once upon a time")).isNull());
        const qint64 conv = chat.conversationId();
        QTRY_VERIFY_WITH_TIMEOUT(chat.canRegenerate(), 5000);
        const quint64 first = chat.lastSeed();
        QVERIFY(first != 0);
        QVERIFY(!regenerateAndWait(chat).isNull());
        QTRY_VERIFY_WITH_TIMEOUT(chat.canRegenerate(), 5000);
        const quint64 second = chat.lastSeed();
        QVERIFY(!regenerateAndWait(chat).isNull());
        QTRY_VERIFY_WITH_TIMEOUT(chat.canRegenerate(), 5000);
        const quint64 third = chat.lastSeed();
        QVERIFY(second != 0 && third != 0);
        QVERIFY(first != second && second != third);
        QCOMPARE(chat.messageCount(), 2);
        QTRY_COMPARE_WITH_TIMEOUT(storedMessages(store, conv).size(), 2, 5000);
        // Reopened: one reply, and Regenerate offered.
        chat.newChat();
        QVERIFY(!chat.canRegenerate());
        test::reopenConversation(chat, store, conv);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 2, 5000);
        QVERIFY(chat.canRegenerate());
        const QList<app::StoredMessage> stored = storedMessages(store, conv);
        QCOMPARE(stored[1].role, QStringLiteral("assistant"));
        QCOMPARE(stored[1].state, QStringLiteral("complete"));

        // A seed the chat fixes is used as it is: the same reply every time.
        app::Sampling fixed = sampling;
        fixed.seed = 1234;
        chat.setChatSettings(QString(), true, fixed);
        const QString a = regenerateAndWait(chat);
        QCOMPARE(chat.lastSeed(), quint64(1234));
        QTRY_VERIFY_WITH_TIMEOUT(chat.canRegenerate(), 5000);
        const QString b = regenerateAndWait(chat);
        QVERIFY(!a.isEmpty());
        QCOMPARE(b, a);
        QTRY_COMPARE_WITH_TIMEOUT(storedMessages(store, conv).size(), 2, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(storedMessages(store, conv).at(1).content, b, 5000);
    }

    // The context bar, statistics and Regenerate follow the chat shown (they showed "0 / 1",
    // carried over after New chat, and Regenerate stayed grey on a reopened chat).
    void perChatStateFollowsTheChatShown() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        // No model: the input says what to do, Send is off, the bar says so.
        QVERIFY(chat.inputPlaceholder().startsWith(QStringLiteral("Load a model to start chatting")));
        QVERIFY(!chat.canSend());
        QCOMPARE(chat.contextCapacity(), 0);
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("Load a model to start chatting")));
        auto* picker = new QLabel(QStringLiteral("model picker"));
        chat.setHeaderWidget(picker);
        QCOMPARE(chat.headerWidget(), picker);
        QVERIFY(chat.isAncestorOf(picker));
        QVERIFY(picker->isVisible());

        QVERIFY(loadStories(engine));
        QVERIFY(chat.canSend());
        QVERIFY(!chat.inputPlaceholder().startsWith(QStringLiteral("Load a model")));
        QCOMPARE(chat.contextCapacity(), engine.model().contextLength);
        QVERIFY(chat.contextCapacity() > 1);
        chat.setSampling(app::Sampling::greedy(12));
        QVERIFY(!sendAndWait(chat, QStringLiteral("Tim and Sue")).isNull());
        const qint64 conv = chat.conversationId();
        const int used = chat.contextUsed();
        QVERIFY(used > 0);
        const QString stats = chat.statsText();
        QVERIFY(stats.contains(QStringLiteral("tokens")));
        chat.newChat();
        QCOMPARE(chat.contextUsed(), 0);
        QVERIFY(chat.statsText().isEmpty());
        QVERIFY(!chat.canRegenerate());
        chat.openConversation(conv);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 2, 5000);
        QCOMPARE(chat.contextUsed(), used);
        QCOMPARE(chat.statsText(), stats.section(QStringLiteral(" · "), 0, 2));
        QVERIFY(chat.canRegenerate());

        // A model switched while a reply streams: the reply ends, and no "0 tokens" is shown.
        app::Sampling longer = app::Sampling::greedy(400);
        longer.ignoreEos = true;
        chat.setSampling(longer);
        QSignalSpy tokens(&engine, &app::EngineHost::tokenReceived);
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
        chat.sendText(QStringLiteral("Again"));
        QVERIFY(tokens.wait(10000));
        engine.unloadModel();
        QTRY_VERIFY_WITH_TIMEOUT(!chat.isGenerating(), 10000);
        QVERIFY2(!chat.statsText().startsWith(QStringLiteral("0 tokens")), qPrintable(chat.statsText()));
        QCOMPARE(chat.contextCapacity(), 0);
        QVERIFY(chat.inputPlaceholder().startsWith(QStringLiteral("Load a model")));
    }

    // A chat that outgrows the context (it failed with "does not fit the context") offers to go
    // on with the oldest turns left out of the request; the store keeps them all.
    void contextFullDropsTheOldestTurns() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        app::LoadSettings small;
        small.contextLength = 128;
        QVERIFY(loadStories(engine, small));
        QCOMPARE(engine.model().contextLength, 128);
        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        chat.setSystemPrompt(QStringLiteral("Tell a story."));
        chat.setSampling(app::Sampling::greedy(8));
        const QString turn = QStringLiteral("Lily went to the park with her mom and saw a big red ball. ");
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
        for (int i = 0; i < 12 && !chat.isContextFull(); ++i) {
            chat.sendText(turn.repeated(2));
            QTRY_VERIFY_WITH_TIMEOUT(!chat.isGenerating() && chat.canSend(), 30000);
            QTest::qWait(50);
        }
        QVERIFY(chat.isContextFull());
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("does not fit the context")));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("hearth:drop-oldest/0")));
        const int count = chat.messageCount();
        QVERIFY(count >= 3);
        QCOMPARE(storedMessages(store, chat.conversationId()).value(count - 1).role, QStringLiteral("user"));
        QVERIFY(chat.grab().save(QDir(screenshotDir()).filePath(QStringLiteral("chat_context_full.png"))));
        const int before = int(replies.size());
        QVERIFY(clickLink(chat, QStringLiteral("hearth:drop-oldest/0")));
        QTRY_VERIFY_WITH_TIMEOUT(replies.size() > before, 30000);
        QVERIFY(!chat.isContextFull());
        QVERIFY(chat.modelViewStart() > 0);
        QCOMPARE(chat.messageCount(), count + 1);
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("The model's view starts here")));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("Tell a story."))); // the system prompt stays
        // The next message goes on the same way.
        QVERIFY(!sendAndWait(chat, turn).isNull());
        QTRY_COMPARE_WITH_TIMEOUT(int(storedMessages(store, chat.conversationId()).size()), count + 3, 5000);
    }

    // The app dies while a reply streams: the partial reply was written (the row exists from its
    // first piece, updated every second) and shows as incomplete, with Regenerate, when reopened.
    void replyCutByACrashShowsIncomplete() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("hearth.db"));
        app::EngineHost engine;
        QVERIFY(loadStories(engine));
        qint64 conv = 0;
        {
            app::Store store;
            store.open(db);
            auto chat = std::make_unique<ui::ChatView>(&engine, &store);
            chat->setSampling(app::Sampling::greedy(4));
            // The reply is scripted below.
            const quint64 id = test::heldReply(engine, *chat, [&] { chat->sendText(QStringLiteral("Tell me about the dragon")); });
            QVERIFY(id != 0);
            conv = chat->conversationId();
            Q_EMIT engine.tokenReceived(id, QStringLiteral("The dragon"));
            QTest::qWait(1100);
            Q_EMIT engine.tokenReceived(id, QStringLiteral(" slept"));
            QTRY_COMPARE_WITH_TIMEOUT(storedMessages(store, conv).value(1).content, QStringLiteral("The dragon slept"),
                                      5000);
            chat.reset(); // no finish: as if the process died here
        }
        app::Store store;
        store.open(db);
        const QList<app::StoredMessage> stored = storedMessages(store, conv);
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[1].state, QStringLiteral("incomplete"));
        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        test::reopenConversation(chat, store, conv);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 2, 5000);
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("(incomplete — the app closed while writing)")));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("hearth:regenerate/1")));
        QVERIFY(chat.canRegenerate());
        chat.setSampling(app::Sampling::greedy(6));
        QVERIFY(!regenerateAndWait(chat).isNull());
        QTRY_COMPARE_WITH_TIMEOUT(storedMessages(store, conv).value(1).state, QStringLiteral("complete"), 5000);
        QCOMPARE(storedMessages(store, conv).size(), 2);
        QVERIFY(!chat.transcriptMarkdown().contains(QStringLiteral("(incomplete")));
    }

    void exportAndImportRoundTrip() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(loadStories(engine));
        ui::ChatView chat(&engine, &store);
        chat.setSampling(app::Sampling::greedy(10));
        chat.setSystemPrompt(QStringLiteral("You tell tales."));
        QVERIFY(!sendAndWait(chat, QStringLiteral("Once upon a time\n```python\nprint(1)\n```")).isNull());
        const qint64 conv = chat.conversationId();
        QTRY_VERIFY_WITH_TIMEOUT(chat.canRegenerate(), 5000);
        const QList<app::StoredMessage> original = storedMessages(store, conv);
        QCOMPARE(original.size(), 2);

        QSignalSpy exported(&chat, &ui::ChatView::exportFinished);
        const QString json = dir.filePath(QStringLiteral("chat.json"));
        const QString md = dir.filePath(QStringLiteral("chat.md"));
        chat.exportConversation(conv, json, QStringLiteral("json"));
        QVERIFY(exported.wait(5000));
        QCOMPARE(exported.last().at(1).toString(), QString());
        chat.exportConversation(conv, md, QStringLiteral("markdown"));
        QVERIFY(exported.wait(5000));
        QCOMPARE(exported.last().at(1).toString(), QString());
        QFile mdFile(md);
        QVERIFY(mdFile.open(QIODevice::ReadOnly));
        const QString mdText = QString::fromUtf8(mdFile.readAll());
        QVERIFY(mdText.contains(QStringLiteral("## System\n\nYou tell tales.")));
        QVERIFY(mdText.contains(QStringLiteral("## You\n\nOnce upon a time\n```python")));
        QVERIFY(mdText.contains(QStringLiteral("## Assistant\n\n") + original[1].content));
        chat.exportConversation(conv, dir.filePath(QStringLiteral("chat.pdf")), QStringLiteral("pdf"));
        QVERIFY(exported.last().at(1).toString().contains(QStringLiteral("unknown export format")));

        QSignalSpy imported(&chat, &ui::ChatView::importFinished);
        chat.importConversation(json);
        QVERIFY(imported.wait(5000));
        const qint64 copy = imported.last().at(0).toLongLong();
        QVERIFY(copy > 0 && copy != conv);
        QCOMPARE(imported.last().at(1).toString(), QString());
        QTRY_COMPARE_WITH_TIMEOUT(chat.conversationId(), copy, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 2, 5000);
        QCOMPARE(chat.currentSystemPrompt(), QStringLiteral("You tell tales."));
        const QList<app::StoredMessage> back = storedMessages(store, copy);
        QCOMPARE(back.size(), 2);
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(back[i].role, original[i].role);
            QCOMPARE(back[i].content, original[i].content);
            QCOMPARE(back[i].tokens, original[i].tokens);
            QCOMPARE(back[i].contextTokens, original[i].contextTokens);
        }
        QTRY_COMPARE_WITH_TIMEOUT(conversations(store).size(), 2, 5000);

        // A bad file: a clear error, nothing stored.
        QFile bad(dir.filePath(QStringLiteral("bad.json")));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":[{\"role\":\"hacker\",\"content\":\"x\"}]}");
        bad.close();
        chat.importConversation(bad.fileName());
        QCOMPARE(imported.last().at(0).toLongLong(), qint64(0));
        QVERIFY(imported.last().at(1).toString().contains(QStringLiteral("unknown role")));
        chat.importConversation(dir.filePath(QStringLiteral("missing.json")));
        QVERIFY(imported.last().at(1).toString().contains(QStringLiteral("cannot read")));
        QTest::qWait(200);
        QCOMPARE(conversations(store).size(), 2);
    }

    void codeBlocksAreColoured() {
        int state = 0;
        QList<ui::CodeSpan> spans = ui::highlightLine(QStringLiteral("def f(x): return \"a#b\" # note"),
                                                      QStringLiteral("python"), state);
        QCOMPARE(spans.value(0), (ui::CodeSpan{0, 3, ui::CodeToken::Keyword}));
        QCOMPARE(spans.value(1), (ui::CodeSpan{10, 6, ui::CodeToken::Keyword}));
        QCOMPARE(spans.value(2), (ui::CodeSpan{17, 5, ui::CodeToken::String}));
        QCOMPARE(spans.value(3), (ui::CodeSpan{23, 6, ui::CodeToken::Comment}));
        // A block comment runs on to the next line.
        spans = ui::highlightLine(QStringLiteral("int n = 42; /* start"), QStringLiteral("cpp"), state);
        QCOMPARE(spans.value(0), (ui::CodeSpan{0, 3, ui::CodeToken::Keyword}));
        QCOMPARE(spans.value(1), (ui::CodeSpan{8, 2, ui::CodeToken::Number}));
        QCOMPARE(spans.value(2).kind, ui::CodeToken::Comment);
        QVERIFY(state != 0);
        spans = ui::highlightLine(QStringLiteral("end */ return"), QStringLiteral("cpp"), state);
        QCOMPARE(spans.value(0), (ui::CodeSpan{0, 6, ui::CodeToken::Comment}));
        QCOMPARE(spans.value(1), (ui::CodeSpan{7, 6, ui::CodeToken::Keyword}));
        QCOMPARE(state, 0);
        // Unknown languages: no keywords.
        QVERIFY(ui::highlightLine(QStringLiteral("def return"), QStringLiteral("klingon"), state).isEmpty());
        // Readable on both palettes.
        for (ui::CodeToken kind : {ui::CodeToken::Keyword, ui::CodeToken::String, ui::CodeToken::Comment})
            QVERIFY(ui::codeColour(kind, Qt::white) != ui::codeColour(kind, QColor(30, 30, 30)));
        QVERIFY(ui::codeColour(ui::CodeToken::Keyword, Qt::white).lightnessF() < 0.5);
        QVERIFY(ui::codeColour(ui::CodeToken::Keyword, QColor(30, 30, 30)).lightnessF() > 0.5);
    }

    // While a reply streams in a long chat, a re-render replaces the reply's part of the
    // document only (the finished messages' Markdown is kept): far cheaper than a full one.
    void longChatStreamsCheaply() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(loadStories(engine));
        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        QString json = QStringLiteral("{\"format\":\"hearth-chat\",\"version\":1,\"title\":\"long\",\"messages\":[");
        for (int i = 0; i < 400; ++i)
            json += QStringLiteral("%1{\"role\":\"%2\",\"content\":\"Message %3 has **bold** text and code:\\n"
                                   "```cpp\\nint x = %3; // note\\n```\\nand a list:\\n- one\\n- two\"}")
                        .arg(i ? QStringLiteral(",") : QString(), i % 2 ? QStringLiteral("assistant") : QStringLiteral("user"))
                        .arg(i);
        json += QStringLiteral("]}");
        QFile file(dir.filePath(QStringLiteral("long.json")));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(json.toUtf8());
        file.close();
        QSignalSpy imported(&chat, &ui::ChatView::importFinished);
        chat.importConversation(file.fileName());
        QVERIFY(imported.wait(10000));
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 400, 10000);
        // Full renders: editing a message changes the finished part.
        QElapsedTimer t;
        t.start();
        for (int i = 0; i < 5; ++i) {
            chat.editMessage(2 * i);
            QVERIFY(chat.isEditing());
            chat.cancelEdit();
        }
        const double fullMs = double(t.nsecsElapsed()) / 1e6 / 10;
        chat.setSampling(app::Sampling::greedy(4));
        const quint64 id = test::heldReply(engine, chat, [&] { chat.sendText(QStringLiteral("And now?")); });
        QVERIFY(id != 0);
        t.restart();
        constexpr int kRenders = 30;
        for (int i = 0; i < kRenders; ++i) {
            Q_EMIT engine.tokenReceived(id, QStringLiteral("word "));
            chat.toggleReasoning(chat.messageCount()); // renders now
        }
        const double streamMs = double(t.nsecsElapsed()) / 1e6 / kRenders;
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("word word word")));
        // The reply ends: its piece replaces the streaming one, nothing before it is rebuilt.
        t.restart();
        Q_EMIT engine.finished(id, QStringLiteral("stop"), app::GenerationUsage());
        const double finishMs = double(t.nsecsElapsed()) / 1e6;
        QVERIFY(!chat.isGenerating());
        qInfo("401 messages: streaming re-render %.2f ms, reply end %.2f ms, full render %.2f ms", streamMs,
              finishMs, fullMs);
        QVERIFY2(streamMs * 3 < fullMs, qPrintable(QStringLiteral("%1 vs %2 ms").arg(streamMs).arg(fullMs)));
        QVERIFY2(finishMs * 3 < fullMs, qPrintable(QStringLiteral("%1 vs %2 ms").arg(finishMs).arg(fullMs)));
        QVERIFY(chat.codeBlocks().size() >= 200);
        QCOMPARE(chat.codeBlocks().value(199), QStringLiteral("int x = 199; // note\n"));
    }

    // The layout on a light and a dark palette (no model needed: the chat is imported): coloured
    // headers that are not plain links, the user's message in a tinted, indented box, code on a
    // shaded background with its keywords coloured for the palette.
    void layoutOnLightAndDarkPalettes() {
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QFile file(dir.filePath(QStringLiteral("chat.json")));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("{\"format\":\"hearth-chat\",\"version\":1,\"title\":\"Palettes\",\"messages\":["
                   "{\"role\":\"user\",\"content\":\"How do I print in Python?\"},"
                   "{\"role\":\"assistant\",\"content\":\"Like this:\\n```python\\ndef hello():\\n"
                   "    print(\\\"hi\\\")  # greet\\n```\\nThat is all.\"}]}");
        file.close();
        auto keywordColour = [](ui::ChatView& chat) {
            auto* browser = chat.findChild<QTextBrowser*>();
            for (QTextBlock b = browser->document()->begin(); b.isValid(); b = b.next())
                for (auto it = b.begin(); !it.atEnd(); ++it)
                    if (it.fragment().text() == QStringLiteral("def")) return it.fragment().charFormat().foreground().color();
            return QColor();
        };
        for (const bool dark : {false, true}) {
            ui::ChatView chat(&engine, &store);
            chat.show();
            QSignalSpy first(&chat, &ui::ChatView::importFinished);
            chat.importConversation(file.fileName());
            QVERIFY(first.wait(5000));
            QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 2, 5000);
            const QColor before = keywordColour(chat);
            QPalette palette = chat.palette();
            if (dark) {
                palette.setColor(QPalette::Base, QColor(0x1e, 0x1f, 0x22));
                palette.setColor(QPalette::Window, QColor(0x2b, 0x2d, 0x30));
                palette.setColor(QPalette::Text, QColor(0xdf, 0xe1, 0xe5));
                palette.setColor(QPalette::WindowText, QColor(0xdf, 0xe1, 0xe5));
                palette.setColor(QPalette::Button, QColor(0x2b, 0x2d, 0x30));
                palette.setColor(QPalette::ButtonText, QColor(0xdf, 0xe1, 0xe5));
                palette.setColor(QPalette::Highlight, QColor(0x35, 0x74, 0xf0));
            }
            chat.setPalette(palette); // a theme switch: the transcript follows
            chat.resize(900, 600);
            QVERIFY(before.isValid());
            if (dark) QVERIFY(keywordColour(chat) != before);
            auto* browser = chat.findChild<QTextBrowser*>();
            const QColor base = browser->palette().color(QPalette::Base);
            bool sawUserBox = false, sawKeyword = false, sawComment = false, sawHeader = false;
            for (QTextBlock b = browser->document()->begin(); b.isValid(); b = b.next()) {
                if (b.text() == QStringLiteral("How do I print in Python?")) {
                    // The user's message is a bubble on the right in the palette's tint.
                    const QTextTable* table = QTextCursor(b).currentTable();
                    sawUserBox = table && table->format().alignment() == Qt::AlignRight &&
                                 table->format().background().color() == ui::ChatTranscript::bubbleColour(browser->palette()) &&
                                 table->format().background().color() != base && table->format().leftMargin() > 0;
                }
                for (auto it = b.begin(); !it.atEnd(); ++it) {
                    const QTextFragment f = it.fragment();
                    const QTextCharFormat cf = f.charFormat();
                    if (cf.anchorHref() == QStringLiteral("hearth:who/assistant")) sawHeader = !cf.fontUnderline();
                    const QColor bg = b.blockFormat().background().color();
                    if (f.text() == QStringLiteral("def"))
                        sawKeyword = cf.foreground().color() == ui::codeColour(ui::CodeToken::Keyword, bg);
                    if (f.text() == QStringLiteral("# greet"))
                        sawComment = cf.foreground().color() == ui::codeColour(ui::CodeToken::Comment, bg);
                }
            }
            QVERIFY(sawHeader);
            QVERIFY(sawUserBox);
            QVERIFY(sawKeyword);
            QVERIFY(sawComment);
            QVERIFY(chat.grab().save(QDir(screenshotDir()).filePath(
                dark ? QStringLiteral("chat_layout_dark.png") : QStringLiteral("chat_layout_light.png"))));
        }
    }

    void shortcutsAreThere() {
        app::EngineHost engine;
        app::Store store;
        ui::ChatView chat(&engine, &store);
        QStringList keys;
        for (QShortcut* s : chat.findChildren<QShortcut*>()) keys << s->key().toString();
        for (const char* k : {"Ctrl+N", "Ctrl+R", "Esc", "Ctrl+Shift+C", "Ctrl+E", "Ctrl+L", "Ctrl+Up"})
            QVERIFY2(keys.contains(QString::fromLatin1(k)), k);
    }

    // A path typed without the format's ending gets it: "trip" exports as trip.json (JSON) or
    // trip.md (Markdown); an ending already there, in any case, is kept.
    void exportAddsTheFormatsEnding() {
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        ui::ChatView chat(&engine, &store);
        const qint64 conv = createdConversation(store, QStringLiteral("Trip"));
        QVERIFY(conv >= 0);
        QSignalSpy exported(&chat, &ui::ChatView::exportFinished);
        const QList<std::pair<QString, QString>> cases = {{QStringLiteral("trip"), QStringLiteral("json")},
                                                          {QStringLiteral("notes"), QStringLiteral("markdown")},
                                                          {QStringLiteral("Trip.JSON"), QStringLiteral("json")},
                                                          {QStringLiteral("more.md"), QStringLiteral("markdown")}};
        const QStringList written = {QStringLiteral("trip.json"), QStringLiteral("notes.md"), QStringLiteral("Trip.JSON"),
                                     QStringLiteral("more.md")};
        for (int i = 0; i < cases.size(); ++i) {
            chat.exportConversation(conv, dir.filePath(cases[i].first), cases[i].second);
            QVERIFY(exported.wait(5000));
            QCOMPARE(exported.last().at(1).toString(), QString());
            QCOMPARE(exported.last().at(0).toString(), dir.filePath(written[i]));
            QVERIFY2(QFileInfo(dir.filePath(written[i])).isFile(), qPrintable(written[i]));
        }
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("trip"))));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("notes"))));
    }

    // The context bar counts the reply as it streams, not only once it is finished.
    void contextBarFollowsTheReply() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(loadStories(engine));
        ui::ChatView chat(&engine, &store);
        app::Sampling sampling = app::Sampling::greedy(24);
        sampling.ignoreEos = true;
        chat.setSampling(sampling);
        auto* bar = chat.findChild<QProgressBar*>();
        QVERIFY(bar);
        QList<int> used, shown;
        connect(&engine, &app::EngineHost::tokenReceived, this, [&] {
            used << chat.contextUsed();
            shown << bar->value();
        });
        QVERIFY(!sendAndWait(chat, QStringLiteral("Once upon a time")).isNull());
        QVERIFY(used.size() >= 2);
        QVERIFY2(used.first() > 0, qPrintable(QString::number(used.first())));
        QVERIFY2(used.last() > used.first(), qPrintable(QStringLiteral("%1 %2").arg(used.first()).arg(used.last())));
        QCOMPARE(shown.last(), used.last());
        QVERIFY(chat.contextUsed() >= used.last());
    }

    // Search results are plain text: no "[" "]" around the words found.
    void searchResultsArePlainText() {
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        ui::ChatView chat(&engine, &store);
        const qint64 conv = createdConversation(store, QStringLiteral("Toys"));
        QVERIFY(conv >= 0);
        app::StoredMessage m;
        m.conversationId = conv;
        m.role = QStringLiteral("user");
        m.content = QStringLiteral("The red ball bounced over the wall.");
        QSignalSpy committed(&store, &app::Store::committed);
        store.appendMessage(m);
        QVERIFY(committed.wait(5000));
        auto* search = chat.findChild<QLineEdit*>();
        auto* list = chat.findChild<QListWidget*>();
        QVERIFY(search && list);
        search->setText(QStringLiteral("red ball"));
        QTRY_VERIFY_WITH_TIMEOUT(list->count() == 1 && list->item(0)->text().contains(QStringLiteral("ball")), 5000);
        const QString text = list->item(0)->text();
        QVERIFY2(text.contains(QStringLiteral("The red ball bounced")), qPrintable(text));
        QVERIFY2(!text.contains(QLatin1Char('[')) && !text.contains(QLatin1Char(']')), qPrintable(text));
        // The words found, for the list to draw highlighted.
        QStringList found;
        for (const QVariant& v : list->item(0)->data(ui::SearchHitDelegate::MatchesRole).toList())
            found << text.mid(v.toPoint().x(), v.toPoint().y());
        QCOMPARE(found.join(QLatin1Char(' ')), QStringLiteral("red ball")); // each word (FTS5), or the phrase (LIKE)
        // Both lines are drawn: the title and, below it, the snippet (many dark pixels in the
        // row's lower part, where the title has at most a descender).
        chat.resize(900, 600);
        chat.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chat));
        const QRect row = list->visualItemRect(list->item(0));
        const QImage shot = list->viewport()->grab(row).toImage();
        int inked = 0;
        for (int y = shot.height() * 3 / 5; y < shot.height(); ++y)
            for (int x = 0; x < shot.width(); ++x) inked += qGray(shot.pixel(x, y)) < 128 ? 1 : 0;
        QVERIFY2(inked > 50, qPrintable(QString::number(inked)));
    }
};

QTEST_MAIN(TestChatView)
#include "test_chat_view.moc"
