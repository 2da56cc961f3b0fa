// The attached files' labels above the chat's input (see document_strip.h).
#include "document_strip.h"

#include "layout_rows.h"

#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMimeData>
#include <QStyle>
#include <QToolButton>
#include <QUrl>

namespace hearth::ui {

QStringList droppedDocumentFiles(const QMimeData* data) {
    QStringList out;
    if (!data || !data->hasUrls()) return out;
    static const QStringList images = {QStringLiteral("png"), QStringLiteral("jpg"), QStringLiteral("jpeg"),
                                       QStringLiteral("webp"), QStringLiteral("gif")};
    for (const QUrl& url : data->urls()) {
        if (!url.isLocalFile()) continue;
        const QFileInfo info(url.toLocalFile());
        if (info.isFile() && !images.contains(info.suffix().toLower())) out << info.filePath();
    }
    return out;
}

DocumentStrip::DocumentStrip(QWidget* parent) : QWidget(parent) {
    m_row = new QHBoxLayout(this);
    m_row->setContentsMargins(0, 0, 0, 0);
    m_row->setSpacing(6);
    setVisible(false);
}

qsizetype DocumentStrip::characters() const {
    qsizetype n = 0;
    for (const app::ChatDocument& d : m_documents) n += d.text.size();
    return n;
}

void DocumentStrip::addDocuments(const QList<app::ChatDocument>& documents) {
    if (documents.isEmpty()) return;
    m_documents += documents;
    rebuild();
}

void DocumentStrip::removeAt(int index) {
    if (index < 0 || index >= m_documents.size()) return;
    m_documents.removeAt(index);
    rebuild();
}

void DocumentStrip::clear() {
    if (m_documents.isEmpty()) return;
    m_documents.clear();
    rebuild();
}

void DocumentStrip::rebuild() {
    clearRow(m_row);
    for (int i = 0; i < m_documents.size(); ++i) {
        const app::ChatDocument& d = m_documents[i];
        auto* frame = new QFrame(this);
        frame->setObjectName(QStringLiteral("attachedDocument"));
        frame->setFrameShape(QFrame::StyledPanel);
        auto* layout = new QHBoxLayout(frame);
        layout->setContentsMargins(6, 2, 2, 2);
        layout->setSpacing(4);
        auto* icon = new QLabel(frame);
        icon->setPixmap(style()->standardIcon(QStyle::SP_FileIcon).pixmap(16, 16));
        layout->addWidget(icon);
        auto* label = new QLabel(tr("%1 · %2 characters").arg(d.name, QLocale().toString(d.text.size())), frame);
        label->setToolTip(d.text.left(400));
        layout->addWidget(label);
        auto* remove = new QToolButton(frame);
        remove->setObjectName(QStringLiteral("removeDocument"));
        remove->setText(QStringLiteral("×"));
        remove->setToolTip(tr("Remove this file"));
        remove->setAutoRaise(true);
        layout->addWidget(remove);
        m_row->addWidget(frame);
        connect(remove, &QToolButton::clicked, this, [this, i] { removeAt(i); });
    }
    m_row->addStretch(1);
    setVisible(!m_documents.isEmpty());
    Q_EMIT changed();
}

} // namespace hearth::ui
