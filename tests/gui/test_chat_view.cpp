// The chat page on the real engine (stories260K) and a real SQLite store, offscreen: copy links on
// code blocks, edit and resend (the edited turn and its reply replace the old ones in the store),
// per-chat sampling stored with the conversation and restored on reopening, rename and delete;
// plus the Markdown decorator and the sampling JSON on their own.
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
