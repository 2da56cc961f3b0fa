// ReplyRecorder writes a streaming assistant reply to the Store as it grows: one row at the
// start ("incomplete"), at most one update a second while it streams, and the final text with
// its state ("complete", "stopped" or "failed") at the end; the row stays "incomplete" if the app
// dies.
#pragma once

#include "services/store.h"

#include <QElapsedTimer>
#include <QHash>
#include <QObject>

class QTimer;

namespace hearth::app {

class ReplyRecorder : public QObject {
    Q_OBJECT
public:
    explicit ReplyRecorder(Store* store, QObject* parent = nullptr);

    // How long a streaming reply may go unwritten (ms; at most one update per interval).
    void setInterval(int ms) { m_intervalMs = ms; }
    int interval() const { return m_intervalMs; }

    // Starts recording a reply of `conversationId`: a new row, or when `replaceId` is a stored
    // message, that row overwritten (regenerate). Returns the reply's key (never 0).
    quint64 begin(qint64 conversationId, qint64 replaceId = 0);
    // The reply so far (content, reasoning...; id and state are the recorder's): written now if
    // the last write is older than the interval, else at the interval's end. Every write is
    // queued behind the append, before any later store request.
    void update(quint64 key, const StoredMessage& snapshot);
    // The final reply: written at once with `state`; the key's id stays known.
    void finish(quint64 key, const StoredMessage& reply, const QString& state);
    // The stored id of a reply (0 until its row is committed).
    qint64 messageId(quint64 key) const;
    bool isRecording(quint64 key) const { return m_replies.contains(key); }

Q_SIGNALS:
    // The reply's row exists: `messageId` is its id.
    void recorded(quint64 key, qint64 messageId);

private:
    struct Reply {
        qint64 conversationId = 0;
        qint64 id = 0;          // 0 until committed
        quint64 appendTicket = 0;
        StoredMessage pending;  // the latest snapshot not yet written
        bool dirty = false;
        QElapsedTimer lastWrite;
    };

    void write(Reply& r);
    void flushDue();

    Store* m_store;
    QTimer* m_timer = nullptr;
    int m_intervalMs = 1000;
    quint64 m_nextKey = 1;
    QHash<quint64, Reply> m_replies;
    QHash<quint64, quint64> m_appends; // append ticket -> key, until committed
    QHash<quint64, qint64> m_done; // key -> row id, kept after a reply finishes
};

} // namespace hearth::app
