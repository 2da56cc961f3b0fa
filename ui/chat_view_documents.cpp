// The chat page's attached files: the Attach file… button, the reader's results into the strip
// above the input (refusals said with the reason), and the files shown with their message; and
// text put into the input from elsewhere (an MCP prompt).
#include "chat_composer.h"
#include "chat_view.h"
#include "document_strip.h"

#include "services/chat_documents.h"
#include "services/chat_folders.h"
#include "services/chat_retrieval.h"

#include <QFileDialog>
#include <QLocale>
#include <QPushButton>

namespace hearth::ui {

void ChatView::setUpDocuments() {
    connect(m_composer, &ChatComposer::attachFileRequested, this, &ChatView::attachDocumentsWithDialog);
}

void ChatView::setDocumentReader(app::DocumentReader* reader) {
    if (m_documentReader) disconnect(m_documentReader, nullptr, this, nullptr);
    m_documentReader = reader;
    m_composer->attachFileButton()->setEnabled(reader != nullptr);
    if (!reader) return;
    connect(m_documentReader, &app::DocumentReader::filesRead, this,
            [this](quint64, const QList<app::ChatDocument>& documents, const QStringList& problems) {
                addDocuments(documents, problems);
            });
}

void ChatView::insertDraft(const QString& text) {
    m_composer->insertText(text);
}

QString ChatView::draftText() const { return m_composer->text(); }

void ChatView::addDocuments(const QList<app::ChatDocument>& documents, const QStringList& problems) {
    // Checked here: other files may have been attached since these were read.
    QStringList refused = problems;
    QList<app::ChatDocument> ok;
    DocumentStrip* strip = m_composer->documents();
    qsizetype chars = strip->characters();
    for (const app::ChatDocument& d : documents) {
        if (strip->count() + ok.size() >= app::kMaxDocumentsPerMessage)
            refused << tr("%1 was not attached: a message holds at most %2 files").arg(d.name).arg(app::kMaxDocumentsPerMessage);
        else if (chars + d.text.size() > app::kMaxDocumentChars)
            refused << tr("%1 was not attached: the files of a message hold at most %2 characters")
                           .arg(d.name, QLocale().toString(app::kMaxDocumentChars));
        else if (d.text.trimmed().isEmpty())
            refused << tr("%1 is empty").arg(d.name);
        else {
            chars += d.text.size();
            ok << app::ChatDocument{d.name, d.text};
        }
    }
    strip->addDocuments(ok);
    if (!refused.isEmpty())
        Q_EMIT statusMessage(tr("Not attached: %1").arg(refused.join(QStringLiteral("; "))), StatusLevel::Warning);
}

void ChatView::attachDocuments(const QStringList& paths) {
    if (paths.isEmpty()) return;
    if (!m_documentReader) {
        Q_EMIT statusMessage(tr("Files cannot be attached here"), StatusLevel::Warning);
        return;
    }
    const int room = app::kMaxDocumentsPerMessage - m_composer->documents()->count();
    if (room <= 0) {
        Q_EMIT statusMessage(tr("A message holds at most %1 files").arg(app::kMaxDocumentsPerMessage),
                             StatusLevel::Warning);
        return;
    }
    m_documentReader->readFiles(paths, room, app::kMaxDocumentChars - m_composer->documents()->characters());
}

void ChatView::attachDocumentsWithDialog() {
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Attach files"), QString(),
        tr("Documents (*.txt *.md *.markdown *.pdf *.csv *.json *.xml *.html *.log *.c *.cc *.cpp *.h *.hpp *.py "
           "*.js *.ts *.rs *.go *.java *.kt *.swift *.rb *.php *.sh *.sql *.yaml *.yml *.toml *.ini);;All files (*)"));
    if (!paths.isEmpty()) attachDocuments(paths);
}

void ChatView::setRetrieval(app::ChatRetrieval* retrieval) {
    if (m_retrieval) disconnect(m_retrieval, nullptr, this, nullptr);
    m_retrieval = retrieval;
    m_composer->attachFolderButton()->setEnabled(m_folders != nullptr && m_retrieval != nullptr);
    if (m_folders) m_folders->setRetrieval(m_retrieval);
    if (!m_retrieval) return;
    connect(m_retrieval, &app::ChatRetrieval::retrieved, this,
            [this](quint64 ticket, const QList<app::ChatDocument>& excerpts) {
                if (ticket != m_retrieveTicket) return;
                m_retrieveTicket = 0;
                app::StoredMessage question = std::exchange(m_searching, {});
                question.documents += excerpts;
                storeUserMessage(question);
            });
}

// Under a reply: the parts of the chat's long files that went with its question.
QString ChatView::sourcesMarkdown(int replyIndex) const {
    int question = replyIndex - 1;
    while (question >= 0 && m_messages[question].role != QStringLiteral("user")) --question;
    if (question < 0) return {};
    QStringList parts;
    for (const app::ChatDocument& d : m_messages[question].documents)
        if (d.part > 0) parts << tr("%1 (part %2)").arg(d.name).arg(d.part);
    if (parts.isEmpty()) return {};
    return tr("*Sources: %1*").arg(parts.join(QStringLiteral(" · "))) + QStringLiteral("\n\n");
}

QList<app::ChatDocument> ChatView::attachedDocuments() const { return m_composer->documents()->documents(); }

void ChatView::removeDocument(int index) { m_composer->documents()->removeAt(index); }

QList<app::ChatDocument> ChatView::messageDocuments(int index) const {
    return index >= 0 && index < m_messages.size() ? m_messages[index].documents : QList<app::ChatDocument>();
}

// A line per file above the message's text: its name and length (the text itself is the model's).
QString ChatView::documentsMarkdown(const QList<app::ChatDocument>& documents) const {
    QString md;
    for (const app::ChatDocument& d : documents) {
        if (d.part > 0) continue; // an excerpt: cited under the answer
        QString name = d.name;
        name.replace(QLatin1Char('\\'), QStringLiteral("\\\\"))
            .replace(QLatin1Char('*'), QStringLiteral("\\*"))
            .replace(QLatin1Char('_'), QStringLiteral("\\_"))
            .replace(QLatin1Char('`'), QStringLiteral("\\`"))
            .replace(QLatin1Char('['), QStringLiteral("\\["))
            .replace(QLatin1Char('<'), QStringLiteral("&lt;"));
        md += tr("Attached file: **%1** · %2 characters").arg(name, QLocale().toString(d.text.size())) +
              (d.indexed ? tr(" · searched for each question") : QString()) + QStringLiteral("\n\n");
    }
    return md;
}

} // namespace hearth::ui
