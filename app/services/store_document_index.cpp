// The store's document index rows (table document_index, schema 9): a file's chunk spans and
// vectors written as one row per conversation, file, model and chunking, and read back checked.
#include "services/store_document_index.h"

#include <QDateTime>
#include <QSqlError>
#include <QVariant>

#include <spdlog/spdlog.h>

#include <cstring>

namespace hearth::app::detail {

namespace {

QByteArray packSpans(const QList<QPair<int, int>>& spans) {
    QByteArray out(spans.size() * qsizetype(2 * sizeof(qint32)), Qt::Uninitialized);
    char* p = out.data();
    for (const auto& [start, length] : spans) {
        const qint32 pair[2] = {start, length};
        std::memcpy(p, pair, sizeof pair);
        p += sizeof pair;
    }
    return out;
}

QList<QPair<int, int>> unpackSpans(const QByteArray& bytes, qsizetype count) {
    QList<QPair<int, int>> spans;
    spans.reserve(count);
    for (qsizetype i = 0; i < count; ++i) {
        qint32 pair[2];
        std::memcpy(pair, bytes.constData() + i * qsizetype(sizeof pair), sizeof pair);
        spans.append({pair[0], pair[1]});
    }
    return spans;
}

std::optional<SqlFailure> insertEntry(const QSqlDatabase& db, qint64 conversationId, const DocumentIndexEntry& entry) {
    const qsizetype dims = entry.vectors.isEmpty() ? 0 : entry.vectors.first().size();
    if (entry.vectors.size() != entry.spans.size())
        return SqlFailure{QStringLiteral("%1 vectors for %2 chunks").arg(entry.vectors.size()).arg(entry.spans.size())};
    QByteArray vectors;
    vectors.reserve(entry.vectors.size() * dims * qsizetype(sizeof(float)));
    for (const QList<float>& v : entry.vectors) {
        if (v.size() != dims) return SqlFailure{QStringLiteral("vectors of different lengths")};
        vectors.append(reinterpret_cast<const char*>(v.constData()), v.size() * qsizetype(sizeof(float)));
    }
    QSqlQuery q(db);
    q.prepare(QStringLiteral("INSERT OR REPLACE INTO document_index(conversation_id, document_key, model, "
                             "chunking, chunks, dimensions, spans, vectors, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    q.addBindValue(conversationId);
    q.addBindValue(entry.key);
    q.addBindValue(entry.model);
    q.addBindValue(entry.chunking);
    q.addBindValue(qint64(entry.spans.size()));
    q.addBindValue(qint64(dims));
    q.addBindValue(packSpans(entry.spans));
    q.addBindValue(vectors);
    q.addBindValue(QDateTime::currentMSecsSinceEpoch());
    if (!q.exec()) return sqlFailure(q, QStringLiteral("keeping the index of a file of conversation %1").arg(conversationId));
    return std::nullopt;
}

} // namespace

std::optional<SqlFailure> saveDocumentIndex(QSqlDatabase db, qint64 conversationId,
                                            const QList<DocumentIndexEntry>& entries) {
    if (!db.transaction()) return SqlFailure{db.lastError().text()};
    for (const DocumentIndexEntry& entry : entries)
        if (auto f = insertEntry(db, conversationId, entry)) {
            db.rollback();
            return f;
        }
    if (!db.commit()) {
        const SqlFailure f{db.lastError().text()};
        db.rollback();
        return f;
    }
    return std::nullopt;
}

std::variant<QList<DocumentIndexEntry>, SqlFailure> loadDocumentIndex(const QSqlDatabase& db,
                                                                      const QList<QByteArray>& keys,
                                                                      const QString& model, const QString& chunking,
                                                                      qint64 preferred) {
    QList<DocumentIndexEntry> out;
    QSqlQuery q(db);
    q.setForwardOnly(true);
    q.prepare(QStringLiteral("SELECT chunks, dimensions, spans, vectors, conversation_id FROM document_index "
                             "WHERE document_key = ? AND model = ? AND chunking = ? "
                             "ORDER BY conversation_id = ? DESC, created DESC"));
    for (const QByteArray& key : keys) {
        bool seen = false;
        for (const DocumentIndexEntry& e : std::as_const(out)) seen = seen || e.key == key;
        if (seen) continue;
        q.bindValue(0, key);
        q.bindValue(1, model);
        q.bindValue(2, chunking);
        q.bindValue(3, preferred);
        if (!q.exec()) return sqlFailure(q, QStringLiteral("reading a file's index"));
        while (q.next()) {
            const qint64 chunks = q.value(0).toLongLong();
            const qint64 dims = q.value(1).toLongLong();
            const QByteArray spans = q.value(2).toByteArray();
            const QByteArray vectors = q.value(3).toByteArray();
            const bool sizesAgree = chunks >= 0 && dims >= 0 && dims <= (1 << 16) && chunks <= (1 << 24) &&
                                    spans.size() == chunks * qint64(2 * sizeof(qint32)) &&
                                    vectors.size() == chunks * dims * qint64(sizeof(float));
            if (!sizesAgree) {
                spdlog::warn("store: a file's index row is damaged (sizes disagree); it is not used");
                continue;
            }
            DocumentIndexEntry e{key, model, chunking, unpackSpans(spans, chunks), {}, q.value(4).toLongLong()};
            e.vectors.reserve(chunks);
            for (qint64 c = 0; c < chunks; ++c) {
                QList<float> v(dims);
                std::memcpy(v.data(), vectors.constData() + c * dims * qint64(sizeof(float)), size_t(dims) * sizeof(float));
                e.vectors.append(std::move(v));
            }
            out.append(std::move(e));
            break;
        }
        q.finish();
    }
    return out;
}

} // namespace hearth::app::detail
