// ConversationList: the store's listing and search results in one list widget.
#include "conversation_list.h"

#include "search_hit_delegate.h"

#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace hearth::ui {

ConversationList::ConversationList(app::Store* store, QWidget* parent) : QWidget(parent), m_store(store) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* newButton = new QPushButton(tr("New chat"), this);
    m_search = new QLineEdit(this);
    m_search->setPlaceholderText(tr("Search messages"));
    m_search->setClearButtonEnabled(true);
    m_list = new QListWidget(this);
    m_list->setItemDelegate(new SearchHitDelegate(m_list));
    m_list->setContextMenuPolicy(Qt::CustomContextMenu);
    layout->addWidget(newButton);
    layout->addWidget(m_search);
    layout->addWidget(m_list, 1);

    connect(newButton, &QPushButton::clicked, this, &ConversationList::newChatClicked);
    connect(m_list, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { Q_EMIT chosen(item->data(Qt::UserRole).toLongLong()); });
    connect(m_list, &QListWidget::customContextMenuRequested, this, [this](const QPoint& at) {
        const QListWidgetItem* item = m_list->itemAt(at);
        Q_EMIT menuRequested(item ? item->data(Qt::UserRole).toLongLong() : 0, m_list->viewport()->mapToGlobal(at));
    });
    connect(m_search, &QLineEdit::textChanged, this, [this] { reload(); });

    connect(m_store, &app::Store::conversationsListed, this,
            [this](quint64 ticket, const QList<app::Conversation>& list) {
                if (ticket != m_listTicket) return;
                m_list->clear();
                for (const app::Conversation& c : list) {
                    auto* item = new QListWidgetItem(c.title, m_list);
                    item->setData(Qt::UserRole, c.id);
                    if (c.id == m_current) m_list->setCurrentItem(item);
                }
                Q_EMIT listed(list);
            });
    connect(m_store, &app::Store::searchFinished, this, [this](quint64 ticket, const QList<app::SearchHit>& hits) {
        if (ticket != m_searchTicket) return;
        m_list->clear();
        for (const app::SearchHit& h : hits) {
            const QString head = h.conversationTitle + QStringLiteral("\n  ");
            auto* item = new QListWidgetItem(head + h.snippet, m_list);
            item->setData(Qt::UserRole, h.conversationId);
            QVariantList matches; // drawn highlighted by SearchHitDelegate
            for (const app::SearchMatch& m : h.matches) matches << QPoint(int(head.size() + m.start), int(m.length));
            item->setData(SearchHitDelegate::MatchesRole, matches);
        }
    });
    // A title, a new chat or a deletion anywhere shows here (a search in progress stays).
    connect(m_store, &app::Store::conversationUpdated, this, [this] {
        if (m_search->text().trimmed().isEmpty()) reload();
    });
    connect(m_store, &app::Store::conversationDeleted, this, [this] { reload(); });
}

void ConversationList::reload() {
    const QString q = m_search->text().trimmed();
    if (q.isEmpty()) {
        m_searchTicket = 0;
        m_listTicket = m_store->listConversations();
    } else {
        m_listTicket = 0;
        m_searchTicket = m_store->searchMessages(q);
    }
}

void ConversationList::setCurrent(qint64 id) {
    m_current = id;
    if (id == 0) {
        m_list->clearSelection();
        m_list->setCurrentItem(nullptr);
        return;
    }
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->data(Qt::UserRole).toLongLong() == id) m_list->setCurrentRow(i);
}

void ConversationList::search(const QString& text) { m_search->setText(text); }

int ConversationList::count() const { return m_list->count(); }

QString ConversationList::rowText(int row) const {
    const QListWidgetItem* item = m_list->item(row);
    return item ? item->text() : QString();
}

qint64 ConversationList::rowConversation(int row) const {
    const QListWidgetItem* item = m_list->item(row);
    return item ? item->data(Qt::UserRole).toLongLong() : 0;
}

void ConversationList::clickRow(int row) {
    if (QListWidgetItem* item = m_list->item(row)) {
        m_list->setCurrentItem(item);
        Q_EMIT m_list->itemClicked(item);
    }
}

} // namespace hearth::ui
