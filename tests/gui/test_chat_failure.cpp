// A reply that fails before its first token (the engine failed while reading the prompt): the
// question gets a failed reply that says why, with Regenerate; it is stored, so it is still there
// after a restart, and Regenerate writes a reply over it.
#include "chat_view.h"
#include "chat_steps.h"
#include "store_replies.h"
#include "test_support.h"

#include "services/engine_host.h"
#include "services/store.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

namespace {

// Sends `text` with the engine's signals held back until its request is over, then makes it
// fail with `why` before any token. An empty `text` regenerates the last reply instead.
void sendFailing(app::EngineHost& engine, ui::ChatView& chat, const QString& text, const QString& why) {
    const quint64 id = test::heldReply(engine, chat, [&] {
        if (text.isEmpty()) chat.regenerate();
        else chat.sendText(text);
    });
    QVERIFY(id != 0);
    Q_EMIT engine.failed(id, why);
}

} // namespace

class TestChatFailure : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void failureBeforeTheFirstTokenLeavesAFailedReply() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("hearth.db"));
        app::EngineHost engine;
        QSignalSpy loaded(&engine, &app::EngineHost::loaded);
        engine.loadModel(QString::fromStdString(test::testDataPath("models/stories260K.gguf")), app::LoadSettings());
        QVERIFY(loaded.wait(30000));
        const QString why = QStringLiteral("the engine stopped while reading the prompt");
        qint64 conv = 0;
        {
            app::Store store;
            store.open(db);
            ui::ChatView chat(&engine, &store);
            chat.resize(900, 600);
            chat.show();
            chat.setSampling(app::Sampling::greedy(4));
            sendFailing(engine, chat, QStringLiteral("Tell me about the dragon"), why);
            if (QTest::currentTestFailed()) return;
            conv = chat.conversationId();
            QVERIFY(!chat.isGenerating());
            QCOMPARE(chat.messageCount(), 2);
            const QString md = chat.transcriptMarkdown();
            QVERIFY2(md.contains(QStringLiteral("The reply failed:")) && md.contains(why), qPrintable(md));
            QVERIFY2(md.contains(QStringLiteral("hearth:regenerate/1")), qPrintable(md));
            QVERIFY2(!md.contains(QStringLiteral("**Error:**")), qPrintable(md)); // said once, in the reply
            QTRY_VERIFY_WITH_TIMEOUT(chat.canRegenerate(), 5000);

            // Regenerate fails again: still one failed reply, with the new reason.
            const QString again = QStringLiteral("the engine stopped again");
            sendFailing(engine, chat, QString(), again);
            if (QTest::currentTestFailed()) return;
            QCOMPARE(chat.messageCount(), 2);
            QVERIFY(chat.transcriptMarkdown().contains(again));
            QTRY_VERIFY_WITH_TIMEOUT(chat.canRegenerate(), 5000);
            QTRY_COMPARE_WITH_TIMEOUT(test::storedMessages(store, conv).value(1).error, again, 5000);
        }

        // A restart: the failed reply is read back as it was.
        app::Store store;
        store.open(db);
        const QList<app::StoredMessage> stored = test::storedMessages(store, conv);
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[1].role, QStringLiteral("assistant"));
        QCOMPARE(stored[1].state, QStringLiteral("failed"));
        QCOMPARE(stored[1].error, QStringLiteral("the engine stopped again"));
        ui::ChatView chat(&engine, &store);
        chat.resize(900, 600);
        chat.show();
        test::reopenConversation(chat, store, conv);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 2, 5000);
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("The reply failed:")));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("hearth:regenerate/1")));
        QVERIFY(chat.canRegenerate());

        // Regenerate answers this time: the reply takes the failed one's place.
        chat.setSampling(app::Sampling::greedy(6));
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
        chat.regenerate();
        QVERIFY(replies.wait(30000));
        QVERIFY(!replies.last().at(0).toString().isEmpty());
        QTRY_COMPARE_WITH_TIMEOUT(test::storedMessages(store, conv).value(1).state, QStringLiteral("complete"), 5000);
        const QList<app::StoredMessage> after = test::storedMessages(store, conv);
        QCOMPARE(after.size(), 2);
        QVERIFY(after[1].error.isEmpty());
        QCOMPARE(after[1].content, replies.last().at(0).toString());
        QCOMPARE(chat.messageCount(), 2);
        QVERIFY(!chat.transcriptMarkdown().contains(QStringLiteral("The reply failed")));
    }
};

QTEST_MAIN(TestChatFailure)
#include "test_chat_failure.moc"
