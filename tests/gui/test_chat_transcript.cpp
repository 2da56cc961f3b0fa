// The chat transcript on its own: pieces appended and cut at the first that changed (the pieces
// before kept as they are, the result the same as building it afresh), the user's messages as
// bubbles on the right with notes outside them, the bubbles' colour following the palette, and
// the thumbnails the pieces name; chat-bubbles.png.
#include "chat_transcript.h"

#include "chat_steps.h"

#include <QDir>
#include <QPainter>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextFrame>
#include <QTextTable>
#include <QtTest>

using namespace hearth;

namespace {

QList<QTextTable*> bubblesOf(const ui::ChatTranscript& t) {
    QList<QTextTable*> tables;
    for (QTextFrame* f : t.document()->rootFrame()->childFrames())
        if (auto* table = qobject_cast<QTextTable*>(f)) tables << table;
    return tables;
}

// The document's text, a line a block, with "[" and "]" around each bubble's blocks.
QString layoutOf(const ui::ChatTranscript& t) {
    QStringList lines;
    for (QTextBlock b = t.document()->begin(); b.isValid(); b = b.next())
        lines << (QTextCursor(b).currentTable() ? QStringLiteral("[%1]").arg(b.text()) : b.text());
    return lines.join(QLatin1Char('\n'));
}

ui::TranscriptPiece said(const QString& text) { return {QStringLiteral("**Assistant**\n\n%1\n\n---\n\n").arg(text)}; }
ui::TranscriptPiece asked(const QString& text, const QString& note = {}) {
    return {text + QStringLiteral("\n\n*[Edit](hearth:edit/0)*\n\n"), true, note};
}

} // namespace

class TestChatTranscript : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void piecesAreCutAtTheFirstChange() {
        ui::ChatTranscript t;
        t.resize(700, 500);
        t.setPieces({asked(QStringLiteral("Tell me a story.")), said(QStringLiteral("Once"))});
        QCOMPARE(bubblesOf(t).size(), 1);
        QTextTable* first = bubblesOf(t).constFirst();
        // (a document starts with a block: the first bubble comes after an empty one)
        QCOMPARE(layoutOf(t), QStringLiteral("\n[Tell me a story.]\n[Edit]\n\nAssistant\nOnce\n"));

        // The reply grows: the question's bubble is the same object, only the reply is rebuilt.
        t.setPieces({asked(QStringLiteral("Tell me a story.")), said(QStringLiteral("Once upon a time"))});
        QCOMPARE(bubblesOf(t).constFirst(), first);
        QVERIFY(layoutOf(t).contains(QStringLiteral("Once upon a time")));

        // A second question and answer, then the first question edited: everything rebuilt.
        const QList<ui::TranscriptPiece> longer = {asked(QStringLiteral("Tell me a story.")),
                                                   said(QStringLiteral("Once upon a time")),
                                                   asked(QStringLiteral("Shorter?"), QStringLiteral("*A note.*\n\n")),
                                                   said(QStringLiteral("Once."))};
        t.setPieces(longer);
        QCOMPARE(bubblesOf(t).size(), 2);
        QCOMPARE(bubblesOf(t).constFirst(), first);
        const QList<ui::TranscriptPiece> edited = {asked(QStringLiteral("Tell me a poem.")), said(QStringLiteral("Roses"))};
        t.setPieces(edited);
        QCOMPARE(bubblesOf(t).size(), 1);
        QCOMPARE(t.pieces(), edited);

        // Each state is what a transcript built afresh with the same pieces shows.
        for (const QList<ui::TranscriptPiece>& pieces : {longer, edited, QList<ui::TranscriptPiece>{said(QStringLiteral("x"))}}) {
            t.setPieces(pieces);
            ui::ChatTranscript fresh;
            fresh.setPieces(pieces);
            QCOMPARE(layoutOf(t), layoutOf(fresh));
            QCOMPARE(t.toPlainText(), fresh.toPlainText());
            QCOMPARE(bubblesOf(t).size(), bubblesOf(fresh).size());
        }
        // Cut back from the middle, the bubble after the change was removed whole.
        t.setPieces(longer);
        t.setPieces({longer[0], longer[1]});
        QCOMPARE(bubblesOf(t).size(), 1);
        QVERIFY(!t.toPlainText().contains(QStringLiteral("Shorter?")));
        QCOMPARE(t.markdown(), longer[0].markdown + longer[1].markdown);
    }

    void bubblesAreOnTheRightWithNotesOutside() {
        ui::ChatTranscript t;
        t.resize(700, 500);
        t.show();
        t.setPieces({said(QStringLiteral("Hello.")),
                     asked(QStringLiteral("Hi"), QStringLiteral("*The model's view starts here.*\n\n"))});
        QCOMPARE(layoutOf(t), QStringLiteral("Assistant\nHello.\n\nThe model's view starts here.\n[Hi]\n[Edit]\n"));
        QTextTable* bubble = bubblesOf(t).constFirst();
        QCOMPARE(bubble->format().alignment(), Qt::AlignRight);
        QCOMPARE(bubble->format().leftMargin(), qreal(ui::ChatTranscript::kBubbleIndent));
        const QColor light = bubble->format().background().color();
        QCOMPARE(light, ui::ChatTranscript::bubbleColour(t.palette()));
        QVERIFY(light != t.palette().color(QPalette::Base));
        QVERIFY(t.markdown().startsWith(QStringLiteral("**Assistant**")));
        QVERIFY(t.markdown().contains(QStringLiteral("*The model's view starts here.*\n\nHi\n\n")));

        // A short message's bubble is as wide as its text, on the right edge: its left edge far
        // from the transcript's.
        QApplication::processEvents();
        auto* layout = t.document()->documentLayout();
        const QRectF box = layout->frameBoundingRect(bubble);
        QVERIFY2(box.left() > t.viewport()->width() / 2, qPrintable(QString::number(box.left())));

        // The theme changes: the bubble takes the new palette's tint.
        QPalette dark = t.palette();
        dark.setColor(QPalette::Base, QColor(0x1e, 0x1f, 0x22));
        dark.setColor(QPalette::Text, QColor(0xdf, 0xe1, 0xe5));
        dark.setColor(QPalette::Highlight, QColor(0x35, 0x74, 0xf0));
        t.setPalette(dark);
        const QColor darkBubble = bubblesOf(t).constFirst()->format().background().color();
        QCOMPARE(darkBubble, ui::ChatTranscript::bubbleColour(dark));
        QVERIFY(darkBubble != light);
    }

    void thumbnailsAreTheDocumentsResources() {
        ui::ChatTranscript t;
        QImage red(32, 24, QImage::Format_RGB32);
        red.fill(Qt::red);
        t.addImage(QStringLiteral("abc"), red);
        QVERIFY(t.hasImage(QStringLiteral("abc")));
        t.setPieces({asked(QStringLiteral("![image 1](hearth-image:abc) \n\nWhat is this?"))});
        const QVariant shown = t.document()->resource(QTextDocument::ImageResource, QUrl(QStringLiteral("hearth-image:abc")));
        QCOMPARE(shown.value<QImage>().size(), QSize(32, 24));
        // Built again (a theme change clears the document): the image is given again.
        t.setPieces({});
        t.setPieces({asked(QStringLiteral("![image 1](hearth-image:abc) \n\nWhat is this?"))});
        QVERIFY(!t.document()->resource(QTextDocument::ImageResource, QUrl(QStringLiteral("hearth-image:abc"))).isNull());
        t.clearImages();
        QVERIFY(!t.hasImage(QStringLiteral("abc")));
    }

    // A conversation as the chat page shows it, for a look: chat-bubbles.png.
    void screenshot() {
        ui::ChatTranscript t;
        t.resize(760, 520);
        t.show();
        t.setPieces({asked(QStringLiteral("What is a paged KV cache?")),
                     said(QStringLiteral("It keeps each sequence's keys and values in fixed-size blocks, so memory is "
                                         "handed out as it is needed and shared prefixes are stored once.")),
                     asked(QStringLiteral("Show me a block table in Python, with a short comment on each line "
                                          "so that I can follow it while I read the rest of the code.")),
                     said(QStringLiteral("```python\ntable = [4, 9, 2]  # block ids\n```"))});
        QApplication::processEvents();
        QVERIFY(t.grab().save(QDir(test::chatScreenshotDir()).filePath(QStringLiteral("chat-bubbles.png"))));
    }
};

QTEST_MAIN(TestChatTranscript)
#include "test_chat_transcript.moc"
