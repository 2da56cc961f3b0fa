// The chat page's conversation list on its own: the store's conversations listed most recent
// first, a search over messages showing its hits (and the listing again when cleared), a click
// naming the conversation, the current one marked, and renames and deletions made anywhere shown.
#include "conversation_list.h"

#include "store_replies.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

class TestConversationList : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void listsSearchesAndFollowsTheStore() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        app::Store store;
        QSignalSpy opened(&store, &app::Store::opened);
        store.open(dir.filePath(QStringLiteral("chats.sqlite")));
        QVERIFY(opened.wait(10000));
        const qint64 dragons = test::createdConversation(store, {0, QStringLiteral("Dragons"), {}, {}, {}, 0, 0});
        QTest::qWait(5); // distinct update times
        const qint64 soup = test::createdConversation(store, {0, QStringLiteral("Soup"), {}, {}, {}, 0, 0});
        QVERIFY(dragons > 0 && soup > 0);
        QSignalSpy committed(&store, &app::Store::committed);
        app::StoredMessage m;
        m.conversationId = dragons;
        m.role = QStringLiteral("user");
        m.content = QStringLiteral("Tell me about a green dragon");
        QVERIFY(!test::replyFor(committed, store.appendMessage(m)).isEmpty());

        ui::ConversationList list(&store);
        QSignalSpy listed(&list, &ui::ConversationList::listed);
        list.reload();
        QVERIFY(listed.wait(10000));
        QCOMPARE(list.count(), 2);
        // Both, whatever their order (update times have millisecond steps).
        QCOMPARE((QSet<qint64>{list.rowConversation(0), list.rowConversation(1)}), (QSet<qint64>{dragons, soup}));
        const int soupRow = list.rowConversation(0) == soup ? 0 : 1;
        QCOMPARE(list.rowText(1 - soupRow), QStringLiteral("Dragons"));
        QCOMPARE(listed.last().at(0).value<QList<app::Conversation>>().size(), 2);

        QSignalSpy chosen(&list, &ui::ConversationList::chosen);
        list.clickRow(soupRow);
        QCOMPARE(chosen.size(), 1);
        QCOMPARE(chosen.first().at(0).toLongLong(), soup);

        list.search(QStringLiteral("green"));
        QTRY_COMPARE_WITH_TIMEOUT(list.count(), 1, 10000);
        QVERIFY2(list.rowText(0).startsWith(QStringLiteral("Dragons\n")), qPrintable(list.rowText(0)));
        QVERIFY(list.rowText(0).contains(QStringLiteral("green dragon")));
        QCOMPARE(list.rowConversation(0), dragons);
        list.search(QString());
        QTRY_COMPARE_WITH_TIMEOUT(list.count(), 2, 10000);

        // Renamed and deleted elsewhere (the chat page, another window): shown here.
        store.renameConversation(soup, QStringLiteral("Tomato soup"));
        QTRY_VERIFY_WITH_TIMEOUT(list.rowText(0) == QStringLiteral("Tomato soup") ||
                                     list.rowText(1) == QStringLiteral("Tomato soup"),
                                 10000);
        store.deleteConversation(dragons);
        QTRY_COMPARE_WITH_TIMEOUT(list.count(), 1, 10000);
        QCOMPARE(list.rowConversation(0), soup);
    }
};

QTEST_MAIN(TestConversationList)
#include "test_conversation_list.moc"
