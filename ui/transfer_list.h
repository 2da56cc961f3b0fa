// The models page's download list: a row per download (started on this page or elsewhere, or
// restored from an earlier run) with its state, progress, speed and ETA, and the Pause, Resume
// and Cancel buttons for the selected one.
#pragma once

#include "services/download_manager.h"

#include <QHash>
#include <QTreeWidget>

class QPushButton;

namespace hearth::ui {

class TransferList : public QTreeWidget {
    Q_OBJECT
public:
    // Follows `downloads`. Pause, Resume and Cancel are made beside the list (children of
    // `parent`), for the page to place.
    TransferList(app::DownloadManager* downloads, QWidget* parent);

    QPushButton* pauseButton() const { return m_pause; }
    QPushButton* resumeButton() const { return m_resume; }
    QPushButton* cancelButton() const { return m_cancel; }

    // A row for download `id` in `state`, unless it has one.
    void addTransfer(quint64 id, const QString& name, app::DownloadState state);
    bool hasTransfer(quint64 id) const { return m_rows.contains(id); }
    int transferCount() const { return topLevelItemCount(); }
    // A row's download id (0 for no such row), and the selected row's.
    quint64 transferId(int row) const;
    quint64 selectedTransfer() const;

private:
    void updateButtons(); // Pause, Resume and Cancel: on where they apply to the selected one

    app::DownloadManager* m_downloads;
    QPushButton* m_pause = nullptr;
    QPushButton* m_resume = nullptr;
    QPushButton* m_cancel = nullptr;
    QHash<quint64, int> m_rows; // download id -> row
};

} // namespace hearth::ui
