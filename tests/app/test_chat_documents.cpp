// Files attached to chats as text: text, Markdown and code read as UTF-8 (a BOM dropped), PDF
// text through Poppler (PDF files written here by hand, with real xref tables), and what is
// refused with the reason: binary data, other encodings, empty files, folders, a 2 GB file (not
// read at all), a text over the limit, a damaged PDF, an encrypted one, a scan with no text. The
// reader keeps the files' order and the limits; the model reads each file before the message.
#include "services/chat_documents.h"
#include "services/chat_reply.h"

#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <variant>

using namespace hearth::app;

namespace {

QString writeDocumentFile(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
    QFile f(dir.filePath(name));
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(bytes);
    return f.fileName();
}

// A PDF of one page per entry of `pages` (each page shows its text in Helvetica; "" draws
// nothing), optionally with an /Encrypt dictionary whose user password is not empty.
QByteArray handMadePdf(const QStringList& pages, bool encrypted = false) {
    QList<QByteArray> objects; // objects[i] is object i + 1
    const int n = int(pages.size());
    QByteArray kids;
    for (int i = 0; i < n; ++i) kids += QByteArray::number(3 + 2 * i) + " 0 R ";
    objects << "<< /Type /Catalog /Pages 2 0 R >>";
    objects << "<< /Type /Pages /Kids [" + kids + "] /Count " + QByteArray::number(n) + " >>";
    const int font = 3 + 2 * n;
    for (int i = 0; i < n; ++i) {
        objects << "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Contents " + QByteArray::number(4 + 2 * i) +
                       " 0 R /Resources << /Font << /F1 " + QByteArray::number(font) + " 0 R >> >> >>";
        const QByteArray content =
            pages[i].isEmpty() ? QByteArray("0 0 m 10 10 l S") : "BT /F1 12 Tf 20 100 Td (" + pages[i].toLatin1() + ") Tj ET";
        objects << "<< /Length " + QByteArray::number(content.size()) + " >>\nstream\n" + content + "\nendstream";
    }
    objects << "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>";
    if (encrypted)
        objects << "<< /Filter /Standard /V 1 /R 2 /O <" + QByteArray(64, 'A') + "> /U <" + QByteArray(64, 'B') +
                       "> /P -4 >>";
    QByteArray pdf = "%PDF-1.4\n";
    QList<qsizetype> offsets;
    for (int i = 0; i < objects.size(); ++i) {
        offsets << pdf.size();
        pdf += QByteArray::number(i + 1) + " 0 obj\n" + objects[i] + "\nendobj\n";
    }
    const qsizetype xref = pdf.size();
    pdf += "xref\n0 " + QByteArray::number(objects.size() + 1) + "\n0000000000 65535 f \n";
    for (qsizetype off : offsets) pdf += QByteArray::number(off).rightJustified(10, '0') + " 00000 n \n";
    pdf += "trailer\n<< /Size " + QByteArray::number(objects.size() + 1) + " /Root 1 0 R";
    if (encrypted)
        pdf += " /Encrypt " + QByteArray::number(objects.size()) + " 0 R /ID [<" + QByteArray(32, 'C') + "> <" +
               QByteArray(32, 'C') + ">]";
    pdf += " >>\nstartxref\n" + QByteArray::number(xref) + "\n%%EOF\n";
    return pdf;
}

QString refusal(const std::variant<ChatDocument, QString>& read) {
    const QString* why = std::get_if<QString>(&read);
    return why ? *why : QString();
}

} // namespace

class TestChatDocuments : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void documentTextFilesAreRead() {
        QTemporaryDir dir;
        const QString md = writeDocumentFile(dir, QStringLiteral("notes.md"), "\xEF\xBB\xBF# Notes\n\nüñí 🐉 milk\n");
        std::variant<ChatDocument, QString> read = readDocument(md);
        QVERIFY2(refusal(read).isEmpty(), qPrintable(refusal(read)));
        QCOMPARE(std::get<ChatDocument>(read).name, QStringLiteral("notes.md"));
        QCOMPARE(std::get<ChatDocument>(read).text, QStringLiteral("# Notes\n\nüñí 🐉 milk\n")); // no BOM
        const QString code = writeDocumentFile(dir, QStringLiteral("main.cpp"), "int main() { return 0; }\n");
        QCOMPARE(std::get<ChatDocument>(readDocument(code)).text, QStringLiteral("int main() { return 0; }\n"));

        QVERIFY(refusal(readDocument(writeDocumentFile(dir, QStringLiteral("a.bin"), QByteArray("PK\x03\x04\0\0", 6))))
                    .contains(QStringLiteral("a.bin is not a text file")));
        QVERIFY(refusal(readDocument(writeDocumentFile(dir, QStringLiteral("latin.txt"), "caf\xE9\n")))
                    .contains(QStringLiteral("latin.txt is not UTF-8 text")));
        QVERIFY(refusal(readDocument(writeDocumentFile(dir, QStringLiteral("blank.txt"), " \n\n")))
                    .contains(QStringLiteral("blank.txt is empty")));
        QVERIFY(refusal(readDocument(dir.path())).contains(QStringLiteral("is a folder")));
        QVERIFY(refusal(readDocument(dir.filePath(QStringLiteral("missing.txt")))).contains(QStringLiteral("cannot read missing.txt")));
        const QString longText = writeDocumentFile(dir, QStringLiteral("long.txt"), QByteArray(kMaxDocumentChars + 1, 'x'));
        QVERIFY(refusal(readDocument(longText)).contains(QStringLiteral("long.txt is too long")));

        // A 2 GB file (sparse: nothing written) is refused by its size, without reading it.
        QFile huge(dir.filePath(QStringLiteral("huge.log")));
        QVERIFY(huge.open(QIODevice::WriteOnly));
        QVERIFY(huge.resize(2ll << 30));
        huge.close();
        QElapsedTimer clock;
        clock.start();
        const QString why = refusal(readDocument(huge.fileName()));
        QVERIFY2(why.contains(QStringLiteral("huge.log is too large")), qPrintable(why));
        QVERIFY(clock.elapsed() < 10000); // a hang guard: it reads nothing
    }

    void documentPdfTextIsRead() {
        QTemporaryDir dir;
        const QString path = writeDocumentFile(dir, QStringLiteral("report.pdf"),
                                               handMadePdf({QStringLiteral("The secret word is marmalade."),
                                                            QStringLiteral("Second page says hello.")}));
        std::variant<ChatDocument, QString> read = readDocument(path);
        QVERIFY2(refusal(read).isEmpty(), qPrintable(refusal(read)));
        const QString text = std::get<ChatDocument>(read).text;
        QVERIFY2(text.contains(QStringLiteral("The secret word is marmalade.")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Second page says hello.")), qPrintable(text));
        QVERIFY(text.indexOf(QStringLiteral("marmalade")) < text.indexOf(QStringLiteral("Second")));
    }

    void documentBadPdfsAreRefused() {
        QTemporaryDir dir;
        QString why = refusal(readDocument(writeDocumentFile(dir, QStringLiteral("broken.pdf"), "%PDF-1.4\nnot really\n")));
        QVERIFY2(why.contains(QStringLiteral("broken.pdf is not a readable PDF")), qPrintable(why));
        why = refusal(readDocument(writeDocumentFile(dir, QStringLiteral("locked.pdf"), handMadePdf({QStringLiteral("hidden")}, true))));
        QVERIFY2(why.contains(QStringLiteral("locked.pdf is an encrypted PDF")), qPrintable(why));
        why = refusal(readDocument(writeDocumentFile(dir, QStringLiteral("scan.pdf"), handMadePdf({QString()}))));
        QVERIFY2(why.contains(QStringLiteral("scan.pdf holds no text")), qPrintable(why));
        // Cut in half (a download that stopped): refused with the reason, not a crash.
        const QByteArray whole = handMadePdf({QStringLiteral("cut")});
        why = refusal(readDocument(writeDocumentFile(dir, QStringLiteral("cut.pdf"), whole.left(whole.size() / 2))));
        QVERIFY2(!why.isEmpty() || std::get<ChatDocument>(readDocument(dir.filePath(QStringLiteral("cut.pdf")))).text.contains(QStringLiteral("cut")),
                 "a cut PDF is either refused or read for what it holds");
    }

    void documentReaderKeepsOrderAndLimits() {
        QTemporaryDir dir;
        const QString a = writeDocumentFile(dir, QStringLiteral("a.txt"), "first");
        const QString bad = writeDocumentFile(dir, QStringLiteral("b.bin"), QByteArray("\0\1", 2));
        const QString c = writeDocumentFile(dir, QStringLiteral("c.txt"), "third");
        DocumentReader reader;
        QSignalSpy read(&reader, &DocumentReader::filesRead);
        const quint64 ticket = reader.readFiles({a, bad, c});
        QVERIFY(read.wait(10000));
        QCOMPARE(read.first().at(0).toULongLong(), ticket);
        const auto documents = read.first().at(1).value<QList<ChatDocument>>();
        QCOMPARE(documents.size(), 2);
        QCOMPARE(documents[0].text, QStringLiteral("first"));
        QCOMPARE(documents[1].name, QStringLiteral("c.txt"));
        QCOMPARE(read.first().at(2).toStringList().size(), 1);
        // Room for one file, then for five characters.
        reader.readFiles({a, c}, 1);
        QVERIFY(read.wait(10000));
        QCOMPARE(read.last().at(1).value<QList<ChatDocument>>().size(), 1);
        QVERIFY(read.last().at(2).toStringList().first().contains(QStringLiteral("at most")));
        reader.readFiles({a, c}, kMaxDocumentsPerMessage, 5);
        QVERIFY(read.wait(10000));
        QCOMPARE(read.last().at(1).value<QList<ChatDocument>>().size(), 1);
        QVERIFY(read.last().at(2).toStringList().first().contains(QStringLiteral("characters")));
    }

    void documentsReachTheModelBeforeTheMessage() {
        const QList<ChatDocument> docs{{QStringLiteral("a \"<b>\".md"), QStringLiteral("alpha")},
                                       {QStringLiteral("c.txt"), QStringLiteral("gamma\n")}};
        QCOMPARE(messageTextForModel(QStringLiteral("Compare them."), docs),
                 QStringLiteral("<document name=\"a &quot;&lt;b&gt;&quot;.md\">\nalpha\n</document>\n\n"
                                "<document name=\"c.txt\">\ngamma\n</document>\n\nCompare them."));
        QCOMPARE(messageTextForModel(QStringLiteral("plain"), {}), QStringLiteral("plain"));
        // An indexed file is left out; its excerpts stand for it, numbered.
        const QList<ChatDocument> searched{{QStringLiteral("big.txt"), QStringLiteral("all of it"), true, 0},
                                           {QStringLiteral("big.txt"), QStringLiteral("the part found"), false, 7}};
        QCOMPARE(messageTextForModel(QStringLiteral("Q?"), searched),
                 QStringLiteral("<document name=\"big.txt\" part=\"7\">\nthe part found\n</document>\n\nQ?"));
        QCOMPARE(documentsFromJson(documentsJson(searched)), searched);
        ChatMessage m{QStringLiteral("user"), QStringLiteral("Compare them.")};
        m.documents = docs;
        const auto request = chatRequestFor({m});
        const std::string content = request.messages.at(0).content.value_or("");
        QVERIFY2(content.find("<document name=\"c.txt\">\ngamma\n</document>") != std::string::npos, content.c_str());
        QVERIFY(content.ends_with("Compare them."));
        // Stored as JSON and read back.
        QCOMPARE(documentsFromJson(documentsJson(docs)), docs);
        QCOMPARE(documentsJson({}), QString());
        QVERIFY(documentsFromJson(QStringLiteral("{oops")).isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestChatDocuments)
#include "test_chat_documents.moc"
