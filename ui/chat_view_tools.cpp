// The chat page's MCP tool calls: a reply's calls shown with their state and the user's choices,
// each result stored as a "tool" message, and the next reply asked for once a round is over.
#include "chat_markdown.h"
#include "chat_view.h"

#include "services/chat_export.h"
#include "services/chat_tools.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace hearth::ui {

namespace {

constexpr qsizetype kShownResultChars = 4000; // the transcript shows this much of a result

// The arguments as the user reads them: compact JSON, or the text as the model wrote it.
QString argumentsText(const QString& arguments) {
    const QJsonDocument doc = QJsonDocument::fromJson(arguments.toUtf8());
    if (doc.isObject()) return QString::fromUtf8(doc.toJson(QJsonDocument::Compact));
    return arguments;
}

} // namespace

void ChatView::setToolRunner(app::ChatToolRunner* runner) {
    if (m_tools) disconnect(m_tools, nullptr, this, nullptr);
    m_tools = runner;
    if (!m_tools) return;
    connect(m_tools, &app::ChatToolRunner::changed, this, [this] {
        render();
        updateButtons();
    });
    connect(m_tools, &app::ChatToolRunner::callFinished, this, &ChatView::onToolCallFinished);
    connect(m_tools, &app::ChatToolRunner::roundFinished, this, &ChatView::onToolRoundFinished);
}

QStringList ChatView::waitingToolCalls() const { return m_tools ? m_tools->waitingCalls() : QStringList(); }

void ChatView::decideToolCall(const QString& callId, const QString& decision) {
    if (!m_tools) return;
    if (decision == QStringLiteral("once")) m_tools->allowOnce(callId);
    else if (decision == QStringLiteral("always")) m_tools->allowAlways(callId);
    else if (decision == QStringLiteral("deny")) m_tools->deny(callId);
}

// Under a reply that called tools: each call, its arguments and where it stands.
QString ChatView::toolCallsMarkdown(int index) const {
    const Message& m = m_messages[index];
    if (m.toolCalls.isEmpty()) return {};
    const QString scheme = QLatin1String(kChatLinkScheme);
    QString md;
    for (const app::ChatToolCall& c : m.toolCalls) {
        const QString args = argumentsText(c.arguments);
        md += tr("**Tool call:** `%1`").arg(c.name) + QStringLiteral("\n\n");
        if (!args.isEmpty()) {
            const QString fence = app::markdownFence(args);
            md += fence + QStringLiteral("json\n") + args + QLatin1Char('\n') + fence + QStringLiteral("\n\n");
        }
        const app::ChatToolRunner::Phase phase = m_tools ? m_tools->phase(c.id) : app::ChatToolRunner::Phase::None;
        if (phase == app::ChatToolRunner::Phase::Waiting)
            md += tr("Run this tool? [Allow once](%1:tool-once/%2) · [Always allow](%1:tool-always/%2) · "
                     "[Deny](%1:tool-deny/%2)")
                      .arg(scheme, c.id) +
                  QStringLiteral("\n\n");
        else if (phase == app::ChatToolRunner::Phase::Running)
            md += tr("*running…*") + QStringLiteral("\n\n");
    }
    return md;
}

// A tool's result: which call it answers and what it said (long results cut for the eye only).
QString ChatView::toolResultMarkdown(int index) const {
    const Message& m = m_messages[index];
    QString name = tr("a tool");
    for (int i = index - 1; i >= 0; --i) {
        const auto& calls = m_messages[i].toolCalls;
        const auto it = std::find_if(calls.begin(), calls.end(), [&m](const app::ChatToolCall& c) { return c.id == m.toolCallId; });
        if (it != calls.end()) {
            name = QStringLiteral("`%1`").arg(it->name);
            break;
        }
    }
    QString text = m.content;
    const bool cut = text.size() > kShownResultChars;
    if (cut) text = text.left(kShownResultChars);
    const QString fence = app::markdownFence(text);
    QString md = tr("**Result of %1:**").arg(name) + QStringLiteral("\n\n") + fence + QLatin1Char('\n') + text +
                 QLatin1Char('\n') + fence + QStringLiteral("\n\n");
    if (cut) md += tr("*(%1 characters; the model reads them all)*").arg(m.content.size()) + QStringLiteral("\n\n");
    return md;
}

void ChatView::startToolRound(const QList<app::ChatToolCall>& calls) {
    if (!m_tools || calls.isEmpty()) return;
    if (!m_tools->mayContinue()) {
        m_error = tr("The model called tools %1 times in a row; it was not asked again. Send a message to go on.")
                      .arg(app::ChatToolRunner::kMaxRounds);
        return;
    }
    m_tools->begin(calls);
}

void ChatView::onToolCallFinished(const app::ChatToolCall& call, const QString& result, bool isError) {
    Q_UNUSED(isError) // an error's text says so; the model reads it like any result
    if (m_conversationId == 0) return;
    app::StoredMessage stored;
    stored.conversationId = m_conversationId;
    stored.role = QStringLiteral("tool");
    stored.content = result;
    stored.toolCallId = call.id;
    m_toolTickets.insert(m_store->appendMessage(stored), call.id);
    Message shown{0, stored.role, result};
    shown.toolCallId = call.id;
    m_messages.append(shown);
    render();
    updateButtons();
}

void ChatView::onToolRoundFinished(bool stopped) {
    updateButtons();
    if (stopped || isGenerating() || !m_engine->isLoaded()) {
        render();
        return;
    }
    startReply(); // the tool messages are stored before the reply's row (the store keeps order)
}

// A chat opened with a reply whose calls have no results yet (the app closed while they waited):
// they wait for the user again, whatever the tool's approval.
void ChatView::resumeToolCalls() {
    if (!m_tools) return;
    m_tools->cancel();
    m_tools->resetRounds();
    int last = -1;
    for (int i = int(m_messages.size()) - 1; i >= 0; --i)
        if (m_messages[i].role == QStringLiteral("assistant")) {
            last = i;
            break;
        }
    if (last < 0 || m_messages[last].toolCalls.isEmpty()) return;
    QList<app::ChatToolCall> open;
    for (const app::ChatToolCall& c : m_messages[last].toolCalls) {
        bool answered = false;
        for (int i = last + 1; i < m_messages.size(); ++i) answered |= m_messages[i].toolCallId == c.id;
        if (!answered) open << c;
    }
    if (!open.isEmpty()) m_tools->begin(open, true);
}

} // namespace hearth::ui
