// Images attached to chat messages: what a message may carry (limits), their MIME types and data
// URIs, and ImageFileReader, which reads the files a user picks off the GUI thread.
#pragma once

#include <QByteArray>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>

namespace hearth::app {

// What one message may carry: each image's encoded bytes and the number of images (as the
// server's API allows).
inline constexpr qint64 kMaxImageBytes = 20ll << 20;
inline constexpr int kMaxImagesPerMessage = 16;

// "image/png", "image/jpeg", "image/webp", "image/gif" from the bytes' magic numbers; "" when
// they are none of these.
QString imageMimeType(const QByteArray& bytes);
// "data:image/png;base64,..." (application/octet-stream when the type is unknown).
QString imageDataUri(const QByteArray& bytes);
// The file name extension for the type ("png", ...; "bin" when unknown).
QString imageFileExtension(const QByteArray& bytes);

// Why these bytes cannot be attached ("" when they can): empty, over kMaxImageBytes, or not an
// image format the engine decodes. `name` names them in the message.
QString imageProblem(const QByteArray& bytes, const QString& name);

// Reads image files on a pool thread: each is checked (size first, then its format) and the ones
// that can be attached come back in order, with a line per file that could not be.
class ImageFileReader : public QObject {
    Q_OBJECT
public:
    explicit ImageFileReader(QObject* parent = nullptr);
    ~ImageFileReader() override;

    // -> filesRead(ticket, ...). At most `room` images come back (the rest are refused).
    quint64 readFiles(const QStringList& paths, int room = kMaxImagesPerMessage);

Q_SIGNALS:
    void filesRead(quint64 ticket, const QList<QByteArray>& images, const QStringList& problems);

private:
    struct Relay; // how pool threads reach the reader, while it lives
    std::shared_ptr<Relay> m_relay;
    quint64 m_nextTicket = 1;
};

} // namespace hearth::app
