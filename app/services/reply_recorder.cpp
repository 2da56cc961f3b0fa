// A streaming reply written to the store as it grows (see reply_recorder.h): the row is appended
// "incomplete" in one durable transaction, so a kill -9 at any later point leaves it marked so.
// Writes go out at once, addressed by the append's ticket until the row's id comes back, so a
// request made after any of them (reading the conversation) sees it.
#include "services/reply_recorder.h"

#include <QTimer>

namespace hearth::app {

ReplyRecorder::ReplyRecorder(Store* store, QObject* parent) : QObject(parent), m_store(store) {
    m_timer = new QTimer(this);
    m_timer->setSingleShot(true);
    connect(m_timer, &QTimer::timeout, this, &ReplyRecorder::flushDue);
    connect(m_store, &Store::committed, this, [this](quint64 ticket, qint64 id) {
        const auto it = m_appends.constFind(ticket);
        if (it == m_appends.constEnd()) return;
        const quint64 key = *it;
        m_appends.erase(it);
        m_done.insert(key, id);
        if (auto r = m_replies.find(key); r != m_replies.end()) r->id = id;
        Q_EMIT recorded(key, id);
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
        m_store->updateMessage(m);
        m_done.insert(key, replaceId);
        QMetaObject::invokeMethod(this, [this, key, replaceId] { Q_EMIT recorded(key, replaceId); },
                                  Qt::QueuedConnection);
    } else {
        r.appendTicket = m_store->appendMessage(m);
        m_appends.insert(r.appendTicket, key);
    }
    r.lastWrite.start();
    m_replies.insert(key, r);
    return key;
}

void ReplyRecorder::update(quint64 key, const StoredMessage& snapshot) {
    auto it = m_replies.find(key);
    if (it == m_replies.end()) return;
    it->pending = snapshot;
    it->pending.state = QStringLiteral("incomplete");
    it->dirty = true;
    if (it->lastWrite.elapsed() >= m_intervalMs) write(*it);
    else if (!m_timer->isActive()) m_timer->start(int(m_intervalMs - it->lastWrite.elapsed()));
}

void ReplyRecorder::finish(quint64 key, const StoredMessage& reply, const QString& state) {
    auto it = m_replies.find(key);
    if (it == m_replies.end()) return;
    it->pending = reply;
    it->pending.state = state;
    write(*it);
    m_replies.erase(it);
}

qint64 ReplyRecorder::messageId(quint64 key) const {
    const auto it = m_replies.constFind(key);
    if (it != m_replies.constEnd() && it->id != 0) return it->id;
    return m_done.value(key, 0);
}

void ReplyRecorder::write(Reply& r) {
    StoredMessage m = r.pending;
    m.id = r.id;
    m.conversationId = r.conversationId;
    m.role = QStringLiteral("assistant");
    if (r.id != 0) m_store->updateMessage(m);
    else m_store->updateAppendedMessage(r.appendTicket, m);
    r.dirty = false;
    r.lastWrite.restart();
}

void ReplyRecorder::flushDue() {
    int wait = -1;
    for (auto it = m_replies.begin(); it != m_replies.end(); ++it) {
        if (!it->dirty) continue;
        const qint64 age = it->lastWrite.elapsed();
        if (age >= m_intervalMs) write(*it);
        else wait = wait < 0 ? int(m_intervalMs - age) : std::min(wait, int(m_intervalMs - age));
    }
    if (wait >= 0) m_timer->start(wait);
}

} // namespace hearth::app
