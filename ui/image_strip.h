// The images attached to the message being written, as small thumbnails above the chat's input,
// each with a remove (×) button; hidden while there are none.
#pragma once

#include <QByteArray>
#include <QImage>
#include <QList>
#include <QWidget>

class QHBoxLayout;

namespace hearth::ui {

// An encoded image's thumbnail, at most `side` pixels each way (a null image when the bytes
// cannot be read by Qt's image plugins).
QImage imageThumbnail(const QByteArray& bytes, int side);

class ImageStrip : public QWidget {
    Q_OBJECT
public:
    explicit ImageStrip(QWidget* parent = nullptr);

    void addImages(const QList<QByteArray>& images);
    void removeAt(int index);
    void clear();
    const QList<QByteArray>& images() const { return m_images; }
    int count() const { return int(m_images.size()); }

Q_SIGNALS:
    void changed();

private:
    void rebuild();

    QList<QByteArray> m_images;
    QList<QImage> m_thumbs; // made once per image, as it is added
    QHBoxLayout* m_row = nullptr;
};

} // namespace hearth::ui
