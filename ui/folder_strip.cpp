// The attached folders' labels above the chat's input (see folder_strip.h).
#include "folder_strip.h"

#include "layout_rows.h"

#include "services/chat_folders.h"

#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QStyle>
#include <QToolButton>

namespace hearth::ui {

namespace {

QString folderLine(const app::ChatFolders::Folder& f) {
    const QLocale locale;
    if (f.reading)
        return f.total > 0 ? FolderStrip::tr("%1 · reading %2 of %3 files…")
                                 .arg(f.name, locale.toString(f.done), locale.toString(f.total))
                           : FolderStrip::tr("%1 · listing files…").arg(f.name);
    if (f.files.isEmpty()) return FolderStrip::tr("%1 · no files to search").arg(f.name);
    if (f.indexing && f.partsToIndex > 0)
        return FolderStrip::tr("%1 · %2 files · indexing for search: %3 of %4 parts…")
            .arg(f.name, locale.toString(f.files.size()), locale.toString(f.partsIndexed),
                 locale.toString(f.partsToIndex));
    if (f.indexing)
        return FolderStrip::tr("%1 · %2 files · indexing for search…").arg(f.name, locale.toString(f.files.size()));
    return FolderStrip::tr("%1 · %2 files searched for each question%3")
        .arg(f.name, locale.toString(f.files.size()), f.cut ? FolderStrip::tr(" (cut short)") : QString());
}

} // namespace

FolderStrip::FolderStrip(QWidget* parent) : QWidget(parent) {
    m_row = new QHBoxLayout(this);
    m_row->setContentsMargins(0, 0, 0, 0);
    m_row->setSpacing(6);
    setVisible(false);
}

void FolderStrip::setFolders(app::ChatFolders* folders) {
    if (m_folders) disconnect(m_folders, nullptr, this, nullptr);
    m_folders = folders;
    if (m_folders) connect(m_folders, &app::ChatFolders::changed, this, &FolderStrip::rebuild);
    rebuild();
}

QString FolderStrip::textAt(int index) const {
    if (!m_folders || index < 0 || index >= m_folders->folders().size()) return {};
    return folderLine(m_folders->folders()[index]);
}

void FolderStrip::rebuild() {
    clearRow(m_row);
    const qsizetype count = m_folders ? m_folders->folders().size() : 0;
    for (qsizetype i = 0; i < count; ++i) {
        const app::ChatFolders::Folder& f = m_folders->folders()[i];
        auto* frame = new QFrame(this);
        frame->setObjectName(QStringLiteral("attachedFolder"));
        frame->setFrameShape(QFrame::StyledPanel);
        auto* layout = new QHBoxLayout(frame);
        layout->setContentsMargins(6, 2, 2, 2);
        layout->setSpacing(4);
        auto* icon = new QLabel(frame);
        icon->setPixmap(style()->standardIcon(QStyle::SP_DirIcon).pixmap(16, 16));
        layout->addWidget(icon);
        auto* label = new QLabel(folderLine(f), frame);
        label->setObjectName(QStringLiteral("folderLine"));
        QString tip = f.path;
        if (!f.problems.isEmpty()) tip += QStringLiteral("\n\n") + f.problems.mid(0, 8).join(QLatin1Char('\n'));
        label->setToolTip(tip);
        layout->addWidget(label);
        auto* remove = new QToolButton(frame);
        remove->setObjectName(QStringLiteral("removeFolder"));
        remove->setText(QStringLiteral("×"));
        remove->setToolTip(tr("Stop searching this folder in this chat"));
        remove->setAutoRaise(true);
        layout->addWidget(remove);
        m_row->addWidget(frame);
        connect(remove, &QToolButton::clicked, this, [this, path = f.path] {
            if (m_folders) m_folders->remove(path);
        });
    }
    m_row->addStretch(1);
    setVisible(count > 0);
}

} // namespace hearth::ui
