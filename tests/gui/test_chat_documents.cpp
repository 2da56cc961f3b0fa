// Files attached to a chat as text, on the real engine (stories260K) and a real SQLite store:
// attached through the reader (a binary file refused with the reason), shown above the input
// with a ×, sent with the message so that the model reads them (the prompt grows by the file),
// shown in the transcript and kept in the store (again after reopening), and back in the input's
// strip when the message is edited. Screenshot: chat-documents.png.
#include "chat_steps.h"
#include "chat_view.h"
#include "services/chat_documents.h"
#include "services/chat_retrieval.h"
#include "services/engine_host.h"
#include "services/store.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

using namespace hearth;

namespace {

QString writeChatFile(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
    QFile f(dir.filePath(name));
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(bytes);
    return f.fileName();
}

// A long file of numbered paragraphs of made-up words (seeded), and a sentence of each to quote.
QByteArray longFile(QStringList& quotes) {
    QRandomGenerator rng(41);
    static const char* const syllables[] = {"ka", "lo", "mi", "ter", "van", "os", "pul", "dri", "zen", "ba",
                                            "qui", "ro", "sel", "tam", "nu", "gor", "fi", "lex", "wa", "pe"};
    auto word = [&rng] {
        QString w;
        for (int k = 0, n = 2 + int(rng.bounded(2)); k < n; ++k) w += QLatin1String(syllables[rng.bounded(20)]);
        return w;
    };
    QString text;
    for (int p = 1; p <= 120; ++p) {
        QStringList sentences;
        for (int s = 0; s < 3; ++s) {
            QStringList words;
            for (int w = 0; w < 10; ++w) words << word();
            sentences << words.join(QLatin1Char(' ')) + QLatin1Char('.');
        }
        quotes << sentences[1];
        text += QStringLiteral("Paragraph %1. ").arg(p) + sentences.join(QLatin1Char(' ')) + QStringLiteral("\n\n");
    }
    return text.toUtf8();
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
        QVERIFY(test::loadStories(engine));
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
        QVERIFY(chat.grab().save(QDir(test::chatScreenshotDir()).filePath(QStringLiteral("chat-documents.png"))));

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

    // A file too long to give whole is searched for each question: the parts found go with the
    // question (stored with it) and are cited under the answer; a later question searches again; a
// question whose chat is left while its files are searched stays in its own chat.
    void longDocumentsAreSearchedPerQuestion() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(test::loadStories(engine));
        app::DocumentReader reader;
        app::ChatRetrieval retrieval;
        retrieval.setChunking({300, 60}, 2); // what stories260K's small context holds
        ui::ChatView chat(&engine, &store);
        chat.setDocumentReader(&reader);
        chat.setRetrieval(&retrieval);
        chat.resize(900, 640);
        chat.show();
        chat.setSampling(app::Sampling::greedy(4));
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);

        QStringList quotes;
        const QByteArray text = longFile(quotes);
        QVERIFY(text.size() > app::kInlineDocumentChars);
        chat.attachDocuments({writeChatFile(dir, QStringLiteral("long.md"), text)});
        QTRY_COMPARE_WITH_TIMEOUT(chat.attachedDocuments().size(), 1, 10000);
        chat.sendText(quotes[76]);
        QTRY_VERIFY_WITH_TIMEOUT(replies.size() == 1 && !chat.isGenerating(), 30000);
        QList<app::ChatDocument> docs = chat.messageDocuments(0);
        QCOMPARE(docs.size(), 1 + retrieval.parts());
        QVERIFY(docs[0].indexed);
        QCOMPARE(docs[0].text.toUtf8(), text); // the whole file is kept with the chat
        QVERIFY2(docs[1].part > 0 && docs[1].text.contains(quotes[76]), qPrintable(docs[1].text.left(200)));
        // The model read the parts, not the file: the file alone is more than the whole context.
        QVERIFY2(chat.contextUsed() > 0 && chat.contextUsed() < 1000, qPrintable(QString::number(chat.contextUsed())));
        const QString md = chat.transcriptMarkdown();
        QVERIFY2(md.contains(QStringLiteral("· searched for each question")), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("*Sources: long.md (part %1)").arg(docs[1].part)), qPrintable(md));

        // A later question, no file attached: the chat's file is searched again.
        chat.sendText(quotes[10]);
        QTRY_VERIFY_WITH_TIMEOUT(replies.size() == 2 && !chat.isGenerating(), 30000);
        docs = chat.messageDocuments(2);
        QCOMPARE(docs.size(), retrieval.parts());
        QVERIFY(docs[0].text.contains(quotes[10]));
        // Kept in the store: reopened, the parts and the citations are there.
        const qint64 conversation = chat.conversationId();
        chat.newChat();
        test::reopenConversation(chat, store, conversation);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 4, 10000);
        QCOMPARE(chat.messageDocuments(2).size(), retrieval.parts());
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("*Sources: long.md (part %1)").arg(docs[0].part)));
        // Edited, the first question brings back its file, not the parts found for it.
        chat.editMessage(0);
        QCOMPARE(chat.attachedDocuments().size(), 1);
        QCOMPARE(chat.attachedDocuments().first().part, 0);
        QCOMPARE(chat.attachedDocuments().first().text.toUtf8(), text);
        chat.cancelEdit();

        // Another chat opened while a question's files are searched: the question is stored in
        // its own chat, and neither shown nor answered in the other.
        chat.sendText(quotes[50]);
        QVERIFY(chat.isSearchingFiles());
        chat.newChat();
        QTRY_VERIFY_WITH_TIMEOUT(!chat.isSearchingFiles(), 10000);
        QTest::qWait(300);
        QCOMPARE(chat.messageCount(), 0);
        QVERIFY(!chat.isGenerating());
        QVERIFY(!chat.transcriptMarkdown().contains(quotes[50]));
        test::reopenConversation(chat, store, conversation);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 5, 10000);
        QVERIFY(chat.transcriptMarkdown().contains(quotes[50]));
    }
};

QTEST_MAIN(TestChatDocumentsView)
#include "test_chat_documents.moc"
