// The chat page's images: the attach button, paste and drop into the composer, the strip of
// thumbnails above the input, and the thumbnails of a user message's images in the transcript.
// Files are read by the app::ImageFileReader the view is given (on a pool thread); only small
// thumbnails are made here.
#include "chat_transcript.h"
#include "chat_composer.h"
#include "chat_view.h"
#include "count_text.h"
#include "document_strip.h"
#include "image_strip.h"
#include "services/chat_images.h"

#include <QBuffer>
#include <QCryptographicHash>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMimeData>
#include <QPushButton>
#include <QUrl>

namespace hearth::ui {

namespace {

constexpr int kTranscriptThumbSide = 160;

bool isImageFileName(const QString& path) {
    static const QStringList suffixes{QStringLiteral("png"), QStringLiteral("jpg"),
                                      QStringLiteral("jpeg"), QStringLiteral("webp"),
                                      QStringLiteral("gif")};
    return suffixes.contains(QFileInfo(path).suffix().toLower());
}

// The local image files among the URLs of a paste or drop.
QStringList imageFiles(const QMimeData* data) {
    QStringList out;
    if (!data || !data->hasUrls()) return out;
    for (const QUrl& url : data->urls())
        if (url.isLocalFile() && isImageFileName(url.toLocalFile())) out << url.toLocalFile();
    return out;
}

bool holdsImage(const QMimeData* data) {
    if (!data) return false;
    if (!imageFiles(data).isEmpty() || data->hasImage()) return true;
    for (const char* type : {"image/png", "image/jpeg", "image/webp", "image/gif"})
        if (data->hasFormat(QLatin1String(type))) return true;
    return false;
}

} // namespace

void ChatView::setUpImages() {
    connect(m_composer, &ChatComposer::attachImageRequested, this, &ChatView::attachWithDialog);
    m_composer->setAttachmentTaker([this](const QMimeData* data) { return wantsDrop(data); },
                                   [this](const QMimeData* data) { return attachFromMimeData(data); });
    setAcceptDrops(true);
    connect(m_engine, &app::EngineHost::loaded, this, &ChatView::updateAttach);
    connect(m_engine, &app::EngineHost::unloaded, this, &ChatView::updateAttach);
    updateAttach();
}

void ChatView::setImageReader(app::ImageFileReader* reader) {
    if (m_imageReader) disconnect(m_imageReader, nullptr, this, nullptr);
    m_imageReader = reader;
    if (!reader) return;
    connect(
        m_imageReader, &app::ImageFileReader::filesRead, this,
        [this](quint64, const QList<QByteArray>& images, const QStringList& problems) {
            QStringList refused = problems;
            const int room = app::kMaxImagesPerMessage - m_composer->images()->count();
            m_composer->images()->addImages(images.mid(0, std::max(0, room)));
            if (images.size() > room) {
                const qsizetype left = images.size() - std::max(0, room);
                refused << tr("%1 %2 not attached: a message holds at most %3 images")
                               .arg(countText(left, tr("image"), tr("images")), countWord(left, tr("was"), tr("were")))
                               .arg(app::kMaxImagesPerMessage);
            }
            if (!refused.isEmpty()) Q_EMIT statusMessage(refused.join(QStringLiteral("; ")), StatusLevel::Warning);
        });
}

QString ChatView::attachRefusal() const {
    if (m_engine->isRemote()) return {}; // sent as data URIs; the provider's model decides
    // Unloaded while idle: a send loads it again, and it is checked then.
    if (!m_engine->isLoaded() && !m_reloadPath.isEmpty() &&
        m_engine->state() == app::EngineHost::State::Empty)
        return {};
    if (!m_engine->isLoaded())
        return tr("Load a vision model to attach images (a model with its mmproj projector file "
                  "beside it)");
    const app::LoadedModel& m = m_engine->model();
    if (m.vision) return {};
    QString why = tr("%1 takes no images: load a vision model (one with its mmproj projector .gguf "
                     "beside it in "
                     "the models folder)")
                      .arg(m.name.isEmpty() ? QFileInfo(m.path).fileName() : m.name);
    if (!m.visionNote.isEmpty())
        why += tr(" — its projector could not be loaded: %1").arg(m.visionNote);
    return why;
}

void ChatView::updateAttach() {
    const QString refusal = attachRefusal();
    m_composer->attachImageButton()->setEnabled(refusal.isEmpty());
    m_composer->attachImageButton()->setToolTip(
        refusal.isEmpty() ? tr("Attach images (PNG, JPEG, WebP, GIF; or paste or drop them here)")
                          : refusal);
}

QList<QByteArray> ChatView::attachedImages() const {
    return m_composer->images()->images();
}

void ChatView::removeAttachment(int index) {
    m_composer->images()->removeAt(index);
}

QList<QByteArray> ChatView::messageImages(int index) const {
    return index >= 0 && index < m_messages.size() ? m_messages[index].images : QList<QByteArray>();
}

void ChatView::attachWithDialog() {
    if (const QString why = attachRefusal(); !why.isEmpty()) {
        Q_EMIT statusMessage(why, StatusLevel::Warning);
        return;
    }
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Attach images"), QString(), tr("Images (*.png *.jpg *.jpeg *.webp *.gif)"));
    if (!paths.isEmpty()) attachFiles(paths);
}

void ChatView::attachFiles(const QStringList& paths) {
    if (paths.isEmpty()) return;
    if (const QString why = attachRefusal(); !why.isEmpty()) {
        Q_EMIT statusMessage(why, StatusLevel::Warning);
        return;
    }
    const int room = app::kMaxImagesPerMessage - m_composer->images()->count();
    if (room <= 0) {
        Q_EMIT statusMessage(
            tr("A message holds at most %1 images").arg(app::kMaxImagesPerMessage), StatusLevel::Warning);
        return;
    }
    if (!m_imageReader) {
        Q_EMIT statusMessage(tr("Image files cannot be read here; paste the image instead"), StatusLevel::Warning);
        return;
    }
    m_readTicket = m_imageReader->readFiles(paths, room);
}

void ChatView::attachImages(const QList<QByteArray>& images) {
    if (images.isEmpty()) return;
    if (const QString why = attachRefusal(); !why.isEmpty()) {
        Q_EMIT statusMessage(why, StatusLevel::Warning);
        return;
    }
    QStringList refused;
    QList<QByteArray> ok;
    for (qsizetype i = 0; i < images.size(); ++i) {
        const QString name = tr("the image");
        if (const QString why = app::imageProblem(images[i], name); !why.isEmpty())
            refused << why;
        else if (m_composer->images()->count() + ok.size() >= app::kMaxImagesPerMessage)
            refused << tr("a message holds at most %1 images").arg(app::kMaxImagesPerMessage);
        else
            ok << images[i];
    }
    m_composer->images()->addImages(ok);
    if (!refused.isEmpty())
        Q_EMIT statusMessage(tr("Not attached: %1").arg(refused.join(QStringLiteral("; "))), StatusLevel::Warning);
}

bool ChatView::attachFromMimeData(const QMimeData* data) {
    const QStringList documents = droppedDocumentFiles(data);
    if (!documents.isEmpty()) attachDocuments(documents);
    if (!holdsImage(data)) return !documents.isEmpty();
    if (const QStringList files = imageFiles(data); !files.isEmpty()) {
        attachFiles(files);
        return true;
    }
    for (const char* type : {"image/png", "image/jpeg", "image/webp", "image/gif"})
        if (data->hasFormat(QLatin1String(type))) {
            attachImages({data->data(QLatin1String(type))});
            return true;
        }
    // A bitmap only (a screenshot tool's): saved as PNG, which keeps every pixel.
    const QImage image = qvariant_cast<QImage>(data->imageData());
    if (image.isNull()) return false;
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    attachImages({png});
    return true;
}

// Images and files (dropped onto the input or anywhere on the page) are attached.
bool ChatView::wantsDrop(const QMimeData* data) const {
    return holdsImage(data) || !droppedDocumentFiles(data).isEmpty();
}

void ChatView::dragEnterEvent(QDragEnterEvent* event) {
    if (wantsDrop(event->mimeData()))
        event->acceptProposedAction();
    else
        QWidget::dragEnterEvent(event);
}

void ChatView::dropEvent(QDropEvent* event) {
    if (attachFromMimeData(event->mimeData()))
        event->acceptProposedAction();
    else
        QWidget::dropEvent(event);
}

// A user message's images as Markdown images named hearth-image:<sha1>, their thumbnails handed
// to the transcript, which gives them to its document.
QString ChatView::imagesMarkdown(const QList<QByteArray>& images) {
    QString md;
    for (qsizetype i = 0; i < images.size(); ++i) {
        const QString key = QString::fromLatin1(
            QCryptographicHash::hash(images[i], QCryptographicHash::Sha1).toHex());
        if (!m_transcript->hasImage(key)) m_transcript->addImage(key, imageThumbnail(images[i], kTranscriptThumbSide));
        md += QStringLiteral("![image %1](%2:%3) ").arg(i + 1).arg(QLatin1String(kImageScheme), key);
    }
    return md + QStringLiteral("\n\n");
}

} // namespace hearth::ui
