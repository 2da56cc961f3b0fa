// The store's document index on a real SQLite file: a file's chunk spans and vectors kept per
// conversation and read back bit for bit, found only for the same model and chunking, replaced
// when saved again, a damaged row skipped, an entry that does not add up refused, and every row
// of a conversation deleted with it; the folders of documents kept with a conversation.
#include "services/store.h"

#include "store_replies.h"
#include "test_support.h"

#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth::app;
using hearth::test::replyFor;

namespace {

DocumentIndexEntry entry(const QByteArray& key, float base) {
    DocumentIndexEntry e;
    e.key = key;
    e.model = QStringLiteral("/models/bge-small.gguf");
    e.chunking = QStringLiteral("chunks-1 1200/200");
    e.spans = {{0, 1187}, {1001, 1200}, {2050, 13}};
    e.vectors = {{base, -0.0f, 1e-30f}, {0.25f, -1.5f, base * 3}, {3.4e38f, -7.0f, 0.1f}};
    return e;
}

} // namespace

class TestStoreDocumentIndex : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void documentIndexKeptPerConversation() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("index.db"));
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy saved(&store, &Store::documentIndexSaved);
        QSignalSpy loaded(&store, &Store::documentIndexLoaded);
        QSignalSpy deleted(&store, &Store::conversationDeleted);
        QVERIFY(!replyFor(opened, store.open(path)).isEmpty());
        const qint64 a = hearth::test::createdConversation(store, {});
        const qint64 b = hearth::test::createdConversation(store, {});
        QVERIFY(a > 0 && b > 0);
        const QByteArray key1(20, '\x11');
        const QByteArray key2(20, '\x22');
        auto load = [&](const QList<QByteArray>& keys, const QString& model, const QString& chunking) {
            const QList<QVariant> args = replyFor(loaded, store.loadDocumentIndex(keys, model, chunking));
            return args.size() > 1 ? args.at(1).value<QList<DocumentIndexEntry>>() : QList<DocumentIndexEntry>(1);
        };
        auto rows = [&] {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("peek"));
            db.setDatabaseName(path);
            int n = -1;
            if (db.open()) {
                QSqlQuery q(db);
                if (q.exec(QStringLiteral("SELECT count(*) FROM document_index")) && q.next()) n = q.value(0).toInt();
            }
            db = QSqlDatabase();
            QSqlDatabase::removeDatabase(QStringLiteral("peek"));
            return n;
        };

        const DocumentIndexEntry first = entry(key1, 0.5f);
        QVERIFY(!replyFor(saved, store.saveDocumentIndex(a, {first})).isEmpty());
        QList<DocumentIndexEntry> found = load({key2, key1}, first.model, first.chunking);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0].key, key1);
        QCOMPARE(found[0].model, first.model);
        QCOMPARE(found[0].chunking, first.chunking);
        QCOMPARE(found[0].spans, first.spans);
        QCOMPARE(found[0].vectors, first.vectors);
        QVERIFY(std::signbit(found[0].vectors[0][1])); // -0 kept as written
        QVERIFY(load({key1}, QStringLiteral("/models/other.gguf"), first.chunking).isEmpty());
        QVERIFY(load({key1}, first.model, QStringLiteral("chunks-1 400/80")).isEmpty());
        QVERIFY(load({}, first.model, first.chunking).isEmpty());

        // Saved again for the same chat: replaced. For another chat: a row of its own, the newest found.
        const DocumentIndexEntry again = entry(key1, 2.0f);
        QVERIFY(!replyFor(saved, store.saveDocumentIndex(a, {again})).isEmpty());
        QCOMPARE(rows(), 1);
        QTest::qWait(5); // a later creation time
        const DocumentIndexEntry other = entry(key1, 9.0f);
        QVERIFY(!replyFor(saved, store.saveDocumentIndex(b, {other})).isEmpty());
        QCOMPARE(rows(), 2);
        found = load({key1, key1}, first.model, first.chunking);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0].vectors, other.vectors);
        QCOMPARE(found[0].conversationId, b);
        {
            const QList<QVariant> args = replyFor(loaded, store.loadDocumentIndex({key1}, first.model, first.chunking, a));
            QVERIFY(args.size() > 1);
            const auto preferred = args.at(1).value<QList<DocumentIndexEntry>>();
            QCOMPARE(preferred.size(), 1);
            QCOMPARE(preferred[0].conversationId, a); // the chat asked for first, though older
            QCOMPARE(preferred[0].vectors, again.vectors);
        }

        // An entry that does not add up is refused, and nothing is written.
        DocumentIndexEntry uneven = entry(key2, 1.0f);
        uneven.vectors.removeLast();
        quint64 t = store.saveDocumentIndex(a, {uneven});
        QVERIFY(replyFor(failed, t).value(1).toString().contains(QStringLiteral("2 vectors for 3 chunks")));
        uneven = entry(key2, 1.0f);
        uneven.vectors[1].append(0.0f);
        t = store.saveDocumentIndex(a, {uneven});
        QVERIFY(replyFor(failed, t).value(1).toString().contains(QStringLiteral("different lengths")));
        t = store.saveDocumentIndex(9999, {entry(key2, 1.0f)}); // no such conversation
        QVERIFY(!replyFor(failed, t).isEmpty());
        t = store.saveDocumentIndex(a, {entry(key2, 1.0f), uneven}); // all or none: the first is not kept
        QVERIFY(!replyFor(failed, t).isEmpty());
        QCOMPARE(rows(), 2);

        // A damaged row (its spans cut short) is skipped: the other chat's row is found instead.
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("damage"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("UPDATE document_index SET spans = x'0102' WHERE conversation_id = %1").arg(b)));
            q.finish();
            db = QSqlDatabase();
            QSqlDatabase::removeDatabase(QStringLiteral("damage"));
        }
        found = load({key1}, first.model, first.chunking);
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0].vectors, again.vectors);

        // Deleting a chat deletes its rows.
        QVERIFY(!replyFor(deleted, store.deleteConversation(a)).isEmpty());
        QCOMPARE(rows(), 1);
        QVERIFY(load({key1}, first.model, first.chunking).isEmpty()); // only the damaged row is left
        QVERIFY(!replyFor(deleted, store.deleteConversation(b)).isEmpty());
        QCOMPARE(rows(), 0);
    }

    // A conversation's folders: stored when it is created, changed on their own (its other fields
    // untouched), read back with the list; a conversation that does not exist is said so.
    void documentFoldersKeptWithTheConversation() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy updated(&store, &Store::conversationUpdated);
        QVERIFY(!replyFor(opened, store.open(dir.filePath(QStringLiteral("folders.db")))).isEmpty());
        Conversation draft;
        draft.title = QStringLiteral("notes");
        draft.systemPrompt = QStringLiteral("be brief");
        draft.folders = {QStringLiteral("/home/me/notes"), QStringLiteral("/srv/docs \"quoted\"")};
        const qint64 id = hearth::test::createdConversation(store, draft);
        QVERIFY(id > 0);
        QList<Conversation> list = hearth::test::storedConversations(store);
        QCOMPARE(list.size(), 1);
        QCOMPARE(list[0].folders, draft.folders);
        QVERIFY(!replyFor(updated, store.setConversationFolders(id, {QStringLiteral("/home/me/papers")})).isEmpty());
        list = hearth::test::storedConversations(store);
        QCOMPARE(list[0].folders, QStringList{QStringLiteral("/home/me/papers")});
        QCOMPARE(list[0].title, draft.title);
        QCOMPARE(list[0].systemPrompt, draft.systemPrompt);
        QVERIFY(!replyFor(updated, store.setConversationFolders(id, {})).isEmpty());
        QVERIFY(hearth::test::storedConversations(store).value(0).folders.isEmpty());
        const quint64 t = store.setConversationFolders(id + 1, {QStringLiteral("/x")});
        QVERIFY(replyFor(failed, t).value(1).toString().contains(QStringLiteral("does not exist")));
    }
};

QTEST_GUILESS_MAIN(TestStoreDocumentIndex)
#include "test_store_document_index.moc"
