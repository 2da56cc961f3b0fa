// Store on a real SQLite file: schema and WAL, conversations and messages round trip, cascade,
// a message's images (stored, read back, deleted with it; a schema 4 database migrated), search,
// errors as signals, and no committed message lost when the writer is killed with -9.
// Run with "--store-writer DB" this test is the child that the kill test kills.
#include "services/store.h"

#include "test_support.h"

#include <QCoreApplication>
#include <QProcess>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>

using namespace hearth::app;

namespace {

// Waits for the signal answering `ticket` on `spy` (the ticket is argument 0); fails on failed().
bool waitFor(QSignalSpy& spy, QSignalSpy& failures, quint64 ticket, int timeoutMs = 10000) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < timeoutMs) {
        for (const auto& args : spy)
            if (args.first().toULongLong() == ticket) return true;
        for (const auto& args : failures)
            if (args.first().toULongLong() == ticket) {
                qWarning() << "store failed:" << args.at(1).toString();
                return false;
            }
        spy.wait(20);
    }
    return false;
}

QList<QVariant> argsFor(const QSignalSpy& spy, quint64 ticket) {
    for (const auto& args : spy)
        if (args.first().toULongLong() == ticket) return args;
    return {};
}

// The child process: appends messages as fast as it can, several in flight, and prints each id
// once its commit is reported. It runs until killed.
int runStoreWriter(const QString& path) {
    Store store;
    qint64 conversation = 0;
    int inFlight = 0;
    int sent = 0;
    const QString body = QString(QStringLiteral("lorem ipsum dolor sit amet ")).repeated(80);
    auto sendMore = [&] {
        while (inFlight < 6 && sent < 200000) {
            StoredMessage m;
            m.conversationId = conversation;
            m.role = sent % 2 ? QStringLiteral("assistant") : QStringLiteral("user");
            m.content = QStringLiteral("#%1 ").arg(sent) + body;
            m.tokens = sent;
            store.appendMessage(m);
            ++inFlight;
            ++sent;
        }
    };
    QObject::connect(&store, &Store::failed, &store, [](quint64, const QString& message) {
        std::fprintf(stderr, "store writer: %s\n", qPrintable(message));
        QCoreApplication::exit(3);
    });
    QObject::connect(&store, &Store::conversationCreated, &store, [&](quint64, const Conversation& c) {
        conversation = c.id;
        sendMore();
    });
    QObject::connect(&store, &Store::committed, &store, [&](quint64, qint64 id) {
        std::printf("%lld\n", static_cast<long long>(id));
        std::fflush(stdout);
        --inFlight;
        sendMore();
    });
    store.open(path);
    Conversation c;
    c.title = QStringLiteral("crash test");
    store.createConversation(c);
    return QCoreApplication::exec();
}

} // namespace

class TestStore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void schemaAndPragmas() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("hearth.db"));
        {
            Store store;
            QSignalSpy opened(&store, &Store::opened);
            QSignalSpy failed(&store, &Store::failed);
            const quint64 t = store.open(path);
            QVERIFY(waitFor(opened, failed, t));
            QCOMPARE(argsFor(opened, t).at(1).toString(), path);
        }
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("check"));
        db.setDatabaseName(path);
        QVERIFY(db.open());
        {
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("PRAGMA user_version")) && q.next());
            QCOMPARE(q.value(0).toInt(), Store::kSchemaVersion);
            QVERIFY(q.exec(QStringLiteral("PRAGMA journal_mode")) && q.next());
            QCOMPARE(q.value(0).toString(), QStringLiteral("wal"));
            QStringList columns;
            QVERIFY(q.exec(QStringLiteral("PRAGMA table_info(messages)")));
            while (q.next()) columns << q.value(1).toString();
            QCOMPARE(columns, (QStringList{"id", "conversation_id", "role", "content", "tokens",
                                            "ttft_ms", "tok_s", "created", "reasoning", "reasoning_ms", "state",
                                            "context_tokens", "error", "tool_calls", "tool_call_id", "documents"}));
            columns.clear();
            QVERIFY(q.exec(QStringLiteral("PRAGMA table_info(conversations)")));
            while (q.next()) columns << q.value(1).toString();
            QCOMPARE(columns, (QStringList{"id", "title", "model", "system_prompt", "sampling_json",
                                            "created", "updated", "folders"}));
            // A database from a newer Hearth is refused, not damaged.
            QVERIFY(q.exec(QStringLiteral("PRAGMA user_version = 99")));
        }
        db.close();
        db = QSqlDatabase();
        QSqlDatabase::removeDatabase(QStringLiteral("check"));
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        const quint64 t = store.open(path);
        QTRY_VERIFY(!failed.isEmpty());
        QCOMPARE(failed.first().first().toULongLong(), t);
        QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("newer")));
        QVERIFY(opened.isEmpty());
        QSignalSpy listed(&store, &Store::conversationsListed);
        store.listConversations();
        QTRY_COMPARE(failed.size(), 2);
        QVERIFY(failed.last().at(1).toString().contains(QStringLiteral("not open")));
    }

    // A database written by a Hearth of schema 2 (no reasoning columns; its DDL written out here as
    // it was) opens, keeps its messages (reasoning "") and then stores reasoning apart from content.
    void schema2DatabaseMigrates() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("old.db"));
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("old"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            for (const char* sql : {
                     "CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " title TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',"
                     " system_prompt TEXT NOT NULL DEFAULT '', sampling_json TEXT NOT NULL DEFAULT '{}',"
                     " created INTEGER NOT NULL, updated INTEGER NOT NULL)",
                     "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
                     " role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', tokens INTEGER NOT NULL DEFAULT 0,"
                     " ttft_ms REAL NOT NULL DEFAULT 0, tok_s REAL NOT NULL DEFAULT 0, created INTEGER NOT NULL)",
                     "CREATE INDEX messages_by_conversation ON messages(conversation_id, id)",
                     "CREATE INDEX conversations_by_update ON conversations(updated)",
                     "INSERT INTO conversations(title, created, updated) VALUES ('old chat', 1, 1)",
                     "INSERT INTO messages(conversation_id, role, content, tokens, created) "
                     "VALUES (1, 'user', 'hello', 0, 1), (1, 'assistant', 'hi there', 2, 2)",
                     "PRAGMA user_version = 2"})
                QVERIFY2(q.exec(QString::fromLatin1(sql)), qPrintable(q.lastError().text()));
        }
        QSqlDatabase::removeDatabase(QStringLiteral("old"));

        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy loaded(&store, &Store::messagesLoaded);
        QSignalSpy committed(&store, &Store::committed);
        QSignalSpy updated(&store, &Store::messageUpdated);
        QVERIFY(waitFor(opened, failed, store.open(path)));
        quint64 t = store.messages(1);
        QVERIFY(waitFor(loaded, failed, t));
        auto messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[1].content, QStringLiteral("hi there"));
        QCOMPARE(messages[1].tokens, 2);
        QCOMPARE(messages[1].reasoning, QString(""));
        QCOMPARE(messages[1].reasoningMs, 0.0);

        StoredMessage reply;
        reply.conversationId = 1;
        reply.role = QStringLiteral("assistant");
        reply.content = QStringLiteral("Four.");
        reply.reasoning = QStringLiteral("2 + 2 = 4.");
        reply.reasoningMs = 4200.0;
        t = store.appendMessage(reply);
        QVERIFY(waitFor(committed, failed, t));
        reply.id = argsFor(committed, t).at(1).toLongLong();
        // Regenerated: the reasoning is replaced with the answer.
        StoredMessage again = reply;
        again.content = QStringLiteral("4");
        again.reasoning = QStringLiteral("Add two and two.");
        again.reasoningMs = 1500.0;
        QVERIFY(waitFor(updated, failed, store.updateMessage(again)));
        t = store.messages(1);
        QVERIFY(waitFor(loaded, failed, t));
        messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(messages.size(), 3);
        QCOMPARE(messages[2].content, QStringLiteral("4"));
        QCOMPARE(messages[2].reasoning, QStringLiteral("Add two and two."));
        QCOMPARE(messages[2].reasoningMs, 1500.0);
        QCOMPARE(messages[1].reasoning, QString(""));

        // The file now says the current schema.
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("check3"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("PRAGMA user_version")) && q.next());
            QCOMPARE(q.value(0).toInt(), Store::kSchemaVersion);
        }
        QSqlDatabase::removeDatabase(QStringLiteral("check3"));
    }

    // A database of schema 3 (reasoning columns, no reply state; its DDL written out as it was)
    // keeps its conversations and messages (complete, 0 context tokens), then stores a reply's
    // state and context tokens, incomplete while it is written.
    void schema3DatabaseMigrates() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("v3.db"));
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("v3"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            for (const char* sql : {
                     "CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " title TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',"
                     " system_prompt TEXT NOT NULL DEFAULT '', sampling_json TEXT NOT NULL DEFAULT '{}',"
                     " created INTEGER NOT NULL, updated INTEGER NOT NULL)",
                     "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
                     " role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', tokens INTEGER NOT NULL DEFAULT 0,"
                     " ttft_ms REAL NOT NULL DEFAULT 0, tok_s REAL NOT NULL DEFAULT 0, created INTEGER NOT NULL,"
                     " reasoning TEXT NOT NULL DEFAULT '', reasoning_ms REAL NOT NULL DEFAULT 0)",
                     "CREATE INDEX messages_by_conversation ON messages(conversation_id, id)",
                     "CREATE INDEX conversations_by_update ON conversations(updated)",
                     "INSERT INTO conversations(title, system_prompt, sampling_json, created, updated) "
                     "VALUES ('v3 chat', 'Be kind.', '{\"max_tokens\":7}', 5, 6)",
                     "INSERT INTO messages(conversation_id, role, content, tokens, created, reasoning, reasoning_ms) "
                     "VALUES (1, 'user', 'hello', 0, 5, '', 0), (1, 'assistant', 'hi', 1, 6, 'greet', 300)",
                     "PRAGMA user_version = 3"})
                QVERIFY2(q.exec(QString::fromLatin1(sql)), qPrintable(q.lastError().text()));
        }
        QSqlDatabase::removeDatabase(QStringLiteral("v3"));

        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy loaded(&store, &Store::messagesLoaded);
        QSignalSpy listed(&store, &Store::conversationsListed);
        QSignalSpy committed(&store, &Store::committed);
        QSignalSpy updated(&store, &Store::messageUpdated);
        QVERIFY(waitFor(opened, failed, store.open(path)));
        quint64 t = store.listConversations();
        QVERIFY(waitFor(listed, failed, t));
        const auto list = argsFor(listed, t).at(1).value<QList<Conversation>>();
        QCOMPARE(list.size(), 1);
        QCOMPARE(list[0].title, QStringLiteral("v3 chat"));
        QCOMPARE(list[0].systemPrompt, QStringLiteral("Be kind."));
        QCOMPARE(list[0].samplingJson, QStringLiteral("{\"max_tokens\":7}"));
        t = store.messages(1);
        QVERIFY(waitFor(loaded, failed, t));
        auto messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[1].content, QStringLiteral("hi"));
        QCOMPARE(messages[1].reasoning, QStringLiteral("greet"));
        QCOMPARE(messages[1].reasoningMs, 300.0);
        QCOMPARE(messages[1].state, QStringLiteral("complete"));
        QCOMPARE(messages[1].contextTokens, 0);

        StoredMessage reply;
        reply.conversationId = 1;
        reply.role = QStringLiteral("assistant");
        reply.content = QStringLiteral("Once");
        reply.state = QStringLiteral("incomplete");
        t = store.appendMessage(reply);
        QVERIFY(waitFor(committed, failed, t));
        reply.id = argsFor(committed, t).at(1).toLongLong();
        t = store.messages(1);
        QVERIFY(waitFor(loaded, failed, t));
        messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(messages.size(), 3);
        QCOMPARE(messages[2].state, QStringLiteral("incomplete"));
        reply.content = QStringLiteral("Once upon a time");
        reply.state = QStringLiteral("stopped");
        reply.contextTokens = 321;
        QVERIFY(waitFor(updated, failed, store.updateMessage(reply)));
        reply.state = QStringLiteral("nonsense"); // unknown words are stored as complete
        StoredMessage other = reply;
        other.id = 0;
        t = store.appendMessage(other);
        QVERIFY(waitFor(committed, failed, t));
        t = store.messages(1);
        QVERIFY(waitFor(loaded, failed, t));
        messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(messages.size(), 4);
        QCOMPARE(messages[2].content, QStringLiteral("Once upon a time"));
        QCOMPARE(messages[2].state, QStringLiteral("stopped"));
        QCOMPARE(messages[2].contextTokens, 321);
        QCOMPARE(messages[3].state, QStringLiteral("complete"));

        // A reply that failed before its first token keeps why.
        StoredMessage failedReply = other;
        failedReply.content.clear();
        failedReply.state = QStringLiteral("failed");
        failedReply.error = QStringLiteral("the engine stopped");
        t = store.appendMessage(failedReply);
        QVERIFY(waitFor(committed, failed, t));
        t = store.messages(1);
        QVERIFY(waitFor(loaded, failed, t));
        messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(messages.size(), 5);
        QCOMPARE(messages[4].state, QStringLiteral("failed"));
        QCOMPARE(messages[4].error, QStringLiteral("the engine stopped"));
        QVERIFY(messages[3].error.isEmpty());
    }

    // A schema 4 database gains the images table and keeps everything; images come back with
    // their message, byte for byte and in order, and go with it (edit and resend, delete).
    void imagesRoundTripMigrateAndGoWithTheirMessages() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("v4.db"));
        auto count = [&path](const char* sql) {
            int n = -1;
            {
                QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("peek"));
                db.setDatabaseName(path);
                if (db.open()) {
                    QSqlQuery q(db);
                    if (q.exec(QString::fromLatin1(sql)) && q.next()) n = q.value(0).toInt();
                }
            }
            QSqlDatabase::removeDatabase(QStringLiteral("peek"));
            return n;
        };
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("v4"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            for (const char* sql : {
                     "CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " title TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',"
                     " system_prompt TEXT NOT NULL DEFAULT '', sampling_json TEXT NOT NULL DEFAULT '{}',"
                     " created INTEGER NOT NULL, updated INTEGER NOT NULL)",
                     "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
                     " role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', tokens INTEGER NOT NULL DEFAULT 0,"
                     " ttft_ms REAL NOT NULL DEFAULT 0, tok_s REAL NOT NULL DEFAULT 0, created INTEGER NOT NULL,"
                     " reasoning TEXT NOT NULL DEFAULT '', reasoning_ms REAL NOT NULL DEFAULT 0,"
                     " state TEXT NOT NULL DEFAULT 'complete', context_tokens INTEGER NOT NULL DEFAULT 0)",
                     "CREATE INDEX messages_by_conversation ON messages(conversation_id, id)",
                     "INSERT INTO conversations(title, created, updated) VALUES ('v4 chat', 5, 6)",
                     "INSERT INTO messages(conversation_id, role, content, created, state, context_tokens) "
                     "VALUES (1, 'user', 'hello', 5, 'complete', 0), (1, 'assistant', 'hi', 6, 'stopped', 42)",
                     "PRAGMA user_version = 4"})
                QVERIFY2(q.exec(QString::fromLatin1(sql)), qPrintable(q.lastError().text()));
        }
        QSqlDatabase::removeDatabase(QStringLiteral("v4"));

        const QByteArray png = QByteArray("\x89PNG\r\n\x1a\n", 8) + QByteArray("\0\1\2 pixels", 10);
        const QByteArray jpeg = QByteArray("\xff\xd8\xff\xe0", 4) + QByteArray(3000, '\0');
        {
            Store store;
            QSignalSpy opened(&store, &Store::opened);
            QSignalSpy failed(&store, &Store::failed);
            QSignalSpy loaded(&store, &Store::messagesLoaded);
            QSignalSpy committed(&store, &Store::committed);
            QSignalSpy removed(&store, &Store::messagesDeleted);
            QVERIFY(waitFor(opened, failed, store.open(path)));
            quint64 t = store.messages(1);
            QVERIFY(waitFor(loaded, failed, t));
            auto messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
            QCOMPARE(messages.size(), 2); // nothing lost
            QCOMPARE(messages[0].content, QStringLiteral("hello"));
            QVERIFY(messages[0].images.isEmpty());
            QCOMPARE(messages[1].state, QStringLiteral("stopped"));
            QCOMPARE(messages[1].contextTokens, 42);
            QVERIFY(messages[1].toolCalls.isEmpty());
            QVERIFY(messages[1].toolCallId.isEmpty());

            StoredMessage user;
            user.conversationId = 1;
            user.role = QStringLiteral("user");
            user.content = QStringLiteral("What are these?");
            user.images = {png, jpeg};
            t = store.appendMessage(user);
            QVERIFY(waitFor(committed, failed, t));
            const qint64 withImages = argsFor(committed, t).at(1).toLongLong();
            StoredMessage later = user;
            later.images = {jpeg};
            t = store.appendMessage(later);
            QVERIFY(waitFor(committed, failed, t));
            t = store.messages(1);
            QVERIFY(waitFor(loaded, failed, t));
            messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
            QCOMPARE(messages.size(), 4);
            QCOMPARE(messages[2].images, (QList<QByteArray>{png, jpeg}));
            QCOMPARE(messages[3].images, QList<QByteArray>{jpeg});
            QCOMPARE(count("SELECT count(*) FROM message_images WHERE mime_type = 'image/jpeg'"), 2);
            QCOMPARE(count("SELECT count(*) FROM message_images WHERE mime_type = 'image/png' AND position = 0"), 1);

            // Edit and resend drops the later messages' images with them.
            t = store.deleteMessagesFrom(1, withImages + 1);
            QVERIFY(waitFor(removed, failed, t));
            QCOMPARE(count("SELECT count(*) FROM message_images"), 2);
        }
        QCOMPARE(count("PRAGMA user_version"), Store::kSchemaVersion);
        {
            Store store;
            QSignalSpy opened(&store, &Store::opened);
            QSignalSpy failed(&store, &Store::failed);
            QSignalSpy deleted(&store, &Store::conversationDeleted);
            QVERIFY(waitFor(opened, failed, store.open(path)));
            QVERIFY(waitFor(deleted, failed, store.deleteConversation(1)));
        }
        QCOMPARE(count("SELECT count(*) FROM message_images"), 0);
        QCOMPARE(count("SELECT count(*) FROM messages"), 0);
    }

    // A question's attached files, a reply's tool calls (written when it finishes, by update) and
    // the tool's result message.
    void documentsToolCallsAndResultsRoundTrip() {
        QTemporaryDir dir;
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy created(&store, &Store::conversationCreated);
        QSignalSpy committed(&store, &Store::committed);
        QSignalSpy updated(&store, &Store::messageUpdated);
        QSignalSpy loaded(&store, &Store::messagesLoaded);
        QVERIFY(waitFor(opened, failed, store.open(dir.filePath(QStringLiteral("tools.db")))));
        quint64 t = store.createConversation({});
        QVERIFY(waitFor(created, failed, t));
        const qint64 conversation = argsFor(created, t).at(1).value<Conversation>().id;
        StoredMessage question;
        question.conversationId = conversation;
        question.role = QStringLiteral("user");
        question.content = QStringLiteral("Summarise these.");
        question.documents = {ChatDocument{QStringLiteral("notes.md"), QStringLiteral("# Notes\n\nmilk, eggs")},
                              ChatDocument{QStringLiteral("a \"b\".txt"), QStringLiteral("üñí 🐉")}};
        QVERIFY(waitFor(committed, failed, store.appendMessage(question)));
        StoredMessage reply;
        reply.conversationId = conversation;
        reply.role = QStringLiteral("assistant");
        reply.state = QStringLiteral("incomplete");
        t = store.appendMessage(reply);
        QVERIFY(waitFor(committed, failed, t));
        reply.id = argsFor(committed, t).at(1).toLongLong();
        reply.state = QStringLiteral("complete");
        reply.content = QStringLiteral("Checking.");
        reply.toolCalls = {ChatToolCall{QStringLiteral("call_a"), QStringLiteral("fs__read"), QStringLiteral("{\"path\":\"/tmp/x\"}")},
                           ChatToolCall{QStringLiteral("call_b"), QStringLiteral("fs__list"), QStringLiteral("{}")}};
        QVERIFY(waitFor(updated, failed, store.updateMessage(reply)));
        StoredMessage result;
        result.conversationId = conversation;
        result.role = QStringLiteral("tool");
        result.content = QStringLiteral("file text");
        result.toolCallId = QStringLiteral("call_a");
        QVERIFY(waitFor(committed, failed, store.appendMessage(result)));
        t = store.messages(conversation);
        QVERIFY(waitFor(loaded, failed, t));
        auto messages = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(messages.size(), 3);
        QCOMPARE(messages.takeFirst().documents, question.documents);
        QCOMPARE(messages[0].content, QStringLiteral("Checking."));
        QCOMPARE(messages[0].toolCalls.size(), 2);
        QCOMPARE(messages[0].toolCalls[0].id, QStringLiteral("call_a"));
        QCOMPARE(messages[0].toolCalls[0].name, QStringLiteral("fs__read"));
        QCOMPARE(messages[0].toolCalls[0].arguments, QStringLiteral("{\"path\":\"/tmp/x\"}"));
        QCOMPARE(messages[0].toolCalls[1].name, QStringLiteral("fs__list"));
        QVERIFY(messages[0].toolCallId.isEmpty());
        QCOMPARE(messages[1].role, QStringLiteral("tool"));
        QCOMPARE(messages[1].toolCallId, QStringLiteral("call_a"));
        QVERIFY(messages[1].toolCalls.isEmpty());
        QVERIFY(messages[1].documents.isEmpty());
    }

    void conversationsAndMessagesRoundTrip() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("hearth.db"));
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy created(&store, &Store::conversationCreated);
        QSignalSpy committed(&store, &Store::committed);
        QSignalSpy updated(&store, &Store::conversationUpdated);
        QSignalSpy msgUpdated(&store, &Store::messageUpdated);
        QSignalSpy listed(&store, &Store::conversationsListed);
        QSignalSpy loaded(&store, &Store::messagesLoaded);
        QSignalSpy deleted(&store, &Store::conversationDeleted);
        QSignalSpy searched(&store, &Store::searchFinished);
        QVERIFY(waitFor(opened, failed, store.open(path)));
        const bool fts = opened.first().at(2).toBool();

        Conversation draft;
        draft.title = QStringLiteral("First");
        draft.model = QStringLiteral("stories260K.gguf");
        draft.systemPrompt = QStringLiteral("Be brief.");
        draft.samplingJson = QStringLiteral(R"({"temperature":0.7})");
        quint64 t = store.createConversation(draft);
        QVERIFY(waitFor(created, failed, t));
        const auto first = argsFor(created, t).at(1).value<Conversation>();
        QVERIFY(first.id > 0);
        QCOMPARE(first.systemPrompt, draft.systemPrompt);
        QVERIFY(first.created > 0);
        draft.title = QStringLiteral("Second");
        t = store.createConversation(draft);
        QVERIFY(waitFor(created, failed, t));
        const auto second = argsFor(created, t).at(1).value<Conversation>();

        StoredMessage m;
        m.conversationId = first.id;
        m.role = QStringLiteral("user");
        m.content = QStringLiteral("Tell me about the red balloon");
        const quint64 a = store.appendMessage(m);
        m.role = QStringLiteral("assistant");
        m.content = QStringLiteral("…");
        const quint64 b = store.appendMessage(m);
        QVERIFY(waitFor(committed, failed, a));
        QVERIFY(waitFor(committed, failed, b));
        const qint64 assistantId = argsFor(committed, b).at(1).toLongLong();
        QVERIFY(assistantId > argsFor(committed, a).at(1).toLongLong());

        StoredMessage done;
        done.id = assistantId;
        done.content = QStringLiteral("The balloon floated over the green hill.");
        done.tokens = 9;
        done.ttftMs = 12.5;
        done.tokensPerSecond = 88.0;
        QVERIFY(waitFor(msgUpdated, failed, store.updateMessage(done)));

        m.conversationId = second.id;
        m.role = QStringLiteral("user");
        m.content = QStringLiteral("A story about a cat, 100% fluffy_and_soft");
        QVERIFY(waitFor(committed, failed, store.appendMessage(m)));

        QTest::qWait(5); // timestamps are in ms: make the rename the clearly later change
        QVERIFY(waitFor(updated, failed, store.renameConversation(first.id, QStringLiteral("Balloons"))));

        t = store.messages(first.id);
        QVERIFY(waitFor(loaded, failed, t));
        auto msgs = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(msgs.size(), 2);
        QCOMPARE(msgs[0].role, QStringLiteral("user"));
        QCOMPARE(msgs[1].content, done.content);
        QCOMPARE(msgs[1].tokens, 9);
        QCOMPARE(msgs[1].ttftMs, 12.5);
        QCOMPARE(msgs[1].tokensPerSecond, 88.0);

        t = store.listConversations();
        QVERIFY(waitFor(listed, failed, t));
        auto list = argsFor(listed, t).at(1).value<QList<Conversation>>();
        QCOMPARE(list.size(), 2);
        QCOMPARE(list[0].id, first.id); // renamed last, so most recently updated
        QCOMPARE(list[0].title, QStringLiteral("Balloons"));
        QCOMPARE(list[1].samplingJson, draft.samplingJson);

        t = store.searchMessages(QStringLiteral("balloon"));
        QVERIFY(waitFor(searched, failed, t));
        auto hits = argsFor(searched, t).at(1).value<QList<SearchHit>>();
        QCOMPARE(hits.size(), 2);
        for (const SearchHit& h : hits) {
            QCOMPARE(h.conversationId, first.id);
            QCOMPARE(h.conversationTitle, QStringLiteral("Balloons"));
            QVERIFY2(h.snippet.contains(QStringLiteral("balloon"), Qt::CaseInsensitive), qPrintable(h.snippet));
            // Plain text: no markup around the match, which comes as a range for the view to highlight.
            QVERIFY2(!h.snippet.contains(QLatin1Char('[')) && !h.snippet.contains(QLatin1Char(']')), qPrintable(h.snippet));
            QVERIFY(!h.matches.isEmpty());
            for (const SearchMatch& m : h.matches)
                QVERIFY2(h.snippet.mid(m.start, m.length).startsWith(QStringLiteral("balloon"), Qt::CaseInsensitive),
                         qPrintable(h.snippet.mid(m.start, m.length)));
        }
        // Search text with SQL or FTS syntax in it is searched for, not interpreted.
        for (const QString& q : {QStringLiteral("100%"), QStringLiteral("\"cat"), QStringLiteral("fluffy_and"),
                                 QStringLiteral("cat AND OR NOT")}) {
            t = store.searchMessages(q);
            QVERIFY(waitFor(searched, failed, t));
            hits = argsFor(searched, t).at(1).value<QList<SearchHit>>();
            if (q == QStringLiteral("cat AND OR NOT")) {
                QVERIFY(hits.isEmpty());
                continue;
            }
            QCOMPARE(hits.size(), 1);
            QCOMPARE(hits[0].conversationId, second.id);
        }
        qInfo() << "full-text search:" << (fts ? "fts5" : "LIKE");

        // Deleting a conversation deletes its messages (and their search entries).
        QVERIFY(waitFor(deleted, failed, store.deleteConversation(first.id)));
        t = store.messages(first.id);
        QVERIFY(waitFor(loaded, failed, t));
        QVERIFY(argsFor(loaded, t).at(2).value<QList<StoredMessage>>().isEmpty());
        t = store.searchMessages(QStringLiteral("balloon"));
        QVERIFY(waitFor(searched, failed, t));
        QVERIFY(argsFor(searched, t).at(1).value<QList<SearchHit>>().isEmpty());

        // Errors come back as failed(ticket) with a message.
        t = store.deleteConversation(first.id);
        QTRY_VERIFY(!argsFor(failed, t).isEmpty());
        QVERIFY(argsFor(failed, t).at(1).toString().contains(QStringLiteral("does not exist")));
        m.conversationId = 424242;
        t = store.appendMessage(m);
        QTRY_VERIFY(!argsFor(failed, t).isEmpty());
        QVERIFY(argsFor(committed, t).isEmpty());
    }

    void deleteMessagesFromTruncatesTheConversation() {
        QTemporaryDir dir;
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy created(&store, &Store::conversationCreated);
        QSignalSpy committed(&store, &Store::committed);
        QSignalSpy removed(&store, &Store::messagesDeleted);
        QSignalSpy loaded(&store, &Store::messagesLoaded);
        QSignalSpy searched(&store, &Store::searchFinished);
        QVERIFY(waitFor(opened, failed, store.open(dir.filePath(QStringLiteral("hearth.db")))));
        Conversation draft;
        draft.title = QStringLiteral("edit me");
        quint64 t = store.createConversation(draft);
        QVERIFY(waitFor(created, failed, t));
        const qint64 conv = argsFor(created, t).at(1).value<Conversation>().id;
        t = store.createConversation(draft);
        QVERIFY(waitFor(created, failed, t));
        const qint64 other = argsFor(created, t).at(1).value<Conversation>().id;
        QList<qint64> ids;
        for (int i = 0; i < 5; ++i) {
            StoredMessage m;
            m.conversationId = i == 2 ? other : conv;
            m.role = i % 2 ? QStringLiteral("assistant") : QStringLiteral("user");
            m.content = QStringLiteral("message%1 zebra").arg(i);
            t = store.appendMessage(m);
            QVERIFY(waitFor(committed, failed, t));
            ids << argsFor(committed, t).at(1).toLongLong();
        }
        // Deleting from the second message removes it and the later ones of that conversation
        // only (the third belongs to another conversation).
        t = store.deleteMessagesFrom(conv, ids[1]);
        QVERIFY(waitFor(removed, failed, t));
        QCOMPARE(argsFor(removed, t).at(2).toInt(), 3);
        t = store.messages(conv);
        QVERIFY(waitFor(loaded, failed, t));
        auto list = argsFor(loaded, t).at(2).value<QList<StoredMessage>>();
        QCOMPARE(list.size(), 1);
        QCOMPARE(list[0].id, ids[0]);
        t = store.messages(other);
        QVERIFY(waitFor(loaded, failed, t));
        QCOMPARE(argsFor(loaded, t).at(2).value<QList<StoredMessage>>().size(), 1);
        // Search no longer finds the deleted messages.
        t = store.searchMessages(QStringLiteral("message3"));
        QVERIFY(waitFor(searched, failed, t));
        QVERIFY(argsFor(searched, t).at(1).value<QList<SearchHit>>().isEmpty());
        t = store.searchMessages(QStringLiteral("message0"));
        QVERIFY(waitFor(searched, failed, t));
        QCOMPARE(argsFor(searched, t).at(1).value<QList<SearchHit>>().size(), 1);
    }

    void pendingWritesFinishOnDestruction() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("hearth.db"));
        qint64 conversation = 0;
        {
            Store store;
            QSignalSpy opened(&store, &Store::opened);
            QSignalSpy failed(&store, &Store::failed);
            QSignalSpy created(&store, &Store::conversationCreated);
            store.open(path);
            const quint64 t = store.createConversation({});
            QVERIFY(waitFor(created, failed, t));
            conversation = argsFor(created, t).at(1).value<Conversation>().id;
            for (int i = 0; i < 50; ++i) {
                StoredMessage m;
                m.conversationId = conversation;
                m.role = QStringLiteral("user");
                m.content = QString::number(i);
                store.appendMessage(m);
            }
        } // destroyed with 50 appends queued
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy loaded(&store, &Store::messagesLoaded);
        store.open(path);
        const quint64 t = store.messages(conversation);
        QVERIFY(waitFor(loaded, failed, t));
        QCOMPARE(argsFor(loaded, t).at(2).value<QList<StoredMessage>>().size(), 50);
    }

    void killMinusNineLosesNoCommittedMessage() {
#ifndef Q_OS_UNIX
        QSKIP("needs SIGKILL");
#endif
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("crash.db"));
        QProcess child;
        child.setProcessChannelMode(QProcess::SeparateChannels);
        QStringList command = hearth::test::selfCommand();
        child.start(command.takeFirst(), command << QStringLiteral("--store-writer") << path);
        QVERIFY(child.waitForStarted(5000));
        QByteArray out;
        QElapsedTimer t;
        t.start();
        // Let it commit a good number, then kill it in the middle of its stream of transactions.
        while (out.count('\n') < 150 && t.elapsed() < 20000) {
            child.waitForReadyRead(100);
            out += child.readAllStandardOutput();
            QVERIFY2(child.state() == QProcess::Running, child.readAllStandardError().constData());
        }
        child.kill(); // SIGKILL
        QVERIFY(child.waitForFinished(5000));
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);
        out += child.readAllStandardOutput();
        QList<qint64> printed;
        const QList<QByteArray> lines = out.split('\n');
        // The last piece may be a cut-off line; log lines (spdlog also writes to stdout) are skipped.
        for (qsizetype i = 0; i + 1 < lines.size(); ++i) {
            bool isNumber = false;
            const qint64 id = lines[i].trimmed().toLongLong(&isNumber);
            if (isNumber) printed << id;
        }
        QVERIFY2(printed.size() >= 120, qPrintable(QString::number(printed.size())));

        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("crash"));
        db.setDatabaseName(path);
        QVERIFY(db.open());
        {
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("PRAGMA integrity_check")) && q.next());
            QCOMPARE(q.value(0).toString(), QStringLiteral("ok"));
            QSet<qint64> present;
            QVERIFY(q.exec(QStringLiteral("SELECT id FROM messages")));
            while (q.next()) present.insert(q.value(0).toLongLong());
            for (qint64 id : printed) QVERIFY2(present.contains(id), qPrintable(QString::number(id)));
            QVERIFY(present.size() >= printed.size());
            qInfo() << "printed" << printed.size() << "committed ids; the database holds" << present.size();
        }
        db.close();
        db = QSqlDatabase();
        QSqlDatabase::removeDatabase(QStringLiteral("crash"));

        // The store opens it again and can keep writing.
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy committed(&store, &Store::committed);
        QVERIFY(waitFor(opened, failed, store.open(path)));
        StoredMessage m;
        m.conversationId = 1;
        m.role = QStringLiteral("user");
        m.content = QStringLiteral("after the crash");
        QVERIFY(waitFor(committed, failed, store.appendMessage(m)));
    }
};

namespace {

int testMain(int argc, char** argv) {
    if (argc == 3 && qstrcmp(argv[1], "--store-writer") == 0) {
        QCoreApplication app(argc, argv);
        return runStoreWriter(QString::fromLocal8Bit(argv[2]));
    }
    QCoreApplication app(argc, argv);
    TestStore test;
    return QTest::qExec(&test, argc, argv);
}

} // namespace

HEARTH_TEST_ENTRY(testMain)

#include "test_store.moc"
