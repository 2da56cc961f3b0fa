// The chat page: it puts together the conversation list, the transcript and the composer (each a
// class of its own), follows the engine, and keeps the chat shown (its messages, settings,
// statistics and context bar, which buttons work). Its other parts: sending (chat_view_send.cpp),
// the store's answers (chat_view_store.cpp), the reply as it streams and ends (chat_view_reply.cpp),
// what the transcript shows (chat_view_render.cpp), links, edit and copy (chat_view_actions.cpp),
// export and import (chat_view_files.cpp), images (chat_view_images.cpp), files
// (chat_view_documents.cpp), folders (chat_view_folders.cpp), MCP tool calls (chat_view_tools.cpp).
#include "chat_view.h"

#include "chat_composer.h"

#include "chat_markdown.h"
#include "chat_settings_dialog.h"
#include "conversation_list.h"
#include "services/chat_folders.h"
#include "services/chat_tools.h"
#include "services/reply_recorder.h"
#include "services/sampling_json.h"


#include <QHBoxLayout>
#include <QProgressBar>
#include <QShortcut>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <utility>

namespace hearth::ui {

ChatView::ChatView(app::EngineHost* engine, app::Store* store, QWidget* parent)
    : QWidget(parent), m_engine(engine), m_store(store) {
    // Left: new chat, search, conversations.
    m_conversationList = new ConversationList(m_store, this);

    // Right: the header (model picker), transcript, context bar, composer.
    auto* right = new QWidget(this);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    m_headerLayout = new QVBoxLayout();
    m_headerLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->addLayout(m_headerLayout);
    m_transcript = new ChatTranscript(right);
    m_context = new QProgressBar(right);
    m_composer = new ChatComposer(right);
    rightLayout->addWidget(m_transcript, 1);
    rightLayout->addWidget(m_context);
    rightLayout->addWidget(m_composer);
    setUpImages();
    setUpDocuments();
    setUpFolders();

    auto* split = new QSplitter(this);
    split->addWidget(m_conversationList);
    split->addWidget(right);
    split->setStretchFactor(1, 1);
    split->setSizes({220, 700});
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(split);

    m_renderTimer = new QTimer(this);
    m_renderTimer->setSingleShot(true);
    m_renderTimer->setInterval(33); // at most ~30 re-renders a second while streaming
    connect(m_renderTimer, &QTimer::timeout, this, &ChatView::render);

    connect(m_conversationList, &ConversationList::newChatClicked, this, &ChatView::newChat);
    connect(m_conversationList, &ConversationList::chosen, this, &ChatView::openConversation);
    connect(m_conversationList, &ConversationList::menuRequested, this, &ChatView::showListMenu);
    connect(m_conversationList, &ConversationList::listed, this, [this](const QList<app::Conversation>& list) {
        m_conversations.clear();
        for (const app::Conversation& c : list) m_conversations.insert(c.id, c);
    });
    connect(m_composer, &ChatComposer::sendRequested, this, &ChatView::sendText);
    connect(m_composer, &ChatComposer::stopRequested, this, &ChatView::stop);
    connect(m_composer, &ChatComposer::regenerateRequested, this, &ChatView::regenerate);
    connect(m_composer, &ChatComposer::settingsRequested, this, &ChatView::openChatSettings);
    connect(m_transcript, &QTextBrowser::anchorClicked, this, &ChatView::activateLink);
    m_transcript->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_transcript, &QTextBrowser::customContextMenuRequested, this, &ChatView::showTranscriptMenu);
    connect(new QShortcut(QKeySequence(QStringLiteral("Ctrl+N")), this), &QShortcut::activated, this,
            &ChatView::newChat);
    connect(new QShortcut(QKeySequence(Qt::Key_Escape), this), &QShortcut::activated, this, [this] {
        if (isGenerating()) stop();
        else if (isEditing()) cancelEdit();
    });
    connect(new QShortcut(QKeySequence(QStringLiteral("Ctrl+R")), this), &QShortcut::activated, this,
            &ChatView::regenerate);
    connect(new QShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+C")), this), &QShortcut::activated, this,
            &ChatView::copyLastReply);
    connect(new QShortcut(QKeySequence(QStringLiteral("Ctrl+E")), this), &QShortcut::activated, this,
            [this] { if (m_conversationId) exportWithDialog(m_conversationId); });
    connect(new QShortcut(QKeySequence(QStringLiteral("Ctrl+L")), this), &QShortcut::activated, this,
            &ChatView::focusInput);
    connect(new QShortcut(QKeySequence(QStringLiteral("Ctrl+Up")), this), &QShortcut::activated, this,
            &ChatView::editLastUserMessage);

    connect(m_engine, &app::EngineHost::tokenReceived, this, &ChatView::onToken);
    connect(m_engine, &app::EngineHost::reasoningReceived, this, &ChatView::onReasoning);
    connect(m_engine, &app::EngineHost::finished, this, &ChatView::onFinished);
    connect(m_engine, &app::EngineHost::failed, this, &ChatView::onFailed);
    connect(m_engine, &app::EngineHost::chatTrimmed, this, &ChatView::onChatTrimmed);
    // The context bar counts the reply as it streams.
    connect(m_engine, &app::EngineHost::contextUsedChanged, this, [this](quint64 id, int tokens) {
        if (id != m_activeRequest) return;
        m_contextUsed = tokens;
        m_context->setValue(std::min(m_context->maximum(), tokens));
    });
    // A long prompt read over several steps: the reply being written says how far it is.
    connect(m_engine, &app::EngineHost::promptProgress, this, [this](quint64 id, int done, int total) {
        if (id != m_activeRequest) return;
        m_promptRead = {done, total};
        scheduleRender();
    });
    connect(m_engine, &app::EngineHost::stateChanged, this, [this] {
        updateButtons();
        updateContextBar();
        updateAttach();
    });
    // The empty state's hint depends on whether a model is loaded.
    connect(m_engine, &app::EngineHost::loaded, this, [this] {
        updateContextBar();
        render();
        // Any load ends the idle state; a message that asked for the model to come back goes now.
        m_reloadPath.clear();
        if (!m_afterLoadText.isEmpty() || m_sendAfterLoad) {
            const QString text = m_afterLoadText;
            m_afterLoadText.clear();
            m_sendAfterLoad = false;
            sendText(text);
        }
    });
    connect(m_engine, &app::EngineHost::loadFailed, this, [this] {
        m_afterLoadText.clear();
        m_sendAfterLoad = false;
    });
    connect(m_engine, &app::EngineHost::unloaded, this, [this] {
        updateContextBar();
        render();
    });

    followStore();
    reloadConversations();
    updateButtons();
    updateContextBar();
    render();
}

QString ChatView::transcriptMarkdown() const { return m_transcript->markdown(); }

// Another chat is shown: the kept Markdown and the thumbnails were the last one's.
void ChatView::forgetRendered() {
    m_rendered.clear();
    m_transcript->clearImages();
}

void ChatView::reloadConversations() { m_conversationList->reload(); }

void ChatView::setSampling(const app::Sampling& sampling) {
    m_defaultSampling = sampling;
    if (!m_customSampling) m_sampling = sampling;
}

void ChatView::setSystemPrompt(const QString& text) {
    m_defaultSystemPrompt = text;
    if (m_conversationId == 0) m_systemPrompt = text;
}

// Leaves the reply being written where it is: stopped, stored as it stands now; what the engine
// still sends for it is ignored.
void ChatView::detachReply() {
    if (!m_activeRequest) return;
    m_engine->stop(m_activeRequest);
    m_activeRequest = 0;
    if (m_replyKey != 0) m_recorder->finish(m_replyKey, streamSnapshot(), QStringLiteral("stopped"));
    m_replyKey = 0;
    m_replaced.reset();
    m_streamText.clear();
    m_streamReasoning.clear();
}

void ChatView::newChat() {
    detachReply();
    if (m_tools) m_tools->cancel();
    cancelEdit();
    m_conversationId = 0;
    forgetRendered();
    m_systemPrompt = m_defaultSystemPrompt;
    m_customSampling = false;
    m_sampling = m_defaultSampling;
    m_messages.clear();
    m_error.clear();
    m_contextFull = false;
    m_dropOldest = false;
    m_viewStart = 0;
    m_conversationList->setCurrent(0);
    if (m_folders) m_folders->show(0, {});
    showChatState();
    render();
    updateButtons();
    m_composer->focusInput();
}

void ChatView::applyConversationSettings(qint64 id) {
    const auto it = m_conversations.constFind(id);
    if (it == m_conversations.constEnd()) return;
    m_systemPrompt = it->systemPrompt;
    m_customSampling = !app::samplingJsonIsDefault(it->samplingJson);
    m_sampling = m_customSampling ? app::samplingFromJson(it->samplingJson, m_defaultSampling)
                                  : m_defaultSampling;
}

void ChatView::openConversation(qint64 id) {
    detachReply();
    if (m_tools) m_tools->cancel();
    cancelEdit();
    m_conversationId = id;
    forgetRendered();
    m_conversationList->setCurrent(id);
    applyConversationSettings(id);
    if (m_folders) m_folders->show(id, m_conversations.value(id).folders);
    m_messages.clear();
    m_error.clear();
    m_contextFull = false;
    m_dropOldest = false;
    m_viewStart = 0;
    showChatState();
    m_loadTicket = m_store->messages(id);
    render();
    updateButtons();
}

// The statistics line and context bar of the chat shown: its last reply's.
void ChatView::showChatState() {
    m_statsText.clear();
    m_contextUsed = 0;
    for (auto it = m_messages.crbegin(); it != m_messages.crend(); ++it) {
        if (it->role != QStringLiteral("assistant")) continue;
        if (it->tokens > 0) m_statsText = statsLine(it->tokens, it->ttftMs, it->tokensPerSecond);
        if (it->state == QStringLiteral("stopped"))
            m_statsText += (m_statsText.isEmpty() ? QString() : QStringLiteral(" · ")) + tr("stopped");
        m_contextUsed = it->contextTokens;
        break;
    }
    m_composer->setStats(m_statsText);
    updateContextBar();
}

int ChatView::contextCapacity() const { return m_engine->isLoaded() ? m_engine->model().contextLength : 0; }

QString ChatView::statsText() const { return m_composer->stats(); }

QString ChatView::contextText() const { return m_context->text(); }

void ChatView::updateContextBar() {
    const int capacity = contextCapacity();
    if (m_engine->isLoaded() && m_engine->model().isRemote()) {
        // The provider keeps the context: its size and use are not ours to count.
        const app::RemoteModelRef remote = app::remoteModelOf(m_engine->model().path);
        m_context->setRange(0, 1);
        m_context->setValue(0);
        m_context->setFormat(tr("%1 (remote) · context managed by %2")
                                 .arg(remote.model, remote.provider)
                                 .replace(QLatin1Char('%'), QStringLiteral("%%")));
    } else if (capacity <= 0) {
        m_context->setRange(0, 1);
        m_context->setValue(0);
        m_context->setFormat(m_engine->state() == app::EngineHost::State::Loading ? tr("context: the model is loading")
                                                                                 : tr("context: no model loaded"));
    } else {
        m_context->setRange(0, capacity);
        m_context->setValue(std::min(capacity, m_contextUsed));
        m_context->setFormat(tr("context %v / %m tokens"));
    }
    m_composer->setPlaceholder(inputPlaceholder());
}

void ChatView::setModelToReload(const QString& path) {
    m_reloadPath = path;
    if (path.isEmpty()) {
        m_afterLoadText.clear();
        m_sendAfterLoad = false;
    }
    updateButtons();
    updateAttach();
}

QString ChatView::inputPlaceholder() const {
    if (!m_engine->isLoaded() && !m_reloadPath.isEmpty() && m_engine->state() == app::EngineHost::State::Empty)
        return tr("Message (sending loads %1 again: it was unloaded while idle)")
            .arg(m_reloadPath.section(QLatin1Char('/'), -1));
    if (!m_engine->isLoaded())
        return m_engine->state() == app::EngineHost::State::Loading
                   ? tr("The model is loading…")
                   : tr("Load a model to start chatting — pick one in the model picker above or on the Models page");
    if (m_tools && m_tools->isActive()) return tr("The model called a tool: allow or deny it above (Stop ends the calls)");
    return tr("Message (Enter sends, Shift+Enter for a new line)");
}


void ChatView::scheduleRender() {
    if (!m_renderTimer->isActive()) m_renderTimer->start();
}

bool ChatView::canSend() const {
    const bool busy = isGenerating() || m_userTicket != 0 || m_deleteTicket != 0 || m_retrieveTicket != 0 ||
                      (m_tools && m_tools->isActive());
    return !busy && (m_engine->isLoaded() ||
                     (!m_reloadPath.isEmpty() && m_engine->state() == app::EngineHost::State::Empty));
}

void ChatView::updateButtons() {
    const bool busy = isGenerating() || m_userTicket != 0 || m_deleteTicket != 0 || m_retrieveTicket != 0;
    m_composer->setActions(canSend(), isGenerating() || (m_tools && m_tools->isActive()),
                           canRegenerate() && m_engine->isLoaded(), !busy);
    m_composer->setPlaceholder(inputPlaceholder());
}

} // namespace hearth::ui
