// Images attached to chats: formats sniffed with the engine's decoder's own magic numbers, and
// files read on Qt's global thread pool, the result posted back to the reader's thread.
#include "services/chat_images.h"

#include "hearth/image.h"

#include <QFile>
#include <QFileInfo>
#include <QMetaObject>
#include <QMutex>
#include <QMutexLocker>
#include <QThreadPool>
#include <span>

namespace hearth::app {

namespace {

ImageFormat formatOf(const QByteArray& bytes) {
    return sniffImageFormat(std::span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(bytes.constData()), size_t(bytes.size())));
}

QString megabytes(qint64 bytes) {
    return QString::number(double(bytes) / double(1 << 20), 'f', 1);
}

} // namespace

QString imageMimeType(const QByteArray& bytes) {
    switch (formatOf(bytes)) {
    case ImageFormat::Png:
        return QStringLiteral("image/png");
    case ImageFormat::Jpeg:
        return QStringLiteral("image/jpeg");
    case ImageFormat::Webp:
        return QStringLiteral("image/webp");
    case ImageFormat::Gif:
        return QStringLiteral("image/gif");
    case ImageFormat::Unknown:
        break;
    }
    return {};
}

QString imageDataUri(const QByteArray& bytes) {
    QString type = imageMimeType(bytes);
    if (type.isEmpty()) type = QStringLiteral("application/octet-stream");
    return QStringLiteral("data:%1;base64,%2").arg(type, QString::fromLatin1(bytes.toBase64()));
}

QString imageFileExtension(const QByteArray& bytes) {
    switch (formatOf(bytes)) {
    case ImageFormat::Png:
        return QStringLiteral("png");
    case ImageFormat::Jpeg:
        return QStringLiteral("jpg");
    case ImageFormat::Webp:
        return QStringLiteral("webp");
    case ImageFormat::Gif:
        return QStringLiteral("gif");
    case ImageFormat::Unknown:
        break;
    }
    return QStringLiteral("bin");
}

QString imageProblem(const QByteArray& bytes, const QString& name) {
    if (bytes.isEmpty()) return QObject::tr("%1 is empty").arg(name);
    if (bytes.size() > kMaxImageBytes)
        return QObject::tr("%1 is too large (%2 MB; at most %3 MB an image)")
            .arg(name, megabytes(bytes.size()), megabytes(kMaxImageBytes));
    if (imageMimeType(bytes).isEmpty())
        return QObject::tr("%1 is not a PNG, JPEG, WebP or GIF image").arg(name);
    return {};
}

// Results are posted under the lock; the reader's destructor clears it under the same lock.
struct ImageFileReader::Relay {
    QMutex mutex;
    ImageFileReader* reader = nullptr;

    void post(quint64 ticket, const QList<QByteArray>& images, const QStringList& problems) {
        QMutexLocker lock(&mutex);
        if (!reader) return;
        ImageFileReader* r = reader;
        QMetaObject::invokeMethod(
            r, [r, ticket, images, problems] { Q_EMIT r->filesRead(ticket, images, problems); },
            Qt::QueuedConnection);
    }
};

ImageFileReader::ImageFileReader(QObject* parent)
    : QObject(parent), m_relay(std::make_shared<Relay>()) {
    qRegisterMetaType<QList<QByteArray>>();
    m_relay->reader = this;
}

ImageFileReader::~ImageFileReader() {
    QMutexLocker lock(&m_relay->mutex);
    m_relay->reader = nullptr;
}

quint64 ImageFileReader::readFiles(const QStringList& paths, int room) {
    const quint64 ticket = m_nextTicket++;
    QThreadPool::globalInstance()->start([relay = m_relay, ticket, paths, room] {
        QList<QByteArray> images;
        QStringList problems;
        for (const QString& path : paths) {
            const QString name = QFileInfo(path).fileName();
            if (images.size() >= room) {
                problems << QObject::tr("%1 was not attached: a message holds at most %2 images")
                                .arg(name)
                                .arg(kMaxImagesPerMessage);
                continue;
            }
            QFile file(path);
            const qint64 size = QFileInfo(path).size();
            if (size > kMaxImageBytes) { // not read at all
                problems << QObject::tr("%1 is too large (%2 MB; at most %3 MB an image)")
                                .arg(name, megabytes(size), megabytes(kMaxImageBytes));
                continue;
            }
            if (!file.open(QIODevice::ReadOnly)) {
                problems << QObject::tr("cannot read %1: %2").arg(name, file.errorString());
                continue;
            }
            const QByteArray bytes = file.read(kMaxImageBytes + 1);
            if (const QString why = imageProblem(bytes, name); !why.isEmpty()) {
                problems << why;
                continue;
            }
            images << bytes;
        }
        relay->post(ticket, images, problems); // nowhere when the reader is gone
    });
    return ticket;
}

} // namespace hearth::app
