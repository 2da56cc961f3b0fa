// ImageStrip: one framed thumbnail per attached image, a × button on each, rebuilt on change.
#include "image_strip.h"

#include "layout_rows.h"

#include <QBuffer>
#include <QFrame>
#include <QHBoxLayout>
#include <QImageReader>
#include <QLabel>
#include <QPixmap>
#include <QToolButton>
#include <QVBoxLayout>

namespace hearth::ui {

namespace {
constexpr int kThumbSide = 64;
}

QImage imageThumbnail(const QByteArray& bytes, int side) {
    QBuffer buffer;
    buffer.setData(bytes);
    buffer.open(QIODevice::ReadOnly);
    QImageReader reader(&buffer);
    const QSize size = reader.size();
    // Scaled while decoding where the format allows (JPEG): a large photo is never held whole.
    if (size.isValid() && (size.width() > side || size.height() > side))
        reader.setScaledSize(size.scaled(side, side, Qt::KeepAspectRatio));
    QImage image = reader.read();
    if (image.isNull()) return image;
    if (image.width() > side || image.height() > side)
        image = image.scaled(side, side, Qt::KeepAspectRatio, Qt::SmoothTransformation);
    return image;
}

ImageStrip::ImageStrip(QWidget* parent) : QWidget(parent) {
    m_row = new QHBoxLayout(this);
    m_row->setContentsMargins(0, 0, 0, 0);
    m_row->setSpacing(6);
    setVisible(false);
}

void ImageStrip::addImages(const QList<QByteArray>& images) {
    if (images.isEmpty()) return;
    m_images += images;
    for (const QByteArray& bytes : images) m_thumbs << imageThumbnail(bytes, kThumbSide);
    rebuild();
}

void ImageStrip::removeAt(int index) {
    if (index < 0 || index >= m_images.size()) return;
    m_images.removeAt(index);
    m_thumbs.removeAt(index);
    rebuild();
}

void ImageStrip::clear() {
    if (m_images.isEmpty()) return;
    m_images.clear();
    m_thumbs.clear();
    rebuild();
}

void ImageStrip::rebuild() {
    clearRow(m_row);
    for (int i = 0; i < m_images.size(); ++i) {
        auto* frame = new QFrame(this);
        frame->setObjectName(QStringLiteral("attachedImage"));
        frame->setFrameShape(QFrame::StyledPanel);
        auto* layout = new QVBoxLayout(frame);
        layout->setContentsMargins(2, 2, 2, 2);
        layout->setSpacing(0);
        auto* remove = new QToolButton(frame);
        remove->setObjectName(QStringLiteral("removeImage"));
        remove->setText(QStringLiteral("×"));
        remove->setToolTip(tr("Remove this image"));
        remove->setAutoRaise(true);
        layout->addWidget(remove, 0, Qt::AlignRight);
        auto* picture = new QLabel(frame);
        const QImage& thumb = m_thumbs[i];
        if (thumb.isNull())
            picture->setText(tr("image"));
        else
            picture->setPixmap(QPixmap::fromImage(thumb));
        picture->setFixedSize(kThumbSide, kThumbSide);
        picture->setAlignment(Qt::AlignCenter);
        picture->setToolTip(
            tr("Image %1 (%2 KB)").arg(i + 1).arg((m_images[i].size() + 1023) / 1024));
        layout->addWidget(picture);
        m_row->addWidget(frame);
        connect(remove, &QToolButton::clicked, this, [this, i] { removeAt(i); });
    }
    m_row->addStretch(1);
    setVisible(!m_images.isEmpty());
    Q_EMIT changed();
}

} // namespace hearth::ui
