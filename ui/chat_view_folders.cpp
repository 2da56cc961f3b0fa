// The chat page's folders of documents: the Attach folder… button, the strip that shows them, and
// the folders following the chat shown (app::ChatFolders reads them and keeps the list).
#include "chat_composer.h"
#include "chat_view.h"
#include "folder_strip.h"

#include "services/chat_folders.h"
#include "services/chat_retrieval.h"

#include <QFileDialog>
#include <QPushButton>

namespace hearth::ui {

void ChatView::setUpFolders() {
    connect(m_composer, &ChatComposer::attachFolderRequested, this, &ChatView::attachFolderWithDialog);
}

void ChatView::setFolders(app::ChatFolders* folders) {
    if (m_folders) disconnect(m_folders, nullptr, this, nullptr);
    m_folders = folders;
    m_composer->folders()->setFolders(folders);
    m_composer->attachFolderButton()->setEnabled(folders != nullptr && m_retrieval != nullptr);
    if (!m_folders) return;
    m_folders->setRetrieval(m_retrieval);
    m_folders->show(m_conversationId, m_conversations.value(m_conversationId).folders);
    connect(m_folders, &app::ChatFolders::readWithProblems, this, [this](const QString& folder, const QStringList& problems) {
        Q_EMIT statusMessage(tr("%1: %2").arg(folder, problems.mid(0, 3).join(QStringLiteral("; "))), StatusLevel::Warning);
    });
}

bool ChatView::attachFolder(const QString& path) {
    if (!m_folders || !m_retrieval) {
        Q_EMIT statusMessage(tr("Folders cannot be attached here"), StatusLevel::Warning);
        return false;
    }
    if (!m_folders->attach(path)) {
        Q_EMIT statusMessage(tr("%1 is attached already or is not a folder").arg(path), StatusLevel::Warning);
        return false;
    }
    return true;
}

void ChatView::attachFolderWithDialog() {
    const QString path = QFileDialog::getExistingDirectory(this, tr("Attach a folder"));
    if (!path.isEmpty()) attachFolder(path);
}

QString ChatView::folderLine(int index) const { return m_composer->folders()->textAt(index); }

} // namespace hearth::ui
