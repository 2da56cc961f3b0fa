// Store keeps conversations and their messages in SQLite on its own thread: every call returns a
// ticket at once and its result comes back as a signal carrying that ticket.
#pragma once

#include "services/service_types.h"

#include <QByteArray>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QPair>
#include <QString>
#include <QStringList>

class QThread;

namespace hearth::app {

struct Conversation {
    qint64 id = 0;
    QString title;
    QString model;        // the model file it was last used with
    QString systemPrompt;
    QString samplingJson = QStringLiteral("{}");
    qint64 created = 0;   // ms since the epoch (UTC)
    qint64 updated = 0;
    QStringList folders;  // folders of documents searched for its questions (FolderScanner)
};

struct StoredMessage {
    qint64 id = 0;
    qint64 conversationId = 0;
    QString role;         // "system", "user", "assistant", "tool" (a tool call's result)
    QString content;      // an assistant reply's answer
    QString reasoning;    // an assistant reply's reasoning, apart from the answer ("" if none)
    double reasoningMs = 0.0; // how long the reasoning took to write
    int tokens = 0;
    double ttftMs = 0.0;
    double tokensPerSecond = 0.0;
    qint64 created = 0;   // ms since the epoch; 0: now
    // How an assistant reply ended: "complete", "incomplete" (still being written; found so at
    // load, the app died while writing it), "stopped" (the user or an unload cut it short) or
    // "failed" (the engine failed before the reply's first token; `error` says why).
    QString state = QStringLiteral("complete");
    QString error; // a failed reply's reason ("" otherwise)
    int contextTokens = 0; // an assistant reply: prompt + reply tokens when it was written
    // Images a user message carries, each an encoded file's bytes as attached, in order: stored
    // with it at appendMessage (table message_images), read back with it, deleted with it.
    QList<QByteArray> images;
    QList<ChatToolCall> toolCalls; // an assistant reply's tool calls (updateMessage rewrites them)
    QString toolCallId;            // a "tool" message: the call it answers (set when appended)
    QList<ChatDocument> documents; // files a user message carries as text (set when appended)
};

// Where a search term was found in a hit's snippet (in QChars).
struct SearchMatch {
    qsizetype start = 0;
    qsizetype length = 0;
    bool operator==(const SearchMatch&) const = default;
};

struct SearchHit {
    qint64 messageId = 0;
    qint64 conversationId = 0;
    QString conversationTitle;
    QString role;
    QString snippet;             // the match with some context, plain text ("…" where cut)
    QList<SearchMatch> matches;  // the terms found in it, in order, for the view to highlight
};

// One file's chunks and their vectors, as retrieval (ChatRetrieval) keeps them between runs.
struct DocumentIndexEntry {
    QByteArray key;   // the file's name-and-text hash: changed text, another entry
    QString model;    // the embedding model the vectors are from
    QString chunking; // how the file was cut (limits and the chunker's version)
    QList<QPair<int, int>> spans; // each chunk's start and length in the file's text, in order
    QList<QList<float>> vectors;  // one per span, all of one dimension
    qint64 conversationId = 0;    // read back: the conversation the entry is kept with
};

namespace detail {
class StoreWorker;
}

class Store : public QObject {
    Q_OBJECT
public:
    static constexpr int kSchemaVersion = 10;

    explicit Store(QObject* parent = nullptr);
    // Finishes every request already made (so appended messages are committed), then closes.
    ~Store() override;

    // Opens (creating or migrating) the database; ends with opened() or failed(). Requests made
    // before it finishes run after it.
    quint64 open(const QString& path);

    quint64 createConversation(const Conversation& draft); // -> conversationCreated
    quint64 renameConversation(qint64 id, const QString& title); // -> conversationUpdated
    // Title, model, system prompt and sampling of an existing conversation.
    quint64 updateConversation(const Conversation& conversation); // -> conversationUpdated
    quint64 deleteConversation(qint64 id); // its messages too -> conversationDeleted
    // The folders attached to a conversation (its other fields untouched) -> conversationUpdated.
    quint64 setConversationFolders(qint64 id, const QStringList& folders);
    quint64 listConversations();           // most recently updated first -> conversationsListed
    quint64 searchMessages(const QString& query, int limit = 50); // -> searchFinished
    // Commits the message (and the conversation's updated time) in one durable transaction;
    // committed() comes only after the commit succeeded.
    quint64 appendMessage(const StoredMessage& message);
    // Content, reasoning, tokens, ttft, speed, state and context tokens of a stored message (a
    // streaming reply as it grows and when it ends).
    quint64 updateMessage(const StoredMessage& message); // -> messageUpdated
    // The same for the message appended with `appendTicket` (one of the last 1024 appends),
    // whose id need not have come back yet: requests run in order, so it is known by then.
    quint64 updateAppendedMessage(quint64 appendTicket, const StoredMessage& message); // -> messageUpdated
    // Deletes a message and every later one of its conversation (edit and resend)
    // -> messagesDeleted with the number removed.
    quint64 deleteMessagesFrom(qint64 conversationId, qint64 fromMessageId);
    quint64 messages(qint64 conversationId); // oldest first -> messagesLoaded
    // Keeps files' indexes for the conversation, all or none in one transaction (each replacing the
    // one it had for the same key, model and chunking); deleted with the conversation
    // -> documentIndexSaved.
    quint64 saveDocumentIndex(qint64 conversationId, const QList<DocumentIndexEntry>& entries);
    // The entries kept for `keys` with this model and chunking, in any conversation (`preferred`
    // one's first, then the newest), each key at most once (a row whose sizes disagree is
    // skipped) -> documentIndexLoaded.
    quint64 loadDocumentIndex(const QList<QByteArray>& keys, const QString& model, const QString& chunking,
                              qint64 preferred = 0);

Q_SIGNALS:
    void opened(quint64 ticket, const QString& path, bool fullTextSearch);
    void conversationCreated(quint64 ticket, const hearth::app::Conversation& conversation);
    void conversationUpdated(quint64 ticket, qint64 id);
    void conversationDeleted(quint64 ticket, qint64 id);
    void conversationsListed(quint64 ticket, const QList<hearth::app::Conversation>& conversations);
    void searchFinished(quint64 ticket, const QList<hearth::app::SearchHit>& hits);
    void committed(quint64 ticket, qint64 messageId);
    void messageUpdated(quint64 ticket, qint64 messageId);
    void messagesLoaded(quint64 ticket, qint64 conversationId,
                        const QList<hearth::app::StoredMessage>& messages);
    void messagesDeleted(quint64 ticket, qint64 conversationId, int count);
    void documentIndexSaved(quint64 ticket);
    void documentIndexLoaded(quint64 ticket, const QList<hearth::app::DocumentIndexEntry>& entries);
    void failed(quint64 ticket, const QString& message);

private:
    template <typename F> quint64 post(F&& work);

    QThread* m_thread = nullptr;
    detail::StoreWorker* m_worker = nullptr; // lives in m_thread
    quint64 m_nextTicket = 1;
};

} // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::Conversation)
Q_DECLARE_METATYPE(hearth::app::StoredMessage)
Q_DECLARE_METATYPE(hearth::app::SearchHit)
Q_DECLARE_METATYPE(hearth::app::DocumentIndexEntry)
