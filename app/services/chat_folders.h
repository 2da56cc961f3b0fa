// The folders of documents attached to the chat shown (as GPT4All's LocalDocs): each read in the
// background (FolderScanner) when the chat is shown or the folder attached, so a file changed
// since is searched as it is now; their state for the view, their files for the chat's retrieval,
// and the list kept with the conversation (Store::setConversationFolders).
#pragma once

#include "services/document_folders.h"

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

namespace hearth::app {

class ChatRetrieval;
class Store;

class ChatFolders : public QObject {
    Q_OBJECT
public:
    struct Folder {
        QString path;
        QString name;          // the folder's own name, as its files are named
        bool reading = true;   // still being read
        bool indexing = false; // read; its files' vectors being computed or read back
        int done = 0;          // files read so far, of `total`
        int total = 0;
        qint64 partsIndexed = 0; // while indexing: chunks embedded so far, of partsToIndex
        qint64 partsToIndex = 0; // (0: not known yet, or all read back from the store)
        QList<FolderFile> files;
        QStringList problems;  // files not read, the folder cut short, or the folder not there
        bool cut = false;
    };

    // `store` may be null (nothing kept).
    explicit ChatFolders(Store* store, QObject* parent = nullptr);

    // The chat's retrieval (may be null): the folders' files are cut as it cuts files, and their
    // vectors are computed (or read back) by it as soon as a folder is read.
    void setRetrieval(ChatRetrieval* retrieval);
    // The chat shown (0: a new one) and its folders, each read anew; reading for the chat shown
    // before stops.
    void show(qint64 conversationId, const QStringList& folders);
    // The chat shown was just created (with paths() already stored with it).
    void setConversationId(qint64 conversationId) { m_conversationId = conversationId; }
    // Attaches a folder to the chat shown and reads it (kept with the chat when it has an id).
    // False (and nothing done) when it is attached already or is not a folder.
    bool attach(const QString& folder);
    void remove(const QString& folder);

    QStringList paths() const;
    const QList<Folder>& folders() const { return m_folders; }
    // The files of the folders read so far, for the chat's retrieval.
    QList<FolderFile> files() const;
    bool reading() const;
    bool indexing() const;

Q_SIGNALS:
    void changed();
    // A folder was read with problems (files left out, cut short, not there): one line each.
    void readWithProblems(const QString& folder, const QStringList& problems);

private:
    void read(Folder& folder);
    void keep();
    void onProgress(quint64 ticket, int done, int total);
    void onScanned(quint64 ticket, const FolderContents& contents);
    void onPrepared(quint64 ticket);
    void onIndexProgress(quint64 ticket, qint64 embedded, qint64 total);
    Folder* find(const QString& path); // among the chat shown's (null: not there, or path empty)

    Store* m_store;
    FolderScanner* m_scanner;
    ChatRetrieval* m_retrieval = nullptr;
    qint64 m_conversationId = 0;
    QList<Folder> m_folders;
    QHash<quint64, QString> m_scans;    // running scans of the chat shown: ticket -> folder path
    QHash<quint64, QString> m_prepares; // the retrieval's work on them: ticket -> folder path
};

} // namespace hearth::app
