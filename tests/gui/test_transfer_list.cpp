// The models page's download list (ui/transfer_list.h) on its own: one row per download, named by
// its request, with its state, progress, speed, ETA and a failure's reason; Pause, Resume and
// Cancel made beside it and on only where they apply to the selected row.
#include "transfer_list.h"

#include "services/download_manager.h"
#include "services/download_queue_store.h"

#include <QDir>
#include <QLocale>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

class TestTransferList : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale::c()); }

    void rowsFollowTheDownloads() {
        QTemporaryDir dir;
        const QString queue = QDir(dir.path()).filePath(QStringLiteral(".hearth-downloads.json"));
        app::QueuedDownload d; // paused, from a loopback port nothing listens on
        d.request.url = QUrl(QStringLiteral("http://127.0.0.1:9/acme/x/resolve/main/x-Q4_K_M.gguf"));
        d.request.destination = QDir(dir.path()).filePath(QStringLiteral("x-Q4_K_M.gguf"));
        d.request.expectedSize = 1000;
        d.request.displayName = QStringLiteral("x-Q4_K_M.gguf");
        d.paused = true;
        QVERIFY(app::writeDownloadQueue(queue, {d}));

        QWidget page;
        app::DownloadManager downloads;
        ui::TransferList list(&downloads, &page);
        QCOMPARE(list.objectName(), QStringLiteral("transfers"));
        QCOMPARE(list.pauseButton()->parentWidget(), &page); // for the page to place
        QCOMPARE(list.transferCount(), 0);

        // Rows are added once; one for a download listed elsewhere comes with its first state, named
        // by its request; one without a request (nothing to name it by) gets none.
        downloads.setQueueFile(queue);
        const QList<quint64> ids = downloads.restoreQueue();
        QCOMPARE(ids.size(), 1);
        const quint64 id = ids.first();
        list.addTransfer(id, QStringLiteral("x-Q4_K_M.gguf"), downloads.state(id));
        list.addTransfer(id, QStringLiteral("again"), app::DownloadState::Queued);
        QCOMPARE(list.transferCount(), 1);
        QVERIFY(list.hasTransfer(id));
        QCOMPARE(list.transferId(0), id);
        QCOMPARE(list.transferId(1), quint64(0));
        QCOMPARE(list.topLevelItem(0)->text(1), QStringLiteral("paused"));
        ui::TransferList other(&downloads, &page);
        Q_EMIT downloads.stateChanged(id, app::DownloadState::Paused);
        Q_EMIT downloads.stateChanged(id + 100, app::DownloadState::Queued);
        QCOMPARE(list.transferCount(), 1);
        QCOMPARE(other.transferCount(), 1);
        QCOMPARE(other.topLevelItem(0)->text(0), QStringLiteral("x-Q4_K_M.gguf"));
        QCOMPARE(other.topLevelItem(0)->text(1), QStringLiteral("paused"));
        QTRY_COMPARE_WITH_TIMEOUT(downloads.state(id), app::DownloadState::Paused, 5000);

        Q_EMIT downloads.progress(id, 500, 1000, 2048.0, 75);
        QCOMPARE(list.topLevelItem(0)->text(2), QStringLiteral("50.0 %"));
        QCOMPARE(list.topLevelItem(0)->text(3), QLocale().formattedDataSize(2048) + QStringLiteral("/s"));
        QCOMPARE(list.topLevelItem(0)->text(4), QStringLiteral("1:15"));
        Q_EMIT downloads.failed(id, QStringLiteral("disk full"));
        QCOMPARE(list.topLevelItem(0)->toolTip(1), QStringLiteral("disk full"));

        // Nothing selected: all off; the paused one selected: Resume and Cancel.
        QCOMPARE(list.selectedTransfer(), quint64(0));
        QVERIFY(!list.pauseButton()->isEnabled() && !list.resumeButton()->isEnabled() &&
                !list.cancelButton()->isEnabled());
        list.setCurrentItem(list.topLevelItem(0));
        QCOMPARE(list.selectedTransfer(), id);
        QVERIFY(!list.pauseButton()->isEnabled());
        QVERIFY(list.resumeButton()->isEnabled());
        QVERIFY(list.cancelButton()->isEnabled());
        list.cancelButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(list.topLevelItem(0)->text(1), QStringLiteral("cancelled"), 5000);
        QVERIFY(!list.pauseButton()->isEnabled() && !list.resumeButton()->isEnabled() &&
                !list.cancelButton()->isEnabled());
    }
};

QTEST_MAIN(TestTransferList)
#include "test_transfer_list.moc"
