// The chat page's side of the store: the reply's row ids as the recorder learns them, a chat
// created (for its first message, or for an import), a question committed (then answered),
// messages loaded (the chat shown, or an export), deleted (an edit's resend), and failures said.
#include "chat_view.h"

#include "chat_composer.h"
#include "conversation_list.h"
#include "services/chat_folders.h"
#include "services/reply_recorder.h"

#include <utility>

namespace hearth::ui {

void ChatView::followStore() {
    m_recorder = new app::ReplyRecorder(m_store, this);
    connect(m_recorder, &app::ReplyRecorder::recorded, this, [this](quint64 key, qint64 id) {
        for (Message& m : m_messages)
            if (m.recordKey == key) {
                m.id = id;
                m.recordKey = 0;
            }
        updateButtons();
    });

    connect(m_store, &app::Store::conversationCreated, this,
            [this](quint64 ticket, const app::Conversation& c) {
                if (ticket == m_importTicket) {
                    m_importTicket = 0;
                    const QList<app::StoredMessage> messages = std::exchange(m_importMessages, {});
                    for (app::StoredMessage m : messages) {
                        m.conversationId = c.id;
                        m_store->appendMessage(m);
                    }
                    reloadConversations();
                    m_conversations.insert(c.id, c);
                    openConversation(c.id); // its messages are read after the appends
                    Q_EMIT importFinished(c.id, QString());
                    Q_EMIT statusMessage(tr("Imported \"%1\"").arg(c.title), StatusLevel::Info);
                    return;
                }
                if (ticket != m_createTicket) return;
                m_createTicket = 0;
                m_conversationId = c.id;
                if (m_folders) m_folders->setConversationId(c.id); // created with its folders
                m_conversationList->setCurrent(c.id);
                reloadConversations();
                const QString text = m_pendingText;
                m_pendingText.clear();
                appendUserMessage(text);
            });
    connect(m_store, &app::Store::committed, this, [this](quint64 ticket, qint64 id) {
        if (const auto tool = m_toolTickets.constFind(ticket); tool != m_toolTickets.constEnd()) {
            for (Message& m : m_messages)
                if (m.role == QStringLiteral("tool") && m.id == 0 && m.toolCallId == *tool) m.id = id;
            m_toolTickets.erase(tool);
            updateButtons();
            return;
        }
        if (ticket != m_userTicket) return;
        m_userTicket = 0;
        if (m_userConversation != m_conversationId) {
            // Another chat is shown now: the question is stored in its own, which shows it there.
            m_userText.clear();
            m_userImages.clear();
            m_userDocuments.clear();
            render();
            updateButtons();
            return;
        }
        m_messages.append({id, QStringLiteral("user"), m_userText});
        m_messages.last().images = std::exchange(m_userImages, {});
        m_messages.last().documents = std::exchange(m_userDocuments, {});
        m_userText.clear();
        render();
        startReply();
    });
    connect(m_store, &app::Store::messagesLoaded, this,
            [this](quint64 ticket, qint64 conversationId, const QList<app::StoredMessage>& list) {
                if (auto job = m_exports.constFind(ticket); job != m_exports.constEnd()) {
                    const ExportJob j = *job;
                    m_exports.erase(job);
                    finishExport(j, list);
                    return;
                }
                if (ticket != m_loadTicket || conversationId != m_conversationId) return;
                m_messages.clear();
                for (const app::StoredMessage& m : list) {
                    Message msg{m.id, m.role, m.content, m.tokens, m.ttftMs, m.tokensPerSecond,
                                m.reasoning, m.reasoningMs, !m_collapseReasoning};
                    msg.state = m.state;
                    msg.error = m.error;
                    msg.contextTokens = m.contextTokens;
                    msg.images = m.images;
                    msg.toolCalls = m.toolCalls;
                    msg.toolCallId = m.toolCallId;
                    msg.documents = m.documents;
                    m_messages.append(msg);
                }
                resumeToolCalls();
                showChatState();
                render();
                updateButtons();
            });
    connect(m_store, &app::Store::messagesDeleted, this, [this](quint64 ticket, qint64, int) {
        if (ticket != m_deleteTicket) return;
        m_deleteTicket = 0;
        // The edited message and everything after it are gone: drop them here too.
        for (int i = 0; i < m_messages.size(); ++i)
            if (m_messages[i].id == m_editingId) {
                m_messages.erase(m_messages.begin() + i, m_messages.end());
                break;
            }
        m_editingId = 0;
        endEditStatus();
        const QString text = m_editText;
        m_editText.clear();
        m_composer->setEditing(false);
        appendUserMessage(text);
    });
    connect(m_store, &app::Store::conversationDeleted, this, [this](quint64, qint64 id) {
        if (id == m_conversationId) newChat();
    });
    connect(m_store, &app::Store::failed, this, [this](quint64 ticket, const QString& message) {
        if (m_exports.remove(ticket)) {
            Q_EMIT exportFinished(QString(), message);
            Q_EMIT statusMessage(tr("Could not export: %1").arg(message), StatusLevel::Error);
            return;
        }
        if (ticket == m_importTicket) {
            m_importTicket = 0;
            m_importMessages.clear();
            Q_EMIT importFinished(0, message);
        }
        Q_EMIT statusMessage(tr("Could not save: %1").arg(message), StatusLevel::Error);
    });
}

} // namespace hearth::ui
