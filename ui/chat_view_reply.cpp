// The chat page's reply as it streams in and ends: answer and reasoning pieces (the row written
// to the store as it grows), the reply finished (its tool calls read off, statistics, the context
// bar) or failed (stored as stopped or failed, the way on when the context is full).
#include "chat_markdown.h"
#include "chat_view.h"

#include "services/chat_tools.h"
#include "services/reply_recorder.h"

#include "chat_composer.h"

#include <utility>

namespace hearth::ui {

namespace {

bool fitsNoMore(const QString& error) { return error.contains(QStringLiteral("does not fit the context")); }

} // namespace

// The reply's row is written from its first piece on, or when it fails before one ("failed").
void ChatView::ensureRecording() {
    if (m_replyKey != 0 || m_replyConversation == 0) return;
    m_replyKey = m_recorder->begin(m_replyConversation, m_replaced ? m_replaced->id : 0);
    m_replaced.reset();
    m_lastSave.start();
}

app::StoredMessage ChatView::streamSnapshot() const {
    app::StoredMessage m;
    m.conversationId = m_replyConversation;
    m.role = QStringLiteral("assistant");
    m.content = m_streamText;
    m.reasoning = m_streamReasoning;
    m.reasoningMs = m_streamReasoning.isEmpty() ? 0.0 : streamReasoningMs();
    return m;
}

void ChatView::onToken(quint64 id, const QString& text) {
    if (id != m_activeRequest) return;
    if (!m_streamReasoning.isEmpty() && m_thoughtMs < 0.0) m_thoughtMs = double(m_thinkClock.elapsed());
    m_streamText += text;
    ensureRecording();
    if (m_lastSave.elapsed() >= m_recorder->interval()) {
        m_recorder->update(m_replyKey, streamSnapshot());
        m_lastSave.restart();
    }
    scheduleRender();
}

void ChatView::onReasoning(quint64 id, const QString& text) {
    if (id != m_activeRequest) return;
    if (!m_thinkClock.isValid()) m_thinkClock.start();
    m_streamReasoning += text;
    ensureRecording();
    if (m_lastSave.elapsed() >= m_recorder->interval()) {
        m_recorder->update(m_replyKey, streamSnapshot());
        m_lastSave.restart();
    }
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
    const bool stopped = reason == QStringLiteral("cancelled");
    // A reply cut off while thinking keeps its reasoning open: there is nothing else to read.
    const bool open = m_streamOpenChoice ? *m_streamOpenChoice
                                         : !m_collapseReasoning || m_streamText.trimmed().isEmpty();
    ensureRecording();
    app::StoredMessage stored = streamSnapshot();
    // The calls the reply made leave its text; they show (and are stored) as calls.
    const app::ReplyToolCalls called = stopped ? app::ReplyToolCalls{m_streamText, {}}
                                               : app::readToolCalls(m_streamText, m_offeredTools);
    m_streamText = called.content;
    stored.content = called.content;
    stored.toolCalls = called.calls;
    stored.tokens = usage.completionTokens;
    stored.ttftMs = usage.timeToFirstTokenMs;
    stored.tokensPerSecond = usage.tokensPerSecond();
    // A request cut short before the engine counted anything (an unload) keeps the last count.
    const bool counted = usage.promptTokens + usage.completionTokens > 0;
    stored.contextTokens = counted ? usage.promptTokens + usage.completionTokens : m_contextUsed;
    const QString state = stopped ? QStringLiteral("stopped") : QStringLiteral("complete");
    Message reply{m_recorder->messageId(m_replyKey), QStringLiteral("assistant"), m_streamText, stored.tokens,
                  stored.ttftMs, stored.tokensPerSecond, m_streamReasoning, stored.reasoningMs, open};
    reply.state = state;
    reply.contextTokens = stored.contextTokens;
    reply.recordKey = reply.id == 0 ? m_replyKey : 0;
    reply.toolCalls = called.calls;
    m_recorder->finish(m_replyKey, stored, state);
    m_replyKey = 0;
    m_messages.append(reply);
    startToolRound(called.calls);
    m_streamText.clear();
    m_streamReasoning.clear();
    QString line = reply.tokens > 0 ? statsLine(reply.tokens, reply.ttftMs, reply.tokensPerSecond) : QString();
    if (usage.cachedPromptTokens > 0) line += tr(" · %1 prompt tokens reused").arg(usage.cachedPromptTokens);
    if (usage.draftTokens > 0)
        line += tr(" · %1 of %2 drafted tokens accepted").arg(usage.acceptedDraftTokens).arg(usage.draftTokens);
    if (stopped) line += (line.isEmpty() ? QString() : QStringLiteral(" · ")) + tr("stopped");
    m_composer->setStats(line, tr("Sampled with seed %1").arg(m_lastSeed));
    m_contextUsed = stored.contextTokens;
    updateContextBar();
    render();
    updateButtons();
    Q_EMIT replyFinished(reply.content);
}

void ChatView::onFailed(quint64 id, const QString& message) {
    if (id != m_activeRequest) return;
    m_activeRequest = 0;
    // Failed before its first token (the engine died reading the prompt, ...): the question gets
    // a failed reply, stored, that Regenerate writes again; a failed reply regenerated is
    // overwritten with the new reason. A chat that no longer fits offers its own way on instead.
    const bool replacingFailed = m_replaced && m_replaced->state == QStringLiteral("failed");
    if (m_replyKey == 0 && m_replyConversation != 0 && !fitsNoMore(message) && (!m_replaced || replacingFailed))
        ensureRecording();
    // A regenerate that failed before it wrote anything: the old reply stays.
    if (m_replaced && m_replyKey == 0) m_messages.append(*std::exchange(m_replaced, std::nullopt));
    m_replaced.reset();
    bool failedReply = false;
    if (m_replyKey != 0) {
        // What was written stays, stopped; nothing written: the reply failed.
        app::StoredMessage partial = streamSnapshot();
        failedReply = partial.content.isEmpty() && partial.reasoning.isEmpty();
        const QString state = failedReply ? QStringLiteral("failed") : QStringLiteral("stopped");
        if (failedReply) partial.error = message;
        Message reply{m_recorder->messageId(m_replyKey), partial.role, partial.content, 0, 0.0, 0.0,
                      partial.reasoning, partial.reasoningMs, true};
        reply.state = state;
        reply.error = partial.error;
        reply.recordKey = reply.id == 0 ? m_replyKey : 0;
        m_messages.append(reply);
        m_recorder->finish(m_replyKey, partial, state);
        m_replyKey = 0;
    }
    m_error = failedReply ? QString() : message; // a failed reply says it itself
    m_contextFull = fitsNoMore(message);
    m_streamText.clear();
    m_streamReasoning.clear();
    render();
    updateButtons();
    Q_EMIT statusMessage(message, m_contextFull ? StatusLevel::Warning : StatusLevel::Error);
}

} // namespace hearth::ui
