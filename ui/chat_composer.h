// The chat page's composer: the message box (Enter sends, Shift+Enter a new line), the strips of
// what goes with the next message (images, files) and the chat's folders, and the row of buttons
// under it (attach, the statistics line, chat settings, Regenerate, Stop, Send). It only shows and
// asks: the chat page decides what a send, a paste or a drop does.
#pragma once

#include <QWidget>

#include <functional>

class QLabel;
class QMimeData;
class QPlainTextEdit;
class QPushButton;

namespace hearth::ui {

class DocumentStrip;
class FolderStrip;
class ImageStrip;

class ChatComposer : public QWidget {
    Q_OBJECT
public:
    explicit ChatComposer(QWidget* parent = nullptr);

    // What a paste into the box or a drop onto it holds is offered to `take` first (images and
    // files the chat page attaches); when it returns false, the box takes it as ever (text).
    // `wants` says whether a drag entering the box is the page's to take.
    void setAttachmentTaker(std::function<bool(const QMimeData*)> wants, std::function<bool(const QMimeData*)> take);

    QString text() const;
    void setText(const QString& text); // the cursor at its end
    void insertText(const QString& text); // at the cursor, and the box gets the focus
    // Empties the box and the strips of the next message's images and files (not the folders).
    void clear();
    void focusInput();
    void setPlaceholder(const QString& text);
    QString placeholder() const;
    // Editing a sent message: Send reads "Resend".
    void setEditing(bool editing);

    // Which buttons work now.
    void setActions(bool send, bool stop, bool regenerate, bool settings);
    // The statistics line beside the buttons, with its tooltip.
    void setStats(const QString& text, const QString& toolTip = QString());
    QString stats() const;

    // The strips above the box.
    ImageStrip* images() const { return m_images; }
    DocumentStrip* documents() const { return m_documents; }
    FolderStrip* folders() const { return m_folders; }
    // The attach buttons (the chat page says when each works, and why not in its tooltip).
    QPushButton* attachImageButton() const { return m_attachImage; }
    QPushButton* attachFileButton() const { return m_attachFile; }
    QPushButton* attachFolderButton() const { return m_attachFolder; }

Q_SIGNALS:
    void sendRequested(const QString& text); // Enter or Send, with the box's text
    void stopRequested();
    void regenerateRequested();
    void settingsRequested();
    void attachImageRequested();
    void attachFileRequested();
    void attachFolderRequested();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    bool handleDrop(QEvent* event);

    QPlainTextEdit* m_input = nullptr;
    ImageStrip* m_images = nullptr;
    DocumentStrip* m_documents = nullptr;
    FolderStrip* m_folders = nullptr;
    QPushButton* m_attachImage = nullptr;
    QPushButton* m_attachFile = nullptr;
    QPushButton* m_attachFolder = nullptr;
    QLabel* m_stats = nullptr;
    QPushButton* m_settings = nullptr;
    QPushButton* m_regenerate = nullptr;
    QPushButton* m_stop = nullptr;
    QPushButton* m_send = nullptr;
    std::function<bool(const QMimeData*)> m_wants;
    std::function<bool(const QMimeData*)> m_take;
};

} // namespace hearth::ui
