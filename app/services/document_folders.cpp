// Folders of documents read on a pool thread (see document_folders.h): listing with the limits,
// each file read as an attached file is (readDocument), chunked and hashed, progress posted every
// few files, the result posted once.
#include "services/document_folders.h"

#include "services/chat_documents.h"
#include "services/chat_retrieval.h"

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QHash>
#include <QLocale>
#include <QSet>
#include <QThreadPool>

#include <algorithm>
#include <atomic>
#include <functional>

namespace hearth::app {

namespace {

constexpr int kMaxProblemLines = 20; // files not read, named one by one; the rest counted

const QSet<QString>& documentSuffixes() {
    static const QSet<QString> suffixes{
        QStringLiteral("txt"),  QStringLiteral("md"),   QStringLiteral("markdown"), QStringLiteral("rst"),
        QStringLiteral("pdf"),  QStringLiteral("csv"),  QStringLiteral("tsv"),      QStringLiteral("json"),
        QStringLiteral("xml"),  QStringLiteral("html"), QStringLiteral("htm"),      QStringLiteral("log"),
        QStringLiteral("tex"),  QStringLiteral("org"),  QStringLiteral("adoc"),     QStringLiteral("c"),
        QStringLiteral("cc"),   QStringLiteral("cpp"),  QStringLiteral("cxx"),      QStringLiteral("h"),
        QStringLiteral("hpp"),  QStringLiteral("py"),   QStringLiteral("js"),       QStringLiteral("ts"),
        QStringLiteral("rs"),   QStringLiteral("go"),   QStringLiteral("java"),     QStringLiteral("kt"),
        QStringLiteral("swift"), QStringLiteral("rb"),  QStringLiteral("php"),      QStringLiteral("sh"),
        QStringLiteral("sql"),  QStringLiteral("yaml"), QStringLiteral("yml"),      QStringLiteral("toml"),
        QStringLiteral("ini"),  QStringLiteral("cmake"), QStringLiteral("cs"),      QStringLiteral("lua")};
    return suffixes;
}


// The scan itself, on a pool thread: `cancelled` is asked now and then, `progress` told.
FolderContents scanFolder(const QString& folder, const FolderLimits& limits, const std::function<bool()>& cancelled,
                          const std::function<void(int, int)>& progress) {
    FolderContents out;
    out.folder = folder;
    const QFileInfo info(folder);
    if (!info.isDir() || !info.isReadable()) {
        out.problems << QObject::tr("%1 is not a folder that can be read").arg(folder);
        return out;
    }
    const QDir root(info.absoluteFilePath());
    const QString shownRoot = root.dirName().isEmpty() ? root.absolutePath() : root.dirName();

    // The files to read, in path order; listing stops once the limit is passed.
    QStringList paths;
    QDirIterator it(root.absolutePath(), QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        const QString inside = root.relativeFilePath(path);
        if (inside.startsWith(QLatin1Char('.')) || inside.contains(QStringLiteral("/."))) continue; // hidden
        if (it.fileInfo().isSymLink()) continue;
        if (!isFolderDocument(path)) {
            ++out.skipped;
            continue;
        }
        paths << path;
        if (paths.size() > limits.maxFiles) break;
        if ((paths.size() & 255) == 0 && cancelled()) {
            out.cancelled = true;
            return out;
        }
    }
    if (paths.size() > limits.maxFiles) {
        out.cut = true;
        paths.resize(limits.maxFiles);
    }
    std::sort(paths.begin(), paths.end());
    const int total = int(paths.size());
    progress(0, total);

    qsizetype chars = 0;
    int unread = 0;
    QElapsedTimer sincePost;
    sincePost.start();
    for (int i = 0; i < total; ++i) {
        if (cancelled()) {
            out.cancelled = true;
            break;
        }
        std::variant<ChatDocument, QString> read = readDocument(paths[i]);
        if (const QString* why = std::get_if<QString>(&read)) {
            if (out.problems.size() < kMaxProblemLines) out.problems << *why;
            ++unread;
        } else {
            ChatDocument d = std::get<ChatDocument>(std::move(read));
            if (chars + d.text.size() > limits.maxChars) {
                out.cut = true;
                break;
            }
            chars += d.text.size();
            d.name = shownRoot + QLatin1Char('/') + root.relativeFilePath(paths[i]);
            if (!d.text.trimmed().isEmpty()) {
                FolderFile f{d.name, documentIndexKey(d), d.text.size(), chunkDocument(d, limits.chunking)};
                out.files << std::move(f);
            }
        }
        if (sincePost.elapsed() >= 100 || i + 1 == total) {
            progress(i + 1, total);
            sincePost.restart();
        }
    }
    if (unread > kMaxProblemLines)
        out.problems << QObject::tr("%1 more files could not be read").arg(unread - kMaxProblemLines);
    if (out.cut)
        out.problems << QObject::tr("%1 holds more than can be searched: %2 files (at most %3 files and %4 characters)")
                            .arg(shownRoot)
                            .arg(out.files.size())
                            .arg(limits.maxFiles)
                            .arg(QLocale().toString(limits.maxChars));
    return out;
}

} // namespace

bool isFolderDocument(const QString& fileName) {
    return documentSuffixes().contains(QFileInfo(fileName).suffix().toLower());
}

FolderScanner::FolderScanner(QObject* parent)
    : QObject(parent), m_relay(std::make_shared<PoolRelay<FolderScanner>>(this)) {
    qRegisterMetaType<FolderContents>();
}

FolderScanner::~FolderScanner() {
    m_relay->detach();
    for (const auto& flag : std::as_const(m_cancel)) flag->store(true); // the pool stops soon
}

void FolderScanner::cancel(quint64 ticket) {
    if (auto flag = m_cancel.value(ticket)) flag->store(true);
}

quint64 FolderScanner::scan(const QString& folder, const FolderLimits& limits) {
    const quint64 ticket = m_nextTicket++;
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    m_cancel.insert(ticket, cancelled);
    QThreadPool::globalInstance()->start([relay = m_relay, cancelled, ticket, folder, limits] {
        FolderContents contents = scanFolder(
            folder, limits, [&cancelled] { return cancelled->load(); },
            [&relay, ticket](int done, int total) {
                relay->post([ticket, done, total](FolderScanner* s) { Q_EMIT s->progress(ticket, done, total); });
            });
        contents.cancelled = contents.cancelled || cancelled->load();
        relay->post([ticket, contents](FolderScanner* s) { // nowhere when the scanner is gone
            s->m_cancel.remove(ticket);
            Q_EMIT s->scanned(ticket, contents);
        });
    });
    return ticket;
}

} // namespace hearth::app
