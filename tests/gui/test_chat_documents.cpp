// Files attached to a chat as text, on the real engine (stories260K) and a real SQLite store:
// attached through the reader (a binary file refused with the reason), shown above the input
// with a ×, sent with the message so that the model reads them (the prompt grows by the file),
// shown in the transcript and kept in the store (again after reopening), and back in the input's
// strip when the message is edited. Screenshot: chat-documents.png.
#include "chat_steps.h"
#include "chat_view.h"
#include "services/chat_documents.h"
#include "services/engine_host.h"
#include "services/store.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

using namespace hearth;

namespace {

QString documentScreenshotDir() {
    const QString dir = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR") ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                                                                           : QDir::current().filePath(QStringLiteral("screenshots"));
    QDir().mkpath(dir);
    return dir;
}

QString writeChatFile(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
    QFile f(dir.filePath(name));
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(bytes);
    return f.fileName();
}

} // namespace

class TestChatDocumentsView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void documentsGoWithTheMessage() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QSignalSpy loaded(&engine, &app::EngineHost::loaded);
        engine.loadModel(QString::fromStdString(test::testDataPath("models/stories260K.gguf")), app::LoadSettings());
        QVERIFY(loaded.wait(30000));
        app::DocumentReader reader;
        ui::ChatView chat(&engine, &store);
        chat.setDocumentReader(&reader);
        chat.resize(900, 640);
        chat.show();
        chat.setSampling(app::Sampling::greedy(4));
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
        QSignalSpy notes(&chat, &ui::ChatView::statusMessage);

        // Without a file: how much of the context one question takes.
        chat.sendText(QStringLiteral("Tell me a story."));
        QTRY_VERIFY_WITH_TIMEOUT(replies.size() == 1 && !chat.isGenerating(), 30000);
        const int plain = chat.contextUsed();
        QVERIFY(plain > 0);
        chat.newChat();

        const QByteArray story = "Once upon a time there was a little girl named Lily. She liked to play in the park "
                                 "with her dog. One day the sun was shining and the birds were singing. Lily ran to "
                                 "the big tree and found a red ball under it.\n";
        const QString notesFile = writeChatFile(dir, QStringLiteral("story.md"), story);
        const QString binary = writeChatFile(dir, QStringLiteral("photo.raw"), QByteArray("\x00\x01\x02\x03", 4));
        auto* attach = chat.findChild<QPushButton*>(QStringLiteral("attachFile"));
        QVERIFY(attach && attach->isEnabled());
        chat.attachDocuments({notesFile, binary});
        QTRY_COMPARE_WITH_TIMEOUT(chat.attachedDocuments().size(), 1, 10000);
        QCOMPARE(chat.attachedDocuments().first().name, QStringLiteral("story.md"));
        QTRY_VERIFY(!notes.isEmpty());
        QVERIFY2(notes.last().first().toString().contains(QStringLiteral("photo.raw is not a text file")),
                 qPrintable(notes.last().first().toString()));
        // The strip's × removes a file; attached again, it stays for the send.
        auto* remove = chat.findChild<QToolButton*>(QStringLiteral("removeDocument"));
        QVERIFY(remove);
        QTest::mouseClick(remove, Qt::LeftButton);
        QTRY_VERIFY(chat.attachedDocuments().isEmpty());
        chat.attachDocuments({notesFile});
        QTRY_COMPARE_WITH_TIMEOUT(chat.attachedDocuments().size(), 1, 10000);
        chat.sendText(QStringLiteral("Tell me a story."));
        QTRY_VERIFY_WITH_TIMEOUT(replies.size() == 2 && !chat.isGenerating(), 30000);
        QVERIFY(chat.attachedDocuments().isEmpty());
        QCOMPARE(chat.messageDocuments(0).size(), 1);
        QCOMPARE(chat.messageDocuments(0).first().text, QString::fromUtf8(story));
        // The model read the file: the same question took more of the context by about its length.
        QVERIFY2(chat.contextUsed() > plain + 40, qPrintable(QStringLiteral("%1 vs %2").arg(chat.contextUsed()).arg(plain)));
        QVERIFY2(chat.transcriptMarkdown().contains(QStringLiteral("Attached file: **story.md** · 209 characters")),
                 qPrintable(chat.transcriptMarkdown()));
        // The next message's file waits in the strip (the screenshot shows both).
        chat.attachDocuments({notesFile});
        QTRY_COMPARE_WITH_TIMEOUT(chat.attachedDocuments().size(), 1, 10000);
        QTest::qWait(50);
        QVERIFY(chat.grab().save(QDir(documentScreenshotDir()).filePath(QStringLiteral("chat-documents.png"))));

        // Kept in the store.
        const qint64 conversation = chat.conversationId();
        chat.newChat();
        test::reopenConversation(chat, store, conversation);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 2, 10000);
        QCOMPARE(chat.messageDocuments(0).size(), 1);
        QCOMPARE(chat.messageDocuments(0).first().name, QStringLiteral("story.md"));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("Attached file: **story.md** · ")));
        // Edited, the message's files come back to the strip with its text.
        chat.editMessage(0);
        QCOMPARE(chat.attachedDocuments().size(), 1);
        chat.cancelEdit();
    }
};

QTEST_MAIN(TestChatDocumentsView)
#include "test_chat_documents.moc"
