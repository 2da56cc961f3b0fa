// Steps the chat page tests share: the page's conversation list read again from the store and a
// conversation opened from it, as after a restart.
#pragma once

#include "chat_view.h"
#include "services/store.h"

#include <QSignalSpy>
#include <QTest>

namespace hearth::test {

// Lists the store's conversations into `chat` (waiting for the list to arrive: the page connected
// first, so it has the list when the spy does) and opens `conversation`.
inline void reopenConversation(ui::ChatView& chat, app::Store& store, qint64 conversation) {
    QSignalSpy listed(&store, &app::Store::conversationsListed);
    chat.reloadConversations();
    QVERIFY(listed.wait(10000));
    chat.openConversation(conversation);
}

} // namespace hearth::test
