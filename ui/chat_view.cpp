// Chat page: conversation list (rename, delete, search), streaming Markdown transcript with copy
// links on code blocks and each reply's reasoning in a block that opens and closes, input with
// Enter to send, stop, regenerate, edit and resend, per-chat system prompt and sampling,
// per-reply statistics and a context-usage bar.
#include "chat_view.h"

#include "chat_markdown.h"
#include "chat_settings_dialog.h"
#include "services/sampling_json.h"

#include <QClipboard>
#include <QColor>
#include <QDesktopServices>
#include <QGuiApplication>
#include <QInputDialog>
#include <QMenu>
#include <QMessageBox>
#include <QUrl>

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QShortcut>
#include <QSplitter>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>

namespace hearth::ui {

namespace {

QString titleFor(const QString& text) {
    QString t = text.simplified();
    if (t.size() > 48) t = t.left(45) + QStringLiteral("...");
    return t.isEmpty() ? QObject::tr("New chat") : t;
}

QString statsLine(int tokens, double ttftMs, double tokensPerSecond) {
    return QObject::tr("%1 tokens · first token %2 ms · %3 tok/s")
        .arg(tokens)
        .arg(ttftMs, 0, 'f', 0)
        .arg(tokensPerSecond, 0, 'f', 1);
}

} // namespace

ChatView::ChatView(app::EngineHost* engine, app::Store* store, QWidget* parent)
    : QWidget(parent), m_engine(engine), m_store(store) {
    // Left: search, new chat, conversations.
    auto* left = new QWidget(this);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    auto* newButton = new QPushButton(tr("New chat"), left);
    m_search = new QLineEdit(left);
    m_search->setPlaceholderText(tr("Search messages"));
    m_search->setClearButtonEnabled(true);
    m_list = new QListWidget(left);
    leftLayout->addWidget(newButton);
    leftLayout->addWidget(m_search);
    leftLayout->addWidget(m_list, 1);

    // Right: transcript, statistics, input.
    auto* right = new QWidget(this);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    m_transcript = new QTextBrowser(right);
    m_transcript->setOpenLinks(false); // activateLink handles every link
    m_stats = new QLabel(right);
    m_context = new QProgressBar(right);
    m_context->setFormat(tr("context %v / %m tokens"));
    m_context->setRange(0, 1);
    m_context->setValue(0);
    m_input = new QPlainTextEdit(right);
    m_input->setPlaceholderText(tr("Message (Enter sends, Shift+Enter for a new line)"));
    m_input->setMaximumHeight(110);
    m_input->installEventFilter(this);
    m_send = new QPushButton(tr("Send"), right);
    m_stop = new QPushButton(tr("Stop"), right);
    m_regenerate = new QPushButton(tr("Regenerate"), right);
    m_chatSettings = new QPushButton(tr("Chat settings…"), right);
    m_chatSettings->setToolTip(tr("System prompt and sampling of this chat"));
    auto* buttons = new QHBoxLayout();
    buttons->addWidget(m_stats, 1);
    buttons->addWidget(m_chatSettings);
    buttons->addWidget(m_regenerate);
    buttons->addWidget(m_stop);
    buttons->addWidget(m_send);
    rightLayout->addWidget(m_transcript, 1);
    rightLayout->addWidget(m_context);
    rightLayout->addWidget(m_input);
    rightLayout->addLayout(buttons);

    auto* split = new QSplitter(this);
    split->addWidget(left);
    split->addWidget(right);
    split->setStretchFactor(1, 1);
    split->setSizes({220, 700});
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(split);

    m_renderTimer = new QTimer(this);
    m_renderTimer->setSingleShot(true);
    m_renderTimer->setInterval(33); // at most ~30 re-renders a second while streaming
    connect(m_renderTimer, &QTimer::timeout, this, &ChatView::render);

    connect(newButton, &QPushButton::clicked, this, &ChatView::newChat);
    connect(m_send, &QPushButton::clicked, this, [this] { sendText(m_input->toPlainText()); });
    connect(m_stop, &QPushButton::clicked, this, &ChatView::stop);
    connect(m_regenerate, &QPushButton::clicked, this, &ChatView::regenerate);
    connect(m_chatSettings, &QPushButton::clicked, this, &ChatView::openChatSettings);
    connect(m_transcript, &QTextBrowser::anchorClicked, this, &ChatView::activateLink);
    m_list->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_list, &QListWidget::customContextMenuRequested, this, &ChatView::showListMenu);
    connect(new QShortcut(QKeySequence(QStringLiteral("Ctrl+N")), this), &QShortcut::activated, this,
            &ChatView::newChat);
    connect(new QShortcut(QKeySequence(Qt::Key_Escape), this), &QShortcut::activated, this, [this] {
        if (isGenerating()) stop();
        else if (isEditing()) cancelEdit();
    });
    connect(m_list, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { openConversation(item->data(Qt::UserRole).toLongLong()); });
    connect(m_search, &QLineEdit::textChanged, this, [this](const QString& q) {
        if (q.trimmed().isEmpty()) reloadConversations();
        else m_searchTicket = m_store->searchMessages(q.trimmed());
    });

    connect(m_engine, &app::EngineHost::tokenReceived, this, &ChatView::onToken);
    connect(m_engine, &app::EngineHost::reasoningReceived, this, &ChatView::onReasoning);
    connect(m_engine, &app::EngineHost::finished, this, &ChatView::onFinished);
    connect(m_engine, &app::EngineHost::failed, this, &ChatView::onFailed);
    connect(m_engine, &app::EngineHost::stateChanged, this, [this] { updateButtons(); });

    connect(m_store, &app::Store::conversationCreated, this,
            [this](quint64 ticket, const app::Conversation& c) {
                if (ticket != m_createTicket) return;
                m_createTicket = 0;
                m_conversationId = c.id;
                reloadConversations();
                const QString text = m_pendingText;
                m_pendingText.clear();
                appendUserMessage(text);
            });
    connect(m_store, &app::Store::committed, this, [this](quint64 ticket, qint64 id) {
        if (ticket != m_userTicket) return;
        m_userTicket = 0;
        m_messages.append({id, QStringLiteral("user"), m_userText});
        m_userText.clear();
        render();
        startReply();
    });
    connect(m_store, &app::Store::conversationsListed, this,
            [this](quint64 ticket, const QList<app::Conversation>& list) {
                if (ticket != m_listTicket) return;
                m_list->clear();
                m_conversations.clear();
                for (const app::Conversation& c : list) {
                    m_conversations.insert(c.id, c);
                    auto* item = new QListWidgetItem(c.title, m_list);
                    item->setData(Qt::UserRole, c.id);
                    if (c.id == m_conversationId) m_list->setCurrentItem(item);
                }
            });
    connect(m_store, &app::Store::searchFinished, this,
            [this](quint64 ticket, const QList<app::SearchHit>& hits) {
                if (ticket != m_searchTicket) return;
                m_list->clear();
                for (const app::SearchHit& h : hits) {
                    auto* item = new QListWidgetItem(h.conversationTitle + QStringLiteral("\n  ") + h.snippet, m_list);
                    item->setData(Qt::UserRole, h.conversationId);
                }
            });
    connect(m_store, &app::Store::messagesLoaded, this,
            [this](quint64 ticket, qint64 conversationId, const QList<app::StoredMessage>& list) {
                if (ticket != m_loadTicket || conversationId != m_conversationId) return;
                m_messages.clear();
                for (const app::StoredMessage& m : list)
                    m_messages.append({m.id, m.role, m.content, m.tokens, m.ttftMs, m.tokensPerSecond,
                                       m.reasoning, m.reasoningMs, !m_collapseReasoning});
                render();
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
        const QString text = m_editText;
        m_editText.clear();
        m_send->setText(tr("Send"));
        appendUserMessage(text);
    });
    connect(m_store, &app::Store::conversationDeleted, this, [this](quint64, qint64 id) {
        if (id == m_conversationId) newChat();
        reloadConversations();
    });
    connect(m_store, &app::Store::conversationUpdated, this, [this](quint64, qint64) {
        if (m_search->text().trimmed().isEmpty()) reloadConversations();
    });
    connect(m_store, &app::Store::failed, this, [this](quint64, const QString& message) {
        Q_EMIT statusMessage(tr("Could not save: %1").arg(message));
    });
    reloadConversations();
    updateButtons();
}

bool ChatView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_input && event->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
            !(key->modifiers() & Qt::ShiftModifier)) {
            sendText(m_input->toPlainText());
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void ChatView::reloadConversations() { m_listTicket = m_store->listConversations(); }

void ChatView::setSampling(const app::Sampling& sampling) {
    m_defaultSampling = sampling;
    if (!m_customSampling) m_sampling = sampling;
}

void ChatView::setSystemPrompt(const QString& text) {
    m_defaultSystemPrompt = text;
    if (m_conversationId == 0) m_systemPrompt = text;
}

void ChatView::newChat() {
    if (isGenerating()) stop();
    cancelEdit();
    m_conversationId = 0;
    m_systemPrompt = m_defaultSystemPrompt;
    m_customSampling = false;
    m_sampling = m_defaultSampling;
    m_messages.clear();
    m_streamText.clear();
    m_streamReasoning.clear();
    m_error.clear();
    m_list->clearSelection();
    m_stats->clear();
    render();
    m_input->setFocus();
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
    if (isGenerating()) stop();
    cancelEdit();
    m_conversationId = id;
    applyConversationSettings(id);
    m_messages.clear();
    m_error.clear();
    m_streamText.clear();
    m_streamReasoning.clear();
    m_loadTicket = m_store->messages(id);
    render();
}

void ChatView::sendText(const QString& raw) {
    const QString text = raw.trimmed();
    if (text.isEmpty() || isGenerating() || m_userTicket || m_deleteTicket || !m_pendingText.isEmpty())
        return;
    if (!m_engine->isLoaded()) {
        Q_EMIT statusMessage(tr("Load a model first (Models page)"));
        return;
    }
    m_input->clear();
    m_error.clear();
    if (m_editingId != 0 && m_conversationId != 0) {
        // Edit and resend: the edited message and what followed it go, then it is sent anew.
        m_editText = text;
        m_deleteTicket = m_store->deleteMessagesFrom(m_conversationId, m_editingId);
        updateButtons();
        return;
    }
    if (m_conversationId == 0) {
        app::Conversation draft;
        draft.title = titleFor(text);
        draft.model = m_engine->model().path;
        draft.systemPrompt = m_systemPrompt;
        draft.samplingJson = m_customSampling ? app::samplingToJson(m_sampling) : QStringLiteral("{}");
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
    m_userText = text;
    m_userTicket = m_store->appendMessage(m); // shown once committed
    updateButtons();
}

void ChatView::startReply() {
    QList<app::ChatMessage> chat;
    if (!m_systemPrompt.isEmpty()) chat.append({QStringLiteral("system"), m_systemPrompt});
    // The reasoning goes apart from the answer (the template decides whether to show it).
    for (const Message& m : m_messages) chat.append({m.role, m.content, m.reasoning});
    m_streamText.clear();
    m_streamReasoning.clear();
    m_thinkClock.invalidate();
    m_thoughtMs = -1.0;
    m_streamOpenChoice.reset();
    m_activeRequest = m_engine->sendChat(chat, m_sampling);
    updateButtons();
    render();
}

void ChatView::stop() {
    if (m_activeRequest) m_engine->stop(m_activeRequest);
}

void ChatView::regenerate() {
    if (isGenerating() || m_messages.isEmpty() || m_messages.last().role != QStringLiteral("assistant")) return;
    m_replacing = m_messages.last().id;
    m_messages.removeLast();
    startReply();
}

void ChatView::onToken(quint64 id, const QString& text) {
    if (id != m_activeRequest) return;
    if (!m_streamReasoning.isEmpty() && m_thoughtMs < 0.0) m_thoughtMs = double(m_thinkClock.elapsed());
    m_streamText += text;
    scheduleRender();
}

void ChatView::onReasoning(quint64 id, const QString& text) {
    if (id != m_activeRequest) return;
    if (!m_thinkClock.isValid()) m_thinkClock.start();
    m_streamReasoning += text;
    scheduleRender();
}

// Open while thinking; once the answer starts, closed if the setting says so, unless clicked.
bool ChatView::streamReasoningOpen() const {
    if (m_streamOpenChoice) return *m_streamOpenChoice;
    return !(m_collapseReasoning && m_thoughtMs >= 0.0);
}

double ChatView::streamReasoningMs() const {
    if (m_thoughtMs >= 0.0) return m_thoughtMs;
    return m_thinkClock.isValid() ? double(m_thinkClock.elapsed()) : 0.0;
}

void ChatView::setCollapseReasoning(bool collapse) {
    if (m_collapseReasoning == collapse) return;
    m_collapseReasoning = collapse;
    for (Message& m : m_messages) m.reasoningOpen = !collapse;
    render();
}

bool ChatView::isReasoningExpanded(int index) const {
    if (index == m_messages.size()) return isGenerating() && !m_streamReasoning.isEmpty() && streamReasoningOpen();
    if (index < 0 || index > m_messages.size()) return false;
    return !m_messages[index].reasoning.isEmpty() && m_messages[index].reasoningOpen;
}

void ChatView::toggleReasoning(int index) {
    if (index == m_messages.size() && isGenerating()) m_streamOpenChoice = !streamReasoningOpen();
    else if (index >= 0 && index < m_messages.size()) m_messages[index].reasoningOpen = !m_messages[index].reasoningOpen;
    else return;
    render();
}

void ChatView::onFinished(quint64 id, const QString& reason, const app::GenerationUsage& usage) {
    if (id != m_activeRequest) return;
    m_activeRequest = 0;
    // A reply cut off while thinking keeps its reasoning open: there is nothing else to read.
    const bool open = m_streamOpenChoice ? *m_streamOpenChoice
                                         : !m_collapseReasoning || m_streamText.trimmed().isEmpty();
    Message reply{0, QStringLiteral("assistant"), m_streamText, usage.completionTokens,
                  usage.timeToFirstTokenMs, usage.tokensPerSecond(), m_streamReasoning,
                  m_streamReasoning.isEmpty() ? 0.0 : streamReasoningMs(), open};
    app::StoredMessage stored;
    stored.conversationId = m_conversationId;
    stored.role = reply.role;
    stored.content = reply.content;
    stored.reasoning = reply.reasoning;
    stored.reasoningMs = reply.reasoningMs;
    stored.tokens = reply.tokens;
    stored.ttftMs = reply.ttftMs;
    stored.tokensPerSecond = reply.tokensPerSecond;
    if (m_replacing) {
        stored.id = m_replacing;
        reply.id = m_replacing;
        m_store->updateMessage(stored);
        m_replacing = 0;
    } else {
        m_store->appendMessage(stored);
    }
    m_messages.append(reply);
    m_streamText.clear();
    m_streamReasoning.clear();
    QString line = statsLine(reply.tokens, reply.ttftMs, reply.tokensPerSecond);
    if (usage.cachedPromptTokens > 0) line += tr(" · %1 prompt tokens reused").arg(usage.cachedPromptTokens);
    if (reason == QStringLiteral("cancelled")) line += tr(" · stopped");
    m_stats->setText(line);
    const int ctx = std::max(1, m_engine->model().contextLength);
    m_context->setRange(0, ctx);
    m_context->setValue(std::min(ctx, usage.promptTokens + usage.completionTokens));
    render();
    updateButtons();
    Q_EMIT replyFinished(reply.content);
}

void ChatView::onFailed(quint64 id, const QString& message) {
    if (id != m_activeRequest) return;
    m_activeRequest = 0;
    m_replacing = 0;
    m_error = message;
    m_streamText.clear();
    m_streamReasoning.clear();
    render();
    updateButtons();
    Q_EMIT statusMessage(message);
}

void ChatView::scheduleRender() {
    if (!m_renderTimer->isActive()) m_renderTimer->start();
}

void ChatView::render() {
    QString md;
    m_codeBlocks.clear();
    // `thoughts`: the reply's reasoning block, shown before its answer.
    auto section = [&](const QString& who, const QString& text, const QString& footer,
                       const QString& thoughts = QString()) {
        QString body = text.isEmpty() ? (thoughts.isEmpty() ? QStringLiteral("…") : QString())
                                      : withCopyLinks(text, m_codeBlocks);
        body.prepend(thoughts);
        md += QStringLiteral("**%1**\n\n%2\n\n").arg(who, body);
        if (!footer.isEmpty()) md += QStringLiteral("*%1*\n\n").arg(footer);
        md += QStringLiteral("---\n\n");
    };
    const QString scheme = QLatin1String(kChatLinkScheme);
    if (!m_systemPrompt.isEmpty()) section(tr("System"), m_systemPrompt, QString());
    for (int i = 0; i < m_messages.size(); ++i) {
        const Message& m = m_messages[i];
        const bool assistant = m.role == QStringLiteral("assistant");
        const bool user = m.role == QStringLiteral("user");
        QString footer = assistant && m.tokens > 0 ? statsLine(m.tokens, m.ttftMs, m.tokensPerSecond) : QString();
        const QString link = user && m.id == m_editingId
                                 ? tr("editing…")
                                 : QStringLiteral("[%1](%2:%3/%4)")
                                       .arg(user ? tr("Edit") : tr("Copy"), scheme,
                                            user ? QStringLiteral("edit") : QStringLiteral("copy-message"))
                                       .arg(i);
        if (user || assistant) footer = footer.isEmpty() ? link : footer + QStringLiteral(" · ") + link;
        const QString thoughts =
            assistant && !m.reasoning.isEmpty()
                ? reasoningBlock(m.reasoning, reasoningHeader(false, m.reasoningMs), i, m.reasoningOpen)
                : QString();
        section(assistant ? tr("Assistant") : m.role == QStringLiteral("system") ? tr("System") : tr("You"),
                m.content, footer, thoughts);
    }
    if (!m_userText.isEmpty() || !m_pendingText.isEmpty())
        section(tr("You"), m_userText.isEmpty() ? m_pendingText : m_userText, tr("saving…"));
    if (isGenerating()) {
        const bool thinking = m_thoughtMs < 0.0;
        const QString thoughts =
            m_streamReasoning.isEmpty()
                ? QString()
                : reasoningBlock(m_streamReasoning, reasoningHeader(thinking, streamReasoningMs()),
                                 int(m_messages.size()), streamReasoningOpen());
        section(tr("Assistant"), m_streamText, thinking && !thoughts.isEmpty() ? tr("thinking…") : tr("generating…"),
                thoughts);
    }
    if (!m_error.isEmpty()) md += QStringLiteral("**Error:** %1\n\n").arg(m_error);
    if (md.isEmpty()) md = tr("*Start a conversation: type below and press Enter.*");
    m_markdown = md;
    QScrollBar* bar = m_transcript->verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 4;
    m_transcript->setMarkdown(md);
    // Reasoning in a colour between the text's and the background's (light and dark themes).
    const QColor text = m_transcript->palette().color(QPalette::Text);
    const QColor base = m_transcript->palette().color(QPalette::Base);
    tintReasoning(m_transcript->document(),
                  QColor::fromRgbF(0.6f * text.redF() + 0.4f * base.redF(), 0.6f * text.greenF() + 0.4f * base.greenF(),
                                   0.6f * text.blueF() + 0.4f * base.blueF()));
    if (atEnd) bar->setValue(bar->maximum());
}

void ChatView::updateButtons() {
    const bool busy = isGenerating() || m_userTicket != 0 || m_deleteTicket != 0;
    m_send->setEnabled(!busy && m_engine->isLoaded());
    m_stop->setEnabled(isGenerating());
    m_regenerate->setEnabled(!busy && !m_messages.isEmpty() &&
                             m_messages.last().role == QStringLiteral("assistant"));
    m_chatSettings->setEnabled(!busy);
}

void ChatView::editMessage(int index) {
    if (isGenerating() || m_userTicket || m_deleteTicket || index < 0 || index >= m_messages.size())
        return;
    const Message& m = m_messages[index];
    if (m.role != QStringLiteral("user") || m.id <= 0) return;
    m_editingId = m.id;
    m_input->setPlainText(m.content);
    m_input->setFocus();
    m_send->setText(tr("Resend"));
    Q_EMIT statusMessage(tr("Editing a message: Enter resends it (the replies after it are replaced), Esc cancels"));
    render();
}

void ChatView::cancelEdit() {
    if (m_editingId == 0 || m_deleteTicket) return;
    m_editingId = 0;
    m_input->clear();
    m_send->setText(tr("Send"));
    render();
}

void ChatView::activateLink(const QUrl& url) {
    if (url.scheme() != QLatin1String(kChatLinkScheme)) {
        if (url.scheme() == QStringLiteral("http") || url.scheme() == QStringLiteral("https"))
            QDesktopServices::openUrl(url);
        return;
    }
    const QStringList parts = url.path().split(QLatin1Char('/'));
    if (parts.size() != 2) return;
    bool ok = false;
    const int index = parts[1].toInt(&ok);
    if (!ok || index < 0) return;
    if (parts[0] == QStringLiteral("copy") && index < m_codeBlocks.size()) {
        QGuiApplication::clipboard()->setText(m_codeBlocks[index]);
        Q_EMIT statusMessage(tr("Code copied"));
    } else if (parts[0] == QStringLiteral("copy-message") && index < m_messages.size()) {
        QGuiApplication::clipboard()->setText(m_messages[index].content);
        Q_EMIT statusMessage(tr("Message copied"));
    } else if (parts[0] == QStringLiteral("edit")) {
        editMessage(index);
    } else if (parts[0] == QStringLiteral("think")) {
        toggleReasoning(index);
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
    if (id == m_conversationId && isGenerating()) stop();
    m_store->deleteConversation(id);
}

void ChatView::showListMenu(const QPoint& at) {
    QListWidgetItem* item = m_list->itemAt(at);
    if (!item) return;
    const qint64 id = item->data(Qt::UserRole).toLongLong();
    QMenu menu(this);
    QAction* rename = menu.addAction(tr("Rename…"));
    QAction* settings = menu.addAction(tr("Chat settings…"));
    menu.addSeparator();
    QAction* remove = menu.addAction(tr("Delete"));
    QAction* chosen = menu.exec(m_list->viewport()->mapToGlobal(at));
    if (chosen == rename) {
        bool ok = false;
        const QString title = QInputDialog::getText(this, tr("Rename chat"), tr("Title"), QLineEdit::Normal,
                                                    m_conversations.value(id).title, &ok);
        if (ok) renameConversation(id, title);
    } else if (chosen == settings) {
        if (id != m_conversationId) openConversation(id);
        openChatSettings();
    } else if (chosen == remove) {
        if (QMessageBox::question(this, tr("Delete chat"),
                                  tr("Delete \"%1\" and all its messages?").arg(m_conversations.value(id).title)) ==
            QMessageBox::Yes)
            deleteConversation(id);
    }
}

} // namespace hearth::ui
