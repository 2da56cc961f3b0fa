// The chat's transcript document: pieces of Markdown appended one after another, a bubble (a
// one-cell table on the right) for each of the user's messages, cut and rebuilt from the first
// piece that changed, then decorated for the palette.
#include "chat_transcript.h"

#include "chat_markdown.h"

#include <QEvent>
#include <QScrollBar>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextTable>
#include <QUrl>

namespace hearth::ui {

namespace {

QColor blend(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t), float(a.greenF() + (b.greenF() - a.greenF()) * t),
                            float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

} // namespace

ChatTranscript::ChatTranscript(QWidget* parent) : QTextBrowser(parent) {
    setOpenLinks(false);         // the chat page handles every link
    setUndoRedoEnabled(false);   // decorating it would fill an undo stack
}

QColor ChatTranscript::bubbleColour(const QPalette& palette) {
    const QColor base = palette.color(QPalette::Base);
    const bool dark = base.lightnessF() < 0.5;
    return blend(base, palette.color(QPalette::Highlight), dark ? 0.24 : 0.13);
}

QString ChatTranscript::markdown() const {
    QString md;
    for (const TranscriptPiece& p : m_pieces) md += p.note + p.markdown;
    return md;
}

void ChatTranscript::addImageResources() {
    QTextDocument* doc = document();
    for (auto it = m_images.cbegin(); it != m_images.cend(); ++it)
        if (!it.value().isNull())
            doc->addResource(QTextDocument::ImageResource,
                             QUrl(QLatin1String(kImageScheme) + QLatin1Char(':') + it.key()),
                             QVariant(it.value()));
}

void ChatTranscript::setPieces(const QList<TranscriptPiece>& pieces) {
    QScrollBar* bar = verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 4;
    QTextDocument* doc = document();
    qsizetype k = 0;
    while (k < pieces.size() && k < m_pieces.size() && pieces[k] == m_pieces[k]) ++k;
    if (k == pieces.size() && k == m_pieces.size()) return;
    QTextCursor at(doc);
    at.beginEditBlock();
    if (k == 0) {
        doc->clear(); // its resources too
        m_piecePos.clear();
    } else if (k < m_piecePos.size()) {
        at.setPosition(m_piecePos[k] - 1); // the end of the piece before
        at.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
        at.removeSelectedText();
        m_piecePos.resize(k);
    }
    addImageResources(); // the thumbnails the pieces show, by their hearth-image: names

    QTextTableFormat bubble;
    bubble.setAlignment(Qt::AlignRight);
    bubble.setBorderStyle(QTextFrameFormat::BorderStyle_None);
    bubble.setBorder(0);
    bubble.setCellSpacing(0);
    bubble.setCellPadding(kBubblePadding);
    bubble.setLeftMargin(kBubbleIndent);
    bubble.setRightMargin(6);
    bubble.setTopMargin(4);
    bubble.setBottomMargin(8);
    bubble.setBackground(bubbleColour(palette()));
    for (qsizetype j = k; j < pieces.size(); ++j) {
        const TranscriptPiece& p = pieces[j];
        at.movePosition(QTextCursor::End);
        if (j > 0) at.insertBlock(QTextBlockFormat(), QTextCharFormat());
        m_piecePos.append(at.position());
        if (!p.note.isEmpty()) {
            at.insertMarkdown(p.note);
            // (a table goes after the block the cursor is in, on its own)
            if (!p.bubble && !p.markdown.isEmpty()) at.insertBlock(QTextBlockFormat(), QTextCharFormat());
        }
        if (!p.bubble) {
            at.insertMarkdown(p.markdown);
            continue;
        }
        const QTextTable* table = at.insertTable(1, 1, bubble); // the cursor is in its cell now
        at.insertMarkdown(p.markdown);
        // The cell's own empty block is left after what was inserted: it goes.
        QTextCursor tail = table->cellAt(0, 0).lastCursorPosition();
        if (tail.block().length() == 1 && tail.block() != table->cellAt(0, 0).firstCursorPosition().block())
            tail.deletePreviousChar();
    }
    at.endEditBlock();
    m_pieces = pieces;
    decorateTranscript(doc, m_piecePos[k], palette());
    if (atEnd) bar->setValue(bar->maximum());
}

void ChatTranscript::changeEvent(QEvent* event) {
    QTextBrowser::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && !m_pieces.isEmpty()) {
        const QList<TranscriptPiece> pieces = std::exchange(m_pieces, {});
        setPieces(pieces);
    }
}

} // namespace hearth::ui
