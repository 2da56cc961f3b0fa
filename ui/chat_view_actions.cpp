// The chat page's smaller actions: the transcript's links, edit and resend, copying, the chat's
// own settings, rename and delete, and the header widget slot.
#include "chat_view.h"

#include "chat_composer.h"
#include "chat_markdown.h"
#include "chat_settings_dialog.h"
#include "document_strip.h"
#include "image_strip.h"
#include "services/sampling_json.h"

#include <QClipboard>
#include <QDesktopServices>
#include <QGuiApplication>
#include <QPushButton>
#include <QUrl>
#include <QVBoxLayout>

#include <utility>

namespace hearth::ui {

void ChatView::editMessage(int index) {
    if (isGenerating() || m_userTicket || m_deleteTicket || index < 0 || index >= m_messages.size())
        return;
    const Message& m = m_messages[index];
    if (m.role != QStringLiteral("user") || m.id <= 0) return;
    m_editingId = m.id;
    m_composer->clear();
    m_composer->setText(m.content);
    m_composer->images()->addImages(m.images); // the message's own images go with it again, unless removed
    QList<app::ChatDocument> files;
    for (const app::ChatDocument& d : m.documents)
        if (d.part == 0) files << app::ChatDocument{d.name, d.text};
    m_composer->documents()->addDocuments(files); // and so do its files (the parts found are searched anew)
    m_composer->focusInput();
    m_composer->setEditing(true);
    m_editingStatus = tr("Editing a message: Enter resends it (the replies after it are replaced), Esc cancels");
    Q_EMIT statusMessage(m_editingStatus, StatusLevel::Info);
    render();
}

void ChatView::editLastUserMessage() {
    for (int i = int(m_messages.size()) - 1; i >= 0; --i)
        if (m_messages[i].role == QStringLiteral("user")) {
            editMessage(i);
            return;
        }
}

void ChatView::copyLastReply() {
    for (auto it = m_messages.crbegin(); it != m_messages.crend(); ++it)
        if (it->role == QStringLiteral("assistant")) {
            QGuiApplication::clipboard()->setText(it->content);
            Q_EMIT statusMessage(tr("Reply copied"), StatusLevel::Info);
            return;
        }
}

void ChatView::focusInput() { m_composer->focusInput(); }

void ChatView::cancelEdit() {
    if (m_editingId == 0 || m_deleteTicket) return;
    m_editingId = 0;
    m_composer->clear();
    m_composer->setEditing(false);
    endEditStatus();
    render();
}

void ChatView::endEditStatus() {
    if (m_editingStatus.isEmpty()) return;
    Q_EMIT statusWithdrawn(std::exchange(m_editingStatus, QString()));
}

void ChatView::activateLink(const QUrl& url) {
    if (url.scheme() != QLatin1String(kChatLinkScheme)) {
        if (url.scheme() == QStringLiteral("http") || url.scheme() == QStringLiteral("https"))
            QDesktopServices::openUrl(url);
        return;
    }
    const QStringList parts = url.path().split(QLatin1Char('/'));
    if (parts.size() != 2) return;
    if (parts[0].startsWith(QStringLiteral("tool-"))) {
        decideToolCall(parts[1], parts[0].mid(5));
        return;
    }
    bool ok = false;
    const int index = parts[1].toInt(&ok);
    if (!ok || index < 0) return;
    if (parts[0] == QStringLiteral("copy") && index < m_codeBlocks.size()) {
        QGuiApplication::clipboard()->setText(m_codeBlocks[index]);
        Q_EMIT statusMessage(tr("Code copied"), StatusLevel::Info);
    } else if (parts[0] == QStringLiteral("copy-message") && index < m_messages.size()) {
        QGuiApplication::clipboard()->setText(m_messages[index].content);
        Q_EMIT statusMessage(tr("Message copied"), StatusLevel::Info);
    } else if (parts[0] == QStringLiteral("edit")) {
        editMessage(index);
    } else if (parts[0] == QStringLiteral("think")) {
        toggleReasoning(index);
    } else if (parts[0] == QStringLiteral("drop-oldest")) {
        continueWithOldestDropped();
    } else if (parts[0] == QStringLiteral("regenerate")) {
        regenerate();
    }
}

void ChatView::setChatSettings(const QString& systemPrompt, bool customSampling,
                               const app::Sampling& sampling) {
    m_systemPrompt = systemPrompt;
    m_customSampling = customSampling;
    m_sampling = customSampling ? sampling : m_defaultSampling;
    if (m_conversationId != 0) {
        app::Conversation c = m_conversations.value(m_conversationId);
        c.id = m_conversationId;
        if (c.title.isEmpty()) c.title = tr("New chat");
        c.systemPrompt = m_systemPrompt;
        c.samplingJson = m_customSampling ? app::samplingToJson(m_sampling) : QStringLiteral("{}");
        m_conversations.insert(c.id, c);
        m_store->updateConversation(c);
    }
    render();
}

void ChatView::openChatSettings() {
    ChatSettingsDialog dialog(m_systemPrompt, m_sampling, m_customSampling, m_defaultSampling, this);
    if (dialog.exec() == QDialog::Accepted)
        setChatSettings(dialog.systemPrompt(), dialog.customSampling(), dialog.sampling());
}

void ChatView::renameConversation(qint64 id, const QString& title) {
    const QString t = title.simplified();
    if (t.isEmpty()) return;
    m_store->renameConversation(id, t);
    if (m_conversations.contains(id)) m_conversations[id].title = t;
}

void ChatView::deleteConversation(qint64 id) {
    // The reply being written is let go first, so its last write lands before the delete.
    if (id == m_conversationId) detachReply();
    m_store->deleteConversation(id);
}

void ChatView::setHeaderWidget(QWidget* widget) {
    if (m_header == widget) return;
    if (m_header) {
        m_headerLayout->removeWidget(m_header);
        m_header->deleteLater();
    }
    m_header = widget;
    if (widget) {
        m_headerLayout->addWidget(widget);
        widget->show();
    }
}

} // namespace hearth::ui
