// The folders of documents attached to the chat shown, as a row of labels above the chat's input:
// each folder's name and how far it has been read (or how many files are searched), its problems
// as a tooltip, and a remove (×) button; hidden while there are none. It shows app::ChatFolders.
#pragma once

#include <QWidget>

class QHBoxLayout;

namespace hearth::app {
class ChatFolders;
}

namespace hearth::ui {

class FolderStrip : public QWidget {
    Q_OBJECT
public:
    explicit FolderStrip(QWidget* parent = nullptr);

    // What it shows (owned by the caller; may be null: nothing shown).
    void setFolders(app::ChatFolders* folders);

    // The line shown for the folder at `index` (tests).
    QString textAt(int index) const;

private:
    void rebuild();

    app::ChatFolders* m_folders = nullptr;
    QHBoxLayout* m_row = nullptr;
};

} // namespace hearth::ui
