// The chat's retrieval over indexed files (see chat_retrieval.h): chunks kept per file's text,
// vectors computed once per file and model (or read back from the store), the question embedded,
// the parts ranked.
#include "services/chat_retrieval.h"

#include "services/document_folders.h"
#include "services/embedding_service.h"
#include "services/store.h"

#include <QCryptographicHash>
#include <QPair>
#include <QSet>
#include <QThreadPool>
#include <QTimer>

#include <algorithm>

namespace hearth::app {

QByteArray documentIndexKey(const ChatDocument& d) {
    QCryptographicHash h(QCryptographicHash::Sha1);
    h.addData(d.name.toUtf8());
    h.addData(QByteArrayView("\0", 1));
    h.addData(d.text.toUtf8());
    return h.result();
}

namespace {

QList<QPair<int, int>> spansOf(const QList<DocumentChunk>& chunks) {
    QList<QPair<int, int>> spans;
    spans.reserve(chunks.size());
    for (const DocumentChunk& c : chunks) spans.append({int(c.start), int(c.text.size())});
    return spans;
}

} // namespace

ChatRetrieval::ChatRetrieval(EmbeddingService* embeddings, QObject* parent)
    : QObject(parent), m_embeddings(embeddings), m_relay(std::make_shared<PoolRelay<ChatRetrieval>>(this)) {
    qRegisterMetaType<QList<ChatDocument>>();
    if (!m_embeddings) return;
    connect(m_embeddings, &EmbeddingService::embedded, this, &ChatRetrieval::onEmbedded);
    connect(m_embeddings, &EmbeddingService::failed, this, &ChatRetrieval::onEmbedFailed);
}

void ChatRetrieval::setStore(Store* store) {
    if (m_store) disconnect(m_store, nullptr, this, nullptr);
    m_store = store;
    if (!m_store) return;
    connect(m_store, &Store::documentIndexLoaded, this, &ChatRetrieval::onIndexLoaded);
    // A chat deleted while its files are embedded: nothing is kept for it afterwards.
    connect(m_store, &Store::conversationDeleted, this, [this](quint64, qint64 id) { m_deleted.insert(id); });
    connect(m_store, &Store::failed, this, [this](quint64 ticket, const QString&) { onStoreFailed(ticket); });
}

QString ChatRetrieval::chunkingTag() const {
    return QStringLiteral("chunks-1 %1/%2").arg(m_limits.maxChars).arg(m_limits.overlap);
}

ChatRetrieval::~ChatRetrieval() { m_relay->detach(); }

bool ChatRetrieval::modelReady() const { return m_embeddings && m_embeddings->isLoaded(); }

void ChatRetrieval::setChunking(const ChunkLimits& limits, int parts) {
    m_limits = limits;
    m_parts = std::max(1, parts);
    m_index.clear(); // cut anew
}

quint64 ChatRetrieval::retrieve(const QString& question, const QList<ChatDocument>& documents,
                                qint64 conversationId, const QList<FolderFile>& folderFiles) {
    const quint64 ticket = m_nextTicket++;
    Pending p;
    p.ticket = ticket;
    p.conversationId = conversationId;
    p.question = question;
    p.parts = m_parts;
    QSet<QByteArray> seen;
    for (const ChatDocument& d : documents) {
        if (!d.indexed || d.part > 0) continue;
        const QByteArray key = documentIndexKey(d);
        if (seen.contains(key)) continue;
        seen.insert(key);
        if (!m_index.contains(key)) m_index.insert(key, Indexed{chunkDocument(d, m_limits), {}, {}, {}});
        p.keys << key;
    }
    for (const FolderFile& f : folderFiles) { // chunked already, off this thread
        if (seen.contains(f.key)) continue;
        seen.insert(f.key);
        if (!m_index.contains(f.key)) m_index.insert(f.key, Indexed{f.chunks, {}, {}, {}});
        p.keys << f.key;
    }
    ++m_clock;
    for (const QByteArray& key : std::as_const(p.keys)) m_index[key].used = m_clock;
    m_pending.insert(ticket, p);
    evict();
    QTimer::singleShot(0, this, [this, ticket] { step(ticket); });
    return ticket;
}

// Files no request waits for are let go, least recently asked first, while more than
// m_maxKept chunks are held (they are cut again, or read back from the store, when asked).
void ChatRetrieval::evict() {
    qsizetype held = 0;
    for (const Indexed& entry : std::as_const(m_index)) held += entry.chunks.size();
    if (held <= m_maxKept) return;
    QSet<QByteArray> busy;
    for (const Pending& p : std::as_const(m_pending))
        for (const QByteArray& key : p.keys) busy.insert(key);
    QList<QPair<quint64, QByteArray>> idle;
    for (auto it = m_index.cbegin(); it != m_index.cend(); ++it)
        if (!busy.contains(it.key())) idle.append({it->used, it.key()});
    std::sort(idle.begin(), idle.end());
    for (const auto& [used, key] : std::as_const(idle)) {
        if (held <= m_maxKept) break;
        held -= m_index[key].chunks.size();
        m_index.remove(key);
    }
}

quint64 ChatRetrieval::prepare(const QList<FolderFile>& files, qint64 conversationId) {
    const quint64 ticket = retrieve(QString(), {}, conversationId, files);
    m_pending[ticket].prepareOnly = true;
    return ticket;
}

// The next thing a request waits for: its files' vectors, then the question's; then the answer.
void ChatRetrieval::step(quint64 ticket) {
    auto it = m_pending.find(ticket);
    if (it == m_pending.end()) return;
    Pending& p = *it;
    if (p.keys.isEmpty() || !modelReady() || p.wordsOnly) return finish(ticket);
    const QString model = m_embeddings->modelPath();
    if (m_store && !p.storeAsked) {
        // Files not embedded in this run: the store may keep their vectors from an earlier one.
        p.storeAsked = true;
        QList<QByteArray> unknown;
        for (const QByteArray& key : std::as_const(p.keys)) {
            Indexed& entry = m_index[key];
            if (entry.model == model || entry.lookedUp == model) continue;
            entry.lookedUp = model;
            unknown << key;
        }
        if (!unknown.isEmpty()) {
            p.loadTicket = m_store->loadDocumentIndex(unknown, model, chunkingTag(), p.conversationId);
            return;
        }
    }
    // The next files to embed, whole, up to a batch of chunks (at least one file).
    QStringList texts;
    p.embedding.clear();
    qsizetype waiting = 0;
    for (const QByteArray& key : std::as_const(p.keys)) {
        const Indexed& entry = m_index[key];
        if (entry.model == model && entry.vectors.size() == entry.chunks.size()) continue;
        waiting += entry.chunks.size();
        if (!p.embedding.isEmpty() && texts.size() + entry.chunks.size() > m_batch) continue;
        p.embedding << key;
        for (const DocumentChunk& c : entry.chunks) texts << c.text;
    }
    if (p.toEmbed < 0) p.toEmbed = waiting;
    if (!p.embedding.isEmpty()) {
        p.chunkTicket = m_embeddings->embed(texts);
        return;
    }
    keep(p, model);
    if (p.prepareOnly) return finish(ticket);
    if (!p.questionDone) {
        p.questionTicket = m_embeddings->embed({p.question.isEmpty() ? QStringLiteral(" ") : p.question});
        return;
    }
    finish(ticket);
}

// The files' vectors (all of them by now) kept with the request's chat where they are not yet.
void ChatRetrieval::keep(const Pending& p, const QString& model) {
    if (!m_store || p.conversationId == 0 || m_deleted.contains(p.conversationId)) return;
    QList<DocumentIndexEntry> entries;
    for (const QByteArray& key : p.keys) {
        Indexed& entry = m_index[key];
        if (entry.model != model || entry.vectors.size() != entry.chunks.size() || entry.keptIn.contains(p.conversationId))
            continue;
        entries.append(DocumentIndexEntry{key, model, chunkingTag(), spansOf(entry.chunks), entry.vectors});
        entry.keptIn.insert(p.conversationId);
    }
    if (!entries.isEmpty()) m_store->saveDocumentIndex(p.conversationId, entries); // one transaction
}

void ChatRetrieval::finish(quint64 ticket) {
    const Pending p = m_pending.take(ticket);
    if (p.prepareOnly) {
        QTimer::singleShot(0, this, [this, ticket] { Q_EMIT prepared(ticket); });
        return;
    }
    QList<DocumentChunk> chunks;
    QList<QList<float>> vectors;
    bool allVectors = !p.wordsOnly && !p.questionVector.isEmpty();
    for (const QByteArray& key : p.keys) {
        const Indexed& entry = m_index[key];
        chunks += entry.chunks;
        if (entry.vectors.size() == entry.chunks.size()) vectors += entry.vectors;
        else allVectors = false;
    }
    if (!allVectors) vectors.clear();
    const QList<float> questionVector = allVectors ? p.questionVector : QList<float>();
    // Ranked on a pool thread: a folder's thousands of chunks would hold up this one.
    QThreadPool::globalInstance()->start([relay = m_relay, ticket, question = p.question, parts = p.parts, chunks,
                                          vectors, questionVector] {
        QList<ChatDocument> excerpts;
        for (const RankedChunk& r : rankChunks(question, chunks, vectors, questionVector, parts)) {
            const DocumentChunk& c = chunks[r.chunk];
            excerpts << ChatDocument{c.document, c.text, false, c.index + 1};
        }
        relay->post([ticket, excerpts](ChatRetrieval* self) { Q_EMIT self->retrieved(ticket, excerpts); });
    });
}

void ChatRetrieval::onEmbedded(quint64 embedTicket, const QList<QList<float>>& vectors) {
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it) {
        Pending& p = *it;
        if (embedTicket == p.chunkTicket) {
            p.chunkTicket = 0;
            qsizetype expected = 0;
            for (const QByteArray& key : std::as_const(p.embedding)) expected += m_index[key].chunks.size();
            if (expected != vectors.size()) p.wordsOnly = true; // not what was asked: rank by the words
            qsizetype at = 0;
            const QString model = m_embeddings->modelPath();
            for (const QByteArray& key : std::as_const(p.embedding)) {
                Indexed& entry = m_index[key];
                const qsizetype n = entry.chunks.size();
                if (p.wordsOnly) break;
                entry.vectors = vectors.mid(at, n);
                entry.model = model;
                at += n;
            }
            p.embedding.clear();
            const bool batched = p.embedded > 0 || at < p.toEmbed;
            p.embedded += at;
            if (!p.wordsOnly && batched) {
                // A batch of a larger request: what is done is kept now (an app closed half way
                // keeps it), and said; a listener may ask for more, so `p` is not used after.
                keep(p, model);
                const quint64 ticket = p.ticket;
                Q_EMIT progress(ticket, p.embedded, p.toEmbed);
                step(ticket);
                return;
            }
        } else if (embedTicket == p.questionTicket) {
            p.questionTicket = 0;
            p.questionVector = vectors.value(0);
            p.questionDone = true;
        } else {
            continue;
        }
        const quint64 ticket = p.ticket;
        step(ticket);
        return;
    }
}

void ChatRetrieval::onEmbedFailed(quint64 embedTicket, const QString&) {
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it)
        if (embedTicket == it->chunkTicket || embedTicket == it->questionTicket) {
            it->wordsOnly = true; // the words still find what they can
            const quint64 ticket = it->ticket;
            finish(ticket);
            return;
        }
}

void ChatRetrieval::onIndexLoaded(quint64 loadTicket, const QList<DocumentIndexEntry>& entries) {
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it) {
        if (it->loadTicket != loadTicket) continue;
        it->loadTicket = 0;
        const QString model = modelReady() ? m_embeddings->modelPath() : QString();
        for (const DocumentIndexEntry& kept : entries) {
            auto at = m_index.find(kept.key);
            if (at == m_index.end() || kept.model != model || kept.chunking != chunkingTag()) continue;
            // Only vectors of these very chunks and of the model's width are used.
            const bool fits = kept.spans == spansOf(at->chunks) &&
                              std::all_of(kept.vectors.begin(), kept.vectors.end(), [this](const QList<float>& v) {
                                  return v.size() == m_embeddings->dimensions();
                              });
            if (!fits) continue;
            at->vectors = kept.vectors;
            at->model = kept.model;
            if (kept.conversationId != 0) at->keptIn.insert(kept.conversationId);
        }
        const quint64 ticket = it->ticket;
        step(ticket);
        return;
    }
}

void ChatRetrieval::onStoreFailed(quint64 storeTicket) {
    for (auto it = m_pending.begin(); it != m_pending.end(); ++it)
        if (it->loadTicket == storeTicket) {
            it->loadTicket = 0; // nothing kept can be read: the files are embedded again
            const quint64 ticket = it->ticket;
            step(ticket);
            return;
        }
}

} // namespace hearth::app
