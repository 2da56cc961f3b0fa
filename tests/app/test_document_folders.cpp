// Folders of documents read in the background (FolderScanner): a folder of 1,000 files listed,
// read, chunked and hashed exactly (names, order, what is skipped and why) while the GUI thread's
// longest stall is measured; a quoted sentence of one file found first among them all by the
// chat's retrieval; the limits (a folder of 12,000 files is cut at 5,000, and says so), a path
// that is no folder, and cancel.
#include "services/chat_retrieval.h"
#include "services/document_folders.h"

#include "test_support.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

using namespace hearth::app;

namespace {

bool writeFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

// File i's text: a few paragraphs of common words and one sentence of its own.
QString fileText(int i) {
    static const QStringList words{QStringLiteral("river"), QStringLiteral("stone"), QStringLiteral("market"),
                                   QStringLiteral("lamp"),  QStringLiteral("winter"), QStringLiteral("letter"),
                                   QStringLiteral("garden"), QStringLiteral("engine"), QStringLiteral("harbour")};
    QString text = QStringLiteral("# Notes %1\n\n").arg(i);
    for (int p = 0; p < 3 + i % 4; ++p) {
        for (int w = 0; w < 40; ++w) text += words[(i * 7 + p * 3 + w) % words.size()] + QLatin1Char(' ');
        text += QStringLiteral(".\n\n");
    }
    text += QStringLiteral("The keeper of ledger %1 wrote zq%2 beside the door.\n").arg(i).arg(i * 7919 % 100003);
    return text;
}

struct Scan {
    FolderContents contents;
    QList<QPair<int, int>> progress;
    qint64 longestStallMs = 0;
    bool done = false;
};

// Runs a scan to its end, the GUI thread ticking every millisecond meanwhile to measure its stalls.
Scan runScan(FolderScanner& scanner, const QString& folder, const FolderLimits& limits = {}, bool cancelAtOnce = false) {
    Scan out;
    QSignalSpy scanned(&scanner, &FolderScanner::scanned);
    QObject guard;
    QObject::connect(&scanner, &FolderScanner::progress, &guard,
                     [&out](quint64, int done, int total) { out.progress.append({done, total}); });
    QElapsedTimer sinceTick;
    QTimer tick;
    tick.setInterval(1);
    QObject::connect(&tick, &QTimer::timeout, &guard, [&] {
        out.longestStallMs = std::max(out.longestStallMs, sinceTick.restart());
    });
    const quint64 ticket = scanner.scan(folder, limits);
    if (cancelAtOnce) scanner.cancel(ticket);
    sinceTick.start();
    tick.start();
    out.done = scanned.wait(60000);
    tick.stop();
    if (out.done) out.contents = scanned.first().at(1).value<FolderContents>();
    return out;
}

} // namespace

class TestDocumentFolders : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void documentFolderOfAThousandFiles() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString root = dir.filePath(QStringLiteral("notes"));
        QStringList expected; // names the scan should give, in order
        for (int i = 0; i < 1000; ++i) {
            const QString inside = QStringLiteral("part%1/ledger%2.%3")
                                       .arg(i % 10)
                                       .arg(i, 4, 10, QLatin1Char('0'))
                                       .arg(i % 3 == 0 ? QStringLiteral("txt") : QStringLiteral("md"));
            QVERIFY(writeFile(root + QLatin1Char('/') + inside, fileText(i).toUtf8()));
            expected << QStringLiteral("notes/") + inside;
        }
        const QString name637 = expected[637];
        expected.sort();
        const qsizetype at637 = expected.indexOf(name637);
        for (int i = 0; i < 10; ++i) // not documents: skipped by their kind
            QVERIFY(writeFile(root + QStringLiteral("/images/photo%1.png").arg(i), QByteArray("\x89PNG\r\n\x1a\n", 8)));
        QVERIFY(writeFile(root + QStringLiteral("/.git/HEAD.txt"), "hidden"));         // hidden: not listed
        QVERIFY(writeFile(root + QStringLiteral("/part0/.draft.md"), "hidden too"));   // likewise
        QVERIFY(writeFile(root + QStringLiteral("/broken.txt"), QByteArray("ok \xff\xfe bytes")));  // not UTF-8
        QVERIFY(writeFile(root + QStringLiteral("/blank.md"), "  \n\n "));             // nothing to search
        QVERIFY(QFile::link(root + QStringLiteral("/part1/ledger0001.md"), root + QStringLiteral("/link.md")));

        FolderScanner scanner;
        const Scan scan = runScan(scanner, root, FolderLimits{5000, 20000000, {400, 80}});
        QVERIFY(scan.done);
        const FolderContents& c = scan.contents;
        qInfo("1,000 files read in the background; the GUI thread's longest stall: %lld ms", scan.longestStallMs);
        QVERIFY2(scan.longestStallMs < 1000, "the GUI thread was held up"); // a hang guard, not a speed limit
        QVERIFY(!c.cut && !c.cancelled);
        QCOMPARE(c.skipped, 10);
        QCOMPARE(c.problems.size(), 2); // broken.txt, blank.md
        QVERIFY(c.problems[0].contains(QStringLiteral("blank.md")) || c.problems[1].contains(QStringLiteral("blank.md")));
        QVERIFY(c.problems.join(QLatin1Char('\n')).contains(QStringLiteral("broken.txt")));
        QStringList names;
        for (const FolderFile& f : c.files) names << f.name;
        QCOMPARE(names, expected);
        const FolderFile& sample = c.files[at637];
        const ChatDocument doc{name637, fileText(637), true, 0};
        QCOMPARE(sample.key, documentIndexKey(doc));
        QCOMPARE(sample.characters, doc.text.size());
        const QList<DocumentChunk> chunks = chunkDocument(doc, {400, 80});
        QCOMPARE(sample.chunks.size(), chunks.size());
        for (qsizetype k = 0; k < chunks.size(); ++k) {
            QCOMPARE(sample.chunks[k].document, name637);
            QCOMPARE(sample.chunks[k].start, chunks[k].start);
            QCOMPARE(sample.chunks[k].text, chunks[k].text);
        }
        QVERIFY(!scan.progress.isEmpty());
        QCOMPARE(scan.progress.first(), (QPair<int, int>{0, 1002}));
        QCOMPARE(scan.progress.last(), (QPair<int, int>{1002, 1002}));
        for (qsizetype k = 1; k < scan.progress.size(); ++k) QVERIFY(scan.progress[k].first >= scan.progress[k - 1].first);

        // The chat's retrieval over the folder: a sentence of file 637 finds its chunk first.
        ChatRetrieval retrieval;
        retrieval.setChunking({400, 80}, 3);
        QSignalSpy retrieved(&retrieval, &ChatRetrieval::retrieved);
        QElapsedTimer asked;
        asked.start();
        retrieval.retrieve(QStringLiteral("Who wrote zq%1 beside the door?").arg(637 * 7919 % 100003), {}, 0, c.files);
        const qint64 returnedMs = asked.elapsed();
        QVERIFY(retrieved.wait(30000));
        qInfo("retrieval over %lld files returned in %lld ms", static_cast<long long>(c.files.size()), returnedMs);
        const auto excerpts = retrieved.first().at(1).value<QList<ChatDocument>>();
        QCOMPARE(excerpts.size(), 3);
        QCOMPARE(excerpts[0].name, name637);
        QVERIFY(excerpts[0].text.contains(QStringLiteral("ledger 637 wrote")));
        QVERIFY(excerpts[0].part >= 1);
    }

    void documentFolderLimitsAndCancel() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        FolderScanner scanner;
        Scan none = runScan(scanner, dir.filePath(QStringLiteral("missing")));
        QVERIFY(none.done);
        QVERIFY(none.contents.files.isEmpty());
        QCOMPARE(none.contents.problems.size(), 1);
        QVERIFY(none.contents.problems[0].contains(QStringLiteral("not a folder")));

        // 12,000 files (empty: the quickest to make; a folder of any size past the limit is listed
        // only up to it): 5,000 are tried, each refused as empty, 20 named and the rest counted,
        // and the folder said to hold more than can be searched.
        const QString many = dir.filePath(QStringLiteral("many"));
        QVERIFY(QDir().mkpath(many));
        QElapsedTimer written;
        written.start();
        const QByteArray manyPath = QFile::encodeName(many);
        for (int i = 0; i < 12000; ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "/n%06d.txt", i);
            const int fd = ::open((manyPath + name).constData(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            QVERIFY(fd >= 0);
            ::close(fd);
        }
        qInfo("12,000 files made in %lld ms", static_cast<long long>(written.elapsed()));
        Scan big = runScan(scanner, many);
        QVERIFY(big.done);
        qInfo("a folder of 12,000 files: the GUI thread's longest stall %lld ms", big.longestStallMs);
        QVERIFY(big.contents.cut);
        QVERIFY(big.contents.files.isEmpty());
        QCOMPARE(big.contents.problems.size(), 22);
        QVERIFY(big.contents.problems[0].contains(QStringLiteral("empty")));
        QCOMPARE(big.contents.problems[20], QStringLiteral("4980 more files could not be read"));
        QVERIFY(big.contents.problems[21].contains(QStringLiteral("holds more than can be searched")));

        // A folder of files with text: the files' limit, then the characters' limit.
        const QString notes = dir.filePath(QStringLiteral("notes"));
        for (int i = 0; i < 120; ++i)
            QVERIFY(writeFile(notes + QStringLiteral("/n%1.txt").arg(i, 3, 10, QLatin1Char('0')), QByteArray("note ") + QByteArray::number(i)));
        Scan firstFifty = runScan(scanner, notes, FolderLimits{50, 1000000, {}});
        QVERIFY(firstFifty.done);
        QVERIFY(firstFifty.contents.cut);
        QCOMPARE(firstFifty.contents.files.size(), 50);
        QVERIFY(firstFifty.contents.problems.last().contains(QStringLiteral("holds more than can be searched")));
        Scan few = runScan(scanner, notes, FolderLimits{1000, 50, {}});
        QVERIFY(few.done);
        QVERIFY(few.contents.cut);
        QCOMPARE(few.contents.files.size(), 8); // "note 0" .. "note 7": 6 characters each, 48 of 50
        QCOMPARE(few.contents.files.first().name, QStringLiteral("notes/n000.txt"));

        // Cancelled at once: it ends soon, with what it had.
        Scan stopped = runScan(scanner, many, FolderLimits{}, true);
        QVERIFY(stopped.done);
        QVERIFY(stopped.contents.cancelled);
        QVERIFY(stopped.contents.files.size() < 5000);
    }
};

QTEST_GUILESS_MAIN(TestDocumentFolders)
#include "test_document_folders.moc"
