// The chat's folders of documents (see chat_folders.h): scans started and stopped as chats are
// shown, their progress and results kept per folder, the list written to the store.
#include "services/chat_folders.h"

#include "services/chat_retrieval.h"
#include "services/store.h"

#include <QDir>
#include <QFileInfo>

namespace hearth::app {

namespace {

QString folderName(const QString& path) {
    const QString name = QDir(path).dirName();
    return name.isEmpty() ? path : name;
}

} // namespace

ChatFolders::ChatFolders(Store* store, QObject* parent)
    : QObject(parent), m_store(store), m_scanner(new FolderScanner(this)) {
    connect(m_scanner, &FolderScanner::progress, this, &ChatFolders::onProgress);
    connect(m_scanner, &FolderScanner::scanned, this, &ChatFolders::onScanned);
}

void ChatFolders::setRetrieval(ChatRetrieval* retrieval) {
    if (m_retrieval) disconnect(m_retrieval, nullptr, this, nullptr);
    m_retrieval = retrieval;
    if (!m_retrieval) return;
    connect(m_retrieval, &ChatRetrieval::prepared, this, &ChatFolders::onPrepared);
    connect(m_retrieval, &ChatRetrieval::progress, this, &ChatFolders::onIndexProgress);
}

void ChatFolders::show(qint64 conversationId, const QStringList& folders) {
    for (auto it = m_scans.cbegin(); it != m_scans.cend(); ++it) m_scanner->cancel(it.key());
    m_scans.clear();
    m_prepares.clear(); // what it computes is kept all the same
    m_conversationId = conversationId;
    m_folders.clear();
    for (const QString& path : folders) {
        if (paths().contains(path)) continue;
        m_folders.append(Folder{path, folderName(path)});
        read(m_folders.last());
    }
    Q_EMIT changed();
}

bool ChatFolders::attach(const QString& folder) {
    const QString path = QDir::cleanPath(QFileInfo(folder).absoluteFilePath());
    if (paths().contains(path) || !QFileInfo(path).isDir()) return false;
    m_folders.append(Folder{path, folderName(path)});
    read(m_folders.last());
    keep();
    Q_EMIT changed();
    return true;
}

void ChatFolders::remove(const QString& folder) {
    for (qsizetype i = 0; i < m_folders.size(); ++i) {
        if (m_folders[i].path != folder) continue;
        for (auto it = m_scans.begin(); it != m_scans.end();) {
            if (it.value() == folder) {
                m_scanner->cancel(it.key());
                it = m_scans.erase(it);
            } else {
                ++it;
            }
        }
        m_folders.removeAt(i);
        keep();
        Q_EMIT changed();
        return;
    }
}

QStringList ChatFolders::paths() const {
    QStringList out;
    for (const Folder& f : m_folders) out << f.path;
    return out;
}

QList<FolderFile> ChatFolders::files() const {
    QList<FolderFile> out;
    for (const Folder& f : m_folders) out += f.files;
    return out;
}

bool ChatFolders::indexing() const {
    for (const Folder& f : m_folders)
        if (f.indexing) return true;
    return false;
}

bool ChatFolders::reading() const {
    for (const Folder& f : m_folders)
        if (f.reading) return true;
    return false;
}

void ChatFolders::read(Folder& folder) {
    folder.reading = true;
    FolderLimits limits;
    if (m_retrieval) limits.chunking = m_retrieval->chunking();
    m_scans.insert(m_scanner->scan(folder.path, limits), folder.path);
}

void ChatFolders::keep() {
    if (m_store && m_conversationId != 0) m_store->setConversationFolders(m_conversationId, paths());
}

ChatFolders::Folder* ChatFolders::find(const QString& path) {
    if (path.isEmpty()) return nullptr;
    for (Folder& f : m_folders)
        if (f.path == path) return &f;
    return nullptr;
}

void ChatFolders::onProgress(quint64 ticket, int done, int total) {
    Folder* f = find(m_scans.value(ticket));
    if (!f) return;
    f->done = done;
    f->total = total;
    Q_EMIT changed();
}

void ChatFolders::onScanned(quint64 ticket, const FolderContents& contents) {
    Folder* f = find(m_scans.take(ticket));
    if (!f || contents.cancelled) return; // a chat no longer shown, or a folder removed
    f->reading = false;
    f->files = contents.files;
    f->problems = contents.problems;
    f->cut = contents.cut;
    f->done = f->total;
    f->partsIndexed = f->partsToIndex = 0;
    const QString path = f->path;
    const QStringList problems = f->problems;
    if (m_retrieval && !f->files.isEmpty()) {
        f->indexing = true;
        const quint64 prepare = m_retrieval->prepare(f->files, m_conversationId); // (signals only later)
        m_prepares.insert(prepare, path);
    }
    if (!problems.isEmpty()) Q_EMIT readWithProblems(path, problems);
    Q_EMIT changed();
}

void ChatFolders::onPrepared(quint64 ticket) {
    Folder* f = find(m_prepares.take(ticket));
    if (!f) return;
    f->indexing = false;
    Q_EMIT changed();
}

void ChatFolders::onIndexProgress(quint64 ticket, qint64 embedded, qint64 total) {
    Folder* f = find(m_prepares.value(ticket));
    if (!f) return;
    f->partsIndexed = embedded;
    f->partsToIndex = total;
    Q_EMIT changed();
}

} // namespace hearth::app
