// A folder of 1,000 documents attached to a chat, on the real engine (stories260K) and a real
// SQLite store: read in the background while the GUI thread's longest stall is measured, shown
// above the input with its progress and then its count, searched for a question (the quoted
// file's part goes with it and is cited), kept with the chat (reopened, it is read again), and
// removed with its × button. Screenshot: chat-folders.png.
#include "chat_steps.h"
#include "chat_view.h"
#include "services/chat_folders.h"
#include "services/chat_retrieval.h"
#include "services/engine_host.h"
#include "services/store.h"
#include "store_replies.h"
#include "test_support.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolButton>
#include <QtTest>

using namespace hearth;

namespace {

// File i's text: a paragraph of common words and one sentence of its own.
QByteArray ledgerText(int i) {
    QString text = QStringLiteral("# Ledger %1\n\n").arg(i);
    for (int w = 0; w < 30; ++w) text += QStringLiteral("grain salt rope ") ;
    text += QStringLiteral(".\n\nThe keeper of ledger %1 counted qx%2 barrels at dawn.\n").arg(i).arg(i * 7919 % 100003);
    return text.toUtf8();
}

} // namespace

class TestChatDocumentFolders : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void documentFolderSearchedForEachQuestion() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString folder = dir.filePath(QStringLiteral("ledgers"));
        for (int i = 0; i < 1000; ++i) {
            const QString path = folder + QStringLiteral("/shelf%1/ledger%2.md").arg(i % 8).arg(i, 4, 10, QLatin1Char('0'));
            QDir().mkpath(QFileInfo(path).absolutePath());
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(ledgerText(i));
        }
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(test::loadStories(engine));
        app::ChatRetrieval retrieval;
        retrieval.setChunking({300, 60}, 2); // what stories260K's small context holds
        app::ChatFolders folders(&store);
        ui::ChatView chat(&engine, &store);
        chat.setRetrieval(&retrieval);
        chat.setFolders(&folders);
        chat.resize(900, 640);
        chat.show();
        chat.setSampling(app::Sampling::greedy(4));
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
        auto* attach = chat.findChild<QPushButton*>(QStringLiteral("attachFolder"));
        QVERIFY(attach && attach->isEnabled());

        // Read in the background: the GUI thread ticks every millisecond meanwhile.
        qint64 longestStallMs = 0;
        QElapsedTimer sinceTick;
        QTimer tick;
        tick.setInterval(1);
        connect(&tick, &QTimer::timeout, this, [&] { longestStallMs = std::max(longestStallMs, sinceTick.restart()); });
        sinceTick.start();
        tick.start();
        QVERIFY(chat.attachFolder(folder));
        QVERIFY(!chat.attachFolder(folder)); // once is enough
        QVERIFY(chat.folderLine(0).startsWith(QStringLiteral("ledgers · ")));
        QTRY_VERIFY_WITH_TIMEOUT(!folders.reading() && !folders.indexing(), 60000);
        tick.stop();
        qInfo("a folder of 1,000 files read beside the chat page; the GUI thread's longest stall: %lld ms", longestStallMs);
        QVERIFY2(longestStallMs < 1000, "the GUI thread was held up"); // a hang guard, not a speed limit
        QCOMPARE(chat.folderLine(0), QStringLiteral("ledgers · 1,000 files searched for each question"));

        // A question quoting one file: its part goes with the question and is cited.
        const QString quote = QStringLiteral("The keeper of ledger 637 counted qx%1 barrels at dawn.").arg(637 * 7919 % 100003);
        chat.sendText(quote);
        QTRY_VERIFY_WITH_TIMEOUT(replies.size() == 1 && !chat.isGenerating(), 30000);
        const QList<app::ChatDocument> docs = chat.messageDocuments(0);
        QCOMPARE(docs.size(), retrieval.parts());
        QCOMPARE(docs[0].name, QStringLiteral("ledgers/shelf5/ledger0637.md"));
        QVERIFY(docs[0].text.contains(quote));
        QVERIFY(chat.transcriptMarkdown().contains(QStringLiteral("*Sources: ledgers/shelf5/ledger0637.md (part %1)").arg(docs[0].part)));
        QVERIFY(chat.grab().save(QDir(test::chatScreenshotDir()).filePath(QStringLiteral("chat-folders.png"))));

        // Kept with the chat: another chat has none; reopened, the folder is read again.
        const qint64 conversation = chat.conversationId();
        QList<app::Conversation> stored = test::storedConversations(store);
        QCOMPARE(stored.size(), 1);
        QCOMPARE(stored[0].folders, QStringList{QDir::cleanPath(folder)});
        chat.newChat();
        QVERIFY(folders.folders().isEmpty());
        QVERIFY(chat.folderLine(0).isEmpty());
        test::reopenConversation(chat, store, conversation);
        QCOMPARE(folders.paths(), QStringList{QDir::cleanPath(folder)});
        QTRY_VERIFY_WITH_TIMEOUT(!folders.reading() && !folders.indexing(), 60000);
        QCOMPARE(chat.folderLine(0), QStringLiteral("ledgers · 1,000 files searched for each question"));

        // Removed with its × button: the chat keeps no folder.
        auto* remove = chat.findChild<QToolButton*>(QStringLiteral("removeFolder"));
        QVERIFY(remove);
        remove->click();
        QVERIFY(folders.folders().isEmpty());
        QTRY_VERIFY_WITH_TIMEOUT(test::storedConversations(store).value(0).folders.isEmpty(), 10000);
    }
};

QTEST_MAIN(TestChatDocumentFolders)
#include "test_chat_document_folders.moc"
