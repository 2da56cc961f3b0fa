// Sending on the chat page: a message from the composer stored (its chat created first), the
// chat's files searched for the question, the reply asked of the engine; Regenerate, Stop, and the
// way on when the context is full.
#include "chat_view.h"

#include "chat_composer.h"
#include "document_strip.h"
#include "image_strip.h"
#include "services/chat_documents.h"
#include "services/chat_folders.h"
#include "services/chat_retrieval.h"
#include "services/chat_tools.h"
#include "services/sampling_json.h"

#include <QRandomGenerator>

#include <algorithm>
#include <utility>

namespace hearth::ui {

namespace {

// A new chat's title: its first message, shortened.
QString chatTitleFor(const QString& text) {
    QString t = text.simplified();
    if (t.size() > 48) t = t.left(45) + QStringLiteral("...");
    return t.isEmpty() ? QObject::tr("New chat") : t;
}

} // namespace

void ChatView::sendText(const QString& raw) {
    const QString text = raw.trimmed();
    const QList<QByteArray> images = m_composer->images()->images();
    const QList<app::ChatDocument> documents = m_composer->documents()->documents();
    if ((text.isEmpty() && images.isEmpty() && documents.isEmpty()) || isGenerating() || m_userTicket || m_deleteTicket ||
        m_retrieveTicket ||
        !m_pendingText.isEmpty() || m_createTicket)
        return;
    if (m_tools && m_tools->isActive()) {
        Q_EMIT statusMessage(tr("Allow or deny the tool call above first (or press Stop)"), StatusLevel::Warning);
        return;
    }
    if (!m_engine->isLoaded()) {
        if (!m_reloadPath.isEmpty() && m_engine->state() == app::EngineHost::State::Empty) {
            m_afterLoadText = text; // the input keeps it (and the images) until it is sent
            m_sendAfterLoad = true;
            Q_EMIT reloadRequested(m_reloadPath);
            return;
        }
        Q_EMIT statusMessage(tr("Load a model first (the model picker or the Models page)"), StatusLevel::Warning);
        return;
    }
    if (!images.isEmpty() && !canAttachImages()) {
        Q_EMIT statusMessage(attachRefusal(), StatusLevel::Warning); // the images stay attached: another model may take them
        return;
    }
    m_composer->clear();
    m_outgoingDocuments = documents;
    for (app::ChatDocument& d : m_outgoingDocuments) // searched per question rather than given whole
        d.indexed = m_retrieval && d.part == 0 && d.text.size() > app::kInlineDocumentChars;
    if (m_tools) m_tools->resetRounds(); // the user spoke: the model may call tools again
    m_outgoingImages = images;
    m_error.clear();
    m_contextFull = false;
    if (m_editingId != 0 && m_conversationId != 0) {
        // Edit and resend: the edited message and what followed it go, then it is sent anew.
        m_editText = text;
        m_deleteTicket = m_store->deleteMessagesFrom(m_conversationId, m_editingId);
        updateButtons();
        return;
    }
    if (m_conversationId == 0) {
        app::Conversation draft;
        draft.title = chatTitleFor(text.isEmpty() && !documents.isEmpty() ? documents.first().name : text);
        draft.model = m_engine->model().path;
        draft.systemPrompt = m_systemPrompt;
        draft.samplingJson = m_customSampling ? app::samplingToJson(m_sampling) : QStringLiteral("{}");
        if (m_folders) draft.folders = m_folders->paths();
        m_pendingText = text;
        m_createTicket = m_store->createConversation(draft);
        return;
    }
    appendUserMessage(text);
}

void ChatView::appendUserMessage(const QString& text) {
    app::StoredMessage m;
    m.conversationId = m_conversationId;
    m.role = QStringLiteral("user");
    m.content = text;
    m.images = std::exchange(m_outgoingImages, {});
    m.documents = std::exchange(m_outgoingDocuments, {});
    m_userDocuments = m.documents;
    m_userText = text;
    m_userImages = m.images;
    m_userConversation = m_conversationId;
    // The chat's long files (this message's and earlier ones') are searched for the question
    // first; the parts found are stored with it.
    QList<app::ChatDocument> indexed;
    for (const Message& earlier : std::as_const(m_messages))
        for (const app::ChatDocument& d : earlier.documents)
            if (d.indexed) indexed << d;
    for (const app::ChatDocument& d : std::as_const(m.documents))
        if (d.indexed) indexed << d;
    const QList<app::FolderFile> folderFiles = m_folders ? m_folders->files() : QList<app::FolderFile>();
    if (m_retrieval && (!indexed.isEmpty() || !folderFiles.isEmpty())) {
        m_searching = m;
        m_retrieveTicket = m_retrieval->retrieve(text, indexed, m_conversationId, folderFiles);
        render();
        updateButtons();
        return;
    }
    storeUserMessage(m);
}

void ChatView::storeUserMessage(app::StoredMessage message) {
    m_userDocuments = message.documents;
    m_userTicket = m_store->appendMessage(message); // shown once committed
    render();
    updateButtons();
}

void ChatView::startReply() {
    QList<app::ChatMessage> chat;
    if (!m_systemPrompt.isEmpty()) chat.append({QStringLiteral("system"), m_systemPrompt});
    // The reasoning goes apart from the answer (the template decides whether to show it).
    // The last message (the one answered) is always in the model's view.
    m_viewStart = std::clamp(m_viewStart, 0, std::max(0, int(m_messages.size()) - 1));
    // A failed reply has nothing for the model to read.
    for (int i = m_viewStart; i < m_messages.size(); ++i) {
        const Message& m = m_messages[i];
        if (m.state != QStringLiteral("failed"))
            chat.append({m.role, m.content, m.reasoning, m.images, m.toolCalls, m.toolCallId, m.documents});
    }
    m_streamText.clear();
    m_streamReasoning.clear();
    m_promptRead = {0, 0};
    m_thinkClock.invalidate();
    m_thoughtMs = -1.0;
    m_streamOpenChoice.reset();
    m_error.clear();
    m_contextFull = false;
    // Seed 0 means random: each reply (and each regenerate) draws its own.
    app::Sampling sampling = m_sampling;
    if (sampling.seed == 0) {
        do sampling.seed = QRandomGenerator::global()->generate64();
        while (sampling.seed == 0);
    }
    m_lastSeed = sampling.seed;
    m_replyKey = 0;
    m_replyConversation = m_conversationId;
    m_offeredTools = m_tools ? m_tools->offeredTools() : QJsonArray();
    m_activeRequest = m_dropOldest ? m_engine->sendChatFitting(chat, sampling, m_offeredTools)
                                   : m_engine->sendChat(chat, sampling, m_offeredTools);
    updateButtons();
    render();
}

void ChatView::onChatTrimmed(quint64 id, int dropped) {
    if (id != m_activeRequest || dropped <= 0) return;
    m_viewStart = std::min(int(m_messages.size()), m_viewStart + dropped);
    render();
}

void ChatView::continueWithOldestDropped() {
    if (!m_contextFull || isGenerating() || m_messages.isEmpty()) return;
    m_dropOldest = true;
    m_contextFull = false;
    m_error.clear();
    if (m_messages.last().role == QStringLiteral("assistant") && m_messages.last().id > 0) {
        regenerate();
        return;
    }
    startReply();
}

void ChatView::stop() {
    if (!m_activeRequest && m_tools && m_tools->isActive()) m_tools->stopAll();
    if (!m_activeRequest) return;
    m_engine->stop(m_activeRequest);
}

bool ChatView::canRegenerate() const {
    const bool busy = isGenerating() || m_userTicket != 0 || m_deleteTicket != 0 || m_retrieveTicket != 0;
    return !busy && !m_messages.isEmpty() && m_messages.last().role == QStringLiteral("assistant") &&
           m_messages.last().id > 0;
}

void ChatView::regenerate() {
    if (!canRegenerate() || !m_engine->isLoaded()) return;
    // The stored reply is overwritten once the new one starts (kept if it fails first).
    if (m_tools) m_tools->cancel(); // the calls of the reply replaced go with it
    m_replaced = m_messages.takeLast();
    startReply();
}

} // namespace hearth::ui
