// The store's schema: one migration per version, applied in order from PRAGMA user_version, each
// in its own transaction, so that a database of any earlier Hearth opens with its data intact.
#include "services/store_sql.h"

#include <QSqlError>
#include <QVariant>

#include <spdlog/spdlog.h>

#include <array>

namespace hearth::app::detail {

SqlFailure sqlFailure(const QSqlQuery& q, const QString& what) {
    const QString message = QStringLiteral("%1: %2").arg(what, q.lastError().text());
    spdlog::warn("store: {}", message.toStdString());
    return SqlFailure{message};
}

std::optional<SqlFailure> runStatements(const QSqlDatabase& db, const QStringList& statements) {
    QSqlQuery q(db);
    for (const QString& s : statements)
        if (!q.exec(s)) return sqlFailure(q, QStringLiteral("schema"));
    return std::nullopt;
}

namespace {

std::optional<SqlFailure> migrateTo1(const QSqlDatabase& db) {
    return runStatements(db, {
        QStringLiteral("CREATE TABLE conversations ("
                       " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                       " title TEXT NOT NULL DEFAULT '',"
                       " model TEXT NOT NULL DEFAULT '',"
                       " system_prompt TEXT NOT NULL DEFAULT '',"
                       " sampling_json TEXT NOT NULL DEFAULT '{}',"
                       " created INTEGER NOT NULL,"
                       " updated INTEGER NOT NULL)"),
        QStringLiteral("CREATE TABLE messages ("
                       " id INTEGER PRIMARY KEY AUTOINCREMENT,"
                       " conversation_id INTEGER NOT NULL"
                       "  REFERENCES conversations(id) ON DELETE CASCADE,"
                       " role TEXT NOT NULL,"
                       " content TEXT NOT NULL DEFAULT '',"
                       " tokens INTEGER NOT NULL DEFAULT 0,"
                       " ttft_ms REAL NOT NULL DEFAULT 0,"
                       " tok_s REAL NOT NULL DEFAULT 0,"
                       " created INTEGER NOT NULL)"),
        QStringLiteral("CREATE INDEX messages_by_conversation ON messages(conversation_id, id)"),
        QStringLiteral("CREATE INDEX conversations_by_update ON conversations(updated)"),
    });
}

// Full-text index over message content, kept in step by triggers. SQLite builds without
// FTS5 keep schema 2 with no index; search then falls back to LIKE.
std::optional<SqlFailure> migrateTo2(const QSqlDatabase& db) {
    QSqlQuery probe(db);
    if (!probe.exec(QStringLiteral(
            "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', "
            "content_rowid='id', tokenize='unicode61 remove_diacritics 2')"))) {
        spdlog::info("store: no FTS5 in this SQLite ({}); search uses LIKE",
                     probe.lastError().text().toStdString());
        return std::nullopt;
    }
    return runStatements(db, {
        QStringLiteral("CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN "
                       "INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END"),
        QStringLiteral("CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN "
                       "INSERT INTO messages_fts(messages_fts, rowid, content) "
                       "VALUES ('delete', old.id, old.content); END"),
        QStringLiteral("CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN "
                       "INSERT INTO messages_fts(messages_fts, rowid, content) "
                       "VALUES ('delete', old.id, old.content); "
                       "INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END"),
        QStringLiteral("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')"),
    });
}

// A reply's reasoning, kept apart from its answer (content), and how long it took. Older
// messages get "" and 0.
std::optional<SqlFailure> migrateTo3(const QSqlDatabase& db) {
    return runStatements(db, {
        QStringLiteral("ALTER TABLE messages ADD COLUMN reasoning TEXT NOT NULL DEFAULT ''"),
        QStringLiteral("ALTER TABLE messages ADD COLUMN reasoning_ms REAL NOT NULL DEFAULT 0"),
    });
}

// How each assistant reply ended (a streaming reply is written as it grows, "incomplete"
// until it ends) and the context it filled. Older messages are complete, 0 tokens.
std::optional<SqlFailure> migrateTo4(const QSqlDatabase& db) {
    return runStatements(db, {
        QStringLiteral("ALTER TABLE messages ADD COLUMN state TEXT NOT NULL DEFAULT 'complete'"),
        QStringLiteral("ALTER TABLE messages ADD COLUMN context_tokens INTEGER NOT NULL DEFAULT 0"),
    });
}

// Images of user messages: the encoded bytes as attached and their MIME type, in order,
// deleted with their message (and so with its conversation). Older messages have none.
std::optional<SqlFailure> migrateTo5(const QSqlDatabase& db) {
    return runStatements(db, {
        QStringLiteral("CREATE TABLE message_images ("
                       " message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,"
                       " position INTEGER NOT NULL,"
                       " mime_type TEXT NOT NULL DEFAULT '',"
                       " data BLOB NOT NULL,"
                       " PRIMARY KEY (message_id, position))"),
    });
}

// Why a reply failed before its first token (state "failed"). Older messages have "".
std::optional<SqlFailure> migrateTo6(const QSqlDatabase& db) {
    return runStatements(db, {QStringLiteral("ALTER TABLE messages ADD COLUMN error TEXT NOT NULL DEFAULT ''")});
}

// Tool calls: an assistant turn's calls (a JSON array, "" for none) and a tool result's call id.
std::optional<SqlFailure> migrateTo7(const QSqlDatabase& db) {
    return runStatements(db, {QStringLiteral("ALTER TABLE messages ADD COLUMN tool_calls TEXT NOT NULL DEFAULT ''"),
                QStringLiteral("ALTER TABLE messages ADD COLUMN tool_call_id TEXT NOT NULL DEFAULT ''")});
}

// Files attached as text to a message: a JSON array of {"name", "text"} ("" for none).
std::optional<SqlFailure> migrateTo8(const QSqlDatabase& db) {
    return runStatements(db, {QStringLiteral("ALTER TABLE messages ADD COLUMN documents TEXT NOT NULL DEFAULT ''")});
}

// Vectors of the chunks of files searched per question (ChatRetrieval), kept per conversation
// (deleted with it) and found by the file's name-and-text hash, the embedding model and the
// chunking: each row one file's chunk spans (int32 start, length pairs) and their vectors
// (float32, chunk after chunk).
std::optional<SqlFailure> migrateTo9(const QSqlDatabase& db) {
    return runStatements(db, {
        QStringLiteral("CREATE TABLE document_index ("
                       " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
                       " document_key BLOB NOT NULL,"
                       " model TEXT NOT NULL,"
                       " chunking TEXT NOT NULL,"
                       " chunks INTEGER NOT NULL,"
                       " dimensions INTEGER NOT NULL,"
                       " spans BLOB NOT NULL,"
                       " vectors BLOB NOT NULL,"
                       " created INTEGER NOT NULL,"
                       " PRIMARY KEY (conversation_id, document_key, model, chunking))"),
        QStringLiteral("CREATE INDEX document_index_by_key ON document_index(document_key, model, chunking)"),
    });
}

// Folders of documents attached to a conversation: a JSON array of paths ("" for none).
std::optional<SqlFailure> migrateTo10(const QSqlDatabase& db) {
    return runStatements(db, {QStringLiteral("ALTER TABLE conversations ADD COLUMN folders TEXT NOT NULL DEFAULT ''")});
}

using Migration = std::optional<SqlFailure> (*)(const QSqlDatabase&);
constexpr std::array<Migration, 10> kMigrations{migrateTo1, migrateTo2, migrateTo3, migrateTo4, migrateTo5,
                                                migrateTo6, migrateTo7, migrateTo8, migrateTo9, migrateTo10};

} // namespace

std::optional<SqlFailure> migrateSchema(QSqlDatabase db, int target) {
    if (target < 0 || target > int(kMigrations.size()))
        return SqlFailure{QStringLiteral("no migration to schema %1").arg(target)};
    QSqlQuery q(db);
    if (!q.exec(QStringLiteral("PRAGMA user_version")) || !q.next())
        return sqlFailure(q, QStringLiteral("reading the schema version"));
    int version = q.value(0).toInt();
    q.finish();
    if (version > target)
        return SqlFailure{QStringLiteral("the database was written by a newer Hearth (schema %1, this one knows %2)")
                              .arg(version)
                              .arg(target)};
    while (version < target) {
        const int next = version + 1;
        if (!db.transaction()) return SqlFailure{db.lastError().text()};
        std::optional<SqlFailure> f = kMigrations[size_t(next - 1)](db);
        QSqlQuery set(db);
        if (!f && !set.exec(QStringLiteral("PRAGMA user_version = %1").arg(next)))
            f = sqlFailure(set, QStringLiteral("setting the schema version"));
        if (f || !db.commit()) {
            db.rollback();
            return f ? f : SqlFailure{db.lastError().text()};
        }
        version = next;
    }
    return std::nullopt;
}

} // namespace hearth::app::detail
