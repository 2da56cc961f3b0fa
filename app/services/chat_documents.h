// Files attached to chat messages as text: what a message may carry, how a file's text is read
// (text, Markdown and code as UTF-8; PDF through Poppler), how the model is given it, and
// DocumentReader, which reads the files a user picks off the GUI thread.
#pragma once

#include "services/pool_relay.h"
#include "services/service_types.h"

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>
#include <variant>

namespace hearth::app {

// A file larger than this is not read at all; the text one message may carry (all its files
// together); and how many files.
inline constexpr qint64 kMaxDocumentFileBytes = 64ll << 20;
inline constexpr qsizetype kMaxDocumentChars = 400000;
inline constexpr int kMaxDocumentsPerMessage = 16;
// A file longer than this is not given to the model whole: it is indexed, and the parts that
// match each question go with it (ChatRetrieval).
inline constexpr qsizetype kInlineDocumentChars = 12000;

// The file's text, or why it cannot be attached (one line naming the file): larger than
// kMaxDocumentFileBytes, unreadable, not text (binary, not UTF-8), a PDF that is encrypted,
// damaged or holds no text (a scan), or a text over kMaxDocumentChars.
std::variant<ChatDocument, QString> readDocument(const QString& path);
// The same for bytes already read (`name` names them).
std::variant<ChatDocument, QString> documentFromBytes(const QByteArray& bytes, const QString& name);

// What the model reads for a message with files: each file as <document name="...">…</document>
// (the name's quotes and angle brackets escaped; an excerpt's part="N" added; an indexed file left
// out, its excerpts standing for it), then the message's own text.
QString messageTextForModel(const QString& content, const QList<ChatDocument>& documents);

// A message's files as stored: [{"name", "text"}] ("" for none), and back (a value that does not
// read gives none).
QString documentsJson(const QList<ChatDocument>& documents);
QList<ChatDocument> documentsFromJson(const QString& json);
// The same array as a value (chat exports), and one file read back from its object.
QJsonArray documentsArray(const QList<ChatDocument>& documents);
ChatDocument documentFrom(const QJsonObject& object);

// Reads files on a pool thread: each is checked (size first, then its contents) and the ones that
// can be attached come back in order, with a line per file that could not be.
class DocumentReader : public QObject {
    Q_OBJECT
public:
    explicit DocumentReader(QObject* parent = nullptr);
    ~DocumentReader() override;

    // -> filesRead(ticket, ...). At most `room` files and `roomChars` characters come back.
    quint64 readFiles(const QStringList& paths, int room = kMaxDocumentsPerMessage,
                      qsizetype roomChars = kMaxDocumentChars);

Q_SIGNALS:
    void filesRead(quint64 ticket, const QList<hearth::app::ChatDocument>& documents, const QStringList& problems);

private:
    std::shared_ptr<PoolRelay<DocumentReader>> m_relay; // how pool threads reach the reader, while it lives
    quint64 m_nextTicket = 1;
};

} // namespace hearth::app
