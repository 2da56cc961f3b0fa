// The chat's transcript: shows the pieces of Markdown the chat page gives it (one a message),
// rebuilding the document only from the first piece that changed, with the user's messages as
// bubbles on the right and the thumbnails the pieces' hearth-image: links name.
#pragma once

#include <QHash>
#include <QImage>
#include <QList>
#include <QString>
#include <QTextBrowser>

namespace hearth::ui {

// The scheme of the transcript's images: hearth-image:KEY.
inline constexpr const char* kImageScheme = "hearth-image";

// One piece of the transcript. A bubble's Markdown is shown in a shaded box on the right (a
// user's message); `note` goes before it, outside the box (the line that says where the model's
// view starts). Other pieces are shown as they are, full width.
struct TranscriptPiece {
    QString markdown;
    bool bubble = false;
    QString note;
    bool operator==(const TranscriptPiece&) const = default;
};

class ChatTranscript : public QTextBrowser {
    Q_OBJECT
public:
    // The space kept left of a bubble, so a long message still reads as the user's.
    static constexpr int kBubbleIndent = 96;
    static constexpr int kBubblePadding = 10;

    explicit ChatTranscript(QWidget* parent = nullptr);

    // Shows `pieces`: those equal to the shown ones stay, the document is cut at the first that
    // differs and the rest are appended and decorated (while a reply streams, that is the reply
    // alone). Scrolled to the end if it was there.
    void setPieces(const QList<TranscriptPiece>& pieces);
    const QList<TranscriptPiece>& pieces() const { return m_pieces; }
    // Every piece's note and Markdown, in order (what tests read).
    QString markdown() const;

    // A thumbnail for the pieces' hearth-image:KEY links (kImageScheme), kept until clearImages
    // (the chat page lets them go when another chat is shown).
    bool hasImage(const QString& key) const { return m_images.contains(key); }
    void addImage(const QString& key, const QImage& thumbnail) { m_images.insert(key, thumbnail); }
    void clearImages() { m_images.clear(); }

    // The bubbles' colour for a palette: the base tinted with the highlight.
    static QColor bubbleColour(const QPalette& palette);

protected:
    // A new palette (light/dark theme): built again in its colours.
    void changeEvent(QEvent* event) override;

private:
    void addImageResources();

    QList<TranscriptPiece> m_pieces; // as shown
    QList<int> m_piecePos;           // where each piece starts in the document
    QHash<QString, QImage> m_images;
};

} // namespace hearth::ui
