// The chat's retrieval over files too long to give the model whole: each indexed file cut into
// chunks (and, with an embedding model loaded, their vectors computed once per file's text),
// and for a question the parts that match it best, by words and, with the model, by meaning
// (document_retrieval.h). With a store, a file's vectors are kept with the conversation and read
// back after a restart instead of embedded again. Results come as signals carrying the request's
// ticket.
#pragma once

#include "services/document_folders.h"
#include "services/document_retrieval.h"
#include "services/pool_relay.h"
#include "services/service_types.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QObject>
#include <QSet>
#include <QString>

#include <algorithm>
#include <memory>

namespace hearth::app {

class EmbeddingService;
class Store;
struct DocumentIndexEntry;

// The key a file's index is kept under: a hash of its name and text (changed text, another key).
QByteArray documentIndexKey(const ChatDocument& document);

class ChatRetrieval : public QObject {
    Q_OBJECT
public:
    static constexpr int kDefaultParts = 4;
    // Chunks (with their vectors) held in memory at most, beyond those of requests in progress.
    static constexpr qsizetype kMaxKeptChunks = 60000;
    // Chunks asked of the embedding model at once (whole files: a file longer than this is one
    // request); after each request the files done are kept and progress() says how far it is.
    static constexpr qsizetype kEmbedBatchChunks = 256;

    // `embeddings` may be null or not loaded: then the words alone rank.
    explicit ChatRetrieval(EmbeddingService* embeddings = nullptr, QObject* parent = nullptr);
    ~ChatRetrieval() override;

    // Where files' vectors are kept between runs (may be null: kept in memory only).
    void setStore(Store* store);

    // How files are cut and how many parts a question gets (kDefaultParts of ChunkLimits{}).
    void setChunking(const ChunkLimits& limits, int parts);
    const ChunkLimits& chunking() const { return m_limits; }
    // How many chunks it holds in memory at most (kMaxKeptChunks unless set).
    void setKeptChunks(qsizetype chunks) { m_maxKept = chunks; }
    // How many chunks one embedding request carries at most (kEmbedBatchChunks unless set).
    void setEmbedBatch(qsizetype chunks) { m_batch = std::max<qsizetype>(1, chunks); }
    int parts() const { return m_parts; }

    // The parts of `documents` (those marked indexed) that best match `question`, as excerpts
    // (name, text, part = chunk number + 1), best first: retrieved(ticket, excerpts), never before
    // this returns. No indexed file: an empty list. Vectors computed for the files are kept with
    // `conversationId` (when a store is set and the id is not 0). The files of attached folders
    // (FolderScanner, chunked with chunking()) are searched with them.
    quint64 retrieve(const QString& question, const QList<ChatDocument>& documents, qint64 conversationId = 0,
                     const QList<FolderFile>& folderFiles = {});

    // Computes (or reads back from the store) the vectors of `files` ahead of any question, and
    // keeps them with `conversationId` (not 0): prepared(ticket) when done (at once without an
    // embedding model). A question about them then waits only for its own vector.
    quint64 prepare(const QList<FolderFile>& files, qint64 conversationId);

    // How the chunks are named in the store: the limits and the chunker's version.
    QString chunkingTag() const;

Q_SIGNALS:
    void retrieved(quint64 ticket, const QList<hearth::app::ChatDocument>& excerpts);
    void prepared(quint64 ticket);
    // A request's files embedded so far: `embedded` of the `total` chunks it had to embed (those
    // read back from the store not counted), after each embedding request of more than one.
    void progress(quint64 ticket, qint64 embedded, qint64 total);

private:
    struct Indexed {
        QList<DocumentChunk> chunks;
        QList<QList<float>> vectors; // empty until embedded (or without a model)
        QString model;               // the embedding model the vectors are from
        QString lookedUp;            // the model the store was asked about for this file
        QSet<qint64> keptIn;         // the chats the store keeps these vectors with
        quint64 used = 0;            // when a request last asked for it (m_clock)
    };
    struct Pending {
        quint64 ticket = 0;
        QString question;
        QList<QByteArray> keys; // the files' index entries
        qint64 conversationId = 0;
        bool storeAsked = false;
        quint64 loadTicket = 0;      // reading kept vectors from the store
        int parts = 0;
        quint64 chunkTicket = 0;     // embedding the files' chunks not embedded yet
        QList<QByteArray> embedding; // which files those chunks belong to, in order
        qsizetype toEmbed = -1;      // chunks to embed for this request (-1: not counted yet)
        qsizetype embedded = 0;      // of those, done
        quint64 questionTicket = 0;
        QList<float> questionVector;
        bool questionDone = false;
        bool wordsOnly = false;      // the model failed: rank by the words
        bool prepareOnly = false;    // no question: the vectors only (prepare)
    };
    void step(quint64 ticket);
    void keep(const Pending& p, const QString& model);
    void evict();
    void finish(quint64 ticket);
    void onEmbedded(quint64 embedTicket, const QList<QList<float>>& vectors);
    void onEmbedFailed(quint64 embedTicket, const QString& why);
    void onIndexLoaded(quint64 loadTicket, const QList<hearth::app::DocumentIndexEntry>& entries);
    void onStoreFailed(quint64 storeTicket);
    bool modelReady() const;

    EmbeddingService* m_embeddings;
    std::shared_ptr<PoolRelay<ChatRetrieval>> m_relay; // the ranking's way back from the pool
    Store* m_store = nullptr;
    ChunkLimits m_limits;
    int m_parts = kDefaultParts;
    QHash<QByteArray, Indexed> m_index; // by the file's name and text hash
    QHash<quint64, Pending> m_pending;   // by ticket
    quint64 m_nextTicket = 1;
    quint64 m_clock = 0;
    QSet<qint64> m_deleted; // chats deleted since the store was set: nothing is kept for them
    qsizetype m_maxKept = kMaxKeptChunks;
    qsizetype m_batch = kEmbedBatchChunks;
};

} // namespace hearth::app
