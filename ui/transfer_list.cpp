// The models page's download list: rows added as downloads appear, their state, progress, speed
// and ETA kept up to date from the DownloadManager, and Pause, Resume and Cancel on the selected one.
#include "transfer_list.h"

#include <QFileInfo>
#include <QLocale>
#include <QPushButton>

namespace hearth::ui {

TransferList::TransferList(app::DownloadManager* downloads, QWidget* parent)
    : QTreeWidget(parent), m_downloads(downloads) {
    setObjectName(QStringLiteral("transfers"));
    setHeaderLabels({tr("Download"), tr("State"), tr("Progress"), tr("Speed"), tr("ETA")});
    setRootIsDecorated(false);
    setMaximumHeight(140);
    m_pause = new QPushButton(tr("Pause"), parent);
    m_resume = new QPushButton(tr("Resume"), parent);
    m_cancel = new QPushButton(tr("Cancel"), parent);
    updateButtons();
    connect(m_pause, &QPushButton::clicked, this, [this] { if (auto id = selectedTransfer()) m_downloads->pause(id); });
    connect(m_resume, &QPushButton::clicked, this, [this] { if (auto id = selectedTransfer()) m_downloads->resume(id); });
    connect(m_cancel, &QPushButton::clicked, this, [this] { if (auto id = selectedTransfer()) m_downloads->cancel(id); });
    connect(this, &QTreeWidget::currentItemChanged, this, &TransferList::updateButtons);

    connect(m_downloads, &app::DownloadManager::stateChanged, this, [this](quint64 id, app::DownloadState state) {
        if (!m_rows.contains(id)) {
            // Enqueued elsewhere (the welcome page, a restored queue): listed here too.
            const app::DownloadRequest r = m_downloads->request(id);
            if (r.destination.isEmpty()) return;
            addTransfer(id, r.displayName.isEmpty() ? QFileInfo(r.destination).fileName() : r.displayName, state);
        }
        if (QTreeWidgetItem* item = topLevelItem(m_rows.value(id)))
            item->setText(1, app::downloadStateName(state));
        updateButtons();
    });
    connect(m_downloads, &app::DownloadManager::progress, this,
            [this](quint64 id, qint64 received, qint64 total, double speed, int eta) {
                if (!m_rows.contains(id)) return;
                QTreeWidgetItem* item = topLevelItem(m_rows.value(id));
                if (!item) return;
                item->setText(2, total > 0 ? QStringLiteral("%1 %").arg(100.0 * double(received) / double(total), 0, 'f', 1)
                                           : QLocale().formattedDataSize(received));
                item->setText(3, QLocale().formattedDataSize(qint64(speed)) + tr("/s"));
                item->setText(4, eta >= 0 ? QStringLiteral("%1:%2").arg(eta / 60).arg(eta % 60, 2, 10, QLatin1Char('0')) : QString());
            });
    // Why it failed, on its row (the page says it too).
    connect(m_downloads, &app::DownloadManager::failed, this, [this](quint64 id, const QString& message) {
        if (QTreeWidgetItem* item = topLevelItem(m_rows.value(id, -1))) item->setToolTip(1, message);
    });
}

void TransferList::addTransfer(quint64 id, const QString& name, app::DownloadState state) {
    if (m_rows.contains(id)) return;
    auto* item = new QTreeWidgetItem(this);
    item->setText(0, name);
    item->setText(1, app::downloadStateName(state));
    item->setData(0, Qt::UserRole, id);
    m_rows.insert(id, indexOfTopLevelItem(item));
}

quint64 TransferList::transferId(int row) const {
    QTreeWidgetItem* item = topLevelItem(row);
    return item ? item->data(0, Qt::UserRole).toULongLong() : 0;
}

quint64 TransferList::selectedTransfer() const {
    QTreeWidgetItem* item = currentItem();
    return item ? item->data(0, Qt::UserRole).toULongLong() : 0;
}

void TransferList::updateButtons() {
    const QTreeWidgetItem* item = currentItem();
    const app::DownloadActions can = item ? app::downloadActions(m_downloads->state(item->data(0, Qt::UserRole).toULongLong()))
                                          : app::DownloadActions{};
    m_pause->setEnabled(can.pause);
    m_resume->setEnabled(can.resume);
    m_cancel->setEnabled(can.cancel);
}

} // namespace hearth::ui
