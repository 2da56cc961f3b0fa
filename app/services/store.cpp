// Store: one SQLite connection owned by a worker QThread (WAL, synchronous=FULL, foreign keys),
// schema migrations keyed on PRAGMA user_version, full-text search with FTS5 when SQLite has it.
#include "services/store.h"

#include "services/chat_documents.h"
#include "services/chat_images.h"
#include "services/chat_tools.h"
#include "services/store_document_index.h"
#include "services/store_sql.h"

#include <QDateTime>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QList>
#include <QMetaObject>
#include <QRegularExpression>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QThread>
#include <QVariant>

#include <spdlog/spdlog.h>

#include <atomic>
#include <optional>
#include <variant>
#include <utility>

namespace hearth::app {

namespace {

using detail::SqlFailure;

qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }

// A null QString binds as SQL NULL; the text columns are NOT NULL, so bind "" instead.
QString text(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }

// A conversation's folders as stored: a JSON array of paths ("" for none), and back.
QString foldersJson(const QStringList& folders) {
    if (folders.isEmpty()) return QStringLiteral("");
    return QString::fromUtf8(QJsonDocument(QJsonArray::fromStringList(folders)).toJson(QJsonDocument::Compact));
}

QStringList foldersFromJson(const QString& json) {
    QStringList out;
    for (const QJsonValue& v : QJsonDocument::fromJson(json.toUtf8()).array())
        if (v.isString() && !v.toString().isEmpty()) out << v.toString();
    return out;
}

Conversation readConversation(const QSqlQuery& q) {
    Conversation c;
    c.id = q.value(0).toLongLong();
    c.title = q.value(1).toString();
    c.model = q.value(2).toString();
    c.systemPrompt = q.value(3).toString();
    c.samplingJson = q.value(4).toString();
    c.created = q.value(5).toLongLong();
    c.updated = q.value(6).toLongLong();
    c.folders = foldersFromJson(q.value(7).toString());
    return c;
}

// "two words" -> "\"two\"* \"words\"*": every word must occur, as a prefix; FTS syntax is inert.
QString ftsQuery(const QString& text) {
    static const QRegularExpression space(QStringLiteral("\\s+"));
    QStringList terms;
    for (QString word : text.split(space, Qt::SkipEmptyParts)) {
        word.replace(QLatin1Char('"'), QStringLiteral("\"\""));
        terms << QStringLiteral("\"%1\"*").arg(word);
    }
    return terms.join(QLatin1Char(' '));
}

QString likePattern(const QString& text) {
    QString escaped = text;
    escaped.replace(QLatin1Char('\\'), QStringLiteral("\\\\"));
    escaped.replace(QLatin1Char('%'), QStringLiteral("\\%"));
    escaped.replace(QLatin1Char('_'), QStringLiteral("\\_"));
    return QLatin1Char('%') + escaped + QLatin1Char('%');
}

// Some context around the first occurrence of `needle` (case-insensitive), with every
// occurrence in it as a match.
void plainSnippet(const QString& content, const QString& needle, SearchHit& hit) {
    const qsizetype at = content.indexOf(needle, 0, Qt::CaseInsensitive);
    if (at < 0) {
        hit.snippet = content.left(120);
        return;
    }
    const qsizetype from = std::max<qsizetype>(0, at - 40);
    QString s = content.mid(from, needle.size() + 80);
    const bool cutBefore = from > 0, cutAfter = from + s.size() < content.size();
    const qsizetype shift = cutBefore ? 1 : 0; // the "…" put in front
    for (qsizetype i = s.indexOf(needle, 0, Qt::CaseInsensitive); i >= 0 && !needle.isEmpty();
         i = s.indexOf(needle, i + needle.size(), Qt::CaseInsensitive))
        hit.matches << SearchMatch{i + shift, needle.size()};
    if (cutBefore) s.prepend(QStringLiteral("…"));
    if (cutAfter) s.append(QStringLiteral("…"));
    hit.snippet = s;
}

// FTS5's snippet marks each match with these two characters (never left in the text shown).
constexpr char16_t kMatchOpen = u'\x02';
constexpr char16_t kMatchClose = u'\x03';

// The snippet as plain text and where the marked matches lie in it.
void markedSnippet(const QString& marked, SearchHit& hit) {
    QString plain;
    plain.reserve(marked.size());
    qsizetype open = -1;
    for (const QChar c : marked) {
        if (c == QChar(kMatchOpen)) {
            open = plain.size();
        } else if (c == QChar(kMatchClose)) {
            if (open >= 0 && plain.size() > open) hit.matches << SearchMatch{open, plain.size() - open};
            open = -1;
        } else {
            plain += c;
        }
    }
    hit.snippet = plain;
}

// A message state as stored: one of the four known words, anything else is "complete".
QString stateText(const QString& state) {
    if (state == QStringLiteral("incomplete") || state == QStringLiteral("stopped") || state == QStringLiteral("failed"))
        return state;
    return QStringLiteral("complete");
}

std::atomic<int> g_connectionCounter{0};

} // namespace

namespace detail {

// Runs every statement. Lives in the store's thread; the connection is created there.
class StoreWorker : public QObject {
public:
    StoreWorker() : m_connectionName(QStringLiteral("hearth-store-%1").arg(++g_connectionCounter)) {}
    ~StoreWorker() override { close(); }

    std::optional<SqlFailure> open(const QString& path) {
        close();
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connectionName);
            db.setDatabaseName(path);
            db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000"));
            if (!db.open()) {
                SqlFailure f{QStringLiteral("cannot open %1: %2").arg(path, db.lastError().text())};
                db = QSqlDatabase();
                QSqlDatabase::removeDatabase(m_connectionName);
                return f;
            }
        }
        m_open = true;
        if (auto f = configure(path)) {
            close();
            return f;
        }
        QSqlQuery fts(database());
        m_fts = fts.exec(QStringLiteral("SELECT 1 FROM sqlite_master WHERE name = 'messages_fts'")) && fts.next();
        spdlog::info("store: opened {} (schema {}, full-text search {})", path.toStdString(),
                     Store::kSchemaVersion, m_fts ? "fts5" : "off");
        return std::nullopt;
    }

    // Pragmas and migrations of a freshly opened connection.
    std::optional<SqlFailure> configure(const QString& path) {
        QSqlQuery q(database());
        // WAL keeps readers and the writer apart; FULL syncs the log at every commit, so a
        // committed message survives a crash of the process or of the machine.
        if (!q.exec(QStringLiteral("PRAGMA journal_mode=WAL")) || !q.next())
            return fail(q, QStringLiteral("setting WAL mode"));
        if (q.value(0).toString().compare(QStringLiteral("wal"), Qt::CaseInsensitive) != 0)
            spdlog::warn("store: {} is not in WAL mode ({})", path.toStdString(),
                         q.value(0).toString().toStdString());
        for (const char* pragma : {"PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"})
            if (!q.exec(QString::fromLatin1(pragma))) return fail(q, QString::fromLatin1(pragma));
        if (auto f = detail::migrateSchema(database(), Store::kSchemaVersion)) return f;
        return std::nullopt;
    }

    bool fullTextSearch() const { return m_fts; }

    void close() {
        if (!m_open) return;
        m_open = false;
        {
            QSqlDatabase db = database();
            db.close();
        }
        QSqlDatabase::removeDatabase(m_connectionName);
    }

    std::optional<SqlFailure> ensureOpen() const {
        if (!m_open) return SqlFailure{QStringLiteral("the database is not open")};
        return std::nullopt;
    }

    std::variant<Conversation, SqlFailure> createConversation(Conversation c) {
        c.created = c.created ? c.created : nowMs();
        c.updated = c.created;
        QSqlQuery q(database());
        q.prepare(QStringLiteral(
            "INSERT INTO conversations(title, model, system_prompt, sampling_json, created, updated, folders) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)"));
        q.addBindValue(text(c.title));
        q.addBindValue(text(c.model));
        q.addBindValue(text(c.systemPrompt));
        q.addBindValue(c.samplingJson.isEmpty() ? QStringLiteral("{}") : c.samplingJson);
        q.addBindValue(c.created);
        q.addBindValue(c.updated);
        q.addBindValue(foldersJson(c.folders));
        if (!q.exec()) return *fail(q, QStringLiteral("creating a conversation"));
        c.id = q.lastInsertId().toLongLong();
        return c;
    }

    std::optional<SqlFailure> updateConversation(const Conversation& c, bool titleOnly) {
        QSqlQuery q(database());
        if (titleOnly) {
            q.prepare(QStringLiteral("UPDATE conversations SET title = ?, updated = ? WHERE id = ?"));
            q.addBindValue(text(c.title));
        } else {
            q.prepare(QStringLiteral("UPDATE conversations SET title = ?, model = ?, system_prompt = ?, "
                                     "sampling_json = ?, updated = ? WHERE id = ?"));
            q.addBindValue(text(c.title));
            q.addBindValue(text(c.model));
            q.addBindValue(text(c.systemPrompt));
            q.addBindValue(text(c.samplingJson));
        }
        q.addBindValue(nowMs());
        q.addBindValue(c.id);
        if (!q.exec()) return fail(q, QStringLiteral("updating conversation %1").arg(c.id));
        if (q.numRowsAffected() != 1)
            return SqlFailure{QStringLiteral("conversation %1 does not exist").arg(c.id)};
        return std::nullopt;
    }

    std::optional<SqlFailure> deleteConversation(qint64 id) {
        QSqlQuery q(database());
        q.prepare(QStringLiteral("DELETE FROM conversations WHERE id = ?"));
        q.addBindValue(id);
        if (!q.exec()) return fail(q, QStringLiteral("deleting conversation %1").arg(id));
        if (q.numRowsAffected() != 1)
            return SqlFailure{QStringLiteral("conversation %1 does not exist").arg(id)};
        return std::nullopt;
    }

    std::optional<SqlFailure> setFolders(qint64 id, const QStringList& folders) {
        QSqlQuery q(database());
        q.prepare(QStringLiteral("UPDATE conversations SET folders = ? WHERE id = ?"));
        q.addBindValue(foldersJson(folders));
        q.addBindValue(id);
        if (!q.exec()) return fail(q, QStringLiteral("keeping the folders of conversation %1").arg(id));
        if (q.numRowsAffected() != 1)
            return SqlFailure{QStringLiteral("conversation %1 does not exist").arg(id)};
        return std::nullopt;
    }

    std::variant<QList<Conversation>, SqlFailure> listConversations() {
        QSqlQuery q(database());
        q.setForwardOnly(true);
        if (!q.exec(QStringLiteral("SELECT id, title, model, system_prompt, sampling_json, created, "
                                   "updated, folders FROM conversations ORDER BY updated DESC, id DESC")))
            return *fail(q, QStringLiteral("listing conversations"));
        QList<Conversation> out;
        while (q.next()) out << readConversation(q);
        return out;
    }

    std::variant<qint64, SqlFailure> appendMessage(StoredMessage m) {
        QSqlDatabase db = database();
        if (!db.transaction()) return SqlFailure{db.lastError().text()};
        const qint64 created = m.created ? m.created : nowMs();
        QSqlQuery q(db);
        q.prepare(QStringLiteral("INSERT INTO messages(conversation_id, role, content, reasoning, "
                                 "reasoning_ms, tokens, ttft_ms, tok_s, created, state, context_tokens, error, "
                                 "tool_calls, tool_call_id, documents) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
        q.addBindValue(m.conversationId);
        q.addBindValue(text(m.role));
        q.addBindValue(text(m.content));
        q.addBindValue(text(m.reasoning));
        q.addBindValue(m.reasoningMs);
        q.addBindValue(m.tokens);
        q.addBindValue(m.ttftMs);
        q.addBindValue(m.tokensPerSecond);
        q.addBindValue(created);
        q.addBindValue(stateText(m.state));
        q.addBindValue(m.contextTokens);
        q.addBindValue(text(m.error));
        q.addBindValue(toolCallsJson(m.toolCalls));
        q.addBindValue(text(m.toolCallId));
        q.addBindValue(documentsJson(m.documents));
        if (!q.exec()) {
            auto f = fail(q, QStringLiteral("adding a message to conversation %1").arg(m.conversationId));
            db.rollback();
            return *f;
        }
        const qint64 id = q.lastInsertId().toLongLong();
        if (auto f = insertImages(id, m.images)) {
            db.rollback();
            return *f;
        }
        QSqlQuery touch(db);
        touch.prepare(QStringLiteral("UPDATE conversations SET updated = ? WHERE id = ?"));
        touch.addBindValue(created);
        touch.addBindValue(m.conversationId);
        if (!touch.exec()) {
            auto f = fail(touch, QStringLiteral("touching conversation %1").arg(m.conversationId));
            db.rollback();
            return *f;
        }
        if (!db.commit()) {
            SqlFailure f{QStringLiteral("committing message: %1").arg(db.lastError().text())};
            db.rollback();
            return f;
        }
        return id;
    }

    // Append tickets and the ids they got, the last kMaxAppended of them (updateAppendedMessage).
    static constexpr int kMaxAppended = 1024;
    void rememberAppend(quint64 ticket, qint64 id) {
        m_appended.insert(ticket, id);
        m_appendOrder.append(ticket);
        if (m_appendOrder.size() > kMaxAppended) m_appended.remove(m_appendOrder.takeFirst());
    }
    qint64 appendedId(quint64 ticket) const { return m_appended.value(ticket, 0); }

    std::optional<SqlFailure> updateMessage(const StoredMessage& m) {
        QSqlQuery q(database());
        q.prepare(QStringLiteral(
            "UPDATE messages SET content = ?, reasoning = ?, reasoning_ms = ?, tokens = ?, ttft_ms = ?, "
            "tok_s = ?, state = ?, context_tokens = ?, error = ?, tool_calls = ? WHERE id = ?"));
        q.addBindValue(text(m.content));
        q.addBindValue(text(m.reasoning));
        q.addBindValue(m.reasoningMs);
        q.addBindValue(m.tokens);
        q.addBindValue(m.ttftMs);
        q.addBindValue(m.tokensPerSecond);
        q.addBindValue(stateText(m.state));
        q.addBindValue(m.contextTokens);
        q.addBindValue(text(m.error));
        q.addBindValue(toolCallsJson(m.toolCalls));
        q.addBindValue(m.id);
        if (!q.exec()) return fail(q, QStringLiteral("updating message %1").arg(m.id));
        if (q.numRowsAffected() != 1)
            return SqlFailure{QStringLiteral("message %1 does not exist").arg(m.id)};
        return std::nullopt;
    }

    // Deletes message `fromId` of the conversation and every later one (edit and resend).
    std::variant<int, SqlFailure> deleteMessagesFrom(qint64 conversationId, qint64 fromId) {
        QSqlQuery q(database());
        q.prepare(QStringLiteral("DELETE FROM messages WHERE conversation_id = ? AND id >= ?"));
        q.addBindValue(conversationId);
        q.addBindValue(fromId);
        if (!q.exec())
            return *fail(q, QStringLiteral("deleting messages of conversation %1").arg(conversationId));
        return q.numRowsAffected();
    }

    std::variant<QList<StoredMessage>, SqlFailure> messages(qint64 conversationId) {
        QSqlQuery q(database());
        q.setForwardOnly(true);
        q.prepare(QStringLiteral("SELECT id, conversation_id, role, content, tokens, ttft_ms, tok_s, "
                                 "created, reasoning, reasoning_ms, state, context_tokens, error, tool_calls, "
                                 "tool_call_id, documents FROM messages "
                                 "WHERE conversation_id = ? ORDER BY id"));
        q.addBindValue(conversationId);
        if (!q.exec()) return *fail(q, QStringLiteral("reading conversation %1").arg(conversationId));
        QList<StoredMessage> out;
        while (q.next()) {
            StoredMessage m;
            m.id = q.value(0).toLongLong();
            m.conversationId = q.value(1).toLongLong();
            m.role = q.value(2).toString();
            m.content = q.value(3).toString();
            m.tokens = q.value(4).toInt();
            m.ttftMs = q.value(5).toDouble();
            m.tokensPerSecond = q.value(6).toDouble();
            m.created = q.value(7).toLongLong();
            m.reasoning = q.value(8).toString();
            m.reasoningMs = q.value(9).toDouble();
            m.state = q.value(10).toString();
            m.contextTokens = q.value(11).toInt();
            m.error = q.value(12).toString();
            m.toolCalls = toolCallsFromJson(q.value(13).toString());
            m.toolCallId = q.value(14).toString();
            m.documents = documentsFromJson(q.value(15).toString());
            out << m;
        }
        if (auto f = readImages(conversationId, out)) return *f;
        return out;
    }

    std::variant<QList<SearchHit>, SqlFailure> search(const QString& text, int limit) {
        QList<SearchHit> out;
        const QString trimmed = text.trimmed();
        if (trimmed.isEmpty()) return out;
        QSqlQuery q(database());
        q.setForwardOnly(true);
        if (m_fts) {
            q.prepare(QStringLiteral(
                "SELECT m.id, m.conversation_id, c.title, m.role, "
                "snippet(messages_fts, 0, ?, ?, '…', 12) "
                "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                "JOIN conversations c ON c.id = m.conversation_id "
                "WHERE messages_fts MATCH ? ORDER BY rank LIMIT ?"));
            q.addBindValue(QString(QChar(kMatchOpen)));
            q.addBindValue(QString(QChar(kMatchClose)));
            q.addBindValue(ftsQuery(trimmed));
        } else {
            q.prepare(QStringLiteral(
                "SELECT m.id, m.conversation_id, c.title, m.role, m.content FROM messages m "
                "JOIN conversations c ON c.id = m.conversation_id "
                "WHERE m.content LIKE ? ESCAPE '\\' ORDER BY m.id DESC LIMIT ?"));
            q.addBindValue(likePattern(trimmed));
        }
        q.addBindValue(std::max(1, limit));
        if (!q.exec()) return *fail(q, QStringLiteral("searching messages"));
        while (q.next()) {
            SearchHit h;
            h.messageId = q.value(0).toLongLong();
            h.conversationId = q.value(1).toLongLong();
            h.conversationTitle = q.value(2).toString();
            h.role = q.value(3).toString();
            if (m_fts) markedSnippet(q.value(4).toString(), h);
            else plainSnippet(q.value(4).toString(), trimmed, h);
            out << h;
        }
        return out;
    }

    QSqlDatabase database() const { return QSqlDatabase::database(m_connectionName, false); }

private:
    std::optional<SqlFailure> fail(const QSqlQuery& q, const QString& what) const { return detail::sqlFailure(q, what); }

    // A message's images, in order, each with the MIME type its bytes name (inside the caller's
    // transaction).
    std::optional<SqlFailure> insertImages(qint64 messageId, const QList<QByteArray>& images) {
        QSqlQuery q(database());
        q.prepare(QStringLiteral(
            "INSERT INTO message_images(message_id, position, mime_type, data) VALUES (?, ?, ?, ?)"));
        for (qsizetype i = 0; i < images.size(); ++i) {
            q.addBindValue(messageId);
            q.addBindValue(int(i));
            q.addBindValue(imageMimeType(images[i]));
            q.addBindValue(images[i]);
            if (!q.exec()) return fail(q, QStringLiteral("storing image %1 of message %2").arg(i + 1).arg(messageId));
        }
        return std::nullopt;
    }

    // Fills in the images of a conversation's messages.
    std::optional<SqlFailure> readImages(qint64 conversationId, QList<StoredMessage>& messages) {
        QSqlQuery q(database());
        q.setForwardOnly(true);
        q.prepare(QStringLiteral("SELECT i.message_id, i.data FROM message_images i "
                                 "JOIN messages m ON m.id = i.message_id "
                                 "WHERE m.conversation_id = ? ORDER BY i.message_id, i.position"));
        q.addBindValue(conversationId);
        if (!q.exec()) return fail(q, QStringLiteral("reading the images of conversation %1").arg(conversationId));
        QHash<qint64, qsizetype> index;
        for (qsizetype i = 0; i < messages.size(); ++i) index.insert(messages[i].id, i);
        while (q.next()) {
            const auto at = index.constFind(q.value(0).toLongLong());
            if (at != index.constEnd()) messages[*at].images << q.value(1).toByteArray();
        }
        return std::nullopt;
    }

    QString m_connectionName;
    QHash<quint64, qint64> m_appended;
    QList<quint64> m_appendOrder;
    bool m_open = false;
    bool m_fts = false;
};

} // namespace detail

Store::Store(QObject* parent) : QObject(parent) {
    qRegisterMetaType<Conversation>();
    qRegisterMetaType<StoredMessage>();
    qRegisterMetaType<SearchHit>();
    qRegisterMetaType<QList<Conversation>>();
    qRegisterMetaType<QList<StoredMessage>>();
    qRegisterMetaType<QList<SearchHit>>();
    qRegisterMetaType<DocumentIndexEntry>();
    qRegisterMetaType<QList<DocumentIndexEntry>>();
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("hearth-store"));
    m_worker = new detail::StoreWorker;
    m_worker->moveToThread(m_thread);
    m_thread->start();
}

Store::~Store() {
    detail::StoreWorker* w = m_worker;
    // Queued behind every earlier request, so those all finish (and commit) first.
    QMetaObject::invokeMethod(
        w,
        [w] {
            w->close();
            QThread::currentThread()->quit();
        },
        Qt::QueuedConnection);
    m_thread->wait();
    delete m_worker;
}

// Runs `work(worker, ticket)` on the store thread. Results are posted back to this object; events
// still queued when it is destroyed are dropped with it (the worker stops first).
template <typename F> quint64 Store::post(F&& work) {
    const quint64 ticket = m_nextTicket++;
    detail::StoreWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w, [w, ticket, fn = std::forward<F>(work)]() mutable { fn(w, ticket); }, Qt::QueuedConnection);
    return ticket;
}

namespace {

// Posts `emitter` to run on the store's thread.
template <typename F> void reply(Store* store, F&& emitter) {
    QMetaObject::invokeMethod(store, std::forward<F>(emitter), Qt::QueuedConnection);
}

void replyFailure(Store* store, quint64 ticket, const QString& message) {
    reply(store, [store, ticket, message] { Q_EMIT store->failed(ticket, message); });
}

} // namespace

quint64 Store::open(const QString& path) {
    return post([this, path](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->open(path)) return replyFailure(this, ticket, f->message);
        const bool fts = w->fullTextSearch();
        reply(this, [this, ticket, path, fts] { Q_EMIT opened(ticket, path, fts); });
    });
}

quint64 Store::createConversation(const Conversation& draft) {
    return post([this, draft](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        auto r = w->createConversation(draft);
        if (auto* f = std::get_if<SqlFailure>(&r)) return replyFailure(this, ticket, f->message);
        Conversation c = std::get<Conversation>(std::move(r));
        reply(this, [this, ticket, c] { Q_EMIT conversationCreated(ticket, c); });
    });
}

quint64 Store::renameConversation(qint64 id, const QString& title) {
    Conversation c;
    c.id = id;
    c.title = title;
    return post([this, c](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        if (auto f = w->updateConversation(c, true)) return replyFailure(this, ticket, f->message);
        reply(this, [this, ticket, id = c.id] { Q_EMIT conversationUpdated(ticket, id); });
    });
}

quint64 Store::updateConversation(const Conversation& conversation) {
    return post([this, conversation](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        if (auto f = w->updateConversation(conversation, false))
            return replyFailure(this, ticket, f->message);
        reply(this, [this, ticket, id = conversation.id] { Q_EMIT conversationUpdated(ticket, id); });
    });
}

quint64 Store::deleteConversation(qint64 id) {
    return post([this, id](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        if (auto f = w->deleteConversation(id)) return replyFailure(this, ticket, f->message);
        reply(this, [this, ticket, id] { Q_EMIT conversationDeleted(ticket, id); });
    });
}

quint64 Store::setConversationFolders(qint64 id, const QStringList& folders) {
    return post([this, id, folders](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        if (auto f = w->setFolders(id, folders)) return replyFailure(this, ticket, f->message);
        reply(this, [this, ticket, id] { Q_EMIT conversationUpdated(ticket, id); });
    });
}

quint64 Store::listConversations() {
    return post([this](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        auto r = w->listConversations();
        if (auto* f = std::get_if<SqlFailure>(&r)) return replyFailure(this, ticket, f->message);
        QList<Conversation> list = std::get<QList<Conversation>>(std::move(r));
        reply(this, [this, ticket, list] { Q_EMIT conversationsListed(ticket, list); });
    });
}

quint64 Store::searchMessages(const QString& query, int limit) {
    return post([this, query, limit](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        auto r = w->search(query, limit);
        if (auto* f = std::get_if<SqlFailure>(&r)) return replyFailure(this, ticket, f->message);
        QList<SearchHit> hits = std::get<QList<SearchHit>>(std::move(r));
        reply(this, [this, ticket, hits] { Q_EMIT searchFinished(ticket, hits); });
    });
}

quint64 Store::appendMessage(const StoredMessage& message) {
    return post([this, message](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        auto r = w->appendMessage(message);
        if (auto* f = std::get_if<SqlFailure>(&r)) return replyFailure(this, ticket, f->message);
        const qint64 id = std::get<qint64>(r);
        w->rememberAppend(ticket, id);
        reply(this, [this, ticket, id] { Q_EMIT committed(ticket, id); });
    });
}

quint64 Store::deleteMessagesFrom(qint64 conversationId, qint64 fromMessageId) {
    return post([this, conversationId, fromMessageId](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        auto r = w->deleteMessagesFrom(conversationId, fromMessageId);
        if (auto* f = std::get_if<SqlFailure>(&r)) return replyFailure(this, ticket, f->message);
        const int count = std::get<int>(r);
        reply(this, [this, ticket, conversationId, count] {
            Q_EMIT messagesDeleted(ticket, conversationId, count);
        });
    });
}

quint64 Store::updateMessage(const StoredMessage& message) {
    return post([this, message](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        if (auto f = w->updateMessage(message)) return replyFailure(this, ticket, f->message);
        reply(this, [this, ticket, id = message.id] { Q_EMIT messageUpdated(ticket, id); });
    });
}

quint64 Store::updateAppendedMessage(quint64 appendTicket, const StoredMessage& message) {
    return post([this, appendTicket, message](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        StoredMessage m = message;
        m.id = w->appendedId(appendTicket);
        if (m.id == 0)
            return replyFailure(this, ticket,
                                QStringLiteral("no message was appended with request %1").arg(appendTicket));
        if (auto f = w->updateMessage(m)) return replyFailure(this, ticket, f->message);
        reply(this, [this, ticket, id = m.id] { Q_EMIT messageUpdated(ticket, id); });
    });
}

quint64 Store::messages(qint64 conversationId) {
    return post([this, conversationId](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        auto r = w->messages(conversationId);
        if (auto* f = std::get_if<SqlFailure>(&r)) return replyFailure(this, ticket, f->message);
        QList<StoredMessage> list = std::get<QList<StoredMessage>>(std::move(r));
        reply(this, [this, ticket, conversationId, list] {
            Q_EMIT messagesLoaded(ticket, conversationId, list);
        });
    });
}

quint64 Store::saveDocumentIndex(qint64 conversationId, const QList<DocumentIndexEntry>& entries) {
    return post([this, conversationId, entries](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        if (auto f = detail::saveDocumentIndex(w->database(), conversationId, entries))
            return replyFailure(this, ticket, f->message);
        reply(this, [this, ticket] { Q_EMIT documentIndexSaved(ticket); });
    });
}

quint64 Store::loadDocumentIndex(const QList<QByteArray>& keys, const QString& model, const QString& chunking,
                                 qint64 preferred) {
    return post([this, keys, model, chunking, preferred](detail::StoreWorker* w, quint64 ticket) {
        if (auto f = w->ensureOpen()) return replyFailure(this, ticket, f->message);
        auto r = detail::loadDocumentIndex(w->database(), keys, model, chunking, preferred);
        if (auto* f = std::get_if<SqlFailure>(&r)) return replyFailure(this, ticket, f->message);
        QList<DocumentIndexEntry> entries = std::get<QList<DocumentIndexEntry>>(std::move(r));
        reply(this, [this, ticket, entries] { Q_EMIT documentIndexLoaded(ticket, entries); });
    });
}

} // namespace hearth::app
