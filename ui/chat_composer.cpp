// The chat page's composer: the message box, the strips above it and the buttons under it; keys,
// pastes and drops on the box turned into requests for the chat page.
#include "chat_composer.h"

#include "document_strip.h"
#include "folder_strip.h"
#include "image_strip.h"

#include <QClipboard>
#include <QDragMoveEvent>
#include <QDropEvent>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace hearth::ui {

ChatComposer::ChatComposer(QWidget* parent) : QWidget(parent) {
    m_images = new ImageStrip(this);
    m_documents = new DocumentStrip(this);
    m_folders = new FolderStrip(this);
    m_input = new QPlainTextEdit(this);
    m_input->setMaximumHeight(110);
    m_input->installEventFilter(this);
    m_input->viewport()->installEventFilter(this);

    m_attachImage = new QPushButton(tr("Attach image…"), this);
    m_attachImage->setObjectName(QStringLiteral("attachImage"));
    m_attachFile = new QPushButton(tr("Attach file…"), this);
    m_attachFile->setObjectName(QStringLiteral("attachFile"));
    m_attachFile->setToolTip(tr("Attach text, Markdown, code or PDF files: the model reads them with your message "
                                "(or drop them here)"));
    m_attachFile->setEnabled(false);
    m_attachFolder = new QPushButton(tr("Attach folder…"), this);
    m_attachFolder->setObjectName(QStringLiteral("attachFolder"));
    m_attachFolder->setToolTip(tr("Search a folder's text, Markdown, code and PDF files for each question in this chat"));
    m_attachFolder->setEnabled(false);
    m_stats = new QLabel(this);
    // A long statistics line is cut at the row's end rather than widening the window (its
    // tooltip has all of it).
    m_stats->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_stats->setMinimumWidth(0);
    m_settings = new QPushButton(tr("Chat settings…"), this);
    m_settings->setToolTip(tr("System prompt and sampling of this chat"));
    m_regenerate = new QPushButton(tr("Regenerate"), this);
    m_regenerate->setToolTip(tr("Write the last reply again (Ctrl+R)"));
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName(QStringLiteral("stopReply"));
    m_stop->setToolTip(tr("Stop the reply (Esc)"));
    m_send = new QPushButton(tr("Send"), this);
    m_send->setToolTip(tr("Send (Enter)"));

    auto* buttons = new QHBoxLayout();
    for (QWidget* w : {static_cast<QWidget*>(m_attachImage), static_cast<QWidget*>(m_attachFile),
                       static_cast<QWidget*>(m_attachFolder)})
        buttons->addWidget(w);
    buttons->addWidget(m_stats, 1);
    for (QPushButton* b : {m_settings, m_regenerate, m_stop, m_send}) buttons->addWidget(b);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_images);
    layout->addWidget(m_documents);
    layout->addWidget(m_folders);
    layout->addWidget(m_input);
    layout->addLayout(buttons);

    connect(m_send, &QPushButton::clicked, this, [this] { Q_EMIT sendRequested(text()); });
    connect(m_stop, &QPushButton::clicked, this, &ChatComposer::stopRequested);
    connect(m_regenerate, &QPushButton::clicked, this, &ChatComposer::regenerateRequested);
    connect(m_settings, &QPushButton::clicked, this, &ChatComposer::settingsRequested);
    connect(m_attachImage, &QPushButton::clicked, this, &ChatComposer::attachImageRequested);
    connect(m_attachFile, &QPushButton::clicked, this, &ChatComposer::attachFileRequested);
    connect(m_attachFolder, &QPushButton::clicked, this, &ChatComposer::attachFolderRequested);
}

void ChatComposer::setAttachmentTaker(std::function<bool(const QMimeData*)> wants,
                                      std::function<bool(const QMimeData*)> take) {
    m_wants = std::move(wants);
    m_take = std::move(take);
}

QString ChatComposer::text() const { return m_input->toPlainText(); }

void ChatComposer::setText(const QString& text) {
    m_input->setPlainText(text);
    m_input->moveCursor(QTextCursor::End); // typing goes on where the text ends
}

void ChatComposer::insertText(const QString& text) {
    m_input->insertPlainText(text);
    m_input->setFocus();
}

void ChatComposer::clear() {
    m_input->clear();
    m_images->clear();
    m_documents->clear();
}

void ChatComposer::focusInput() { m_input->setFocus(); }

void ChatComposer::setPlaceholder(const QString& text) { m_input->setPlaceholderText(text); }

QString ChatComposer::placeholder() const { return m_input->placeholderText(); }

void ChatComposer::setEditing(bool editing) { m_send->setText(editing ? tr("Resend") : tr("Send")); }

void ChatComposer::setActions(bool send, bool stop, bool regenerate, bool settings) {
    m_send->setEnabled(send);
    m_stop->setEnabled(stop);
    m_regenerate->setEnabled(regenerate);
    m_settings->setEnabled(settings);
}

void ChatComposer::setStats(const QString& text, const QString& toolTip) {
    m_stats->setText(text);
    m_stats->setToolTip(toolTip.isEmpty() ? text : text + QLatin1Char('\n') + toolTip);
}

QString ChatComposer::stats() const { return m_stats->text(); }

bool ChatComposer::eventFilter(QObject* watched, QEvent* event) {
    if ((watched == m_input || watched == m_input->viewport()) && handleDrop(event)) return true;
    if (watched == m_input && event->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(event);
        // A pasted image (or image file) is attached; pasted text goes in as ever.
        if (key->matches(QKeySequence::Paste) && m_take && m_take(QGuiApplication::clipboard()->mimeData()))
            return true;
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && !(key->modifiers() & Qt::ShiftModifier)) {
            Q_EMIT sendRequested(text());
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

// Drops the chat page takes (images, files) are its; anything else is the text box's own.
bool ChatComposer::handleDrop(QEvent* event) {
    if (event->type() == QEvent::DragEnter || event->type() == QEvent::DragMove) {
        auto* drag = static_cast<QDragMoveEvent*>(event);
        if (!m_wants || !m_wants(drag->mimeData())) return false;
        drag->acceptProposedAction();
        return true;
    }
    if (event->type() == QEvent::Drop) {
        auto* drop = static_cast<QDropEvent*>(event);
        if (!m_take || !m_take(drop->mimeData())) return false;
        drop->acceptProposedAction();
        return true;
    }
    return false;
}

} // namespace hearth::ui
