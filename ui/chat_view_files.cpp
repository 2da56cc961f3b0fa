// The chat page's files and menus: a conversation exported as Markdown or JSON, a JSON export
// imported as a new conversation, and the list's and transcript's context menus.
#include "chat_view.h"

#include "services/chat_export.h"

#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QRegularExpression>
#include <QTextBrowser>

namespace hearth::ui {

namespace {

QString fileNameFor(const QString& title, const QString& suffix) {
    QString base = title.simplified();
    base.replace(QRegularExpression(QStringLiteral("[^\\w\\- ]+")), QStringLiteral(""));
    base = base.left(60).trimmed();
    return (base.isEmpty() ? QStringLiteral("chat") : base) + suffix;
}

} // namespace

void ChatView::exportConversation(qint64 id, const QString& path, const QString& format) {
    const QString f = format.toLower();
    if (f != QStringLiteral("markdown") && f != QStringLiteral("md") && f != QStringLiteral("json")) {
        Q_EMIT exportFinished(path, tr("unknown export format \"%1\" (markdown or json)").arg(format));
        return;
    }
    ExportJob job;
    job.path = path;
    job.format = f == QStringLiteral("json") ? f : QStringLiteral("markdown");
    job.conversation = m_conversations.value(id);
    job.conversation.id = id;
    if (id == m_conversationId) {
        job.conversation.systemPrompt = m_systemPrompt;
        if (job.conversation.title.isEmpty()) job.conversation.title = tr("Chat");
    }
    m_exports.insert(m_store->messages(id), job);
}

void ChatView::finishExport(const ExportJob& job, const QList<app::StoredMessage>& messages) {
    // The file gets the format's ending when the name typed lacks it.
    const Result<QString> written = app::writeChatExport({job.conversation, messages}, job.path, job.format);
    const QString path = written ? *written : app::exportPathFor(job.path, job.format);
    const QString error = written ? QString() : QString::fromStdString(written.status().message());
    Q_EMIT exportFinished(path, error);
    Q_EMIT statusMessage(error.isEmpty() ? tr("Exported to %1").arg(path) : tr("Could not export: %1").arg(error),
                         error.isEmpty() ? StatusLevel::Info : StatusLevel::Error);
}

void ChatView::importConversation(const QString& path) {
    auto refuse = [this](const QString& error) {
        Q_EMIT importFinished(0, error);
        Q_EMIT statusMessage(tr("Could not import: %1").arg(error), StatusLevel::Error);
    };
    if (m_importTicket) return refuse(tr("an import is already running"));
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return refuse(tr("cannot read %1: %2").arg(path, file.errorString()));
    constexpr qint64 kMaxBytes = 256ll << 20;
    if (file.size() > kMaxBytes) return refuse(tr("%1 is larger than 256 MiB").arg(path));
    Result<app::ExportedChat> chat = app::chatFromJson(file.readAll());
    if (!chat) return refuse(QString::fromStdString(chat.status().message()));
    app::Conversation draft = chat->conversation;
    draft.id = 0;
    if (draft.title.trimmed().isEmpty()) draft.title = QFileInfo(path).completeBaseName();
    if (draft.samplingJson.isEmpty()) draft.samplingJson = QStringLiteral("{}");
    m_importMessages = chat->messages;
    m_importTicket = m_store->createConversation(draft);
}

void ChatView::exportWithDialog(qint64 id) {
    if (id == 0) return;
    const QString title = m_conversations.value(id).title;
    QString filter;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export chat"), fileNameFor(title, QStringLiteral(".md")),
        tr("Markdown (*.md);;JSON, can be imported again (*.json)"), &filter);
    if (path.isEmpty()) return;
    const bool json = path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive) || filter.contains(QStringLiteral("json"));
    exportConversation(id, path, json ? QStringLiteral("json") : QStringLiteral("markdown"));
}

void ChatView::importWithDialog() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Import chat"), QString(), tr("Hearth chat export (*.json)"));
    if (!path.isEmpty()) importConversation(path);
}

void ChatView::showListMenu(qint64 id, const QPoint& globalPos) {
    const bool item = id != 0;
    QMenu menu(this);
    QAction* rename = nullptr;
    QAction* settings = nullptr;
    QAction* exportMd = nullptr;
    QAction* exportJson = nullptr;
    QAction* remove = nullptr;
    if (item) {
        rename = menu.addAction(tr("Rename…"));
        settings = menu.addAction(tr("Chat settings…"));
        exportMd = menu.addAction(tr("Export as Markdown…"));
        exportJson = menu.addAction(tr("Export as JSON…"));
        menu.addSeparator();
    }
    QAction* import = menu.addAction(tr("Import chat…"));
    if (item) {
        menu.addSeparator();
        remove = menu.addAction(tr("Delete"));
    }
    QAction* chosen = menu.exec(globalPos);
    if (!chosen) return;
    if (chosen == import) {
        importWithDialog();
    } else if (chosen == rename) {
        bool ok = false;
        const QString title = QInputDialog::getText(this, tr("Rename chat"), tr("Title"), QLineEdit::Normal,
                                                    m_conversations.value(id).title, &ok);
        if (ok) renameConversation(id, title);
    } else if (chosen == settings) {
        if (id != m_conversationId) openConversation(id);
        openChatSettings();
    } else if (chosen == exportMd || chosen == exportJson) {
        const QString suffix = chosen == exportJson ? QStringLiteral(".json") : QStringLiteral(".md");
        const QString path = QFileDialog::getSaveFileName(this, tr("Export chat"),
                                                          fileNameFor(m_conversations.value(id).title, suffix));
        if (!path.isEmpty())
            exportConversation(id, path, chosen == exportJson ? QStringLiteral("json") : QStringLiteral("markdown"));
    } else if (chosen == remove) {
        if (QMessageBox::question(this, tr("Delete chat"),
                                  tr("Delete \"%1\" and all its messages?").arg(m_conversations.value(id).title)) ==
            QMessageBox::Yes)
            deleteConversation(id);
    }
}

void ChatView::showTranscriptMenu(const QPoint& at) {
    QMenu* menu = m_transcript->createStandardContextMenu(at);
    menu->addSeparator();
    QAction* copy = menu->addAction(tr("Copy last reply"), QKeySequence(QStringLiteral("Ctrl+Shift+C")));
    QAction* regen = menu->addAction(tr("Regenerate"), QKeySequence(QStringLiteral("Ctrl+R")));
    regen->setEnabled(canRegenerate());
    QAction* exportChat = menu->addAction(tr("Export chat…"), QKeySequence(QStringLiteral("Ctrl+E")));
    exportChat->setEnabled(m_conversationId != 0);
    QAction* chosen = menu->exec(m_transcript->viewport()->mapToGlobal(at));
    delete menu;
    if (chosen == copy) copyLastReply();
    else if (chosen == regen) regenerate();
    else if (chosen == exportChat) exportWithDialog(m_conversationId);
}

} // namespace hearth::ui
