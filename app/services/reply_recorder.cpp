// A streaming reply written to the store as it grows (see reply_recorder.h): the row is appended
// "incomplete" in one durable transaction, so a kill -9 at any later point leaves it marked so.
#include "services/reply_recorder.h"

#include <QTimer>

namespace hearth::app {

ReplyRecorder::ReplyRecorder(Store* store, QObject* parent) : QObject(parent), m_store(store) {
    m_timer = new QTimer(this);
    m_timer->setSingleShot(true);
    connect(m_timer, &QTimer::timeout, this, &ReplyRecorder::flushDue);
    connect(m_store, &Store::messageUpdated, this, [this](quint64 ticket, qint64 id) {
        const auto it = m_unconfirmed.constFind(id);
        if (it != m_unconfirmed.constEnd() && it->ticket == ticket) m_unconfirmed.erase(it);
    });
    connect(m_store, &Store::failed, this, [this](quint64 ticket, const QString&) {
        for (auto it = m_unconfirmed.begin(); it != m_unconfirmed.end();)
            it = it->ticket == ticket ? m_unconfirmed.erase(it) : std::next(it);
    });
    connect(m_store, &Store::committed, this, [this](quint64 ticket, qint64 id) {
        for (auto it = m_replies.begin(); it != m_replies.end(); ++it) {
            if (it->appendTicket != ticket || it->id != 0) continue;
            const quint64 key = it.key();
            it->id = id;
            it->appendTicket = 0;
            m_done.insert(key, id);
            if (it->dirty) write(key, *it);
            if (it->finished) m_replies.erase(it);
            Q_EMIT recorded(key, id);
            return;
        }
    });
}

quint64 ReplyRecorder::begin(qint64 conversationId, qint64 replaceId) {
    const quint64 key = m_nextKey++;
    Reply r;
    r.conversationId = conversationId;
    StoredMessage m;
    m.conversationId = conversationId;
    m.role = QStringLiteral("assistant");
    m.state = QStringLiteral("incomplete");
    if (replaceId > 0) {
        // Regenerate: the old reply is overwritten from the start.
        r.id = replaceId;
        m.id = replaceId;
        m_unconfirmed.insert(replaceId, {m_store->updateMessage(m), m});
        m_done.insert(key, replaceId);
    } else {
        r.appendTicket = m_store->appendMessage(m);
    }
    r.lastWrite.start();
    m_replies.insert(key, r);
    if (replaceId > 0)
        QMetaObject::invokeMethod(this, [this, key, replaceId] { Q_EMIT recorded(key, replaceId); },
                                  Qt::QueuedConnection);
    return key;
}

void ReplyRecorder::update(quint64 key, const StoredMessage& snapshot) {
    auto it = m_replies.find(key);
    if (it == m_replies.end() || it->finished) return;
    it->pending = snapshot;
    it->pending.state = QStringLiteral("incomplete");
    it->dirty = true;
    if (it->id != 0 && it->lastWrite.elapsed() >= m_intervalMs) write(key, *it);
    else if (!m_timer->isActive()) m_timer->start(m_intervalMs);
}

void ReplyRecorder::finish(quint64 key, const StoredMessage& reply, const QString& state) {
    auto it = m_replies.find(key);
    if (it == m_replies.end()) return;
    it->pending = reply;
    it->pending.state = state;
    it->dirty = true;
    it->finished = true;
    if (it->id == 0) return; // written when the row's id comes
    write(key, *it);
    m_replies.erase(it);
}

qint64 ReplyRecorder::messageId(quint64 key) const {
    const auto it = m_replies.constFind(key);
    if (it != m_replies.constEnd()) return it->id;
    return m_done.value(key, 0);
}

std::optional<StoredMessage> ReplyRecorder::unconfirmed(qint64 messageId) const {
    const auto it = m_unconfirmed.constFind(messageId);
    if (it == m_unconfirmed.constEnd()) return std::nullopt;
    return it->message;
}

void ReplyRecorder::write(quint64, Reply& r) {
    StoredMessage m = r.pending;
    m.id = r.id;
    m.conversationId = r.conversationId;
    m.role = QStringLiteral("assistant");
    m_unconfirmed.insert(m.id, {m_store->updateMessage(m), m});
    r.dirty = false;
    r.lastWrite.restart();
}

void ReplyRecorder::flushDue() {
    int wait = -1;
    for (auto it = m_replies.begin(); it != m_replies.end(); ++it) {
        if (!it->dirty || it->id == 0) continue;
        const qint64 age = it->lastWrite.elapsed();
        if (age >= m_intervalMs) write(it.key(), *it);
        else wait = wait < 0 ? int(m_intervalMs - age) : std::min(wait, int(m_intervalMs - age));
    }
    if (wait >= 0) m_timer->start(wait);
}

} // namespace hearth::app
