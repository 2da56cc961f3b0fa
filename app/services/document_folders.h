// Folders attached to a chat as collections of documents (as GPT4All's LocalDocs): the folder's
// text, Markdown, code and PDF files listed, read, cut into chunks and hashed on a pool thread,
// with progress, a limit on files and characters (a larger folder is cut, and says so), and
// cancel; the GUI thread only receives the results.
#pragma once

#include "services/document_retrieval.h"
#include "services/pool_relay.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <memory>

namespace hearth::app {

// One file of a folder: its name as the model and the citations see it ("<folder>/<path inside>"),
// its index key (documentIndexKey) and its chunks.
struct FolderFile {
    QString name;
    QByteArray key;
    qsizetype characters = 0;
    QList<DocumentChunk> chunks;
};

struct FolderContents {
    QString folder;           // as asked
    QList<FolderFile> files;  // in path order
    QStringList problems;     // a line per file not read (and one when the folder was cut short)
    int skipped = 0;          // files not of a kind read (images, archives, ...)
    bool cut = false;         // the folder held more than the limits allow
    bool cancelled = false;
};

struct FolderLimits {
    int maxFiles = 5000;              // files read at most (those after are left out, and said)
    qsizetype maxChars = 20000000;    // text kept at most, all files together
    ChunkLimits chunking;
};

// Whether a file of this name is read as a document (by its suffix: text, Markdown, code, PDF).
bool isFolderDocument(const QString& fileName);

class FolderScanner : public QObject {
    Q_OBJECT
public:
    explicit FolderScanner(QObject* parent = nullptr);
    ~FolderScanner() override;

    // Lists, reads and chunks `folder` (its subfolders too; hidden ones and links not followed):
    // progress(ticket, done, total) as files are read, then scanned(ticket, contents). A folder
    // that cannot be read comes back with a problem and no files.
    quint64 scan(const QString& folder, const FolderLimits& limits = {});
    // Stops a scan soon: scanned comes with what was read and `cancelled` set.
    void cancel(quint64 ticket);

Q_SIGNALS:
    void progress(quint64 ticket, int done, int total);
    void scanned(quint64 ticket, const hearth::app::FolderContents& contents);

private:
    std::shared_ptr<PoolRelay<FolderScanner>> m_relay; // how pool threads reach the scanner, while it lives
    QHash<quint64, std::shared_ptr<std::atomic<bool>>> m_cancel; // per running scan
    quint64 m_nextTicket = 1;
};

} // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::FolderFile)
Q_DECLARE_METATYPE(hearth::app::FolderContents)
