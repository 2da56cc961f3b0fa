// The chat page's left pane: New chat, a search over every stored message (hits with their
// matches highlighted) and the conversations, most recent first, listed from the store on its
// thread. It says which conversation the user picked and where a context menu was asked for;
// the chat page decides what those mean.
#pragma once

#include "services/store.h"

#include <QWidget>

class QLineEdit;
class QListWidget;

namespace hearth::ui {

class ConversationList : public QWidget {
    Q_OBJECT
public:
    explicit ConversationList(app::Store* store, QWidget* parent = nullptr);

    // Lists the conversations again (or repeats the search while one is typed).
    void reload();
    // The conversation shown in the chat (0: none), marked in the list.
    void setCurrent(qint64 id);
    // As typing in the search field ("" lists the conversations).
    void search(const QString& text);

    // What the list shows (for tests): each row's text and conversation id.
    int count() const;
    QString rowText(int row) const;
    qint64 rowConversation(int row) const;
    void clickRow(int row); // as a click on it

Q_SIGNALS:
    void chosen(qint64 conversationId);
    void newChatClicked();
    // A fresh listing (not search hits), for the page's titles and per-chat settings.
    void listed(const QList<hearth::app::Conversation>& conversations);
    // A context menu was asked for on a conversation (0: on empty space) at `globalPos`.
    void menuRequested(qint64 conversationId, const QPoint& globalPos);

private:
    app::Store* m_store;
    QLineEdit* m_search = nullptr;
    QListWidget* m_list = nullptr;
    qint64 m_current = 0;
    quint64 m_listTicket = 0;
    quint64 m_searchTicket = 0;
};

} // namespace hearth::ui
