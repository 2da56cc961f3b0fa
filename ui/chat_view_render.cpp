// The chat transcript's rendering: Markdown per message (a finished message's kept until it
// changes) and a document built of the same pieces, each appended at its end, so that a render
// rebuilds only the pieces from the first one that changed: while a reply streams (~30 renders a
// second) that is the reply alone, when it ends the finished reply; then those are decorated.
#include "chat_markdown.h"
#include "chat_view.h"

#include "services/chat_tools.h"

#include <QScrollBar>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>

namespace hearth::ui {

namespace {

// One message's section: its header, body (with the reasoning block before it) and footer.
QString section(const QString& role, const QString& who, const QString& body, const QString& footer) {
    QString md = messageHeader(role, who) + QStringLiteral("\n\n") + body + QStringLiteral("\n\n");
    if (!footer.isEmpty()) md += QStringLiteral("*%1*\n\n").arg(footer);
    return md + QStringLiteral("---\n\n");
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

QString ChatView::messageMarkdown(int i) {
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
        return r.markdown;
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
    QString md = viewStart ? tr("*↓ The model's view starts here: the turns above are left out to fit its context.*") +
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
    md += section(m.role, who, pictures + body, footer);
    r.blocks = blocks;
    r.markdown = md;
    m_codeBlocks += r.blocks;
    return md;
}

void ChatView::render() {
    m_codeBlocks.clear();
    m_rendered.resize(m_messages.size());
    QStringList pieces;
    if (!m_systemPrompt.isEmpty())
        pieces << section(QStringLiteral("system"), tr("System"), bodyOf(m_systemPrompt, QString(), m_codeBlocks),
                          QString());
    for (int i = 0; i < m_messages.size(); ++i) pieces << messageMarkdown(i);
    const bool questionHere = m_userConversation == m_conversationId &&
                              (!m_userText.isEmpty() || !m_userImages.isEmpty() || !m_userDocuments.isEmpty());
    if (questionHere || !m_pendingText.isEmpty())
        pieces << section(QStringLiteral("user"), tr("You"),
                          (m_userImages.isEmpty() ? QString() : imagesMarkdown(m_userImages)) +
                              documentsMarkdown(m_userDocuments) +
                              (m_userText.isEmpty() ? m_pendingText : m_userText),
                          m_retrieveTicket ? tr("searching your files…") : tr("saving…"));
    if (!m_error.isEmpty()) {
        if (m_contextFull)
            pieces << tr("**The conversation no longer fits the model's context.** %1\n\n"
                         "[Continue with the oldest turns dropped](%2:drop-oldest/0) — the system prompt stays, "
                         "the chat keeps every message, only the request leaves the oldest ones out.\n\n")
                          .arg(m_error, QLatin1String(kChatLinkScheme));
        else
            pieces << QStringLiteral("**Error:** %1\n\n").arg(m_error);
    }
    if (isGenerating()) {
        const bool thinking = m_thoughtMs < 0.0;
        const QString thoughts =
            m_streamReasoning.isEmpty()
                ? QString()
                : reasoningBlock(m_streamReasoning, reasoningHeader(thinking, streamReasoningMs()),
                                 int(m_messages.size()), streamReasoningOpen());
        pieces << section(QStringLiteral("assistant"), tr("Assistant"), bodyOf(m_offeredTools.isEmpty() ? m_streamText : app::visibleReplyText(m_streamText), thoughts, m_codeBlocks),
                          thinking && !thoughts.isEmpty() ? tr("thinking…") : tr("generating…"));
    }
    if (pieces.isEmpty())
        pieces << (m_engine->isLoaded()
                       ? tr("*Start a conversation: type below and press Enter.*")
                       : tr("*Load a model to start chatting — pick one in the model picker above or on the Models "
                            "page.*"));
    m_markdown = pieces.join(QString());
    renderDocument(pieces);
}

// Pieces equal to the shown ones stay; from the first that differs on, the document is cut and
// the new pieces are appended, each as Markdown in blocks of its own.
void ChatView::renderDocument(const QStringList& pieces) {
    QScrollBar* bar = m_transcript->verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 4;
    QTextDocument* doc = m_transcript->document();
    qsizetype k = 0;
    while (k < pieces.size() && k < m_pieces.size() && pieces[k] == m_pieces[k]) ++k;
    if (k == pieces.size() && k == m_pieces.size()) return;
    addImageResources(); // the thumbnails the pieces show, by their hearth-image: names
    QTextCursor at(doc);
    at.beginEditBlock();
    if (k == 0) {
        doc->clear();
        m_piecePos.clear();
    } else if (k < m_piecePos.size()) {
        at.setPosition(m_piecePos[k] - 1); // the end of the piece before
        at.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
        at.removeSelectedText();
        m_piecePos.resize(k);
    }
    for (qsizetype j = k; j < pieces.size(); ++j) {
        at.movePosition(QTextCursor::End);
        if (j > 0) at.insertBlock(QTextBlockFormat(), QTextCharFormat());
        m_piecePos.append(at.position());
        at.insertMarkdown(pieces[j]);
    }
    at.endEditBlock();
    m_pieces = pieces;
    decorateTranscript(doc, m_piecePos[k], palette()); // the transcript inherits it (and gets it later)
    if (atEnd) bar->setValue(bar->maximum());
}

} // namespace hearth::ui
