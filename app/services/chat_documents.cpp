// Reading attached files as text (see chat_documents.h): UTF-8 text checked strictly, PDF pages
// through poppler-cpp, and the pool-thread reader.
#include "services/chat_documents.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <QMetaObject>
#include <QMutex>
#include <QMutexLocker>
#include <QStringDecoder>
#include <QThreadPool>

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-page.h>

#include <memory>
#include <mutex>

namespace hearth::app {

namespace {

constexpr int kMaxPdfPages = 5000;

QString sizeText(qint64 bytes) { return QLocale::system().formattedDataSize(bytes); }

// Poppler's own complaints about a damaged file go nowhere: the reason is said once, by us.
void quietPoppler() {
    static std::once_flag once;
    std::call_once(once, [] { poppler::set_debug_error_function([](const std::string&, void*) {}, nullptr); });
}

std::variant<ChatDocument, QString> pdfText(const QByteArray& bytes, const QString& name) {
    quietPoppler();
    if (bytes.size() > std::numeric_limits<int>::max()) return QObject::tr("%1 is too large to read").arg(name);
    std::unique_ptr<poppler::document> doc(poppler::document::load_from_raw_data(bytes.constData(), int(bytes.size())));
    if (!doc) return QObject::tr("%1 is not a readable PDF (damaged or not a PDF)").arg(name);
    if (doc->is_locked()) return QObject::tr("%1 is an encrypted PDF (locked with a password); unlock it first").arg(name);
    const int pages = doc->pages();
    if (pages <= 0) return QObject::tr("%1 is a PDF with no pages").arg(name);
    if (pages > kMaxPdfPages) return QObject::tr("%1 has %2 pages (at most %3)").arg(name).arg(pages).arg(kMaxPdfPages);
    QString text;
    for (int i = 0; i < pages; ++i) {
        std::unique_ptr<poppler::page> page(doc->create_page(i));
        if (!page) continue;
        const poppler::byte_array utf8 = page->text().to_utf8();
        const QString pageText = QString::fromUtf8(utf8.data(), qsizetype(utf8.size())).trimmed();
        if (pageText.isEmpty()) continue;
        if (!text.isEmpty()) text += QStringLiteral("\n\n");
        text += pageText;
        if (text.size() > kMaxDocumentChars) break;
    }
    if (text.isEmpty())
        return QObject::tr("%1 holds no text (a scanned PDF's pages are pictures; it needs OCR first)").arg(name);
    return ChatDocument{name, text};
}

} // namespace

std::variant<ChatDocument, QString> documentFromBytes(const QByteArray& bytes, const QString& name) {
    if (bytes.startsWith("%PDF-")) {
        std::variant<ChatDocument, QString> pdf = pdfText(bytes, name);
        if (const auto* d = std::get_if<ChatDocument>(&pdf); d && d->text.size() > kMaxDocumentChars)
            return QObject::tr("%1 is too long (over %2 characters of text; at most %2 in a message)")
                .arg(name)
                .arg(kMaxDocumentChars);
        return pdf;
    }
    if (bytes.contains('\0')) return QObject::tr("%1 is not a text file (it holds binary data)").arg(name);
    QStringDecoder decoder(QStringDecoder::Utf8);
    QString text = decoder.decode(bytes);
    if (decoder.hasError()) return QObject::tr("%1 is not UTF-8 text").arg(name);
    if (text.startsWith(QChar(0xFEFF))) text.remove(0, 1);
    if (text.trimmed().isEmpty()) return QObject::tr("%1 is empty").arg(name);
    if (text.size() > kMaxDocumentChars)
        return QObject::tr("%1 is too long (%2 characters; at most %3 in a message)")
            .arg(name)
            .arg(text.size())
            .arg(kMaxDocumentChars);
    return ChatDocument{name, text};
}

std::variant<ChatDocument, QString> readDocument(const QString& path) {
    const QFileInfo info(path);
    const QString name = info.fileName();
    if (info.isDir()) return QObject::tr("%1 is a folder").arg(name);
    if (info.size() > kMaxDocumentFileBytes) // not read at all
        return QObject::tr("%1 is too large (%2; at most %3 a file)").arg(name, sizeText(info.size()), sizeText(kMaxDocumentFileBytes));
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return QObject::tr("cannot read %1: %2").arg(name, file.errorString());
    const QByteArray bytes = file.read(kMaxDocumentFileBytes + 1);
    if (bytes.size() > kMaxDocumentFileBytes)
        return QObject::tr("%1 is too large (at most %2 a file)").arg(name, sizeText(kMaxDocumentFileBytes));
    return documentFromBytes(bytes, name);
}

QString messageTextForModel(const QString& content, const QList<ChatDocument>& documents) {
    if (documents.isEmpty()) return content;
    QString out;
    for (const ChatDocument& d : documents) {
        if (d.indexed) continue; // its excerpts stand for it
        QString name = d.name;
        name.replace(QLatin1Char('&'), QStringLiteral("&amp;"))
            .replace(QLatin1Char('"'), QStringLiteral("&quot;"))
            .replace(QLatin1Char('<'), QStringLiteral("&lt;"))
            .replace(QLatin1Char('>'), QStringLiteral("&gt;"));
        out += (d.part > 0 ? QStringLiteral("<document name=\"%1\" part=\"%2\">\n").arg(name).arg(d.part)
                           : QStringLiteral("<document name=\"%1\">\n").arg(name)) +
               d.text;
        if (!d.text.endsWith(QLatin1Char('\n'))) out += QLatin1Char('\n');
        out += QStringLiteral("</document>\n\n");
    }
    return out + content;
}

QJsonArray documentsArray(const QList<ChatDocument>& documents) {
    QJsonArray array;
    for (const ChatDocument& d : documents) {
        QJsonObject o{{QStringLiteral("name"), d.name}, {QStringLiteral("text"), d.text}};
        if (d.indexed) o.insert(QStringLiteral("indexed"), true);
        if (d.part > 0) o.insert(QStringLiteral("part"), d.part);
        array.append(o);
    }
    return array;
}

ChatDocument documentFrom(const QJsonObject& o) {
    return ChatDocument{o.value(QStringLiteral("name")).toString(), o.value(QStringLiteral("text")).toString(),
                        o.value(QStringLiteral("indexed")).toBool(),
                        std::clamp(o.value(QStringLiteral("part")).toInt(), 0, 1 << 20)};
}

QString documentsJson(const QList<ChatDocument>& documents) {
    if (documents.isEmpty()) return QStringLiteral("");
    return QString::fromUtf8(QJsonDocument(documentsArray(documents)).toJson(QJsonDocument::Compact));
}

QList<ChatDocument> documentsFromJson(const QString& json) {
    QList<ChatDocument> out;
    if (json.isEmpty()) return out;
    for (const QJsonValue& v : QJsonDocument::fromJson(json.toUtf8()).array()) out << documentFrom(v.toObject());
    return out;
}

DocumentReader::DocumentReader(QObject* parent)
    : QObject(parent), m_relay(std::make_shared<PoolRelay<DocumentReader>>(this)) {
    qRegisterMetaType<ChatDocument>();
    qRegisterMetaType<QList<ChatDocument>>();
}

DocumentReader::~DocumentReader() { m_relay->detach(); }

quint64 DocumentReader::readFiles(const QStringList& paths, int room, qsizetype roomChars) {
    const quint64 ticket = m_nextTicket++;
    QThreadPool::globalInstance()->start([relay = m_relay, ticket, paths, room, roomChars] {
        QList<ChatDocument> documents;
        QStringList problems;
        qsizetype chars = 0;
        for (const QString& path : paths) {
            const QString name = QFileInfo(path).fileName();
            if (documents.size() >= room) {
                problems << QObject::tr("%1 was not attached: a message holds at most %2 files")
                                .arg(name)
                                .arg(kMaxDocumentsPerMessage);
                continue;
            }
            std::variant<ChatDocument, QString> read = readDocument(path);
            if (const QString* why = std::get_if<QString>(&read)) {
                problems << *why;
                continue;
            }
            ChatDocument d = std::get<ChatDocument>(std::move(read));
            if (chars + d.text.size() > roomChars) {
                problems << QObject::tr("%1 was not attached: the files of a message hold at most %2 characters")
                                .arg(name)
                                .arg(kMaxDocumentChars);
                continue;
            }
            chars += d.text.size();
            documents << std::move(d);
        }
        relay->post([ticket, documents, problems](DocumentReader* r) { // nowhere when the reader is gone
            Q_EMIT r->filesRead(ticket, documents, problems);
        });
    });
    return ticket;
}

} // namespace hearth::app
