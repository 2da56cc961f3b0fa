// The answers of an app::Store (a worker-thread SQLite store that replies by ticket) waited for in
// tests: a conversation's stored messages, the conversation list, a newly created conversation.
#pragma once

#include "services/store.h"

#include <QSignalSpy>

namespace hearth::test {

// The reply carrying `ticket` among the signals `spy` has seen, waiting up to ~10 s: its arguments,
// or an empty list on a timeout.
inline QList<QVariant> replyFor(QSignalSpy& spy, quint64 ticket) {
    for (int i = 0; i < 500; ++i) {
        for (const auto& args : spy)
            if (args.first().toULongLong() == ticket) return args;
        spy.wait(20);
    }
    return {};
}

// The messages stored in `conversation`, in order (empty on a timeout).
inline QList<app::StoredMessage> storedMessages(app::Store& store, qint64 conversation) {
    QSignalSpy loaded(&store, &app::Store::messagesLoaded);
    const QList<QVariant> args = replyFor(loaded, store.messages(conversation));
    return args.size() > 2 ? args.at(2).value<QList<app::StoredMessage>>() : QList<app::StoredMessage>();
}

// The stored conversations (empty on a timeout).
inline QList<app::Conversation> storedConversations(app::Store& store) {
    QSignalSpy listed(&store, &app::Store::conversationsListed);
    const QList<QVariant> args = replyFor(listed, store.listConversations());
    return args.size() > 1 ? args.at(1).value<QList<app::Conversation>>() : QList<app::Conversation>();
}

// A new conversation from `draft`, once the store says it exists: its id (-1 on a timeout).
inline qint64 createdConversation(app::Store& store, const app::Conversation& draft) {
    QSignalSpy created(&store, &app::Store::conversationCreated);
    const QList<QVariant> args = replyFor(created, store.createConversation(draft));
    return args.size() > 1 ? args.at(1).value<app::Conversation>().id : -1;
}

} // namespace hearth::test
