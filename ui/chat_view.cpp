// Chat page: conversation list (rename, delete, search, export), input with Enter to send, stop,
// regenerate (replacing the reply, a fresh seed each time), edit and resend, per-chat system
// prompt and sampling, the reply written to the store as it grows, per-chat statistics and
// context bar, and the way on when the context is full. The transcript's rendering lives in
// chat_view_render.cpp, export and import in chat_view_files.cpp, the transcript's links, edit,
// copy and per-chat settings in chat_view_actions.cpp, attached images in chat_view_images.cpp,
// the reply as it streams and ends in chat_view_reply.cpp, attached files in
// chat_view_documents.cpp, MCP tool calls in chat_view_tools.cpp.
#include "chat_view.h"

#include "chat_composer.h"

#include "chat_markdown.h"
#include "chat_settings_dialog.h"
#include "conversation_list.h"
#include "document_strip.h"
#include "folder_strip.h"
#include "image_strip.h"
#include "services/chat_documents.h"
#include "services/chat_folders.h"
#include "services/chat_retrieval.h"
#include "services/chat_tools.h"
#include "services/reply_recorder.h"
#include "services/sampling_json.h"

#include <QClipboard>
#include <QGuiApplication>
#include <QRandomGenerator>

#include <QHBoxLayout>
#include <QProgressBar>
#include <QShortcut>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <utility>

namespace hearth::ui {

namespace {

QString titleFor(const QString& text) {
    QString t = text.simplified();
    if (t.size() > 48) t = t.left(45) + QStringLiteral("...");
    return t.isEmpty() ? QObject::tr("New chat") : t;
}

} // namespace


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
        draft.title = titleFor(text.isEmpty() && !documents.isEmpty() ? documents.first().name : text);
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
