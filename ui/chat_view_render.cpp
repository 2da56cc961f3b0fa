// What the chat transcript shows: a piece of Markdown per message (a finished message's kept
// until it changes), the user's as bubbles; ChatTranscript rebuilds only the pieces from the first
// one that changed (while a reply streams, ~30 renders a second, that is the reply alone).
#include "chat_markdown.h"
#include "chat_transcript.h"
#include "chat_view.h"

#include "services/chat_tools.h"

#include <QLocale>

namespace hearth::ui {

namespace {

// One message's section: its header, body (with the reasoning block before it) and footer.
QString section(const QString& role, const QString& who, const QString& body, const QString& footer) {
    QString md = messageHeader(role, who) + QStringLiteral("\n\n") + body + QStringLiteral("\n\n");
    if (!footer.isEmpty()) md += QStringLiteral("*%1*\n\n").arg(footer);
    return md + QStringLiteral("---\n\n");
}

// A user's message: its body and footer, shown in a bubble (no header, no rule).
TranscriptPiece bubble(const QString& body, const QString& footer, const QString& note = QString()) {
    QString md = body + QStringLiteral("\n\n");
    if (!footer.isEmpty()) md += QStringLiteral("*%1*\n\n").arg(footer);
    return {md, true, note};
}

// Code blocks are numbered on from `firstNumber`; theirs are appended to codeBlocks.
QString bodyOf(const QString& text, const QString& thoughts, QStringList& codeBlocks, int firstNumber) {
    QString body = text.isEmpty() ? (thoughts.isEmpty() ? QStringLiteral("…") : QString())
                                  : withCopyLinks(text, codeBlocks, firstNumber);
    return thoughts + body;
}

QString bodyOf(const QString& text, const QString& thoughts, QStringList& codeBlocks) {
    return bodyOf(text, thoughts, codeBlocks, int(codeBlocks.size()));
}

} // namespace

TranscriptPiece ChatView::messagePiece(int i) {
    const Message& m = m_messages[i];
    Rendered& r = m_rendered[i];
    const bool editing = m.role == QStringLiteral("user") && m.id != 0 && m.id == m_editingId;
    const bool viewStart = m_viewStart > 0 && i == m_viewStart;
    const bool last = i + 1 == m_messages.size();
    const QString calls = toolCallsMarkdown(i);
    if (r.calls == calls && r.firstBlock == int(m_codeBlocks.size()) && r.source == m.content && r.reasoning == m.reasoning &&
        r.reasoningOpen == m.reasoningOpen && r.editing == editing && r.viewStart == viewStart && r.last == last &&
        r.id == m.id && r.state == m.state && r.error == m.error && r.images == m.images.size()) {
        m_codeBlocks += r.blocks;
        return r.piece;
    }
    r.source = m.content;
    r.calls = calls;
    r.reasoning = m.reasoning;
    r.firstBlock = int(m_codeBlocks.size());
    r.reasoningOpen = m.reasoningOpen;
    r.editing = editing;
    r.viewStart = viewStart;
    r.last = last;
    r.id = m.id;
    r.state = m.state;
    r.error = m.error;
    r.images = m.images.size();

    const QString scheme = QLatin1String(kChatLinkScheme);
    const bool assistant = m.role == QStringLiteral("assistant");
    const bool user = m.role == QStringLiteral("user");
    QString footer = assistant && m.tokens > 0 ? statsLine(m.tokens, m.ttftMs, m.tokensPerSecond) : QString();
    auto add = [&footer](const QString& part) { footer = footer.isEmpty() ? part : footer + QStringLiteral(" · ") + part; };
    if (assistant && m.state == QStringLiteral("incomplete")) add(tr("(incomplete — the app closed while writing)"));
    else if (assistant && m.state == QStringLiteral("stopped")) add(tr("stopped"));
    const bool failed = assistant && m.state == QStringLiteral("failed");
    if (user) add(editing ? tr("editing…") : QStringLiteral("[%1](%2:edit/%3)").arg(tr("Edit"), scheme).arg(i));
    if (assistant) {
        if (!failed) add(QStringLiteral("[%1](%2:copy-message/%3)").arg(tr("Copy"), scheme).arg(i));
        if (last) add(QStringLiteral("[%1](%2:regenerate/%3)").arg(tr("Regenerate"), scheme).arg(i));
    }
    const QString thoughts = assistant && !m.reasoning.isEmpty()
                                 ? reasoningBlock(m.reasoning, reasoningHeader(false, m.reasoningMs), i, m.reasoningOpen)
                                 : QString();
    QStringList blocks;
    const bool tool = m.role == QStringLiteral("tool");
    const QString who = assistant ? tr("Assistant") : user ? tr("You") : tool ? tr("Tool") : tr("System");
    const QString note = viewStart ? tr("*↓ The model's view starts here: the turns above are left out to fit its "
                                        "context.*") +
                                         QStringLiteral("\n\n")
                                   : QString();
    const QString pictures = (m.images.isEmpty() ? QString() : imagesMarkdown(m.images)) + documentsMarkdown(m.documents);
    QString body;
    if (failed) {
        body = tr("**The reply failed:** %1").arg(m.error.isEmpty() ? tr("no reason given") : m.error);
    } else if (tool) {
        body = toolResultMarkdown(i);
    } else {
        // A reply that only called tools has no text to show ("…" is for one still empty).
        body = m.content.isEmpty() && !calls.isEmpty() ? thoughts : bodyOf(m.content, thoughts, blocks, r.firstBlock);
        if (const QString sources = assistant ? sourcesMarkdown(i) : QString(); !sources.isEmpty())
            body += QStringLiteral("\n\n") + sources;
        if (!calls.isEmpty()) body += (body.isEmpty() ? QString() : QStringLiteral("\n\n")) + calls;
    }
    r.piece = user ? bubble(pictures + body, footer, note) : TranscriptPiece{section(m.role, who, pictures + body, footer), false, note};
    r.blocks = blocks;
    m_codeBlocks += r.blocks;
    return r.piece;
}

void ChatView::render() {
    m_codeBlocks.clear();
    m_rendered.resize(m_messages.size());
    QList<TranscriptPiece> pieces;
    auto add = [&pieces](const QString& markdown) { pieces.append({markdown}); };
    if (!m_systemPrompt.isEmpty())
        add(section(QStringLiteral("system"), tr("System"), bodyOf(m_systemPrompt, QString(), m_codeBlocks), QString()));
    for (int i = 0; i < m_messages.size(); ++i) pieces << messagePiece(i);
    const bool questionHere = m_userConversation == m_conversationId &&
                              (!m_userText.isEmpty() || !m_userImages.isEmpty() || !m_userDocuments.isEmpty());
    if (questionHere || !m_pendingText.isEmpty())
        pieces << bubble((m_userImages.isEmpty() ? QString() : imagesMarkdown(m_userImages)) +
                             documentsMarkdown(m_userDocuments) + (m_userText.isEmpty() ? m_pendingText : m_userText),
                         m_retrieveTicket ? tr("searching your files…") : tr("saving…"));
    if (!m_error.isEmpty()) {
        if (m_contextFull)
            add(tr("**The conversation no longer fits the model's context.** %1\n\n"
                         "[Continue with the oldest turns dropped](%2:drop-oldest/0) — the system prompt stays, "
                         "the chat keeps every message, only the request leaves the oldest ones out.\n\n")
                    .arg(m_error, QLatin1String(kChatLinkScheme)));
        else
            add(QStringLiteral("**Error:** %1\n\n").arg(m_error));
    }
    if (isGenerating()) {
        const bool thinking = m_thoughtMs < 0.0;
        const QString thoughts =
            m_streamReasoning.isEmpty()
                ? QString()
                : reasoningBlock(m_streamReasoning, reasoningHeader(thinking, streamReasoningMs()),
                                 int(m_messages.size()), streamReasoningOpen());
        const QString text = m_offeredTools.isEmpty() ? m_streamText : app::visibleReplyText(m_streamText);
        QString footer = thinking && !thoughts.isEmpty() ? tr("thinking…") : tr("generating…");
        if (m_streamText.isEmpty() && m_streamReasoning.isEmpty() && m_promptRead.second > 0) {
            const QLocale locale;
            footer = tr("reading the conversation: %1% (%2 of %3 tokens)…")
                         .arg(100 * qint64(m_promptRead.first) / m_promptRead.second)
                         .arg(locale.toString(m_promptRead.first), locale.toString(m_promptRead.second));
        }
        add(section(QStringLiteral("assistant"), tr("Assistant"), bodyOf(text, thoughts, m_codeBlocks), footer));
    }
    if (pieces.isEmpty())
        add(m_engine->isLoaded() ? tr("*Start a conversation: type below and press Enter.*")
                                 : tr("*Load a model to start chatting — pick one in the model picker above or on "
                                      "the Models page.*"));
    m_transcript->setPieces(pieces);
}

} // namespace hearth::ui
